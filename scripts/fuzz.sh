#!/usr/bin/env bash
# Fuzzes Kestrel with libFuzzer for SECONDS in all (default 120): half on the
# model loader, a quarter each on the .npy reader and on the C API's tensor
# intake. Builds build-fuzz/ with clang + ASan/UBSan, seeds each corpus with
# small valid inputs (models of ONNX's backend test suite; tests/fuzz/seeds/),
# runs the inputs in tests/fuzz/regressions/ first, and exits non-zero when
# libFuzzer reports a crash, leak, timeout or out-of-memory (the reproducer
# lands in build-fuzz/artifacts/<target>/).
#
#   scripts/fuzz.sh [SECONDS [BUILD]]
# BUILD: a build folder that already has the targets (scripts/sanitize.sh's
# build-asan, whose library carries ASan and fuzzer coverage: scripts/test.sh
# passes it, so the sources are not compiled again); without it build-fuzz/
# is configured and built here.
set -euo pipefail
seconds=${1:-120}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$top/build-fuzz}
if [ $# -lt 2 ]; then
  CC=clang CXX=clang++ cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKESTREL_FUZZ=ON -DKESTREL_TESTS=OFF >/dev/null
fi
cmake --build "$build" -j2 --target kestrel_load_fuzz kestrel_read_npy_fuzz kestrel_c_api_tensor_fuzz

# Each corpus lives in the build folder so the fuzzer's discoveries persist
# between runs; seeds and regressions are re-copied each time (cheap, a few KB).
for target in load read_npy c_api_tensor; do mkdir -p "$build/corpus/$target" "$build/artifacts/$target"; done
suite=/usr/share/libonnx-testdata/data/node
for t in identity add relu constant constant_pad if if_seq loop11 loop13_seq scan9_sum \
         reshape_reordered_all_dims gemm_default_no_bias softmax_example_expanded; do
  [ -f "$suite/test_$t/model.onnx" ] && cp "$suite/test_$t/model.onnx" "$build/corpus/load/seed_$t.onnx"
done
# Inputs that once crashed a target run first, every time: the loader's are
# tests/fuzz/regressions/*.onnx, the others' tests/fuzz/regressions/<target>/.
cp "$top"/tests/fuzz/regressions/*.onnx "$build/corpus/load/"
for target in read_npy c_api_tensor; do
  cp "$top"/tests/fuzz/seeds/$target/* "$build/corpus/$target/"
  if [ -d "$top/tests/fuzz/regressions/$target" ]; then cp "$top"/tests/fuzz/regressions/$target/* "$build/corpus/$target/"; fi
done

# KESTREL_POOL_MB: the tensor pool keeps idle buffers for reuse; fuzzed models
# allocate endless distinct sizes, so cap it to keep RSS meaningful.
# -timeout: a single input taking 10 s is a hang. ASan's allocator limit makes a
# huge allocation a finding instead of a slow swap.
fuzz() {  # target seconds max_len [more libFuzzer flags]
  KESTREL_POOL_MB=${KESTREL_POOL_MB:-64} \
  ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=0:detect_leaks=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
    "$build/tests/fuzz/kestrel_$1_fuzz" "$build/corpus/$1" -max_total_time="$2" -max_len="$3" \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$build/artifacts/$1/" "${@:4}"
}
# The budget is split so the total stays SECONDS.
quarter=$((seconds / 4))
# The loader's dictionary (op and attribute names, external data keys,
# extreme integers) lets mutations reach the checks behind them.
fuzz load $((seconds - 2 * quarter)) 65536 -dict="$top/tests/fuzz/onnx.dict"
fuzz read_npy "$quarter" 4096
fuzz c_api_tensor "$quarter" 4096

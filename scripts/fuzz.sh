#!/usr/bin/env bash
# Fuzzes Kestrel's model loader with libFuzzer for SECONDS (default 120).
# Builds build-fuzz/ with clang + ASan/UBSan, seeds a corpus with small models
# of ONNX's backend test suite, and exits non-zero when libFuzzer reports a
# crash, leak, timeout or out-of-memory (the reproducer lands in build-fuzz/artifacts/).
set -euo pipefail
seconds=${1:-120}
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build-fuzz
CC=clang CXX=clang++ cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKESTREL_FUZZ=ON -DKESTREL_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target kestrel_load_fuzz

# The corpus lives in the build folder so the fuzzer's discoveries persist
# between runs; seeds are re-copied each time (cheap, a few KB).
corpus=$build/corpus
mkdir -p "$corpus" "$build/artifacts"
suite=/usr/share/libonnx-testdata/data/node
for t in identity add relu constant constant_pad if if_seq loop11 loop13_seq scan9_sum \
         reshape_reordered_all_dims gemm_default_no_bias softmax_example_expanded; do
  [ -f "$suite/test_$t/model.onnx" ] && cp "$suite/test_$t/model.onnx" "$corpus/seed_$t.onnx"
done
# Inputs that once crashed the loader run first, every time.
cp "$top"/tests/fuzz/regressions/*.onnx "$corpus/"

# KESTREL_POOL_MB: the tensor pool keeps idle buffers for reuse; fuzzed models
# allocate endless distinct sizes, so cap it to keep RSS meaningful.
# -timeout: a single load taking 10 s is a hang. ASan's allocator limit makes a
# huge allocation a finding instead of a slow swap.
KESTREL_POOL_MB=${KESTREL_POOL_MB:-64} \
ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=0:detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  "$build/tests/fuzz/kestrel_load_fuzz" "$corpus" -max_total_time="$seconds" -max_len=65536 \
  -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$build/artifacts/"

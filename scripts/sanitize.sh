#!/usr/bin/env bash
# Runs Kestrel's tests under clang's sanitizers; any report fails the script.
#
#   build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer: the CPU test
#                suite (kestrel_tests with KESTREL_VULKAN_TESTS=off), every test
#                but the ones listed in $asan_skip below.
#   build-tsan/  ThreadSanitizer: every test that runs Kestrel from more than
#                one thread ($tsan_tests below), on the CPU backend.
#
# Not covered, and why:
#   - the Vulkan backend: lavapipe (Mesa's LLVM JIT) and the Vulkan loader are
#     not built with the sanitizers, so their threads and memory are invisible
#     to TSan and ASan (and TSan reports their internals as races). The Vulkan
#     tests run in the plain build (scripts/test.sh's ctest) instead.
#   - OpenMP's own threads: libomp and libgomp are not built for TSan, which
#     reports their internal hand-overs as races (tests/tsan.supp suppresses
#     reports from inside them, and only those). The concurrency tests run
#     their sessions on one OpenMP thread each (SessionOptions::threads = 1);
#     the other threaded tests run graphs too small for a parallel loop, so
#     the threads TSan checks are the callers' own.
#   - IS-Net medium and small (Real/*isnet*), the two largest real models:
#     over a minute together under ASan. The other real models and the fused
#     encoders run against ONNX Runtime under ASan (about 20 s in all).
#   - Lifetime.*: they measure RSS, which under ASan is its quarantine and
#     shadow memory; ASan's leak checker covers that side here.
#
# The two builds take most of the time; the runs take a few minutes.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

# configure_and_build DIR FLAGS TARGETS [CMAKE_ARGS...]: the library, the CLI
# (some tests run it) and TARGETS, with FLAGS on every compile and link. -O1, as the sanitizers'
# documentation advises, and line tables (all a report's stack needs) instead
# of full debug information keep the two builds within CI's time.
# The test list is read when ctest runs, not after linking, so building never
# runs a sanitized binary.
configure_and_build() {  # DIR FLAGS TARGETS [CMAKE_ARGS...]  (KESTREL_SANITIZE_OPT: -O1 unless set)
  local dir=$1 flags=$2 targets=$3 opt=${KESTREL_SANITIZE_OPT:--O1}
  shift 3
  CC=clang CXX=clang++ cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKESTREL_TESTS=ON "$@" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt -gline-tables-only -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt -gline-tables-only -DNDEBUG" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
    -DCMAKE_SHARED_LINKER_FLAGS="$flags" -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST >/dev/null
  # shellcheck disable=SC2086  # TARGETS is a list
  nice -n 10 cmake --build "$dir" -j"$(nproc)" --target kestrel_cli $targets
}

# --- AddressSanitizer + UndefinedBehaviorSanitizer ------------------------
# -fno-sanitize-recover=all: the first UB report aborts the test binary.
# allocator_may_return_null: an allocation too large for the host must reach
# Kestrel as std::bad_alloc, which the tests expect it to turn into an error
# (ASan would otherwise abort on sizes past its own limit).
# -fsanitize-coverage=inline-8bit-counters,pc-table: libFuzzer's edge
# coverage in the library, so the same library serves scripts/fuzz.sh's
# targets (built here too, run by test.sh after this script) and the sources
# are compiled once for both. Not all of -fsanitize=fuzzer-no-link: its
# comparison tracing (a call per compare) made this suite's run about three
# times longer; the loader's fuzzer has a dictionary for the values it would
# find. libFuzzer is linked into the fuzz targets alone.
configure_and_build "$top/build-asan" \
  "-fsanitize=address,undefined -fsanitize-coverage=inline-8bit-counters,pc-table -fno-sanitize-recover=all -fno-omit-frame-pointer" \
  "kestrel_tests kestrel_load_fuzz kestrel_read_npy_fuzz kestrel_c_api_tensor_fuzz" \
  -DKESTREL_FUZZ=ON -DKESTREL_FUZZ_WITH_LIBRARY=ON
asan_skip="Real/*isnet*:Lifetime.*"
KESTREL_VULKAN_TESTS=off \
ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:allocator_may_return_null=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "$top/build-asan/tests/kestrel_tests" --gtest_filter="-$asan_skip" --gtest_brief=1

# --- ThreadSanitizer -----------------------------------------------------
# kestrel_thread_tests: the test files that hold these tests, alone.
# At -O0: the library is compiled again for 18 tests on small graphs, and
# unoptimized it compiles in about half the time while those tests still run
# in seconds.
KESTREL_SANITIZE_OPT=-O0 configure_and_build "$top/build-tsan" "-fsanitize=thread -fno-omit-frame-pointer" kestrel_thread_tests \
  -DKESTREL_FUZZ=OFF
tsan_tests="Concurrency.*:RunCancel.*:PipelineCacheFile.*:HostileExternalData.FifoIsRefusedWithoutWaitingForAWriter"
KESTREL_VULKAN_TESTS=off \
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$top/tests/tsan.supp" \
  "$top/build-tsan/tests/kestrel_thread_tests" --gtest_filter="$tsan_tests" --gtest_brief=1
echo "sanitize.sh: no ASan, UBSan or TSan reports"

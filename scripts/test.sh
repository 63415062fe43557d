#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (as root), builds Kestrel, downloads the
# real models and photos, and runs every test: unit tests, ONNX's backend
# suite, the real models against ONNX Runtime, bad-input tests, the Python
# package against ONNX Runtime's Python API and served by Ray, the Vulkan
# tests under the validation layer, the arm64 cross-build under emulation
# (scripts/cross_arm64.sh; KESTREL_ARM64_TESTS=off skips it), the CPU suite under ASan/UBSan and the
# multi-threaded tests under TSan (scripts/sanitize.sh), and the
# model-loader fuzzer under AddressSanitizer (KESTREL_FUZZ_SECONDS, default 120).
# Each step ends with a line "test.sh: STEP took N s".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
step() {  # step NAME COMMAND...: runs COMMAND, then says how long it took
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test.sh: $name took $((SECONDS - start)) s (total $SECONDS s)" >&2
}
step setup bash scripts/setup.sh
step build bash scripts/build.sh
step models bash scripts/fetch_models.sh
# The Python package, as pip install . builds it (ctest's Python test reinstalls it, quickly, when sources change).
step python_package bash scripts/python_package.sh
step ctest bash -c 'cd build && ctest --output-on-failure -j"$(nproc)"'
# The Vulkan tests again under the Khronos validation layer (synchronization
# validation throughout, GPU-assisted validation on the float32 parity
# cases): any validation message fails.
[ "${KESTREL_VULKAN_TESTS:-on}" = off ] || step validate_vulkan bash scripts/validate_vulkan.sh
# The arm64 cross-build and its tests under emulation.
[ "${KESTREL_ARM64_TESTS:-on}" = off ] || step arm64 bash scripts/cross_arm64.sh
# The CPU suite under ASan/UBSan and the multi-threaded tests under TSan.
step sanitize bash scripts/sanitize.sh
# The fuzz targets are built by sanitize.sh, on its ASan build's library.
step fuzz bash scripts/fuzz.sh "${KESTREL_FUZZ_SECONDS:-120}" "$top/build-asan"

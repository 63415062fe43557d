#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (as root), builds Kestrel, downloads the
# real models and photos, and runs every test: unit tests, ONNX's backend
# suite, the real models against ONNX Runtime, bad-input tests, and the
# model-loader fuzzer under AddressSanitizer (KESTREL_FUZZ_SECONDS, default 180).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash scripts/setup.sh
bash scripts/build.sh
bash scripts/fetch_models.sh
(cd build && ctest --output-on-failure -j"$(nproc)")
bash scripts/fuzz.sh "${KESTREL_FUZZ_SECONDS:-180}"

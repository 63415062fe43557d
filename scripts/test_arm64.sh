#!/usr/bin/env bash
# Runs the arm64 build (scripts/cross_arm64.sh) under qemu-user on an x86-64 machine: the
# CLI's probe and a real model on the CPU, a representative subset of the unit tests, and
# the Vulkan parity harness on arm64 lavapipe (mesa-vulkan-drivers:arm64). Emulation runs
# a few times slower than native, lavapipe's JIT far slower, so this is a subset (listed
# below, and why); the full suite runs natively on arm64 through scripts/test.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
b="$top/build-arm64"
run() { qemu-aarch64 -L / "$@"; }  # the :arm64 libraries come from multiarch under /
say() { echo "test_arm64: [${SECONDS} s] $*" >&2; }  # each part with the time it starts at
export LD_LIBRARY_PATH="$top/.deps/arm64/usr/lib/aarch64-linux-gnu"
export VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.aarch64.json  # arm64 lavapipe alone

say "probe"
probe=$(run "$b/kestrel" probe)
echo "$probe" | grep -q '"asimd"' || { echo "test_arm64: probe reports no NEON: $probe" >&2; exit 1; }
# (qemu's default CPU has the 8-bit dot product, so its kernels run below)
echo "$probe" | grep -q '"asimddp"' || { echo "test_arm64: probe reports no dot product: $probe" >&2; exit 1; }
echo "$probe" | grep -q '"llvmpipe' || { echo "test_arm64: probe finds no arm64 lavapipe: $probe" >&2; exit 1; }

# Real models and family fixtures on the arm64 CPU backend, then on arm64 lavapipe, each
# against ONNX Runtime's CPU EP (kestrel parity asks onnxruntime-node, which runs natively).
# parity's default bounds: max |diff| under 1e-4 of each output's range, cosine >= 0.9999.
cpu_models=(models/blazeface_back_256.onnx models/ultraface_320.onnx ../shared/models/yolox_nano.onnx
            tests/models/clip/torchscript.onnx tests/models/dinov2/torchscript.onnx tests/models/siglip/dynamo.onnx)
vulkan_models=(models/blazeface_back_256.onnx tests/models/clip/torchscript.onnx)
cd "$top"
for m in "${cpu_models[@]}"; do
  [ -f "$m" ] || { echo "test_arm64: $m is missing (scripts/fetch_models.sh)" >&2; exit 1; }
  say "$m on the CPU"
  run "$b/kestrel" parity "$m" --backend cpu --runs 2 | tail -n +3
done
for m in "${vulkan_models[@]}"; do
  say "$m on Vulkan (lavapipe)"
  run "$b/kestrel" parity "$m" --backend vulkan --runs 2 | tail -n +3
done

# The parity harness: every case on the CPU's fast kernels against the reference kernels (the
# arm64 build's portable kernels, compiled for NEON), and the Vulkan kernels most models lean
# on (convolution, matrix products, softmax, normalization) against the CPU on arm64 lavapipe.
# Each Vulkan op takes about a minute emulated; the other ops run in the x86-64 suite.
say "CPU fast kernels against the reference"
run "$b/tests/kestrel_backend_ops" --gtest_filter='*CpuFast*:*Named*' --gtest_brief=1
say "the NEON narrow products and the SDOT quantized products against their references"
run "$b/tests/kestrel_isa_tests" --gtest_brief=1 \
  --gtest_filter='Neon/NarrowGemm.*:Im2row.*:CpuIsa/AtEachLevel.QuantizedMatMuls*:CpuIsa/AtEachLevel.QuantizedConvolutions*:CpuIsa/AtEachLevel.NarrowProducts*'
for op in Conv MatMul Softmax LayerNormalization; do
  say "Vulkan $op cases"
  KESTREL_OPS_FILTER=$op run "$b/tests/kestrel_backend_ops" --gtest_filter='*VulkanFp32MatchesCpu' --gtest_brief=1
done
say "passed"

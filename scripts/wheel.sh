#!/usr/bin/env bash
# Builds Kestrel's Python package as a wheel for any Linux x86-64 with glibc
# 2.34 or newer (manylinux_2_34), into dist/ (or --out DIR):
#   scripts/wheel.sh [--out DIR] [--build-dir DIR]
# pip builds the wheel as `pip install .` does (scikit-build-core, the pinned
# nanobind), then auditwheel copies the libraries it links from this machine
# (oneDNN, ONNX, protobuf, the Vulkan loader, the OpenCL loader and GNU OpenMP
# that oneDNN links) into the wheel under kestrel.libs/ and points the module
# at them, so the wheel needs nothing from the system but glibc, libstdc++ and
# a Vulkan driver. 2_34 is the newest glibc symbol the engine uses (Debian 12's
# 2.36 builds it). --build-dir: a CMake build folder to reuse (scripts/build.sh's
# build/ is quick); by default the wheel's own, build/wheel/. Run
# scripts/setup.sh first (the build's packages and the pinned tools).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/dist"
build_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "wheel.sh: unknown option '$1' (--out DIR, --build-dir DIR)" >&2; exit 2 ;;
  esac
done
py="$top/.deps/python/bin/python"
[ -x "$py" ] || { echo "wheel.sh: $py is missing: run scripts/setup.sh" >&2; exit 1; }
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
settings=()
# build/ is configured by scripts/build.sh with the tests: the same generator and options.
[ -n "$build_dir" ] && settings=(--config-settings=build-dir="$build_dir" --config-settings=cmake.define.KESTREL_TESTS=ON)
echo "wheel.sh: building the wheel" >&2
CMAKE_GENERATOR="Unix Makefiles" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$py" -m pip wheel --quiet \
  --disable-pip-version-check --no-build-isolation --no-deps "${settings[@]}" -w "$raw" "$top"
echo "wheel.sh: copying its libraries in (auditwheel, manylinux_2_34_x86_64)" >&2
mkdir -p "$out"
PATH="$top/.deps/python/bin:$PATH" "$py" -m auditwheel repair --plat manylinux_2_34_x86_64 -w "$out" "$raw"/kestrel-*.whl 2>&1 |
  grep -v "^INFO:" >&2 || true
ls "$out"/kestrel-*manylinux_2_34_x86_64.whl

#!/usr/bin/env bash
# Builds and installs Kestrel's Python package into .deps/python (made by
# scripts/setup.sh) through pip and scikit-build-core, as `pip install .` does
# for a user, but in build/ (scripts/build.sh's folder, whose engine objects are
# then reused: only the native module is compiled) instead of the wheel's own
# build/wheel/. --no-build-isolation: the build uses the environment's pinned
# scikit-build-core and nanobind.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
py="$top/.deps/python/bin/python"
[ -x "$py" ] || { echo "python_package.sh: $py is missing: run scripts/setup.sh" >&2; exit 1; }
# build/ is configured by scripts/build.sh with Makefiles, the tests and the ONNX Runtime
# plugin: the same generator and options here (the wheel itself leaves the plugin out).
CMAKE_GENERATOR="Unix Makefiles" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$py" -m pip install --quiet \
  --disable-pip-version-check --no-build-isolation --no-deps \
  --config-settings=build-dir="$top/build" --config-settings=cmake.define.KESTREL_TESTS=ON \
  --config-settings=cmake.define.KESTREL_ORT_EP=ON "$top"

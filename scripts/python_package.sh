#!/usr/bin/env bash
# Builds and installs Kestrel's Python package into .deps/python (made by
# scripts/setup.sh), as `pip install .` does for a user. --no-build-isolation:
# the build uses the environment's pinned scikit-build-core and nanobind, and
# its build folder (build/wheel/) is kept, so a second run recompiles only
# what changed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
py="$top/.deps/python/bin/python"
[ -x "$py" ] || { echo "python_package.sh: $py is missing: run scripts/setup.sh" >&2; exit 1; }
CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$py" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
  --no-deps "$top"

#!/usr/bin/env bash
# ctest's Python test: reinstalls the package (scripts/python_package.sh,
# quick when nothing changed) so the tests never see a stale build, then runs
# the tests under tests/python with the pinned environment's pytest. The
# tests import the installed package from another folder than the source's.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
bash "$top/scripts/python_package.sh"
cd "$top/tests/python"
exec "$top/.deps/python/bin/python" -m pytest -q -p no:cacheprovider "$@" .

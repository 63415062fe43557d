#!/usr/bin/env bash
# Configures and builds Kestrel into build/ (Release). Pass extra cmake flags as arguments.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cmake -S "$top" -B "$top/build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$top/build" -j"$(nproc)"

#!/bin/bash
# Packs the built CLI, the test binaries and the shared libraries they need
# (the ones a stock Ubuntu/Debian host lacks) with the small real models into
# .hostbench/bundle.tar.xz, to run Kestrel on another Linux x86-64 machine:
#   tar xJf bundle.tar.xz && LD_LIBRARY_PATH=lib bin/kestrel probe
# Models over 20 MB are left out unless named: tools/bundle_for_host.sh [EXTRA_MODEL...]
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
out=.hostbench
stage=$(mktemp -d)
mkdir -p "$stage/bin" "$stage/lib" "$stage/models" "$out"
cp build/kestrel build/tests/kestrel_backend_ops build/tests/kestrel_tests "$stage/bin/"
cp -a build/libkestrel.so* build/libkestrel_internal.so "$stage/lib/"  # the C API library (versioned, with its SONAME links) and the tests' one
cp build/libkestrel_ort_ep.so "$stage/lib/"  # the ONNX Runtime plugin (bench/ort_ep_vs_ort.py)
for lib in libonnx.so.1 libonnx_proto.so.1 libprotobuf.so.32 libdnnl.so.2 libOpenCL.so.1 libzip.so.4; do
  cp -L "/lib/x86_64-linux-gnu/$lib" "$stage/lib/"
done
find models -maxdepth 1 -name '*.onnx' -size -20M -exec cp {} "$stage/models/" \;
for extra in "$@"; do cp "$extra" "$stage/models/"; done
cp -r bench python "$stage/"
tar cJf "$out/bundle.tar.xz" -C "$stage" .
rm -rf "$stage"
ls -la "$out/bundle.tar.xz"

#!/bin/sh
# Kestrel on an x86-64 CPU without AVX: qemu-user emulates a Nehalem (SSE4.2,
# no AVX) and a real model runs on the CPU backend, its outputs held against
# ONNX Runtime's (max error 1e-4 of the range, cosine 0.99999, as for every
# real model on the CPU; ONNX Runtime runs natively). A
# library with AVX2 anywhere outside the kernels chosen at run time
# (core/cpu_isa.h) dies here with SIGILL, as the -march=x86-64-v3 build did.
#   baseline_cpu_test.sh KESTREL MODEL
set -eu
command -v qemu-x86_64 >/dev/null || { echo "qemu-x86_64 not found: run scripts/setup.sh (Debian's qemu-user)" >&2; exit 1; }
qemu-x86_64 -cpu Nehalem "$1" parity "$2" --backend cpu --threads 2 --runs 1 --tol 1e-4 --min-cosine 0.99999

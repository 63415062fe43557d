// What every GEMM kernel shares with the host's GemmPush and record_gemm
// (ops/gemm_record.h): the workgroup (256 threads unless the includer
// defines GEMM_THREADS), specialization constants 0-4,
// bindings 0-4 (Y and R in TS: the _stream32 variants write a float32
// stream) and the push constants (gemm_push.glsl). gemm_body.glsl and gemm_coop_body.glsl
// include it.
#include "common.glsl"
#include "activation.glsl"
#ifndef GEMM_THREADS
#define GEMM_THREADS 256  // an includer may define fewer (subgroups of 32)
#endif
layout(local_size_x = GEMM_THREADS) in;
layout(constant_id = 0) const int ACT = 0;
layout(constant_id = 1) const int A_KCONTIG = 1;  // A's k index has unit stride (else its m index does)
layout(constant_id = 2) const int B_NCONTIG = 1;  // B's n index has unit stride (else its k index does)
layout(constant_id = 3) const int HAS_C = 0;
layout(constant_id = 4) const int HAS_R = 0;
layout(std430, binding = 0) readonly buffer A_ { T a[]; };
layout(std430, binding = 1) readonly buffer B_ { T b[]; };
layout(std430, binding = 2) readonly buffer C_ { T c[]; };
layout(std430, binding = 3) buffer Y_ { TS y[]; };
layout(std430, binding = 4) readonly buffer R_ { TS r[]; };
#include "gemm_push.glsl"

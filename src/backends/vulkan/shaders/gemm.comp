#version 450
#extension GL_GOOGLE_include_directive : require
// variant stream32: KESTREL_FLOAT32_STREAM
// variant nbits: NBITS_WEIGHTS
// The scalar GEMM on 64x64 output tiles, 4x4 per thread (gemm_body.glsl):
// CPU devices, mobile and integrated GPUs.
const uint BM = 64, BK = 16, TM = 4;
#include "gemm_body.glsl"

#version 450
#extension GL_GOOGLE_include_directive : require
// variant stream32: KESTREL_FLOAT32_STREAM
// variant nbits: NBITS_WEIGHTS
// The scalar GEMM on 128x128 output tiles, 8x8 per thread (gemm_body.glsl):
// discrete GPUs, whose many registers hold the larger block.
const uint BM = 128, BK = 8, TM = 8;
#include "gemm_body.glsl"

#version 450
#extension GL_GOOGLE_include_directive : require
// variant stream32: KESTREL_FLOAT32_STREAM
// variant nbits: NBITS_WEIGHTS
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// The tensor-core GEMM on 128x128 output tiles (gemm_coop_body.glsl): four
// subgroups, two along m and two along n, each owning a 64x64 block. Each
// k-step loads 4 + 4 matrices for 16 products, where eight subgroups of
// 64x32 loaded 4 + 2 for 8: measured on the H200, 4096^3 went from 122-136
// to 169-179 TFLOP/s and the CLIP MLP at batch 64 from 89-94 to 113-115
// (BENCHMARKS.md). (The 64x64 tile gained nothing from the same change.)
#define GEMM_THREADS 128
const uint BM = 128, BN = 128, WARPS_N = 2, FM = 4, FN = 4;
#include "gemm_coop_body.glsl"

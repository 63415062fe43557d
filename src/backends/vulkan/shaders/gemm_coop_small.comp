#version 450
#extension GL_GOOGLE_include_directive : require
// variant stream32: KESTREL_FLOAT32_STREAM
// variant nbits: NBITS_WEIGHTS
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// The tensor-core GEMM on 64x64 output tiles (gemm_coop_body.glsl): four
// subgroups, two along m and two along n, each owning a 32x32 block (2 + 2
// matrix loads for 4 products per k-step, where eight subgroups of 16x32
// loaded 1 + 2 for 2).
#define GEMM_THREADS 128
const uint BM = 64, BN = 64, WARPS_N = 2, FM = 2, FN = 2;
#include "gemm_coop_body.glsl"

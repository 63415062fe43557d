#version 450
#extension GL_GOOGLE_include_directive : require
// variant stream32: KESTREL_FLOAT32_STREAM
// variant nbits: NBITS_WEIGHTS
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// The tensor-core GEMM on 32x32 output tiles (gemm_coop_body.glsl): four
// subgroups, two along m and two along n, each owning one 16x16 block. For
// products too small to give a large GPU's compute units a 64x64 tile each:
// a ViT's batch-1 projections (197 rows: four 64-row tiles) and the
// attention of each head.
#define GEMM_THREADS 128
const uint BM = 32, BN = 32, WARPS_N = 2, FM = 1, FN = 1;
#include "gemm_coop_body.glsl"

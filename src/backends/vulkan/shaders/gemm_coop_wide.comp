#version 450
#extension GL_GOOGLE_include_directive : require
// variant stream32: KESTREL_FLOAT32_STREAM
// variant nbits: NBITS_WEIGHTS
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// The tensor-core GEMM on 128x96 output tiles (gemm_coop_body.glsl): four
// subgroups, two along m and two along n, each owning a 64x48 block. For
// products of N a multiple of 96 (a ViT-B's 768) with too few 128x128 tiles
// to fill a large GPU twice: SAM's 4096 x 768 outputs are 192 of those (1.5
// per compute unit of the H200) and 256 of these.
#define GEMM_THREADS 128
const uint BM = 128, BN = 96, WARPS_N = 2, FM = 4, FN = 3;
#include "gemm_coop_body.glsl"

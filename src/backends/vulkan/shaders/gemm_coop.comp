#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// The tensor-core GEMM on 128x128 output tiles (gemm_coop_body.glsl): eight
// subgroups, two along m and four along n, each owning a 64x32 block.
const uint BM = 128, WARPS_N = 4, FM = 4, FN = 2;
#include "gemm_coop_body.glsl"

#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_control_flow_attributes : require
// MatMulInteger on int8 tensor cores (gemm_integer_coop_body.glsl). The 64x64 tile, for products of few 128x128 tiles: four subgroups of 32x32.
#define GEMM_THREADS 128
const uint BM = 64, BN = 64, WARPS_N = 2, FM = 2, FN = 2;
#include "gemm_integer_coop_body.glsl"

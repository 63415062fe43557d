#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// Flash attention on tensor cores (VK_KHR_cooperative_matrix, float16
// runs; flash_attention_common.glsl): four subgroups of 32, each owning 16
// of the workgroup's 64 queries, walk the keys 64 at a time. Per tile:
// the K and V tiles go to shared memory (16-byte loads where rows are
// aligned: VEC); each subgroup's 16x64 scores are HD/16 x 4 products of
// 16x16 float16 matrices accumulated in float32, its query fragments
// loaded once; the scores go through the subgroup's corner of shared
// memory, where two lanes per query take the tile's maximum, rescale their
// half of the context row (in registers) and write the probabilities as
// float16; the probabilities times the V tile go back through the same
// corner and are added to the context rows. The scores never leave the
// workgroup. HD is a multiple of 16 up to 64 (the host checks; shared
// memory: 45 KB at 64).
#include "flash_attention_common.glsl"
layout(local_size_x = 128) in;
layout(constant_id = 3) const int VEC = 0;  // K and V rows start 16-byte aligned: loaded 8 halves at a time
layout(std430, binding = 1) readonly buffer K4_ { uvec4 k4[]; };
layout(std430, binding = 2) readonly buffer V4_ { uvec4 v4[]; };
layout(std430, binding = 0) readonly buffer Q4_ { uvec4 q4[]; };

const uint BC = 64;                 // keys per tile
const uint KROW = uint(HD) / 8 + 1;       // a staged row of HD halves, in uvec4s, padded by one
const uint SROW = BC + 4;            // a row of a subgroup's scores or products (HD <= BC), in floats
const uint PROW = BC + 8;           // a row of a subgroup's probabilities, in halves
shared uvec4 Ks[BC * KROW];
shared uvec4 Vs[BC * KROW];
shared float Ss[4 * 16 * SROW];
shared float16_t Ps[4 * 16 * PROW];
shared float pair_red[128];

#ifdef KESTREL_F16
const bool VEC_BUILD = true;
#else
const bool VEC_BUILD = false;  // float32 storage never runs this kernel
#endif

// 8 consecutive elements of row j (from token `first`) of x, from column
// c8, as halves; zero past the last token.
uvec4 row8(uint which, uint j, uint c8) {
  if (j >= pc.tokens) return uvec4(0);
  uint at = qkv_base + j * width + c8;
#ifdef KESTREL_F16
  if (VEC != 0) return which == 0 ? q4[at / 8] : which == 1 ? k4[at / 8] : v4[at / 8];
#endif
  float x[8];
  [[unroll]] for (uint h = 0; h < 8; ++h)
    x[h] = which == 0 ? LD(q[at + h]) : which == 1 ? LD(k[at + h]) : LD(v[at + h]);
  return uvec4(packFloat2x16(f16vec2(x[0], x[1])), packFloat2x16(f16vec2(x[2], x[3])),
               packFloat2x16(f16vec2(x[4], x[5])), packFloat2x16(f16vec2(x[6], x[7])));
}

// Rows r0 .. r0 + 63 of q (which 0), k (1) or v (2) into `dst` (Ks or Vs).
void stage(uint which, uint r0, bool to_v) {
  for (uint e = gl_LocalInvocationID.x; e < BC * (HD / 8); e += 128) {
    uint r = e / (HD / 8), c = e % (HD / 8);
    uvec4 x = row8(which, r0 + r, c * 8);
    if (to_v) Vs[r * KROW + c] = x;
    else Ks[r * KROW + c] = x;
  }
}

void subgroup_sync() {
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}

void main() {
  uint q0 = flash_begin();
  uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  uint r = lane / 2, half_ = lane % 2;  // the lane's query row and its half of the columns
  uint i = q0 + sg * 16 + r;
  flash_query(i);
  const uint S0 = sg * 16 * SROW, P0 = sg * 16 * PROW;

  // The subgroup's query fragments, staged through Ks.
  stage(0, q0, false);
  barrier();
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> qf[HD / 16];
  [[unroll]] for (uint kk = 0; kk < HD / 16; ++kk)
    coopMatLoad(qf[kk], Ks, sg * 16 * KROW + kk * 2, KROW, gl_CooperativeMatrixLayoutRowMajor);

  float acc[HD / 2];  // columns half_ + 2c of the context row
  [[unroll]] for (uint c = 0; c < HD / 2; ++c) acc[c] = 0.0;
  float m = FLASH_NEG_INF, l = 0.0;  // l: this lane's half of the sum
  for (uint k0 = 0; k0 < pc.tokens; k0 += BC) {
    if (tile_outside_window(q0, k0, BC)) continue;
    barrier();  // the previous tile (or the query fragments) are read
    stage(1, k0, false);
    stage(2, k0, true);
    barrier();
    // Scores: 16 queries x 64 keys, into the subgroup's corner.
    [[unroll]] for (uint n = 0; n < BC / 16; ++n) {
      coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> sacc =
          coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
      [[unroll]] for (uint kk = 0; kk < HD / 16; ++kk) {
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> kf;  // K^T: key rows are its columns
        coopMatLoad(kf, Ks, n * 16 * KROW + kk * 2, KROW, gl_CooperativeMatrixLayoutColumnMajor);
        sacc = coopMatMulAdd(qf[kk], kf, sacc);
      }
      coopMatStore(sacc, Ss, S0 + n * 16, SROW, gl_CooperativeMatrixLayoutRowMajor);
    }
    subgroup_sync();
    float s[BC / 2];
    float tile_max = FLASH_NEG_INF;
    [[unroll]] for (uint c = 0; c < BC / 2; ++c) {
      uint j = half_ + 2 * c;
      s[c] = i < pc.tokens ? flash_score(Ss[S0 + r * SROW + j], i, k0 + j) : FLASH_NEG_INF;
      tile_max = max(tile_max, s[c]);
    }
    pair_red[sg * 32 + lane] = tile_max;
    subgroup_sync();
    tile_max = max(tile_max, pair_red[sg * 32 + (lane ^ 1)]);
    float m_new = max(m, tile_max);
    bool seen = !isinf(m_new);
    float alpha = seen ? exp(m - m_new) : 1.0;
    l *= alpha;
    [[unroll]] for (uint c = 0; c < BC / 2; ++c) {
      float p = seen ? exp(s[c] - m_new) : 0.0;
      l += p;
      Ps[P0 + r * PROW + half_ + 2 * c] = float16_t(p);
    }
    [[unroll]] for (uint c = 0; c < HD / 2; ++c) acc[c] *= alpha;
    m = m_new;
    subgroup_sync();  // probabilities written; the scores read
    // Context: (16 x 64 probabilities) x (64 x HD values), into the corner.
    [[unroll]] for (uint n = 0; n < HD / 16; ++n) {
      coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> oacc =
          coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
      [[unroll]] for (uint kk = 0; kk < BC / 16; ++kk) {
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> pf;
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> vf;
        coopMatLoad(pf, Ps, P0 + kk * 16, PROW, gl_CooperativeMatrixLayoutRowMajor);
        coopMatLoad(vf, Vs, kk * 16 * KROW + n * 2, KROW, gl_CooperativeMatrixLayoutRowMajor);
        oacc = coopMatMulAdd(pf, vf, oacc);
      }
      coopMatStore(oacc, Ss, S0 + n * 16, SROW, gl_CooperativeMatrixLayoutRowMajor);
    }
    subgroup_sync();
    [[unroll]] for (uint c = 0; c < HD / 2; ++c) acc[c] += Ss[S0 + r * SROW + half_ + 2 * c];
    subgroup_sync();  // pair_red and the corner are free for the next tile
  }
  pair_red[sg * 32 + lane] = l;
  subgroup_sync();
  l += pair_red[sg * 32 + (lane ^ 1)];
  if (i >= pc.tokens) return;
  uint dst = qkv_base + i * width;
  if (isinf(m)) {
    for (uint c = 0; c < HD / 2; ++c) o[dst + half_ + 2 * c] = ST(flash_unseen(half_ + 2 * c));
  } else {
    float inv = 1.0 / l;
    [[unroll]] for (uint c = 0; c < HD / 2; ++c) o[dst + half_ + 2 * c] = ST(acc[c] * inv);
  }
}

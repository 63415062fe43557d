#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// Flash attention on tensor cores (VK_KHR_cooperative_matrix, float16
// runs; flash_attention_common.glsl): four subgroups of 32, each owning 16
// of the workgroup's 64 queries, walk the keys 64 at a time. Per tile:
// the K and V tiles go to shared memory (16-byte loads where rows are
// aligned: VEC), the next tile's loads in flight while this one is
// computed; each subgroup's 16x64 scores are HD/16 x 4 products of 16x16
// float16 matrices accumulated in float32, its query fragments loaded once;
// the scores go through the subgroup's corner of shared memory, where two
// lanes per query take the tile's maximum and write the probabilities as
// float16; the probabilities times the V tile add to the context rows held
// as float32 accumulators (rescaled through the corner only when a row's
// maximum moves far: main()). The scores never leave the workgroup.
//
// A lane reads and writes its half of a row as groups of 4 consecutive
// columns (columns 8g + 4h .. 8g + 4h + 3 for lane half h): with rows of 72
// floats and of 72 halves, each 16-byte read and 8-byte write of a quarter
// or half subgroup falls on distinct banks. Keys past the end or masked out
// get their -inf once per tile (kbias), not once per query; the
// relative-position terms are added by a pass in which the lanes run along
// the keys, so their table reads are consecutive (or, where a key tile is a
// whole key row, from registers: main()). Each lane stores its outputs 4
// halves at a time where the output is aligned as the operands are (VEC).
// HD is a multiple of 16
// up to 64 (the host checks; shared memory: 47 KB at 64).
#include "flash_attention_common.glsl"
#include "halves8.glsl"
layout(local_size_x = 128) in;
layout(constant_id = 3) const int VEC = 0;  // K and V rows start 16-byte aligned: loaded 8 halves at a time
// HAS_REL on a grid of rows + cols <= 32 (ViT-Det's 14x14 windows): the
// relative-position terms are added on the tensor cores (main()), through
// the host's one-hot table of each key tile (flash_attention in
// ops/encoder_steps.cpp): binding 7, per tile 32 rows of 64 halves.
layout(constant_id = 4) const int REL_MMA = 0;
layout(std430, binding = 7) readonly buffer E4_ { uvec4 e4[]; };
layout(std430, binding = 0) readonly buffer Q4_ { uvec4 q4[]; };
layout(std430, binding = 1) readonly buffer K4_ { uvec4 k4[]; };
layout(std430, binding = 2) readonly buffer V4_ { uvec4 v4[]; };
layout(std430, binding = 3) writeonly buffer O2_ { uvec2 o2[]; };  // 4 halves at a time (VEC)

const uint BC = 64;                          // keys per tile (>= HD)
const uint KROW = uint(HD) / 8 + 1;          // a staged row of HD halves, in uvec4s, padded by one
const uint SROW = BC + 8;                    // a row of a subgroup's scores or products, in floats
const uint PROW = BC + 8;                    // a row of a subgroup's probabilities, in halves
const uint ITEMS = (BC * (uint(HD) / 8) + 127) / 128;  // uvec4s of K (and of V) a thread stages per tile
shared uvec4 Ks[BC * KROW];
shared uvec4 Vs[BC * KROW];
shared vec4 Ss[4 * 16 * SROW / 4];
shared uvec2 Ps[4 * 16 * PROW / 4];
shared vec4 kbias[BC / 4];  // 0, or -inf for a key past the end or masked out
shared uvec2 rel_at[64];    // HAS_REL: each query row's hb and wb (flash_query)
const float RESCALE_AT = 8.0;  // see main()
shared float pair_red[128];

// 8 consecutive elements of row j of q (which 0), k (1) or v (2) from
// column c8, as halves; zero past the last token.
uvec4 row8(uint which, uint j, uint c8) {
  if (j >= pc.tokens) return uvec4(0);
  uint at = qkv_base + j * width + c8;
#ifdef KESTREL_F16  // (float32 storage never runs this kernel: only the element path is built)
  if (VEC != 0) return which == 0 ? q4[at / 8] : which == 1 ? k4[at / 8] : v4[at / 8];
#endif
  float x[8];
  [[unroll]] for (uint h = 0; h < 8; ++h)
    x[h] = which == 0 ? LD(q[at + h]) : which == 1 ? LD(k[at + h]) : LD(v[at + h]);
  return pack_halves8(x);
}

uvec4 kreg[ITEMS], vreg[ITEMS];  // the next tile, on its way to shared memory
float kb;                        // and its key bias (threads below BC)
void load_tile(uint k0) {
  uint t = gl_LocalInvocationID.x;
  [[unroll]] for (uint r = 0; r < ITEMS; ++r) {
    uint e = t + 128 * r;
    if (e < BC * (HD / 8)) {
      kreg[r] = row8(1, k0 + e / (HD / 8), e % (HD / 8) * 8);
      vreg[r] = row8(2, k0 + e / (HD / 8), e % (HD / 8) * 8);
    }
  }
  uint j = k0 + t;
  if (t < BC) kb = j < pc.tokens && (HAS_MASK == 0 || mask[seq * pc.tokens + j] != 0) ? 0.0 : FLASH_NEG_INF;
}
void store_tile() {
  uint t = gl_LocalInvocationID.x;
  [[unroll]] for (uint r = 0; r < ITEMS; ++r) {
    uint e = t + 128 * r;
    if (e < BC * (HD / 8)) {
      Ks[e / (HD / 8) * KROW + e % (HD / 8)] = kreg[r];
      Vs[e / (HD / 8) * KROW + e % (HD / 8)] = vreg[r];
    }
  }
  if (t < BC) kbias[t / 4][t % 4] = kb;
}

void subgroup_sync() {
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}

void main() {
  uint q0 = flash_begin();
  uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  uint r = lane / 2, h4 = (lane % 2) * 4;  // the lane's query row, and where its groups of 4 columns start
  uint i = q0 + sg * 16 + r;
  const uint S0 = sg * 16 * SROW, P0 = sg * 16 * PROW;  // the subgroup's corners, in floats and halves
  const float score_scale = HAS_REL != 0 ? 1.0 : pc.scale;  // (the relative terms' pass or product scales them)
  if (HAS_REL != 0 && lane < 16) {  // each row's relative-position entries, for the pass along the keys
    uint ir = q0 + sg * 16 + lane;
    flash_query(min(ir, pc.tokens - 1));
    rel_at[sg * 16 + lane] = uvec2(hb, wb);
  }

  // The subgroup's query fragments, staged through Ks.
  for (uint e = gl_LocalInvocationID.x; e < QT * (HD / 8); e += 128)
    Ks[e / (HD / 8) * KROW + e % (HD / 8)] = row8(0, q0 + e / (HD / 8), e % (HD / 8) * 8);
  barrier();
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> qf[HD / 16];
  [[unroll]] for (uint kk = 0; kk < HD / 16; ++kk)
    coopMatLoad(qf[kk], Ks, sg * 16 * KROW + kk * 2, KROW, gl_CooperativeMatrixLayoutRowMajor);

  // REL_MMA: each query row's terms as one row of a 16 x 32 matrix (its
  // height entries for key rows rel_rows - 1 down to 0, then its width
  // entries likewise, then zeros), staged through the subgroup's corner of
  // Ps. Times the tile's one-hot table, whose column j holds a 1 in the rows
  // of key j's row and column, it is each score's ph + pw, added to the
  // scaled scores in the accumulator: no pass over the scores.
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> arel[2];
  if (REL_MMA != 0) {
    uint rr = lane / 2, m0 = (lane % 2) * 16;
    uvec2 base = rel_at[sg * 16 + rr];
    [[unroll]] for (uint g = 0; g < 4; ++g) {
      float t[4];
      [[unroll]] for (uint e = 0; e < 4; ++e) {
        uint m = m0 + 4 * g + e;
        t[e] = m < pc.rel_rows                 ? LD(ph[base.x + 1 + m - pc.rel_rows])
               : m < pc.rel_rows + pc.rel_cols ? LD(pw[base.y + 1 + m - pc.rel_rows - pc.rel_cols])
                                               : 0.0;
      }
      Ps[(P0 + rr * PROW + m0 + 4 * g) / 4] =
          uvec2(packFloat2x16(f16vec2(t[0], t[1])), packFloat2x16(f16vec2(t[2], t[3])));
    }
    subgroup_sync();
    [[unroll]] for (uint kk = 0; kk < 2; ++kk)
      coopMatLoad(arel[kk], Ps, (P0 + kk * 16) / 4, PROW / 4, gl_CooperativeMatrixLayoutRowMajor);
    subgroup_sync();
  }

  // Where key tiles are whole key rows (rel_cols == BC: SAM's global layers),
  // a tile's height term is one value per query, and its width terms are the
  // same in every tile: each lane keeps its row's 32 in registers and the
  // pass along the keys below is left out (the same sums in the same order).
  const bool rows_as_tiles = HAS_REL != 0 && pc.rel_cols == BC && pc.tokens % BC == 0;
  vec4 wterm[BC / 8];
  if (rows_as_tiles) {
    uint wrow = rel_at[sg * 16 + r].y;
    [[unroll]] for (uint g = 0; g < BC / 8; ++g)
      [[unroll]] for (uint e = 0; e < 4; ++e) wterm[g][e] = LD(pw[wrow - (8 * g + h4 + e)]);
  }

  // The context rows accumulate on the tensor cores against a reference
  // maximum m per row that moves only when a tile's maximum passes it by
  // more than RESCALE_AT (so probabilities stay <= e^RESCALE_AT, which
  // float16 holds): then, and only then, the rows go through shared memory
  // to be rescaled. l is this lane's half of the row's sum against m.
  coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> oacc[HD / 16];
  [[unroll]] for (uint n = 0; n < HD / 16; ++n)
    oacc[n] = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
  float m = FLASH_NEG_INF, l = 0.0;
  uint first, end;
  if (!key_range(q0, BC, first, end)) return;  // (uniform in the workgroup: KEY_ENDS)
  // A subgroup whose 16 queries are all past the end (the last tile of a
  // window of 196 tokens has 4) takes part in the barriers only; a tile's
  // 16-key fragments wholly past `end` are left out of both products.
  const bool live = q0 + sg * 16 < pc.tokens;
  if (first < end) load_tile(first);
  for (uint k0 = first; k0 < end; k0 += BC) {
    barrier();  // the previous tile (or the query fragments) are read
    store_tile();
    barrier();
    if (k0 + BC < end) load_tile(k0 + BC);  // in flight while this tile is computed
    if (!live) continue;
    const uint frags = (min(BC, end - k0) + 15) / 16;  // 16-key fragments with a key in range
    // Scores: 16 queries x 64 keys, into the subgroup's corner.
    [[unroll]] for (uint n = 0; n < BC / 16; ++n) {
      if (n >= frags) break;
      coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> sacc =
          coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
      [[unroll]] for (uint kk = 0; kk < HD / 16; ++kk) {
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> kf;  // K^T: key rows are its columns
        coopMatLoad(kf, Ks, n * 16 * KROW + kk * 2, KROW, gl_CooperativeMatrixLayoutColumnMajor);
        sacc = coopMatMulAdd(qf[kk], kf, sacc);
      }
      if (REL_MMA != 0) {
        sacc = sacc * pc.scale;
        [[unroll]] for (uint kk = 0; kk < 2; ++kk) {
          coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> ef;
          coopMatLoad(ef, e4, ((k0 / BC * 32 + kk * 16) * BC + n * 16) / 8, BC / 8, gl_CooperativeMatrixLayoutRowMajor);
          sacc = coopMatMulAdd(arel[kk], ef, sacc);
        }
      }
      coopMatStore(sacc, Ss, (S0 + n * 16) / 4, SROW / 4, gl_CooperativeMatrixLayoutRowMajor);
    }
    subgroup_sync();
    if (HAS_REL != 0 && !rows_as_tiles && REL_MMA == 0) {
      // Lanes along the keys: scale and add each query's relative-position terms.
      for (uint jj = lane; jj < frags * 16; jj += 32) {
        uint j = min(k0 + jj, pc.tokens - 1);  // (keys past the end are left out by kbias)
        uint ki = j / pc.rel_cols, kj = j % pc.rel_cols;
        [[unroll]] for (uint rr = 0; rr < 16; ++rr) {
          uvec2 base = rel_at[sg * 16 + rr];
          uint at = S0 + rr * SROW + jj;
          Ss[at / 4][at % 4] = Ss[at / 4][at % 4] * pc.scale + LD(ph[base.x - ki]) + LD(pw[base.y - kj]);
        }
      }
      subgroup_sync();
    }
    vec4 s[BC / 8];
    float tile_max = FLASH_NEG_INF;
    float hterm = rows_as_tiles ? LD(ph[rel_at[sg * 16 + r].x - k0 / BC]) : 0.0;
    [[unroll]] for (uint g = 0; g < BC / 8; ++g) {
      uint c = 8 * g + h4;
      vec4 dot = Ss[(S0 + r * SROW + c) / 4];
      s[g] = (rows_as_tiles ? dot * pc.scale + hterm + wterm[g] : dot * score_scale) + kbias[c / 4];
      if (c / 16 >= frags) s[g] = vec4(FLASH_NEG_INF);  // not computed: the corner holds an older tile's
      if (pc.window >= 0)
        [[unroll]] for (uint e = 0; e < 4; ++e)
          if (abs(int(i) - int(k0 + c + e)) > pc.window) s[g][e] = FLASH_NEG_INF;
      tile_max = max(tile_max, max(max(s[g].x, s[g].y), max(s[g].z, s[g].w)));
    }
    pair_red[sg * 32 + lane] = tile_max;
    subgroup_sync();
    tile_max = max(tile_max, pair_red[sg * 32 + (lane ^ 1)]);
    // A new reference maximum for this row? The context so far is then
    // rescaled, unless it is still empty (the row saw no key before).
    bool moves = tile_max > m + RESCALE_AT;  // (false while both are -inf)
    float alpha = moves ? exp(m - tile_max) : 1.0;
    if (subgroupAny(moves && !isinf(m))) {
      [[unroll]] for (uint n = 0; n < HD / 16; ++n)
        coopMatStore(oacc[n], Ss, (S0 + n * 16) / 4, SROW / 4, gl_CooperativeMatrixLayoutRowMajor);
      subgroup_sync();
      [[unroll]] for (uint g = 0; g < HD / 8; ++g) Ss[(S0 + r * SROW + 8 * g + h4) / 4] *= alpha;
      subgroup_sync();
      [[unroll]] for (uint n = 0; n < HD / 16; ++n)
        coopMatLoad(oacc[n], Ss, (S0 + n * 16) / 4, SROW / 4, gl_CooperativeMatrixLayoutRowMajor);
      subgroup_sync();
    }
    if (moves) m = tile_max, l *= alpha;
    bool seen = !isinf(m);
    [[unroll]] for (uint g = 0; g < BC / 8; ++g) {
      vec4 p = seen ? exp(s[g] - m) : vec4(0.0);
      l += p.x + p.y + p.z + p.w;
      Ps[(P0 + r * PROW + 8 * g + h4) / 4] = uvec2(packFloat2x16(f16vec2(p.xy)), packFloat2x16(f16vec2(p.zw)));
    }
    subgroup_sync();  // probabilities written
    // Context += (16 x 64 probabilities) x (64 x HD values).
    [[unroll]] for (uint kk = 0; kk < BC / 16; ++kk) {
      if (kk >= frags) break;  // (their probabilities are 0)
      coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> pf;
      coopMatLoad(pf, Ps, (P0 + kk * 16) / 4, PROW / 4, gl_CooperativeMatrixLayoutRowMajor);
      [[unroll]] for (uint n = 0; n < HD / 16; ++n) {
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> vf;
        coopMatLoad(vf, Vs, kk * 16 * KROW + n * 2, KROW, gl_CooperativeMatrixLayoutRowMajor);
        oacc[n] = coopMatMulAdd(pf, vf, oacc[n]);
      }
    }
    subgroup_sync();  // pair_red and the corner are free for the next tile
  }
  pair_red[sg * 32 + lane] = l;
  [[unroll]] for (uint n = 0; n < HD / 16; ++n)
    coopMatStore(oacc[n], Ss, (S0 + n * 16) / 4, SROW / 4, gl_CooperativeMatrixLayoutRowMajor);
  subgroup_sync();
  l += pair_red[sg * 32 + (lane ^ 1)];
  if (i >= pc.tokens) return;
  uint dst = qkv_base + i * width;
  [[unroll]] for (uint g = 0; g < HD / 8; ++g) {
    vec4 ctx = Ss[(S0 + r * SROW + 8 * g + h4) / 4];
#ifdef KESTREL_F16
    // The lane's 4 consecutive outputs as one 8-byte store where the output
    // starts 16-byte aligned (VEC; dst and the column are multiples of 4).
    if (VEC != 0 && !isinf(m)) {
      vec4 y = ctx / l;
      o2[(dst + 8 * g + h4) / 4] = uvec2(packFloat2x16(f16vec2(y.xy)), packFloat2x16(f16vec2(y.zw)));
      continue;
    }
#endif
    [[unroll]] for (uint e = 0; e < 4; ++e) {
      uint c = 8 * g + h4 + e;
      o[dst + c] = ST(isinf(m) ? flash_unseen(c) : ctx[e] / l);
    }
  }
}

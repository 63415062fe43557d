// What both flash-attention kernels share (flash_attention.comp on plain
// arithmetic, flash_attention_coop.comp on tensor cores): one workgroup per
// (sequence, head, tile of 64 queries) walks the keys in tiles, keeps each
// query's running maximum and sum of exponentials (an online softmax, in
// float32) and its context row, and never writes a score or probability to
// memory. q, k, v and the context are [sequences, tokens, heads * HD], head
// h in columns [h*HD, (h+1)*HD).
//
// Which keys a query sees and what is added to its scores, as
// masked_softmax.comp and relpos_softmax.comp have it: a key padding mask
// (HAS_MASK: key j of sequence b when mask[b, j] != 0), a window (|i - j| <=
// window; -1: every key), ViT-Det's decomposed relative-position terms
// (HAS_REL: ph and pw as relative_products in ops/fused_encoder.cpp writes
// them). A query that sees no key gets what its graph gives it: the mean of
// every value row when masked scores are a finite minimum (all its scores
// tie), 0 when they are -inf.
#include "common.glsl"
layout(constant_id = 0) const int HD = 64;        // head dim
layout(constant_id = 1) const int HAS_MASK = 0;
layout(constant_id = 2) const int HAS_REL = 0;
layout(std430, binding = 0) readonly buffer Q_ { T q[]; };
layout(std430, binding = 1) readonly buffer K_ { T k[]; };
layout(std430, binding = 2) readonly buffer V_ { T v[]; };
layout(std430, binding = 3) writeonly buffer O_ { T o[]; };
layout(std430, binding = 4) readonly buffer M_ { int mask[]; };
layout(std430, binding = 5) readonly buffer PH_ { T ph[]; };
layout(std430, binding = 6) readonly buffer PW_ { T pw[]; };
// KEY_ENDS: each sequence's live tokens (key_range()).
layout(constant_id = 5) const int KEY_ENDS = 0;
layout(std430, binding = 8) readonly buffer KE_ { int key_ends[]; };
layout(push_constant) uniform Push {
  uint pair_base;   // this dispatch's first (sequence, head) pair
  uint tile_base;   // and first query tile
  uint tokens, heads;
  float scale;
  int window;       // -1: every key
  uint finite_masked;
  uint rel_rows, rel_cols;  // HAS_REL: the window's grid
  uint rel_h_stride, rel_w_stride;  // and the rows of ph and pw (2 * rows - 1 and 2 * cols - 1, padded)
} pc;

#define FLASH_NEG_INF uintBitsToFloat(0xff800000u)
const uint QT = 64;  // queries per workgroup

uint seq, head, width, qkv_base;  // qkv_base: element (seq, token 0, head, 0)
// Sets the workgroup's pair and returns its first query.
uint flash_begin() {
  uint pair = pc.pair_base + gl_WorkGroupID.y;
  seq = pair / pc.heads;
  head = pair % pc.heads;
  width = pc.heads * HD;
  qkv_base = seq * pc.tokens * width + head * HD;
  return (pc.tile_base + gl_WorkGroupID.x) * QT;
}

// The key tiles of BC keys some query of [q0, q0 + QT) may see: from
// `first` (a multiple of BC) up to `end`. A window leaves out the tiles
// wholly before or after it (ModernBERT's local layers see 128 of 512 keys).
// With KEY_ENDS (a padding-free encoder: right padding, and nobody reads the
// padded queries' rows), the keys past the sequence's live ones, whose
// scores the mask makes -inf, are left out too, and a workgroup of queries
// past them writes nothing: returns false. (Uniform in the workgroup.)
bool key_range(uint q0, uint bc, out uint first, out uint end) {
  first = 0;
  end = pc.tokens;
  if (pc.window >= 0) {
    first = uint(max(int(q0) - pc.window, 0)) / bc * bc;
    end = min(end, q0 + QT + uint(pc.window));
  }
  if (KEY_ENDS == 0) return true;
  const uint live = uint(key_ends[seq]);
  end = min(end, live);
  return q0 < live;
}

// Query i's relative-position entries for key row 0 and key column 0
// (HAS_REL): the entry for key (ki, kj) is ph[hb - ki] + pw[wb - kj].
uint hb, wb;
void flash_query(uint i) {
  if (HAS_REL == 0) return;
  uint rel_row = (seq * pc.heads + head) * pc.tokens + i;
  hb = rel_row * pc.rel_h_stride + i / pc.rel_cols + pc.rel_rows - 1;
  wb = rel_row * pc.rel_w_stride + i % pc.rel_cols + pc.rel_cols - 1;
}

// The score of query i (flash_query(i) called) and key j from their dot
// product; -inf where the query may not see the key.
float flash_score(float dot, uint i, uint j) {
  if (j >= pc.tokens) return FLASH_NEG_INF;
  if (HAS_MASK != 0 && mask[seq * pc.tokens + j] == 0) return FLASH_NEG_INF;
  if (pc.window >= 0 && abs(int(i) - int(j)) > pc.window) return FLASH_NEG_INF;
  float s = dot * pc.scale;
  if (HAS_REL != 0) s += LD(ph[hb - j / pc.rel_cols]) + LD(pw[wb - j % pc.rel_cols]);
  return s;
}

// Column c of the context of a query that saw no key.
float flash_unseen(uint c) {
  if (pc.finite_masked == 0) return 0.0;
  float sum = 0.0;
  for (uint j = 0; j < pc.tokens; ++j) sum += LD(v[qkv_base + j * width + c]);
  return sum / float(pc.tokens);
}

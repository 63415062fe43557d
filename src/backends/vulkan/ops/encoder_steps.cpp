#include "backends/vulkan/ops/encoder_steps.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "backends/vulkan/ops/gemm_record.h"
#include "backends/vulkan/ops/row_dispatch.h"

namespace kestrel::vulkan {
namespace {

struct NormPush {  // shaders/norm_rows.comp
  uint32_t row_base, row_end, n, channels, scale_len, bias_len;
  float eps;
};
struct SoftmaxPush {  // shaders/softmax.comp
  uint32_t row_base, row_end, n, inner;
};
struct UnaryPush {  // shaders/unary.comp
  uint32_t base, n;
  float a, b;
};
struct FlashPush {  // shaders/flash_attention_common.glsl
  uint32_t pair_base, tile_base, tokens, heads;
  float scale;
  int32_t window;
  uint32_t finite_masked, rel_rows, rel_cols;
  uint32_t rel_h_stride, rel_w_stride;  // relative_stride(rel_rows), (rel_cols)
};
constexpr int64_t kFlashQueries = 64;  // per workgroup (flash_attention_common.glsl: QT)

// The tensor-core kernel: float16 runs on a device with 16x16x16 products,
// head dims of whole 16x16 fragments up to its 64-key tile, and its 47 KB
// of shared memory.
bool flash_on_tensor_cores(const OpContext& ctx, int64_t hd) {
  return ctx.half() && ctx.device().coop_matrix_fp16 && hd % 16 == 0 && hd <= 64 &&
         ctx.device().max_shared_memory >= 47360;
}
// The tensor-core kernel adds the relative-position terms of a grid of at
// most this many rows plus columns on the tensor cores (its REL_MMA): one
// 16 x 32 product per 16 x 16 block of scores.
constexpr int64_t kFlashRelativeTerms = 32;

// The tensor-core kernel's one-hot tables, one per tile of 64 keys (64 = its
// BC): 32 rows of 64 float16 values, packed two to an int32; column j of
// tile t holds 1.0 in row rows - 1 - ki and row rows + cols - 1 - kj, where
// key t * 64 + j sits at (ki, kj) of the grid (a column past the last key is
// zero). The kernel's 16 x 32 matrix of each query's terms (in that order)
// times it is every score's height plus width term.
std::vector<int32_t> relative_one_hot(int64_t tokens, int64_t rows, int64_t cols) {
  const int64_t tiles = (tokens + 63) / 64;
  std::vector<uint16_t> halves(size_t(tiles * 32 * 64), 0);
  const uint16_t one = float_to_half(1.0f);
  for (int64_t key = 0; key < tokens; ++key) {
    const int64_t t = key / 64, j = key % 64, ki = key / cols, kj = key % cols;
    halves[size_t((t * 32 + rows - 1 - ki) * 64 + j)] = one;
    halves[size_t((t * 32 + rows + cols - 1 - kj) * 64 + j)] = one;
  }
  std::vector<int32_t> packed(halves.size() / 2);
  for (size_t i = 0; i < packed.size(); ++i)
    packed[i] = int32_t(uint32_t(halves[2 * i]) | uint32_t(halves[2 * i + 1]) << 16);
  return packed;
}

// The plain kernel's keys per tile: its K and V tiles and each thread's
// scores within 16 KB of shared memory, the least Vulkan guarantees.
int64_t flash_plain_keys(int64_t hd) { return hd <= 64 ? 16 : 8; }

struct MaskedSoftmaxPush {  // shaders/masked_softmax.comp
  uint32_t row_base, row_end, n, heads;
  int32_t window;
  uint32_t finite_masked, q0, rows;
};


// A view of a float scratch buffer (OpContext::temp_words) from float
// element `first` on; the offset must suit the device (plan_attention's chunks do).
GpuTensor scratch_from(const OpContext& ctx, const GpuTensor& t, int64_t first) {
  GpuTensor v = t;
  const size_t off = size_t(first) * (ctx.half() ? 2 : 4);
  v.view_offset += off;
  v.shape = {int64_t((t.bytes() - std::min(off, t.bytes())) / 4)};
  return v;
}

// out = scores v for every (batch, head), each head's columns in place, for
// `rows` queries from out's first row.
void attention_context(OpContext& ctx, const GpuTensor& scores, const GpuTensor& v, const GpuTensor& out,
                       int64_t batch, int64_t rows, int64_t tokens, int64_t heads, int64_t hd) {
  const int64_t d = heads * hd;
  GemmPlan c;
  init_batch(c.p);
  c.p.M = uint32_t(rows), c.p.N = uint32_t(hd), c.p.K = uint32_t(tokens);
  c.p.alpha = 1;
  c.p.sam = uint32_t(tokens), c.p.sak = 1;
  c.p.sbk = uint32_t(d), c.p.sbn = 1;
  c.p.bdims[2] = uint32_t(batch), c.p.bdims[3] = uint32_t(heads);
  c.p.sab[2] = uint32_t(heads * rows * tokens), c.p.sab[3] = uint32_t(rows * tokens);
  c.p.sbb[2] = uint32_t(tokens * d), c.p.sbb[3] = uint32_t(hd);
  c.p.sym = uint32_t(d);
  c.p.syb[2] = uint32_t(tokens * d), c.p.syb[3] = uint32_t(hd);
  c.batches = uint64_t(batch * heads);
  record_gemm(ctx, c, scores, v, nullptr, out, ActParams{});
}

}  // namespace

void per_head_products(OpContext& ctx, const GpuTensor& q, const GpuTensor& b, const GpuTensor& y, int64_t batch,
                       int64_t rows, int64_t tokens, int64_t n, int64_t heads, int64_t hd, float scale,
                       int64_t b_row_stride, int64_t b_batch_stride, int64_t b_head_stride, int64_t y_row_stride) {
  const int64_t d = heads * hd;
  GemmPlan g;
  init_batch(g.p);
  g.p.M = uint32_t(rows), g.p.N = uint32_t(n), g.p.K = uint32_t(hd);
  g.p.alpha = scale;
  g.p.sam = uint32_t(d), g.p.sak = 1;
  g.p.sbk = 1, g.p.sbn = uint32_t(b_row_stride);  // b^T: b's rows are the columns
  g.b_ncontig = false;
  g.p.bdims[2] = uint32_t(batch), g.p.bdims[3] = uint32_t(heads);
  g.p.sab[2] = uint32_t(tokens * d), g.p.sab[3] = uint32_t(hd);
  g.p.sbb[2] = uint32_t(b_batch_stride), g.p.sbb[3] = uint32_t(b_head_stride);
  g.batches = uint64_t(batch * heads);
  if (y_row_stride > n) {
    g.p.sym = uint32_t(y_row_stride);
    g.p.syb[2] = uint32_t(heads * rows * y_row_stride), g.p.syb[3] = uint32_t(rows * y_row_stride);
    g.y_row_scratch = true;
  }
  record_gemm(ctx, g, q, b, nullptr, y, ActParams{});
}

void layer_norm(OpContext& ctx, const GpuTensor& x, const GpuTensor& scale, const GpuTensor* bias,
                const GpuTensor& y, int64_t rows, int64_t d, float eps, bool x_float32) {
  NormPush p{0, 0, uint32_t(d), 1, uint32_t(d), uint32_t(d), eps};
  dispatch_rows(ctx, norm_rows_shader(ctx, d, x_float32 && ctx.half()), {0, bias ? 1 : 0, 0},
                {In(x), In(scale), In(bias ? *bias : scale), Out(y), Out(y), Out(y)}, &p, sizeof p, uint64_t(rows),
                uint64_t(2 * d));
}

void copy(OpContext& ctx, const GpuTensor& x, const GpuTensor& y, int64_t n) {
  UnaryPush p{0, 0, 0, 0};
  ctx.dispatch_elements("unary", {int32_t(UnaryFn::None)}, {In(x), Out(y)}, &p, sizeof p, uint64_t(n));
}

void copy_mixed(OpContext& ctx, const GpuTensor& x, bool x_float32, const GpuTensor& y, bool y_float32, int64_t n) {
  if (!ctx.half() || (!x_float32 && !y_float32)) return copy(ctx, x, y, n);  // both in the node's precision
  convert_float(ctx, x, y, uint64_t(n),
                !x_float32  ? FloatConversion::ToFloat32
                : y_float32 ? FloatConversion::Float32Words
                            : FloatConversion::ToFloat16);
}

// y[rows, n] = act(x[rows, k] w[k, n] + bias) (+ residual, which may be y).
void linear(OpContext& ctx, const GpuTensor& x, int64_t rows, int64_t k, const GpuTensor& w, const GpuTensor* bias,
            int64_t n, const GpuTensor& y, ActParams act, const GpuTensor* residual, bool y_float32) {
  GemmPlan plan;
  plan.y_float32 = y_float32;
  GemmPush& p = plan.p;
  init_batch(p);
  p.M = uint32_t(rows), p.N = uint32_t(n), p.K = uint32_t(k);
  p.alpha = 1, p.beta = 1;
  p.sam = uint32_t(k), p.sak = 1, p.sbk = uint32_t(n), p.sbn = 1;
  p.scm = 0, p.scn = 1;
  plan.has_c = bias != nullptr;
  record_gemm(ctx, plan, x, w, bias, y, act, residual);
}

AttentionPlan plan_attention(OpContext& ctx, int64_t batch, int64_t heads, int64_t tokens, int64_t width) {
  const uint64_t elem = ctx.half() ? 2 : 4;
  // Chunks start at multiples of `unit` rows: row bytes times unit is a multiple of the alignment.
  const uint64_t align = std::max<uint64_t>(ctx.device().min_storage_buffer_offset_alignment, 4);
  const uint64_t row_bytes = uint64_t(width) * elem;
  const int64_t unit = int64_t(align / std::gcd(row_bytes, align));
  const uint64_t per_row = uint64_t(batch * heads) * uint64_t(tokens) * elem;  // scores of one query row
  const uint64_t budget = std::min<uint64_t>(ctx.device().max_storage_buffer_range, uint64_t(1) << 30);
  int64_t chunk = std::min<int64_t>(tokens, int64_t(budget / std::max<uint64_t>(per_row, 1)));
  if (ctx.attention_chunk() > 0) chunk = std::min<int64_t>(chunk, ctx.attention_chunk());
  if (chunk < tokens) chunk = chunk / unit * unit;
  if (chunk <= 0)
    ctx.unsupported("the attention scores of ", std::min<int64_t>(unit, tokens), " query rows (",
                    per_row * uint64_t(std::min<int64_t>(unit, tokens)), " bytes) are past the device's maxStorageBufferRange");
  // Words: float16 scores take half a word each; whole words are allocated.
  return {chunk, int64_t((uint64_t(batch * heads * chunk * tokens) * elem + 3) / 4)};
}

void chunked_attention(OpContext& ctx, const GpuTensor& q, const GpuTensor& k, const GpuTensor& v,
                       const GpuTensor& scores, const GpuTensor& out, int64_t batch, int64_t tokens, int64_t heads,
                       int64_t hd, float scale, const AttentionPlan& plan, const ChunkSoftmax& softmax) {
  const int64_t d = heads * hd;
  for (int64_t q0 = 0; q0 < tokens; q0 += plan.chunk) {
    const int64_t rows = std::min(plan.chunk, tokens - q0);
    // scores = scale q k^T: k's rows, each head's columns of them.
    per_head_products(ctx, scratch_from(ctx, q, q0 * d), k, scores, batch, rows, tokens, tokens, heads, hd, scale, d,
                      tokens * d, hd);
    softmax(q0, rows);
    attention_context(ctx, scores, v, scratch_from(ctx, out, q0 * d), batch, rows, tokens, heads, hd);
  }
}

void attention(OpContext& ctx, const GpuTensor& q, const GpuTensor& k, const GpuTensor& v, const GpuTensor& scores,
               const GpuTensor& out, int64_t batch, int64_t tokens, int64_t heads, int64_t hd, float scale,
               const AttentionMask* mask, const AttentionPlan& plan) {
  chunked_attention(ctx, q, k, v, scores, out, batch, tokens, heads, hd, scale, plan, [&](int64_t q0, int64_t rows) {
    if (mask) {
      MaskedSoftmaxPush mp{0, 0, uint32_t(tokens), uint32_t(heads), int32_t(mask->window),
                           mask->finite_masked ? 1u : 0u, uint32_t(q0), uint32_t(rows)};
      dispatch_rows(ctx, "masked_softmax", {mask->padding ? 1 : 0},
                    {Out(scores), In(mask->padding ? *mask->padding : scores)}, &mp, sizeof mp,
                    uint64_t(batch * heads * rows), uint64_t(2 * tokens));
    } else {
      SoftmaxPush sp{0, 0, uint32_t(tokens), 1};
      dispatch_rows(ctx, "softmax", {0}, {In(scores), Out(scores)}, &sp, sizeof sp, uint64_t(batch * heads * rows),
                    uint64_t(tokens));
    }
  });
}

bool flash_attention_takes(const OpContext& ctx, int64_t hd) {
  switch (ctx.attention_kernel()) {
    case AttentionKernel::Chunked: return false;
    case AttentionKernel::Flash: return flash_on_tensor_cores(ctx, hd) || (hd >= 1 && hd <= 128);
    case AttentionKernel::Auto: break;
  }
  // Where it was measured faster (BENCHMARKS.md: 1.45x on SAM and ModernBERT
  // on an H200). The plain kernel, timed on the H200's CUDA cores in float32,
  // lost to the chunked path by 1.15x to 1.66x on CLIP, DINOv2 and SAM (won
  // 6% on ModernBERT's padded batch): the chunked path stays the default there.
  return flash_on_tensor_cores(ctx, hd);
}

void flash_attention(OpContext& ctx, const GpuTensor& q, const GpuTensor& k, const GpuTensor& v, const GpuTensor& out,
                     int64_t sequences, int64_t tokens, int64_t heads, int64_t hd, float scale,
                     const AttentionMask* mask, const RelativeTerms* rel) {
  const bool coop = flash_on_tensor_cores(ctx, hd);
  const GpuTensor* padding = mask ? mask->padding : nullptr;
  FlashPush p{0, 0, uint32_t(tokens), uint32_t(heads), scale, mask ? int32_t(mask->window) : -1,
              mask && !mask->finite_masked ? 0u : 1u, rel ? uint32_t(rel->rows) : 0u, rel ? uint32_t(rel->cols) : 0u,
              rel ? uint32_t(relative_stride(rel->rows)) : 0u, rel ? uint32_t(relative_stride(rel->cols)) : 0u};
  std::vector<int32_t> spec = {int32_t(hd), padding ? 1 : 0, rel ? 1 : 0};
  std::vector<Binding> bindings = {In(q), In(k), In(v), Out(out), In(padding ? *padding : q),
                                   In(rel ? *rel->ph : q), In(rel ? *rel->pw : q)};
  GpuTensor one_hot;
  if (coop) {
    // K and V rows (and the queries) start 16-byte aligned: whole uvec4
    // loads; and the output: 4 halves to a store.
    bool vec = true;
    for (const GpuTensor* t : {&q, &k, &v, &out}) vec = vec && t->range(false).offset % 16 == 0;
    spec.push_back(vec ? 1 : 0);
    const bool rel_mma = rel && rel->rows + rel->cols <= kFlashRelativeTerms;
    spec.push_back(rel_mma ? 1 : 0);
    if (rel_mma) one_hot = ctx.upload_i32(relative_one_hot(tokens, rel->rows, rel->cols));
    bindings.push_back(In(rel_mma ? one_hot : q));
  } else {
    spec.push_back(int32_t(flash_plain_keys(hd)));
    spec.push_back(0);              // (constant 4 is the tensor-core kernel's)
    bindings.push_back(In(q));      // (binding 7 too)
  }
  const GpuTensor* key_ends = mask && mask->padding ? mask->key_ends : nullptr;
  spec.push_back(key_ends ? 1 : 0);  // KEY_ENDS
  bindings.push_back(In(key_ends ? *key_ends : q));
  // Bounded dispatches (macs_per_dispatch): whole (sequence, head) pairs,
  // or tiles of one pair's queries where a pair alone is past the bound.
  const int64_t tiles = (tokens + kFlashQueries - 1) / kFlashQueries;
  const uint64_t tile_macs = uint64_t(2 * kFlashQueries * tokens * hd);
  const uint64_t bound = macs_per_dispatch(ctx.device(), uint64_t(1) << 30);
  const int64_t tiles_per = std::clamp<int64_t>(int64_t(bound / tile_macs), 1,
                                                std::min<int64_t>(tiles, ctx.device().max_workgroup_count[0]));
  const int64_t pairs = sequences * heads;
  const int64_t pairs_per = tiles_per < tiles ? 1
                                              : std::clamp<int64_t>(int64_t(bound / (tile_macs * uint64_t(tiles))), 1,
                                                                    std::min<int64_t>(pairs, ctx.device().max_workgroup_count[1]));
  for (int64_t p0 = 0; p0 < pairs; p0 += pairs_per)
    for (int64_t t0 = 0; t0 < tiles; t0 += tiles_per) {
      p.pair_base = uint32_t(p0), p.tile_base = uint32_t(t0);
      ctx.dispatch(coop ? "flash_attention_coop" : "flash_attention", spec, bindings, &p, sizeof p,
                   uint32_t(std::min(tiles_per, tiles - t0)), uint32_t(std::min(pairs_per, pairs - p0)), 1);
    }
}

const GpuTensor& fused_encoder_input(OpContext& ctx, size_t rank) {
  const GpuTensor& x = ctx.input(0);
  const ops::FusedChecks::State state = ctx.fused_checks().state(ctx.node.attr_i("claim_id", 0), x.shape);
  if (state == ops::FusedChecks::State::Withdrawn) ctx.unsupported("the claim was withdrawn; the original ops run on the CPU");
  if (state == ops::FusedChecks::State::Unchecked)
    ctx.unsupported_for_now("first run of this input shape: the fused encoder is checked against the original ops on the CPU");
  if (!x.is_float() || x.shape.size() != rank)
    ctx.unsupported("input ", shape_str(x.shape), rank == 3 ? " is not float [batch, tokens, width]" : " is not a float grid [batch, height, width, channels]");
  return x;
}

}  // namespace kestrel::vulkan

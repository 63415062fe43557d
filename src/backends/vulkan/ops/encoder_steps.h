// The dispatches behind the fused encoder's steps on Vulkan
// (ops/fused_encoder.cpp): LayerNorm rows, a copy, a projection with bias,
// activation and residual in the GEMM's epilogue, and attention of every
// (sequence, head) as batched GEMMs reading Q, K and V through strides.
#pragma once
#include <functional>

#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {

// y = LayerNorm(x) * scale (+ bias) over rows of d. `x_float32`: x is
// float32 in a float16 node (a float32 stream).
void layer_norm(OpContext& ctx, const GpuTensor& x, const GpuTensor& scale, const GpuTensor* bias,
                const GpuTensor& y, int64_t rows, int64_t d, float eps, bool x_float32 = false);

void copy(OpContext& ctx, const GpuTensor& x, const GpuTensor& y, int64_t n);

// n float elements of x into y where either is float32 in a float16 node
// (a float32 stream): converted to the precision of y (y_float32 or the
// node's), or copied as they are when both are float32.
void copy_mixed(OpContext& ctx, const GpuTensor& x, bool x_float32, const GpuTensor& y, bool y_float32, int64_t n);

// y[rows, n] = act(x[rows, k] w[k, n] (+ bias)) (+ residual, which may be y).
// `y_float32`: y and the residual are float32 in a float16 node.
void linear(OpContext& ctx, const GpuTensor& x, int64_t rows, int64_t k, const GpuTensor& w, const GpuTensor* bias,
            int64_t n, const GpuTensor& y, ActParams act, const GpuTensor* residual, bool y_float32 = false);

// Which keys a query sees (shaders/masked_softmax.comp).
struct AttentionMask {
  const GpuTensor* padding = nullptr;  // [batch, tokens], nonzero where a key is real; null: all are
  int64_t window = -1;                 // |query - key| <= window; -1: every key
  bool finite_masked = true;           // masked scores are a finite minimum (else -inf)
  // Each sequence's live tokens (int32), where the padding is right padding
  // and nobody reads the padded queries' rows (a padding-free encoder): flash
  // attention leaves out the key and query tiles past them.
  const GpuTensor* key_ends = nullptr;
};

// How attention is split over the queries: the scores of batch * heads *
// `chunk` queries against every key must fit the device's
// maxStorageBufferRange (mobile GPUs: ~128 MB) and a 1 GiB budget
// (KESTREL_ATTENTION_CHUNK=rows caps the chunk lower), and every chunk must
// start at a binding offset the device accepts in the [.., tokens, width]
// query and context buffers. When not even the smallest chunk fits, the
// node goes to the CPU.
struct AttentionPlan {
  int64_t chunk = 0;        // query rows per chunk
  int64_t score_words = 0;  // the scores buffer: batch * heads * chunk * tokens floats
};
AttentionPlan plan_attention(OpContext& ctx, int64_t batch, int64_t heads, int64_t tokens, int64_t width);

// y[(batch, head), row, j] = scale * q_h[row] . b_(batch, head)[j] for every
// batch and head: q is [batch, tokens, heads * hd] with head h in columns
// [h*hd, (h+1)*hd) (`rows` queries from its first row; q may be a view), b's
// row j starts b_row_stride elements after row j - 1 and its (batch, head)
// block at b_batch_stride and b_head_stride (attention's keys; ViT-Det's
// relative-position tables, shared by every batch and head: strides 0).
// One batched GEMM; y is [batch, heads, rows, n], or [batch, heads, rows,
// y_row_stride] where a stride past n is given: its columns n and beyond
// are then scratch, which the GEMM may write (relative_stride).
void per_head_products(OpContext& ctx, const GpuTensor& q, const GpuTensor& b, const GpuTensor& y, int64_t batch,
                       int64_t rows, int64_t tokens, int64_t n, int64_t heads, int64_t hd, float scale,
                       int64_t b_row_stride, int64_t b_batch_stride, int64_t b_head_stride, int64_t y_row_stride = 0);

// The Softmax step of one chunk of attention: the scores of `rows` queries
// from query q0 on, for every (batch, head), in place (plain, masked, or
// with a bias added first).
using ChunkSoftmax = std::function<void(int64_t q0, int64_t rows)>;

// Attention of every (batch, head) in plan.chunk query rows at a time:
// scores = scale q k^T, softmax(q0, rows), context = scores v. q, k, v are
// [B, T, D] with head h in columns [h*hd, (h+1)*hd); the context lands the
// same way; scores holds plan.score_words floats.
void chunked_attention(OpContext& ctx, const GpuTensor& q, const GpuTensor& k, const GpuTensor& v,
                       const GpuTensor& scores, const GpuTensor& out, int64_t batch, int64_t tokens, int64_t heads,
                       int64_t hd, float scale, const AttentionPlan& plan, const ChunkSoftmax& softmax);

// chunked_attention with a plain Softmax, or one that applies `mask`.
void attention(OpContext& ctx, const GpuTensor& q, const GpuTensor& k, const GpuTensor& v, const GpuTensor& scores,
               const GpuTensor& out, int64_t batch, int64_t tokens, int64_t heads, int64_t hd, float scale,
               const AttentionMask* mask, const AttentionPlan& plan);

// ViT-Det's decomposed relative-position terms for attention: each query's
// products with the rows of the height and width tables (relative_products
// in fused_encoder.cpp) over a rows x cols grid of tokens.
struct RelativeTerms {
  const GpuTensor* ph = nullptr;
  const GpuTensor* pw = nullptr;
  int64_t rows = 0, cols = 0;
};

// The row stride of a query's products with a table of 2 * span - 1 rows:
// rounded up to 8, so the tensor-core GEMM stores them 16 bytes at a time
// (the padding columns are scratch). Stored one entry at a time (127 and 27
// columns: SAM ViT-B's global and windowed layers), its 24 products took
// 1.11 of SAM's 10.7 ms of device time on an H200; padded, 0.33 ms
// (BENCHMARKS.md).
inline int64_t relative_stride(int64_t span) { return (2 * span - 1 + 7) / 8 * 8; }

// Whether flash_attention computes this session's attention for heads of
// `hd`: the session's AttentionKernel (Auto: on tensor cores only), and a
// kernel that takes the head dim on this device (tensor cores: float16
// runs, hd a multiple of 16 up to 64; plain arithmetic: hd up to 128). Else
// chunked_attention does, through a scores buffer (plan_attention).
bool flash_attention_takes(const OpContext& ctx, int64_t hd);

// Attention of every (sequence, head) in one pass per tile of 64 queries
// with an online softmax (shaders/flash_attention*.comp): q, k, v and out as
// chunked_attention's, `mask` and `rel` as masked_softmax.comp and
// relpos_softmax.comp apply them; the scores never reach memory.
void flash_attention(OpContext& ctx, const GpuTensor& q, const GpuTensor& k, const GpuTensor& v, const GpuTensor& out,
                     int64_t sequences, int64_t tokens, int64_t heads, int64_t hd, float scale,
                     const AttentionMask* mask, const RelativeTerms* rel);

// What every fused encoder kernel checks first: the claim agreed for this
// input's shape (else the node runs on the CPU, which checks it) and a float
// [batch, tokens, width] input (rank 4: a grid [batch, height, width,
// channels]). Returns the input.
const GpuTensor& fused_encoder_input(OpContext& ctx, size_t rank = 3);

}  // namespace kestrel::vulkan

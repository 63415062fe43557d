// The steps a fused encoder records on Vulkan (both families' kernels use
// them): LayerNorm rows, a copy, a projection with bias, activation and
// residual in the GEMM's epilogue, and attention of every (batch, head)
// as batched GEMMs reading Q, K and V through strides.
#pragma once
#include <string>

#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {

// y = LayerNorm(x) * scale (+ bias) over rows of d.
void layer_norm(OpContext& ctx, const GpuTensor& x, const GpuTensor& scale, const GpuTensor* bias,
                const GpuTensor& y, int64_t rows, int64_t d, float eps);

void copy(OpContext& ctx, const GpuTensor& x, const GpuTensor& y, int64_t n);

// y[rows, n] = act(x[rows, k] w[k, n] (+ bias)) (+ residual, which may be y).
void linear(OpContext& ctx, const GpuTensor& x, int64_t rows, int64_t k, const GpuTensor& w, const GpuTensor* bias,
            int64_t n, const GpuTensor& y, ActParams act, const GpuTensor* residual);

// Which keys a query sees (shaders/masked_softmax.comp).
struct AttentionMask {
  const GpuTensor* padding = nullptr;  // [batch, tokens], nonzero where a key is real; null: all are
  int64_t window = -1;                 // |query - key| <= window; -1: every key
  bool finite_masked = true;           // masked scores are a finite minimum (else -inf)
};

// scores = scale q k^T for every (batch, head) (layouts as in attention below).
void attention_scores(OpContext& ctx, const GpuTensor& q, const GpuTensor& k, const GpuTensor& scores, int64_t batch,
                      int64_t tokens, int64_t heads, int64_t hd, float scale);
// out = scores v for every (batch, head), each head's columns in place.
void attention_context(OpContext& ctx, const GpuTensor& scores, const GpuTensor& v, const GpuTensor& out,
                       int64_t batch, int64_t tokens, int64_t heads, int64_t hd);

// Softmax(scale q k^T [masked]) v for every (batch, head); q, k, v are
// [B, T, D] with head h in columns [h*hd, (h+1)*hd); the context lands the
// same way. scores holds B*H*T*T floats.
void attention(OpContext& ctx, const GpuTensor& q, const GpuTensor& k, const GpuTensor& v, const GpuTensor& scores,
               const GpuTensor& out, int64_t batch, int64_t tokens, int64_t heads, int64_t hd, float scale,
               const AttentionMask* mask);

// What every fused encoder kernel checks first: the claim agreed for this
// input's shape (else the node runs on the CPU, which checks it), a float
// [batch, tokens, width] input (rank 4: a grid [batch, height, width,
// channels]) and, unless half_ok, a float32 run. Returns the input.
const GpuTensor& fused_encoder_input(OpContext& ctx, bool half_ok, size_t rank = 3);

// A fused node's per-layer inputs (Spec::input(layer, slot) gives the index).
template <typename Spec>
struct LayerInputs {
  OpContext& ctx;
  const Spec& spec;
  const GpuTensor* optional(int64_t layer, int slot) const {
    int i = spec.input(layer, slot);
    return ctx.has_input(i) ? &ctx.input(i) : nullptr;
  }
  const GpuTensor& need(int64_t layer, int slot) const {
    const GpuTensor* t = optional(layer, slot);
    if (!t) ctx.fail("layer ", layer, " misses input slot ", slot);
    return *t;
  }
};

// Words of the attention scores buffer (batch * heads * tokens^2), or the
// node goes to the CPU when that is past maxStorageBufferRange.
int64_t score_words(OpContext& ctx, int64_t batch, int64_t heads, int64_t tokens);

// The GEMM epilogue activation a fused node names.
ActParams encoder_activation(const OpContext& ctx, const std::string& name);

}  // namespace kestrel::vulkan

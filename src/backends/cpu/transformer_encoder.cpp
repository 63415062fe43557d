// The fused transformer encoder (com.kestrel TransformerEncoder, see
// families/families.h) on the CPU: each layer is LayerNorm, one QKV GEMM over
// all tokens, attention per (batch, head), the output GEMM, the residual,
// LayerNorm, two MLP GEMMs around the activation, the residual. The
// residual stream stays float32.
//
// It runs through run_checked (fused_check.h): checked against the node's
// original ops on the first run of each input shape.
#include <cmath>
#include <cstdio>

#include "backends/cpu/encoder_math.h"
#include "backends/cpu/fused_check.h"
#include "families/encoder_spec.h"
#include "ops/common.h"
#include "ops/gemm_util.h"

namespace kestrel::backends::cpu {
namespace {

using ops::KernelContext;
using ops::parallel_for;
namespace fam = kestrel::families;

// Multi-head attention of one (batch, head) per task: qkv rows are
// [q | k | v] of width 3D; out rows are D wide. With a key padding mask
// [batch, tokens], keys where it is 0 are left out (as the graph's -inf does).
void attention(const KernelContext& ctx, const float* qkv, float* out, int64_t batch, int64_t tokens, int64_t heads,
               int64_t hd, float scale, const std::vector<float>* mask) {
  const int64_t d = heads * hd;
  parallel_for(ctx, batch * heads, 1, [&](int64_t task) {
    static thread_local std::vector<float> scores;
    scores.resize(size_t(tokens * tokens));
    const int64_t b = task / heads, h = task % heads;
    const float* q = qkv + b * tokens * 3 * d + h * hd;
    ops::sgemm_serial(false, true, tokens, tokens, hd, scale, q, 3 * d, q + d, 3 * d, 0.f, scores.data(), tokens);
    if (mask)
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t j = 0; j < tokens; ++j)
          if ((*mask)[size_t(b * tokens + j)] == 0.f) scores[size_t(t * tokens + j)] = -INFINITY;
    for (int64_t t = 0; t < tokens; ++t) {
      float* row = scores.data() + t * tokens;
      float mx = row[0];
      for (int64_t j = 1; j < tokens; ++j) mx = std::max(mx, row[j]);
      double sum = 0;
      for (int64_t j = 0; j < tokens; ++j) sum += (row[j] = std::exp(row[j] - mx));
      const float inv = float(1.0 / sum);
      for (int64_t j = 0; j < tokens; ++j) row[j] *= inv;
    }
    ops::sgemm_serial(false, false, tokens, hd, tokens, 1.f, scores.data(), tokens, q + 2 * d, 3 * d, 0.f,
                      out + b * tokens * d + h * hd, d);
  });
}

std::vector<Tensor> run_fused(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.dtype() != DType::Float32 || X.rank() != 3) ctx.fail("expects a float32 [batch, tokens, width] input, got ", shape_str(X.shape()));
  const fam::EncoderSpec spec = fam::EncoderSpec::of(ctx.node);
  const int64_t layers = spec.layers, heads = spec.heads, hd = spec.head_dim;
  const int64_t batch = X.dim(0), tokens = X.dim(1), d = X.dim(2), rows = batch * tokens;
  if (heads * hd != d) ctx.fail("width ", d, " is not heads ", heads, " x head_dim ", hd);
  const std::vector<float>& eps = spec.epsilons;
  const std::vector<int64_t>& taps = spec.taps;
  const EncoderAct act = encoder_act(ctx, spec.activation);
  auto in = [&](int64_t layer, int slot) -> const float* {
    int i = spec.input(layer, slot);
    return ctx.has_input(i) ? ctx.input(i).data<float>() : nullptr;
  };
  const int64_t f = ctx.input(spec.input(0, fam::kFc1Weight)).dim(1);

  std::vector<float> x(size_t(rows * d)), y(size_t(rows * d)), qkv(size_t(rows * 3 * d)), att(size_t(rows * d)),
      o(size_t(rows * d)), hidden(size_t(rows * f));
  std::vector<float> mask;
  if (ctx.has_input(fam::EncoderSpec::kMaskInput)) {
    const Tensor& m = ctx.input(fam::EncoderSpec::kMaskInput);
    if (m.rank() != 2 || m.dim(0) != batch || m.dim(1) != tokens)
      ctx.fail("key padding mask ", shape_str(m.shape()), " does not match ", batch, " sequences of ", tokens, " tokens");
    mask = m.to_f32();
  }
  if (spec.pre_norm) {
    layer_norm_rows(ctx, X.data<float>(), x.data(), rows, d, ctx.input(spec.pre_norm_input).data<float>(),
                    ctx.has_input(spec.pre_norm_input + 1) ? ctx.input(spec.pre_norm_input + 1).data<float>()
                                                                  : nullptr,
                    spec.pre_norm_epsilon);
  } else {
    std::copy(X.data<float>(), X.data<float>() + rows * d, x.begin());
  }
  std::vector<Tensor> outs;
  size_t next_tap = 0;
  for (int64_t l = 0; l < layers; ++l) {
    layer_norm_rows(ctx, x.data(), y.data(), rows, d, in(l, fam::kNorm1Scale), in(l, fam::kNorm1Bias), eps[size_t(2 * l)]);
    for (int j = 0; j < 3; ++j)  // Q, K, V side by side in rows of 3D
      project(ctx, y.data(), rows, d, in(l, fam::kQWeight + j), in(l, fam::kQBias + j), d, qkv.data() + j * d, 3 * d);
    attention(ctx, qkv.data(), att.data(), batch, tokens, heads, hd, spec.scales[size_t(l)], mask.empty() ? nullptr : &mask);
    project(ctx, att.data(), rows, d, in(l, fam::kOutWeight), in(l, fam::kOutBias), d, o.data(), d);
    add_residual(ctx, x.data(), o.data(), rows, d);
    layer_norm_rows(ctx, x.data(), y.data(), rows, d, in(l, fam::kNorm2Scale), in(l, fam::kNorm2Bias), eps[size_t(2 * l + 1)]);
    project(ctx, y.data(), rows, d, in(l, fam::kFc1Weight), in(l, fam::kFc1Bias), f, hidden.data(), f, act);
    project(ctx, hidden.data(), rows, f, in(l, fam::kFc2Weight), in(l, fam::kFc2Bias), d, o.data(), d);
    add_residual(ctx, x.data(), o.data(), rows, d);
    if (next_tap < taps.size() && taps[next_tap] == l) {
      Tensor t = Tensor::from_f32(X.shape(), x);
      outs.push_back(t);
      ++next_tap;
    }
  }
  return outs;
}

void run_transformer_encoder(KernelContext& ctx) { run_checked(ctx, run_fused); }

}  // namespace

KESTREL_OP(TransformerEncoder, {.domain = "com.kestrel", .run = run_transformer_encoder});

}  // namespace kestrel::backends::cpu

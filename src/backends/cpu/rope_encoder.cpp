// The fused rotary text encoder (com.kestrel RopeEncoder, the ModernBERT
// family; families/rope_spec.h) on the CPU. Per layer: [LayerNorm], the QKV
// GEMM of all tokens, rotary embedding of q and k, attention per (sequence,
// head) over that sequence's live keys only (and within the sliding window
// on local layers), the output GEMM and residual; LayerNorm, the gated MLP
// (act(first half) * second half), the residual. The residual stream stays
// float32. A padding mask must be right padding (a run of ones, then zeros):
// anything else is refused with an error naming the row.
#include <cmath>
#include <limits>

#include "backends/cpu/encoder_math.h"
#include "backends/cpu/fused_check.h"
#include "families/rope_spec.h"
#include "families/rotary_tables.h"
#include "ops/gemm_util.h"

namespace kestrel::backends::cpu {
namespace {

using ops::KernelContext;
using ops::parallel_for;
namespace fam = kestrel::families;

const float* data_or_null(const Tensor* t) { return t ? t->data<float>() : nullptr; }

// Rotary embedding of every head of q and k (columns [0, 2D) of qkv rows) at the row's position.
void rotate(const KernelContext& ctx, float* qkv, int64_t batch, int64_t tokens, int64_t d, int64_t hd,
            const fam::RotaryTables& tables) {
  const int64_t half = hd / 2;
  parallel_for(ctx, batch * tokens, 8, [&](int64_t r) {
    const int64_t pos = r % tokens;
    float* row = qkv + r * 3 * d;
    for (int64_t j = 0; j < half; ++j) {
      const float c = tables.cos[size_t(pos * half + j)], s = tables.sin[size_t(pos * half + j)];
      for (int64_t h = 0; h < 2 * d / hd; ++h) {  // query heads then key heads
        float* x = row + h * hd;
        const float a = x[j], b = x[j + half];
        x[j] = a * c - b * s;
        x[j + half] = b * c + a * s;
      }
    }
  });
}

// Attention of every (sequence, head) over the sequence's live keys, within
// `window` of the query when window >= 0. A query with no key it may see
// gets what the graph's mask gives it: a uniform average of every value for
// a finite masked score, zeros for -inf (the exporters' NaN guard).
void attention(const KernelContext& ctx, const float* qkv, float* out, int64_t batch, int64_t tokens, int64_t heads,
               int64_t hd, float scale, int64_t window, float masked_score, const std::vector<int64_t>& live) {
  const int64_t d = heads * hd;
  parallel_for(ctx, batch * heads, 1, [&](int64_t task) {
    static thread_local std::vector<float> scores;
    const int64_t b = task / heads, h = task % heads, n = live[size_t(b)];
    const float* q = qkv + b * tokens * 3 * d + h * hd;
    float* o = out + b * tokens * d + h * hd;
    scores.assign(size_t(tokens * std::max<int64_t>(n, 1)), 0.f);
    if (n > 0) ops::sgemm_serial(false, true, tokens, n, hd, scale, q, 3 * d, q + d, 3 * d, 0.f, scores.data(), n);
    std::vector<bool> empty(size_t(tokens), false);
    for (int64_t i = 0; i < tokens; ++i) {
      const int64_t lo = window < 0 ? 0 : std::max<int64_t>(0, i - window);
      const int64_t hi = window < 0 ? n : std::min<int64_t>(n, i + window + 1);
      float* row = scores.data() + i * std::max<int64_t>(n, 1);
      if (lo >= hi) {
        std::fill(row, row + std::max<int64_t>(n, 1), 0.f);
        empty[size_t(i)] = true;
        continue;
      }
      float mx = row[lo];
      for (int64_t j = lo + 1; j < hi; ++j) mx = std::max(mx, row[j]);
      double sum = 0;
      for (int64_t j = lo; j < hi; ++j) sum += (row[j] = std::exp(row[j] - mx));
      const float inv = float(1.0 / sum);
      for (int64_t j = 0; j < n; ++j) row[j] = j >= lo && j < hi ? row[j] * inv : 0.f;
    }
    if (n > 0) {
      ops::sgemm_serial(false, false, tokens, hd, n, 1.f, scores.data(), n, q + 2 * d, 3 * d, 0.f, o, d);
    } else {
      for (int64_t i = 0; i < tokens; ++i) std::fill(o + i * d, o + i * d + hd, 0.f);
    }
    for (int64_t i = 0; i < tokens; ++i) {
      if (!empty[size_t(i)]) continue;
      float* oi = o + i * d;
      std::fill(oi, oi + hd, 0.f);
      if (!std::isfinite(masked_score)) continue;
      for (int64_t j = 0; j < tokens; ++j)
        for (int64_t c = 0; c < hd; ++c) oi[c] += q[j * 3 * d + 2 * d + c] / float(tokens);
    }
  });
}

std::vector<Tensor> run_fused(KernelContext& ctx) {
  const fam::RopeSpec spec = fam::RopeSpec::of(ctx.node);
  const Tensor& X = ctx.input(0);
  if (X.dtype() != DType::Float32 || X.rank() != 3) ctx.fail("expects a float32 [batch, tokens, width] input, got ", shape_str(X.shape()));
  const int64_t batch = X.dim(0), tokens = X.dim(1), d = X.dim(2), rows = batch * tokens, hd = spec.head_dim;
  if (spec.heads * hd != d) ctx.fail("width ", d, " is not heads ", spec.heads, " x head_dim ", hd);
  const std::vector<int64_t> live = ctx.has_input(fam::RopeSpec::kMaskInput)
                                        ? fam::right_padded_lengths(ctx.node, ctx.input(fam::RopeSpec::kMaskInput), batch, tokens)
                                        : std::vector<int64_t>(size_t(batch), tokens);
  auto in = [&](int64_t layer, int slot) -> const Tensor* {
    int i = spec.input(layer, slot);
    return ctx.has_input(i) ? &ctx.input(i) : nullptr;
  };
  const int64_t f = in(0, fam::kFc2Weight)->dim(0);
  const EncoderAct act = encoder_act(ctx, spec.activation);
  std::vector<float> x(X.data<float>(), X.data<float>() + rows * d), y(size_t(rows * d)), qkv(size_t(rows * 3 * d)),
      att(size_t(rows * d)), o(size_t(rows * d)), hidden(size_t(rows * 2 * f)), gated(size_t(rows * f));
  std::vector<Tensor> outs;
  size_t next_tap = 0;
  for (int64_t l = 0; l < spec.layers; ++l) {
    const float* a_in = x.data();
    if (const Tensor* g = in(l, fam::kNorm1Scale)) {
      layer_norm_rows(ctx, x.data(), y.data(), rows, d, g->data<float>(), data_or_null(in(l, fam::kNorm1Bias)),
                      spec.epsilons[size_t(2 * l)]);
      a_in = y.data();
    }
    for (int j = 0; j < 3; ++j)  // Q, K, V side by side in rows of 3D
      project(ctx, a_in, rows, d, in(l, fam::kQWeight + j)->data<float>(), data_or_null(in(l, fam::kQBias + j)), d,
              qkv.data() + j * d, 3 * d);
    const std::vector<float> freq(spec.inv_freq.begin() + l * hd / 2, spec.inv_freq.begin() + (l + 1) * hd / 2);
    rotate(ctx, qkv.data(), batch, tokens, d, hd, *fam::rotary_tables(freq, tokens));
    attention(ctx, qkv.data(), att.data(), batch, tokens, spec.heads, hd, spec.scales[size_t(l)],
              spec.windows[size_t(l)], spec.masked_scores[size_t(l)], live);
    project(ctx, att.data(), rows, d, in(l, fam::kOutWeight)->data<float>(), data_or_null(in(l, fam::kOutBias)), d,
            o.data(), d);
    add_residual(ctx, x.data(), o.data(), rows, d);
    layer_norm_rows(ctx, x.data(), y.data(), rows, d, in(l, fam::kNorm2Scale)->data<float>(),
                    data_or_null(in(l, fam::kNorm2Bias)), spec.epsilons[size_t(2 * l + 1)]);
    project(ctx, y.data(), rows, d, in(l, fam::kFc1Weight)->data<float>(), data_or_null(in(l, fam::kFc1Bias)), 2 * f,
            hidden.data(), 2 * f);
    parallel_for(ctx, rows, 8, [&](int64_t r) {
      for (int64_t j = 0; j < f; ++j)
        gated[size_t(r * f + j)] = activate(act, hidden[size_t(r * 2 * f + j)]) * hidden[size_t(r * 2 * f + f + j)];
    });
    project(ctx, gated.data(), rows, f, in(l, fam::kFc2Weight)->data<float>(), data_or_null(in(l, fam::kFc2Bias)), d,
            o.data(), d);
    add_residual(ctx, x.data(), o.data(), rows, d);
    if (next_tap < spec.taps.size() && spec.taps[next_tap] == l) {
      outs.push_back(Tensor::from_f32(X.shape(), x));
      ++next_tap;
    }
  }
  return outs;
}

void run_rope_encoder(KernelContext& ctx) { run_checked(ctx, run_fused); }

}  // namespace

KESTREL_OP(RopeEncoder, {.domain = "com.kestrel", .run = run_rope_encoder});

}  // namespace kestrel::backends::cpu

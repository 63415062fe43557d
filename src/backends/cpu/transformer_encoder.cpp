// The fused transformer encoder (com.kestrel TransformerEncoder, see
// families/families.h) on the CPU: each layer is LayerNorm, one QKV GEMM over
// all tokens, attention per (batch, head), the output GEMM, the residual,
// LayerNorm, two MLP GEMMs around the activation, the residual. The
// residual stream stays float32.
//
// On the first run of each input shape the node's original subgraph runs
// too and the outputs are compared; if they disagree the claim is withdrawn
// (with one warning) and the original ops run from then on.
#include <cmath>
#include <cstdio>

#include "families/claim_state.h"
#include "families/encoder_spec.h"
#include "ops/common.h"
#include "ops/gemm_util.h"

namespace kestrel::backends::cpu {
namespace {

using ops::KernelContext;
using ops::parallel_for;
namespace fam = kestrel::families;

enum class Act { GeluErf, GeluTanh, QuickGelu, Silu, Relu };

Act act_of(const KernelContext& ctx, const std::string& a) {
  if (a == "gelu") return Act::GeluErf;
  if (a == "gelu_tanh") return Act::GeluTanh;
  if (a == "quick_gelu") return Act::QuickGelu;
  if (a == "silu") return Act::Silu;
  if (a == "relu") return Act::Relu;
  ctx.fail("unknown activation '", a, "'");
}

void layer_norm(const KernelContext& ctx, const float* x, float* y, int64_t rows, int64_t d, const float* g,
                const float* b, float eps) {
  parallel_for(ctx, rows, 8, [&](int64_t r) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mean += xr[i];
    mean /= double(d);
    for (int64_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const double inv = 1.0 / std::sqrt(var / double(d) + eps);
    for (int64_t i = 0; i < d; ++i) yr[i] = float((xr[i] - mean) * inv) * g[i] + (b ? b[i] : 0.f);
  });
}

// y[rows, n] (row stride ldy) = x[rows, k] * w[k, n] + bias, then the activation if any.
void linear(const KernelContext& ctx, const float* x, int64_t rows, int64_t k, const float* w, const float* bias,
            int64_t n, float* y, int64_t ldy, const Act* act = nullptr) {
  ops::sgemm(ctx, false, false, rows, n, k, 1.f, x, k, w, n, 0.f, y, ldy);
  parallel_for(ctx, rows, 8, [&](int64_t r) {
    float* yr = y + r * ldy;
    for (int64_t j = 0; j < n; ++j) yr[j] += bias[j];
    if (!act) return;
    for (int64_t j = 0; j < n; ++j) {
      const float v = yr[j];
      switch (*act) {
        case Act::GeluErf: yr[j] = 0.5f * v * (1.f + std::erf(v * float(M_SQRT1_2))); break;
        case Act::GeluTanh:
          yr[j] = 0.5f * v * (1.f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
          break;
        case Act::QuickGelu: yr[j] = v / (1.f + std::exp(-1.702f * v)); break;
        case Act::Silu: yr[j] = v / (1.f + std::exp(-v)); break;
        case Act::Relu: yr[j] = v > 0 ? v : 0.f; break;
      }
    }
  });
}

// x += o.
void residual(const KernelContext& ctx, float* x, const float* o, int64_t rows, int64_t d) {
  parallel_for(ctx, rows, 8, [&](int64_t r) {
    for (int64_t i = 0; i < d; ++i) x[r * d + i] += o[r * d + i];
  });
}

// Multi-head attention of one batch element per task: qkv rows are
// [q | k | v] of width 3D; out rows are D wide.
void attention(const KernelContext& ctx, const float* qkv, float* out, int64_t batch, int64_t tokens, int64_t heads,
               int64_t hd, float scale) {
  const int64_t d = heads * hd;
  parallel_for(ctx, batch * heads, 1, [&](int64_t task) {
    static thread_local std::vector<float> scores;
    scores.resize(size_t(tokens * tokens));
    const int64_t b = task / heads, h = task % heads;
    const float* q = qkv + b * tokens * 3 * d + h * hd;
    ops::sgemm_serial(false, true, tokens, tokens, hd, scale, q, 3 * d, q + d, 3 * d, 0.f, scores.data(), tokens);
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
  const Act act = act_of(ctx, spec.activation);
  auto in = [&](int64_t layer, int slot) -> const float* {
    int i = spec.input(layer, slot);
    return ctx.has_input(i) ? ctx.input(i).data<float>() : nullptr;
  };
  const int64_t f = ctx.input(spec.input(0, fam::kFc1Weight)).dim(1);

  std::vector<float> x(size_t(rows * d)), y(size_t(rows * d)), qkv(size_t(rows * 3 * d)), att(size_t(rows * d)),
      o(size_t(rows * d)), hidden(size_t(rows * f));
  if (spec.pre_norm) {
    layer_norm(ctx, X.data<float>(), x.data(), rows, d, ctx.input(1).data<float>(),
               ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr, spec.pre_norm_epsilon);
  } else {
    std::copy(X.data<float>(), X.data<float>() + rows * d, x.begin());
  }
  std::vector<Tensor> outs;
  size_t next_tap = 0;
  for (int64_t l = 0; l < layers; ++l) {
    layer_norm(ctx, x.data(), y.data(), rows, d, in(l, fam::kNorm1Scale), in(l, fam::kNorm1Bias), eps[size_t(2 * l)]);
    for (int j = 0; j < 3; ++j)  // Q, K, V side by side in rows of 3D
      linear(ctx, y.data(), rows, d, in(l, fam::kQWeight + j), in(l, fam::kQBias + j), d, qkv.data() + j * d, 3 * d);
    attention(ctx, qkv.data(), att.data(), batch, tokens, heads, hd, spec.scales[size_t(l)]);
    linear(ctx, att.data(), rows, d, in(l, fam::kOutWeight), in(l, fam::kOutBias), d, o.data(), d);
    residual(ctx, x.data(), o.data(), rows, d);
    layer_norm(ctx, x.data(), y.data(), rows, d, in(l, fam::kNorm2Scale), in(l, fam::kNorm2Bias), eps[size_t(2 * l + 1)]);
    linear(ctx, y.data(), rows, d, in(l, fam::kFc1Weight), in(l, fam::kFc1Bias), f, hidden.data(), f, &act);
    linear(ctx, hidden.data(), rows, f, in(l, fam::kFc2Weight), in(l, fam::kFc2Bias), d, o.data(), d);
    residual(ctx, x.data(), o.data(), rows, d);
    if (next_tap < taps.size() && taps[next_tap] == l) {
      Tensor t = Tensor::from_f32(X.shape(), x);
      outs.push_back(t);
      ++next_tap;
    }
  }
  return outs;
}

// Cosine and worst error over the reference's range of two float32 tensors.
std::pair<double, double> agreement(const Tensor& a, const Tensor& b) {
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  double dot = 0, nx = 0, ny = 0, worst = 0, range = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    dot += double(x[i]) * y[i];
    nx += double(x[i]) * x[i];
    ny += double(y[i]) * y[i];
    worst = std::max(worst, std::fabs(double(x[i]) - y[i]));
    range = std::max(range, std::fabs(double(y[i])));
  }
  double cosine = nx > 0 && ny > 0 ? dot / std::sqrt(nx * ny) : (nx == ny ? 1.0 : 0.0);
  return {cosine, worst / (range + 1e-12)};
}

void run_transformer_encoder(KernelContext& ctx) {
  const ir::Attribute* original = ctx.node.attr("original");
  if (!original || !original->g) ctx.fail("has no original subgraph");
  const int64_t id = ctx.node.attr_i("claim_id", 0);
  const Shape shape = ctx.input(0).shape();
  const fam::CheckState state = fam::check_state(id, shape);
  std::vector<Tensor> outs;
  if (state == fam::CheckState::Withdrawn) {
    outs = ctx.run_subgraph(*original->g, {ctx.input(0)});
  } else if (state == fam::CheckState::Agreed) {
    outs = run_fused(ctx);
  } else {
    outs = run_fused(ctx);
    std::vector<Tensor> ref = ctx.run_subgraph(*original->g, {ctx.input(0)});
    std::string disagreement;
    for (size_t i = 0; i < ref.size() && disagreement.empty(); ++i) {
      if (i >= outs.size() || outs[i].shape() != ref[i].shape()) {
        disagreement = "output " + std::to_string(i) + " has another shape";
        continue;
      }
      auto [cosine, max_rel] = agreement(outs[i], ref[i].cast(DType::Float32));
      // Both sides compute in float32; only the order of sums differs.
      if (!(cosine >= 0.999999 && max_rel <= 1e-4))
        disagreement = "output " + std::to_string(i) + ": cosine " + std::to_string(cosine) + ", max error " +
                       std::to_string(max_rel) + " of its range";
    }
    fam::record_check(id, shape, disagreement.empty());
    if (!disagreement.empty()) {
      std::fprintf(stderr, "kestrel: withdrew the %s encoder claim (%s): the fused encoder disagrees with the graph's own ops (%s); running those ops instead\n",
                   ctx.node.attr_s("family", "?").c_str(), ctx.node.name.c_str(), disagreement.c_str());
      outs = ref;
    }
  }
  if (int(outs.size()) != ctx.num_outputs()) ctx.fail("computed ", outs.size(), " outputs for ", ctx.num_outputs());
  for (size_t i = 0; i < outs.size(); ++i) ctx.set_output(int(i), std::move(outs[i]));
}

}  // namespace

KESTREL_OP(TransformerEncoder, {.domain = "com.kestrel", .run = run_transformer_encoder});

}  // namespace kestrel::backends::cpu

// The fused ViT-Det encoder (com.kestrel ViTDetEncoder, SAM's image encoder;
// families/vitdet_spec.h) on the CPU. Per layer: LayerNorm over the grid,
// the tokens gathered into windows (zeros past the grid's edges: the graph
// pads after the LayerNorm), one GEMM per projection over every window's
// tokens, attention per (window, head) with the decomposed relative-position
// bias added to the scores, the context scattered back onto the grid (the
// padding dropped), the output projection, the residual, the MLP.
//
// It runs through run_checked (fused_check.h): checked against the node's
// original ops on the first run of each input shape.
#include <cmath>

#include "backends/cpu/encoder_math.h"
#include "backends/cpu/fused_check.h"
#include "families/vitdet_spec.h"
#include "ops/common.h"
#include "ops/gemm_util.h"

namespace kestrel::backends::cpu {
namespace {

using ops::KernelContext;
using ops::parallel_for;
namespace fam = kestrel::families;

// Row of window token (w, t) on the grid, or -1 for padding.
int64_t grid_row(const fam::WindowGrid& g, int64_t height, int64_t width, int64_t w, int64_t t) {
  const int64_t per_image = g.per_row * g.per_col;
  const int64_t b = w / per_image, wr = (w % per_image) / g.per_col, wc = w % g.per_col;
  const int64_t r = wr * g.rows + t / g.cols, c = wc * g.cols + t % g.cols;
  if (r >= height || c >= width) return -1;
  return (b * height + r) * width + c;
}

// Softmax(scale q k^T + bias) v per (window, head); qkv rows are [q | k | v]
// of width 3D. bias[(i, j), (ki, kj)] = q . rel_h[i - ki + rows - 1] + q . rel_w[j - kj + cols - 1].
void attention(const KernelContext& ctx, const float* qkv, float* out, int64_t windows, const fam::WindowGrid& g,
               int64_t heads, int64_t hd, float scale, const float* rel_h, const float* rel_w) {
  const int64_t d = heads * hd, T = g.tokens();
  parallel_for(ctx, windows * heads, 1, [&](int64_t task) {
    static thread_local std::vector<float> scores, bias;
    scores.resize(size_t(T * T));
    bias.resize(size_t(T * (g.rows + g.cols)));
    const int64_t w = task / heads, h = task % heads;
    const float* q = qkv + w * T * 3 * d + h * hd;
    ops::sgemm_serial(false, true, T, T, hd, scale, q, 3 * d, q + d, 3 * d, 0.f, scores.data(), T);
    for (int64_t t = 0; t < T; ++t) {
      const float* qt = q + t * 3 * d;
      const int64_t i = t / g.cols, j = t % g.cols;
      float* bt = bias.data() + t * (g.rows + g.cols);
      for (int64_t k = 0; k < g.rows; ++k) {
        const float* r = rel_h + (i - k + g.rows - 1) * hd;
        float s = 0;
        for (int64_t c = 0; c < hd; ++c) s += qt[c] * r[c];
        bt[k] = s;
      }
      for (int64_t k = 0; k < g.cols; ++k) {
        const float* r = rel_w + (j - k + g.cols - 1) * hd;
        float s = 0;
        for (int64_t c = 0; c < hd; ++c) s += qt[c] * r[c];
        bt[g.rows + k] = s;
      }
      float* row = scores.data() + t * T;
      float mx = -INFINITY;
      for (int64_t s = 0; s < T; ++s) mx = std::max(mx, row[s] += bt[s / g.cols] + bt[g.rows + s % g.cols]);
      double sum = 0;
      for (int64_t s = 0; s < T; ++s) sum += (row[s] = std::exp(row[s] - mx));
      const float inv = float(1.0 / sum);
      for (int64_t s = 0; s < T; ++s) row[s] *= inv;
    }
    ops::sgemm_serial(false, false, T, hd, T, 1.f, scores.data(), T, q + 2 * d, 3 * d, 0.f, out + w * T * d + h * hd, d);
  });
}

std::vector<Tensor> run_fused(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.dtype() != DType::Float32 || X.rank() != 4)
    ctx.fail("expects a float32 [batch, height, width, channels] input, got ", shape_str(X.shape()));
  const fam::ViTDetSpec spec = fam::ViTDetSpec::of(ctx.node);
  const int64_t heads = spec.heads, hd = spec.head_dim;
  const int64_t batch = X.dim(0), height = X.dim(1), width = X.dim(2), d = X.dim(3), rows = batch * height * width;
  if (heads * hd != d) ctx.fail("width ", d, " is not heads ", heads, " x head_dim ", hd);
  const EncoderAct act = encoder_act(ctx, spec.activation);
  auto in = [&](int64_t layer, int slot) -> const float* {
    int i = spec.input(layer, slot);
    return ctx.has_input(i) ? ctx.input(i).data<float>() : nullptr;
  };
  const int64_t f = ctx.input(spec.input(0, fam::kFc1Weight)).dim(1);
  std::vector<float> x(X.data<float>(), X.data<float>() + rows * d), y(size_t(rows * d)), att(size_t(rows * d)),
      o(size_t(rows * d)), hidden(size_t(rows * f)), windowed, qkv, context;
  std::vector<Tensor> outs;
  size_t next_tap = 0;
  for (int64_t l = 0; l < spec.layers; ++l) {
    const fam::WindowGrid g = fam::WindowGrid::of(height, width, spec.windows[size_t(l)]);
    const Tensor& rh = ctx.input(spec.input(l, fam::kRelPosH));
    const Tensor& rw = ctx.input(spec.input(l, fam::kRelPosW));
    if (rh.dim(0) != 2 * g.rows - 1 || rw.dim(0) != 2 * g.cols - 1)
      ctx.fail("layer ", l, ": relative-position tables of ", rh.dim(0), " and ", rw.dim(0), " rows do not span its ",
               g.rows, "x", g.cols, " attention grid (", 2 * g.rows - 1, " and ", 2 * g.cols - 1, " rows)");
    const int64_t windows = batch * g.per_row * g.per_col, T = g.tokens(), wrows = windows * T;
    layer_norm_rows(ctx, x.data(), y.data(), rows, d, in(l, fam::kNorm1Scale), in(l, fam::kNorm1Bias),
                    spec.epsilons[size_t(2 * l)]);
    const float* a_in = y.data();
    if (spec.windows[size_t(l)] > 0) {
      windowed.assign(size_t(wrows * d), 0.f);
      parallel_for(ctx, wrows, 64, [&](int64_t r) {
        const int64_t src = grid_row(g, height, width, r / T, r % T);
        if (src >= 0) std::copy(y.data() + src * d, y.data() + (src + 1) * d, windowed.data() + r * d);
      });
      a_in = windowed.data();
    }
    qkv.resize(size_t(wrows * 3 * d));
    context.resize(size_t(wrows * d));
    for (int j = 0; j < 3; ++j)
      project(ctx, a_in, wrows, d, in(l, fam::kQWeight + j), in(l, fam::kQBias + j), d, qkv.data() + j * d, 3 * d);
    attention(ctx, qkv.data(), context.data(), windows, g, heads, hd, spec.scales[size_t(l)], rh.data<float>(),
              rw.data<float>());
    const float* c_out = context.data();
    if (spec.windows[size_t(l)] > 0) {
      parallel_for(ctx, wrows, 64, [&](int64_t r) {
        const int64_t dst = grid_row(g, height, width, r / T, r % T);
        if (dst >= 0) std::copy(context.data() + r * d, context.data() + (r + 1) * d, att.data() + dst * d);
      });
      c_out = att.data();
    }
    project(ctx, c_out, rows, d, in(l, fam::kOutWeight), in(l, fam::kOutBias), d, o.data(), d);
    add_residual(ctx, x.data(), o.data(), rows, d);
    layer_norm_rows(ctx, x.data(), y.data(), rows, d, in(l, fam::kNorm2Scale), in(l, fam::kNorm2Bias),
                    spec.epsilons[size_t(2 * l + 1)]);
    project(ctx, y.data(), rows, d, in(l, fam::kFc1Weight), in(l, fam::kFc1Bias), f, hidden.data(), f, act);
    project(ctx, hidden.data(), rows, f, in(l, fam::kFc2Weight), in(l, fam::kFc2Bias), d, o.data(), d);
    add_residual(ctx, x.data(), o.data(), rows, d);
    if (next_tap < spec.taps.size() && spec.taps[next_tap] == l) {
      outs.push_back(Tensor::from_f32(X.shape(), x));
      ++next_tap;
    }
  }
  return outs;
}

void run_vitdet_encoder(KernelContext& ctx) { run_checked(ctx, run_fused); }

}  // namespace

KESTREL_OP(ViTDetEncoder, {.domain = "com.kestrel", .run = run_vitdet_encoder});

}  // namespace kestrel::backends::cpu

// The fused ViT-Det encoder (com.kestrel ViTDetEncoder, SAM's image encoder;
// families/vitdet_spec.h) on Vulkan. Per layer: LayerNorm over the grid;
// in windowed layers the tokens gathered into windows (window.comp, zeros
// past the grid's edges); the Q, K and V projections of every window's
// tokens; the scores of every (window, head) as one batched GEMM; the
// relative-position terms (relpos.comp, the graph's two Einsums) added in
// the Softmax (relpos_softmax.comp); the context GEMM; the windows written
// back onto the grid; the output projection adding the residual; LayerNorm;
// fc1 with the activation; fc2 adding the residual.
//
// The node runs here once its claim has been checked on the CPU for the
// input's shape (the first run of each shape goes there).
#include <algorithm>

#include "backends/vulkan/ops/encoder_steps.h"
#include "backends/vulkan/ops/row_dispatch.h"
#include "families/vitdet_spec.h"

namespace kestrel::vulkan {
namespace {

namespace fam = kestrel::families;

struct WindowPush {  // shaders/window.comp
  uint32_t base, n, height, width, channels, rows, cols, per_row, per_col;
};
struct RelPosPush {  // shaders/relpos.comp
  uint32_t base, n, heads, head_dim, rows, cols;
};
struct RelSoftmaxPush {  // shaders/relpos_softmax.comp
  uint32_t row_base, row_end, rows, cols, q0, chunk_rows;
};

void move_windows(OpContext& ctx, bool scatter, const GpuTensor& from, const GpuTensor& to, const fam::WindowGrid& g,
                  int64_t height, int64_t width, int64_t d, int64_t window_rows) {
  WindowPush p{0, 0, uint32_t(height), uint32_t(width), uint32_t(d), uint32_t(g.rows), uint32_t(g.cols),
               uint32_t(g.per_row), uint32_t(g.per_col)};
  ctx.dispatch_elements("window", {scatter ? 1 : 0}, {In(from), Out(to)}, &p, sizeof p, uint64_t(window_rows * d));
}

void record_vitdet_encoder(OpContext& ctx) {
  const ir::Node& n = ctx.node;
  // In float16 runs every tensor here is stored as float16 with float32
  // arithmetic (as in the other vision encoders).
  const GpuTensor& X = fused_encoder_input(ctx, true, 4);
  const fam::ViTDetSpec spec = fam::ViTDetSpec::of(n);
  const int64_t heads = spec.heads, hd = spec.head_dim;
  const int64_t batch = X.shape[0], height = X.shape[1], width = X.shape[2], d = X.shape[3];
  const int64_t rows = batch * height * width;
  if (heads * hd != d) ctx.fail("width ", d, " is not heads ", heads, " x head_dim ", hd);
  const LayerInputs<decltype(spec)> inputs{ctx, spec};
  auto in = [&](int64_t layer, int slot) { return inputs.optional(layer, slot); };
  auto need = [&](int64_t layer, int slot) -> const GpuTensor& { return inputs.need(layer, slot); };
  const int64_t f = need(0, fam::kFc1Weight).shape.back();
  // Buffers sized for the largest layer (windowed layers cover the padding too).
  int64_t most_rows = rows, most_scores = 0, most_rel = 0;
  std::vector<AttentionPlan> plans;
  for (int64_t l = 0; l < spec.layers; ++l) {
    const fam::WindowGrid g = fam::WindowGrid::of(height, width, spec.windows[size_t(l)]);
    const int64_t windows = batch * g.per_row * g.per_col;
    if (need(l, fam::kRelPosH).shape[0] != 2 * g.rows - 1 || need(l, fam::kRelPosW).shape[0] != 2 * g.cols - 1)
      ctx.fail("layer ", l, ": relative-position tables do not span its ", g.rows, "x", g.cols, " attention grid");
    most_rows = std::max(most_rows, windows * g.tokens());
    plans.push_back(plan_attention(ctx, windows, heads, g.tokens(), d));
    most_scores = std::max(most_scores, plans.back().score_words);
    most_rel = std::max(most_rel, windows * heads * g.tokens() * (g.rows + g.cols));
  }
  std::vector<GpuTensor*> outs;
  for (size_t i = 0; i < spec.taps.size(); ++i) outs.push_back(&ctx.output(int(i), DType::Float32, X.shape));
  auto temp = [&](int64_t floats) { return ctx.temp_words(size_t(floats)); };
  GpuTensor x = temp(rows * d), y = temp(rows * d), windowed = temp(most_rows * d), q = temp(most_rows * d),
            k = temp(most_rows * d), v = temp(most_rows * d), context = temp(most_rows * d), att = temp(rows * d),
            hidden = temp(rows * f), scores = temp(most_scores), rel = temp(most_rel);
  copy(ctx, X, x, rows * d);
  const ActParams act = encoder_activation(ctx, spec.activation);
  size_t next_tap = 0;
  for (int64_t l = 0; l < spec.layers; ++l) {
    const bool windows_on = spec.windows[size_t(l)] > 0;
    const fam::WindowGrid g = fam::WindowGrid::of(height, width, spec.windows[size_t(l)]);
    const int64_t windows = batch * g.per_row * g.per_col, T = g.tokens(), wrows = windows * T;
    layer_norm(ctx, x, need(l, fam::kNorm1Scale), in(l, fam::kNorm1Bias), y, rows, d, spec.epsilons[size_t(2 * l)]);
    if (windows_on) move_windows(ctx, false, y, windowed, g, height, width, d, wrows);
    const GpuTensor& a_in = windows_on ? windowed : y;
    const GpuTensor* qkv[3] = {&q, &k, &v};
    for (int j = 0; j < 3; ++j)
      linear(ctx, a_in, wrows, d, need(l, fam::kQWeight + j), &need(l, fam::kQBias + j), d, *qkv[j], ActParams{}, nullptr);
    RelPosPush rp{0, 0, uint32_t(heads), uint32_t(hd), uint32_t(g.rows), uint32_t(g.cols)};
    ctx.dispatch_elements("relpos", {}, {In(q), In(need(l, fam::kRelPosH)), In(need(l, fam::kRelPosW)), Out(rel)}, &rp,
                          sizeof rp, uint64_t(windows * heads * T * (g.rows + g.cols)));
    chunked_attention(ctx, q, k, v, scores, context, windows, T, heads, hd, spec.scales[size_t(l)], plans[size_t(l)],
                      [&](int64_t q0, int64_t n_q) {
                        RelSoftmaxPush sp{0, 0, uint32_t(g.rows), uint32_t(g.cols), uint32_t(q0), uint32_t(n_q)};
                        dispatch_rows(ctx, "relpos_softmax", {}, {Out(scores), In(rel)}, &sp, sizeof sp,
                                      uint64_t(windows * heads * n_q), uint64_t(2 * T));
                      });
    if (windows_on) move_windows(ctx, true, context, att, g, height, width, d, wrows);
    linear(ctx, windows_on ? att : context, rows, d, need(l, fam::kOutWeight), &need(l, fam::kOutBias), d, x,
           ActParams{}, &x);
    layer_norm(ctx, x, need(l, fam::kNorm2Scale), in(l, fam::kNorm2Bias), y, rows, d, spec.epsilons[size_t(2 * l + 1)]);
    linear(ctx, y, rows, d, need(l, fam::kFc1Weight), &need(l, fam::kFc1Bias), f, hidden, act, nullptr);
    linear(ctx, hidden, rows, f, need(l, fam::kFc2Weight), &need(l, fam::kFc2Bias), d, x, ActParams{}, &x);
    if (next_tap < spec.taps.size() && spec.taps[next_tap] == l) copy(ctx, x, *outs[next_tap++], rows * d);
  }
}

}  // namespace

KESTREL_VK_OP(ViTDetEncoder, {.domain = "com.kestrel", .record = record_vitdet_encoder});

}  // namespace kestrel::vulkan

// The fused rotary text encoder (com.kestrel RopeEncoder, the ModernBERT
// family; families/rope_spec.h) on Vulkan: per layer, [LayerNorm], the Q, K
// and V projections, the rotary embedding of Q and K (shaders/rope.comp,
// with cos/sin tables computed on the host), attention with the padding
// mask and sliding window applied in the Softmax (masked_softmax.comp), the
// output projection adding the residual, LayerNorm, fc1, the gate
// (glu.comp), fc2 adding the residual. float32 runs only, once the claim
// is checked for the input's shape (its first run goes to the CPU).
#include <cmath>
#include <map>

#include "backends/vulkan/ops/encoder_steps.h"
#include "families/rope_spec.h"
#include "families/rotary_tables.h"

namespace kestrel::vulkan {
namespace {

namespace fam = kestrel::families;

struct RopePush {  // shaders/rope.comp
  uint32_t base, n, tokens, heads, half_dim;
};
struct GluPush {  // shaders/glu.comp
  uint32_t base, n, f;
  float a, b;
};

void record_rope_encoder(OpContext& ctx) {
  const ir::Node& n = ctx.node;
  // float16 storage would round the residual stream (ModernBERT-large's
  // reaches ~29000, where float16 steps by 16): this kernel keeps float32.
  const GpuTensor& X = fused_encoder_input(ctx, false);
  const fam::RopeSpec spec = fam::RopeSpec::of(n);
  const int64_t batch = X.shape[0], tokens = X.shape[1], d = X.shape[2], rows = batch * tokens;
  const int64_t heads = spec.heads, hd = spec.head_dim, half = hd / 2;
  if (heads * hd != d) ctx.fail("width ", d, " is not heads ", heads, " x head_dim ", hd);
  // The mask is read on the host: it must be right padding (as on the CPU),
  // and the shader gets it as int32.
  AttentionMask mask;
  GpuTensor padding;
  if (ctx.has_input(fam::RopeSpec::kMaskInput)) {
    const Tensor& m = ctx.host_input(fam::RopeSpec::kMaskInput);
    fam::right_padded_lengths(n, m, batch, tokens);
    std::vector<float> values = m.to_f32();
    padding = ctx.upload_i32(std::vector<int32_t>(values.begin(), values.end()));
    mask.padding = &padding;
  }
  const LayerInputs<decltype(spec)> inputs{ctx, spec};
  auto in = [&](int64_t layer, int slot) { return inputs.optional(layer, slot); };
  auto need = [&](int64_t layer, int slot) -> const GpuTensor& { return inputs.need(layer, slot); };
  const int64_t f = need(0, fam::kFc2Weight).shape[0];
  const AttentionPlan plan = plan_attention(ctx, batch, heads, tokens, d);

  std::vector<GpuTensor*> outs;
  for (size_t i = 0; i < spec.taps.size(); ++i) outs.push_back(&ctx.output(int(i), DType::Float32, X.shape));
  auto temp = [&](int64_t floats) { return ctx.temp_words(size_t(floats)); };
  GpuTensor x = temp(rows * d), y = temp(rows * d), q = temp(rows * d), k = temp(rows * d), v = temp(rows * d),
            att = temp(rows * d), hidden = temp(rows * 2 * f), gated = temp(rows * f),
            scores = temp(plan.score_words);
  copy(ctx, X, x, rows * d);
  // cos/sin tables per distinct frequency set (global and local layers differ).
  std::map<std::vector<float>, std::pair<GpuTensor, GpuTensor>> tables;
  const ActParams act = encoder_activation(ctx, spec.activation);
  size_t next_tap = 0;
  for (int64_t l = 0; l < spec.layers; ++l) {
    std::vector<float> freq(spec.inv_freq.begin() + l * half, spec.inv_freq.begin() + (l + 1) * half);
    if (!tables.count(freq)) {
      auto t = fam::rotary_tables(freq, tokens);
      tables.emplace(freq, std::make_pair(ctx.upload_f32(t->cos), ctx.upload_f32(t->sin)));
    }
    const auto& [cos_t, sin_t] = tables.at(freq);
    const GpuTensor* a_in = &x;
    if (const GpuTensor* g = in(l, fam::kNorm1Scale)) {
      layer_norm(ctx, x, *g, in(l, fam::kNorm1Bias), y, rows, d, spec.epsilons[size_t(2 * l)]);
      a_in = &y;
    }
    const GpuTensor* qkv[3] = {&q, &k, &v};
    for (int j = 0; j < 3; ++j)
      linear(ctx, *a_in, rows, d, need(l, fam::kQWeight + j), in(l, fam::kQBias + j), d, *qkv[j], ActParams{}, nullptr);
    for (const GpuTensor* t : {&q, &k}) {
      RopePush p{0, 0, uint32_t(tokens), uint32_t(heads), uint32_t(half)};
      ctx.dispatch_elements("rope", {}, {Out(*t), In(cos_t), In(sin_t)}, &p, sizeof p, uint64_t(rows * heads * half));
    }
    mask.window = spec.windows[size_t(l)];
    mask.finite_masked = std::isfinite(spec.masked_scores[size_t(l)]);
    attention(ctx, q, k, v, scores, att, batch, tokens, heads, hd, spec.scales[size_t(l)], &mask, plan);
    linear(ctx, att, rows, d, need(l, fam::kOutWeight), in(l, fam::kOutBias), d, x, ActParams{}, &x);
    layer_norm(ctx, x, need(l, fam::kNorm2Scale), in(l, fam::kNorm2Bias), y, rows, d, spec.epsilons[size_t(2 * l + 1)]);
    linear(ctx, y, rows, d, need(l, fam::kFc1Weight), in(l, fam::kFc1Bias), 2 * f, hidden, ActParams{}, nullptr);
    GluPush gp{0, 0, uint32_t(f), act.a, act.b};
    ctx.dispatch_elements("glu", {int32_t(act.act)}, {In(hidden), Out(gated)}, &gp, sizeof gp, uint64_t(rows * f));
    linear(ctx, gated, rows, f, need(l, fam::kFc2Weight), in(l, fam::kFc2Bias), d, x, ActParams{}, &x);
    if (next_tap < spec.taps.size() && spec.taps[next_tap] == l) copy(ctx, x, *outs[next_tap++], rows * d);
  }
}

}  // namespace

KESTREL_VK_OP(RopeEncoder, {.domain = "com.kestrel",
                             .record = record_rope_encoder,
                             .host_inputs = {families::RopeSpec::kMaskInput},
                             .half_ok = false});

}  // namespace kestrel::vulkan

// The fused transformer encoder (com.kestrel TransformerEncoder, see
// families/families.h) on Vulkan: per layer, LayerNorm (norm_rows), the Q,
// K and V projections of all tokens, the scores of every (batch, head) as
// one batched GEMM reading the projections through strides, Softmax over
// the keys, the context GEMM writing each head's columns in place, the
// output projection adding the residual in its epilogue, LayerNorm, fc1
// with the activation in its epilogue, fc2 adding the residual. Eleven
// dispatches a layer, no copies between them.
//
// The node runs here once its claim has been checked on the CPU for the
// input's shape (the first run of each shape goes there).
#include "backends/vulkan/ops/encoder_steps.h"
#include "families/encoder_spec.h"

namespace kestrel::vulkan {
namespace {

namespace fam = kestrel::families;

void record_encoder(OpContext& ctx) {
  const ir::Node& n = ctx.node;
  // In float16 runs every tensor here, the residual stream included, is
  // stored as float16 with float32 arithmetic (the vision encoders' streams
  // stay far inside float16's range).
  const GpuTensor& X = fused_encoder_input(ctx, true);
  const fam::EncoderSpec spec = fam::EncoderSpec::of(n);
  const int64_t layers = spec.layers, heads = spec.heads, hd = spec.head_dim;
  const int64_t batch = X.shape[0], tokens = X.shape[1], d = X.shape[2], rows = batch * tokens;
  if (heads * hd != d) ctx.fail("width ", d, " is not heads ", heads, " x head_dim ", hd);
  const std::vector<float>& eps = spec.epsilons;
  const std::vector<int64_t>& taps = spec.taps;
  const LayerInputs<decltype(spec)> inputs{ctx, spec};
  auto in = [&](int64_t layer, int slot) { return inputs.optional(layer, slot); };
  auto need = [&](int64_t layer, int slot) -> const GpuTensor& { return inputs.need(layer, slot); };
  const int64_t f = need(0, fam::kFc1Weight).shape.back();
  const AttentionPlan plan = plan_attention(ctx, batch, heads, tokens, d);

  std::vector<GpuTensor*> outs;
  for (size_t i = 0; i < taps.size(); ++i) outs.push_back(&ctx.output(int(i), DType::Float32, X.shape));
  auto temp = [&](int64_t floats) { return ctx.temp_words(size_t(floats)); };
  GpuTensor x = temp(rows * d), y = temp(rows * d), q = temp(rows * d), k = temp(rows * d), v = temp(rows * d),
            att = temp(rows * d), hidden = temp(rows * f), scores = temp(plan.score_words);
  // A key padding mask is read on the host and goes to the Softmax as int32.
  AttentionMask mask{nullptr, -1, false};
  GpuTensor padding;
  if (ctx.has_input(fam::EncoderSpec::kMaskInput)) {
    const Tensor& m = ctx.host_input(fam::EncoderSpec::kMaskInput);
    if (m.rank() != 2 || m.dim(0) != batch || m.dim(1) != tokens)
      ctx.fail("key padding mask ", shape_str(m.shape()), " does not match ", batch, " sequences of ", tokens, " tokens");
    std::vector<float> values = m.to_f32();
    padding = ctx.upload_i32(std::vector<int32_t>(values.begin(), values.end()));
    mask.padding = &padding;
  }
  if (spec.pre_norm) {
    layer_norm(ctx, X, ctx.input(spec.pre_norm_input),
               ctx.has_input(spec.pre_norm_input + 1) ? &ctx.input(spec.pre_norm_input + 1) : nullptr, x,
               rows, d, spec.pre_norm_epsilon);
  } else {
    copy(ctx, X, x, rows * d);
  }
  const ActParams act = encoder_activation(ctx, spec.activation);
  size_t next_tap = 0;
  for (int64_t l = 0; l < layers; ++l) {
    layer_norm(ctx, x, need(l, fam::kNorm1Scale), in(l, fam::kNorm1Bias), y, rows, d, eps[size_t(2 * l)]);
    const GpuTensor* qkv[3] = {&q, &k, &v};
    for (int j = 0; j < 3; ++j)
      linear(ctx, y, rows, d, need(l, fam::kQWeight + j), &need(l, fam::kQBias + j), d, *qkv[j], ActParams{}, nullptr);
    attention(ctx, q, k, v, scores, att, batch, tokens, heads, hd, spec.scales[size_t(l)], mask.padding ? &mask : nullptr, plan);
    linear(ctx, att, rows, d, need(l, fam::kOutWeight), &need(l, fam::kOutBias), d, x, ActParams{}, &x);
    layer_norm(ctx, x, need(l, fam::kNorm2Scale), in(l, fam::kNorm2Bias), y, rows, d, eps[size_t(2 * l + 1)]);
    linear(ctx, y, rows, d, need(l, fam::kFc1Weight), &need(l, fam::kFc1Bias), f, hidden, act, nullptr);
    linear(ctx, hidden, rows, f, need(l, fam::kFc2Weight), &need(l, fam::kFc2Bias), d, x, ActParams{}, &x);
    if (next_tap < taps.size() && taps[next_tap] == l) copy(ctx, x, *outs[next_tap++], rows * d);
  }
}

}  // namespace

KESTREL_VK_OP(TransformerEncoder, {.domain = "com.kestrel",
                                    .record = record_encoder,
                                    .host_inputs = {families::EncoderSpec::kMaskInput}});

}  // namespace kestrel::vulkan

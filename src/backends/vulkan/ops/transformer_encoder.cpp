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
#include "backends/vulkan/ops/gemm_record.h"
#include "backends/vulkan/ops/row_dispatch.h"
#include "families/claim_state.h"
#include "families/encoder_spec.h"

namespace kestrel::vulkan {
namespace {

namespace fam = kestrel::families;

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

void layer_norm(OpContext& ctx, const GpuTensor& x, const GpuTensor& scale, const GpuTensor* bias,
                const GpuTensor& y, int64_t rows, int64_t d, float eps) {
  NormPush p{0, 0, uint32_t(d), 1, uint32_t(d), uint32_t(d), eps};
  dispatch_rows(ctx, "norm_rows", {0, bias ? 1 : 0, 0},
                {In(x), In(scale), In(bias ? *bias : scale), Out(y), Out(y), Out(y)}, &p, sizeof p, uint64_t(rows),
                uint64_t(2 * d));
}

void copy(OpContext& ctx, const GpuTensor& x, const GpuTensor& y, int64_t n) {
  UnaryPush p{0, 0, 0, 0};
  ctx.dispatch_elements("unary", {int32_t(Act::None)}, {In(x), Out(y)}, &p, sizeof p, uint64_t(n));
}

// y[rows, n] = act(x[rows, k] w[k, n] + bias) (+ residual, which may be y).
void linear(OpContext& ctx, const GpuTensor& x, int64_t rows, int64_t k, const GpuTensor& w, const GpuTensor& bias,
            int64_t n, const GpuTensor& y, ActParams act, const GpuTensor* residual) {
  GemmPlan plan;
  GemmPush& p = plan.p;
  init_batch(p);
  p.M = uint32_t(rows), p.N = uint32_t(n), p.K = uint32_t(k);
  p.alpha = 1, p.beta = 1;
  p.sam = uint32_t(k), p.sak = 1, p.sbk = uint32_t(n), p.sbn = 1;
  p.scm = 0, p.scn = 1;
  plan.has_c = true;
  record_gemm(ctx, plan, x, w, &bias, y, act, residual);
}

// Softmax(scale q k^T) v for every (batch, head); q, k, v are [B, T, D]
// with head h in columns [h*hd, (h+1)*hd); the context lands the same way.
void attention(OpContext& ctx, const GpuTensor& q, const GpuTensor& k, const GpuTensor& v, const GpuTensor& scores,
               const GpuTensor& out, int64_t batch, int64_t tokens, int64_t heads, int64_t hd, float scale) {
  const int64_t d = heads * hd;
  GemmPlan s;
  init_batch(s.p);
  s.p.M = s.p.N = uint32_t(tokens), s.p.K = uint32_t(hd);
  s.p.alpha = scale;
  s.p.sam = uint32_t(d), s.p.sak = 1;
  s.p.sbk = 1, s.p.sbn = uint32_t(d);  // k^T: k's rows are the columns
  s.b_ncontig = false;
  s.p.bdims[2] = uint32_t(batch), s.p.bdims[3] = uint32_t(heads);
  s.p.sab[2] = s.p.sbb[2] = uint32_t(tokens * d);
  s.p.sab[3] = s.p.sbb[3] = uint32_t(hd);
  s.batches = uint64_t(batch * heads);
  record_gemm(ctx, s, q, k, nullptr, scores, ActParams{});

  SoftmaxPush sp{0, 0, uint32_t(tokens), 1};
  dispatch_rows(ctx, "softmax", {0}, {In(scores), Out(scores)}, &sp, sizeof sp, uint64_t(batch * heads * tokens),
                uint64_t(tokens));

  GemmPlan c;
  init_batch(c.p);
  c.p.M = uint32_t(tokens), c.p.N = uint32_t(hd), c.p.K = uint32_t(tokens);
  c.p.alpha = 1;
  c.p.sam = uint32_t(tokens), c.p.sak = 1;
  c.p.sbk = uint32_t(d), c.p.sbn = 1;
  c.p.bdims[2] = uint32_t(batch), c.p.bdims[3] = uint32_t(heads);
  c.p.sab[2] = uint32_t(heads * tokens * tokens), c.p.sab[3] = uint32_t(tokens * tokens);
  c.p.sbb[2] = uint32_t(tokens * d), c.p.sbb[3] = uint32_t(hd);
  c.p.sym = uint32_t(d);
  c.p.syb[2] = uint32_t(tokens * d), c.p.syb[3] = uint32_t(hd);
  c.batches = uint64_t(batch * heads);
  record_gemm(ctx, c, scores, v, nullptr, out, ActParams{});
}

ActParams activation(const OpContext& ctx, const std::string& a) {
  if (a == "gelu") return {Act::Gelu, 0, 0};
  if (a == "gelu_tanh") return {Act::GeluTanh, 0, 0};
  if (a == "quick_gelu") return {Act::SigmoidScaled, 1.702f, 0};
  if (a == "silu") return {Act::Silu, 0, 0};
  if (a == "relu") return {Act::Relu, 0, 0};
  ctx.fail("unknown activation '", a, "'");
}

void record_encoder(OpContext& ctx) {
  const ir::Node& n = ctx.node;
  const GpuTensor& X = ctx.input(0);
  const fam::CheckState state = fam::check_state(n.attr_i("claim_id", 0), X.shape);
  if (state == fam::CheckState::Withdrawn) ctx.unsupported("the claim was withdrawn; the original ops run on the CPU");
  if (state == fam::CheckState::Unchecked)
    ctx.unsupported("first run of this input shape: the fused encoder is checked against the original ops on the CPU");
  // float16 storage would round the residual stream (ModernBERT-large's
  // reaches ~29000) and every GEMM input; this kernel keeps float32.
  if (ctx.half()) ctx.unsupported("float16 storage: the fused encoder runs in float32 runs only");
  if (!X.is_float() || X.shape.size() != 3) ctx.unsupported("input ", shape_str(X.shape), " is not float [batch, tokens, width]");
  const fam::EncoderSpec spec = fam::EncoderSpec::of(n);
  const int64_t layers = spec.layers, heads = spec.heads, hd = spec.head_dim;
  const int64_t batch = X.shape[0], tokens = X.shape[1], d = X.shape[2], rows = batch * tokens;
  if (heads * hd != d) ctx.fail("width ", d, " is not heads ", heads, " x head_dim ", hd);
  const std::vector<float>& eps = spec.epsilons;
  const std::vector<int64_t>& taps = spec.taps;
  auto in = [&](int64_t layer, int slot) -> const GpuTensor* {
    int i = spec.input(layer, slot);
    return ctx.has_input(i) ? &ctx.input(i) : nullptr;
  };
  auto need = [&](int64_t layer, int slot) -> const GpuTensor& {
    const GpuTensor* t = in(layer, slot);
    if (!t) ctx.fail("layer ", layer, " misses input slot ", slot);
    return *t;
  };
  const int64_t f = need(0, fam::kFc1Weight).shape.back();
  const uint64_t score_bytes = uint64_t(batch * heads) * uint64_t(tokens * tokens) * 4;
  if (score_bytes > ctx.device().max_storage_buffer_range)
    ctx.unsupported("the attention scores (", score_bytes, " bytes) are past the device's maxStorageBufferRange");

  std::vector<GpuTensor*> outs;
  for (size_t i = 0; i < taps.size(); ++i) outs.push_back(&ctx.output(int(i), DType::Float32, X.shape));
  auto temp = [&](int64_t floats) { return ctx.temp_words(size_t(floats)); };
  GpuTensor x = temp(rows * d), y = temp(rows * d), q = temp(rows * d), k = temp(rows * d), v = temp(rows * d),
            att = temp(rows * d), hidden = temp(rows * f), scores = temp(int64_t(score_bytes / 4));
  if (spec.pre_norm) {
    layer_norm(ctx, X, ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr, x, rows, d, spec.pre_norm_epsilon);
  } else {
    copy(ctx, X, x, rows * d);
  }
  const ActParams act = activation(ctx, spec.activation);
  size_t next_tap = 0;
  for (int64_t l = 0; l < layers; ++l) {
    layer_norm(ctx, x, need(l, fam::kNorm1Scale), in(l, fam::kNorm1Bias), y, rows, d, eps[size_t(2 * l)]);
    const GpuTensor* qkv[3] = {&q, &k, &v};
    for (int j = 0; j < 3; ++j)
      linear(ctx, y, rows, d, need(l, fam::kQWeight + j), need(l, fam::kQBias + j), d, *qkv[j], ActParams{}, nullptr);
    attention(ctx, q, k, v, scores, att, batch, tokens, heads, hd, spec.scales[size_t(l)]);
    linear(ctx, att, rows, d, need(l, fam::kOutWeight), need(l, fam::kOutBias), d, x, ActParams{}, &x);
    layer_norm(ctx, x, need(l, fam::kNorm2Scale), in(l, fam::kNorm2Bias), y, rows, d, eps[size_t(2 * l + 1)]);
    linear(ctx, y, rows, d, need(l, fam::kFc1Weight), need(l, fam::kFc1Bias), f, hidden, act, nullptr);
    linear(ctx, hidden, rows, f, need(l, fam::kFc2Weight), need(l, fam::kFc2Bias), d, x, ActParams{}, &x);
    if (next_tap < taps.size() && taps[next_tap] == l) copy(ctx, x, *outs[next_tap++], rows * d);
  }
}

}  // namespace

KESTREL_VK_OP(TransformerEncoder, {.domain = "com.kestrel", .record = record_encoder, .half_ok = false});

}  // namespace kestrel::vulkan

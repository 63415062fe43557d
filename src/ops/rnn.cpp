// LSTM, GRU and RNN (inference). The input projection of every time step is
// one GEMM up front; each step then needs only the recurrent GEMM of the
// batch's hidden state and the elementwise gate math.

#include <cctype>
#include <cmath>
#include <cstring>
#include <string>

#include "ops/common.h"
#include "ops/elementwise.h"
#include "ops/gemm_util.h"

namespace kestrel::ops {
namespace {

enum class Cell { Lstm, Gru, Rnn };

// One activation function with its alpha/beta (ONNX's RNN activation list),
// named once at load: the cell calls it for every gate of every step.
struct Act {
  enum Kind { Sigmoid, Tanh, Relu, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };
  Kind kind = Tanh;
  float alpha = 0, beta = 0;
  float operator()(float x) const {
    switch (kind) {
      case Sigmoid: return ew::sigmoid(x);
      case Tanh: return ew::fast_tanh(x);
      case Relu: return x > 0 ? x : 0.0f;
      case Affine: return alpha * x + beta;
      case LeakyRelu: return x >= 0 ? x : alpha * x;
      case ThresholdedRelu: return x > alpha ? x : 0.0f;
      case ScaledTanh: return alpha * ew::fast_tanh(beta * x);
      case HardSigmoid: return std::clamp(alpha * x + beta, 0.0f, 1.0f);
      case Elu: return x >= 0 ? x : alpha * (std::exp(x) - 1);
      case Softsign: return x / (1 + std::fabs(x));
      case Softplus: return std::log1p(std::exp(x));
    }
    return x;
  }
  // In place over n values: the two common kinds as loops the compiler
  // vectorizes (the same functions as the Sigmoid and Tanh ops).
  void apply(float* v, int64_t n) const {
    if (kind == Sigmoid) {
      for (int64_t i = 0; i < n; ++i) v[i] = ew::sigmoid(v[i]);
    } else if (kind == Tanh) {
      for (int64_t i = 0; i < n; ++i) v[i] = ew::fast_tanh(v[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) v[i] = (*this)(v[i]);
    }
  }
};

std::vector<Act> read_activations(const KernelContext& ctx, Cell cell, int dirs) {
  static const char* kDefaults[][3] = {{"sigmoid", "tanh", "tanh"}, {"sigmoid", "tanh", ""}, {"tanh", "", ""}};
  int per = cell == Cell::Lstm ? 3 : cell == Cell::Gru ? 2 : 1;
  const ir::Node& n = ctx.node;
  std::vector<std::string> names;
  if (const ir::Attribute* a = n.attr("activations")) names = a->strings;
  if (names.empty())
    for (int d = 0; d < dirs; ++d)
      for (int k = 0; k < per; ++k) names.push_back(kDefaults[int(cell)][k]);
  if (int(names.size()) != per * dirs)
    ctx.fail("activations lists ", names.size(), " functions; expected ", per * dirs, " (", per, " per direction)");
  std::vector<float> alphas = n.attr_floats("activation_alpha"), betas = n.attr_floats("activation_beta");
  std::vector<Act> acts;
  size_t ai = 0, bi = 0;
  for (std::string s : names) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    // In the order of Act::Kind.
    static const char* kKnown[] = {"sigmoid", "tanh", "relu", "affine", "leakyrelu", "thresholdedrelu",
                                   "scaledtanh", "hardsigmoid", "elu", "softsign", "softplus"};
    auto known = std::find(std::begin(kKnown), std::end(kKnown), s);
    if (known == std::end(kKnown)) ctx.fail("unknown activation function '", s, "'");
    Act a;
    a.kind = Act::Kind(known - std::begin(kKnown));
    // Defaults as in the ONNX operator definitions; given values are taken in order.
    float da = s == "leakyrelu" ? 0.01f : s == "hardsigmoid" ? 0.2f : 1.0f;
    float db = s == "hardsigmoid" ? 0.5f : s == "affine" ? 0.0f : 1.0f;
    bool uses_a = s == "affine" || s == "leakyrelu" || s == "thresholdedrelu" || s == "scaledtanh" ||
                  s == "hardsigmoid" || s == "elu";
    bool uses_b = s == "affine" || s == "scaledtanh" || s == "hardsigmoid";
    a.alpha = uses_a && ai < alphas.size() ? alphas[ai++] : da;
    a.beta = uses_b && bi < betas.size() ? betas[bi++] : db;
    acts.push_back(a);
  }
  return acts;
}

// C[m, n] (+)= A[m, k] * B[n, k]^T with leading dimensions. A step of a
// small batch reads all of B (the weights) for few rows of A: when that is
// large, spread B's rows over the threads in blocks of at least 64.
void gemm_nt(const KernelContext& ctx, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
             int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  // Past ~1M multiply-adds only: smaller steps finish before a team wakes.
  const bool big = m * n * k >= (int64_t(1) << 20);
  const int64_t parts = big ? std::clamp<int64_t>(std::min<int64_t>(ctx.threads(), n / 64), 1, n) : 1;
  const int64_t block = (n + parts - 1) / parts;
  parallel_for(ctx, parts, 1, [&](int64_t p) {
    const int64_t j0 = p * block, j1 = std::min(n, j0 + block);
    if (j0 < j1) sgemm(ctx, false, true, m, j1 - j0, k, 1.0f, a, lda, b + j0 * ldb, ldb, beta, c + j0, ldc);
  });
}

void run_cell(KernelContext& ctx, Cell cell) {
  const ir::Node& n = ctx.node;
  const int gates = cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
  const Tensor& xt = ctx.input(0);
  const Tensor& wt = ctx.input(1);
  const Tensor& rt = ctx.input(2);
  for (const Tensor* t : {&xt, &wt, &rt})
    if (t->dtype() != DType::Float32) ctx.fail("only float32 and float16 inputs are supported, got ", dtype_name(t->dtype()));
  if (xt.rank() != 3 || wt.rank() != 3 || rt.rank() != 3)
    ctx.fail("X, W and R must be 3-D; got ", shape_str(xt.shape()), ", ", shape_str(wt.shape()), ", ", shape_str(rt.shape()));
  int layout = int(n.attr_i("layout", 0));
  std::string direction = n.attr_s("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    ctx.fail("unknown direction '", direction, "'");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const int64_t seq = layout ? xt.dim(1) : xt.dim(0), batch = layout ? xt.dim(0) : xt.dim(1), in = xt.dim(2);
  const int64_t hs = n.attr_i("hidden_size", rt.dim(2));
  const int64_t gh = gates * hs;
  if (wt.shape() != Shape{dirs, gh, in} || rt.shape() != Shape{dirs, gh, hs})
    ctx.fail("W ", shape_str(wt.shape()), " and R ", shape_str(rt.shape()), " do not match X ", shape_str(xt.shape()),
             " with hidden_size ", hs, " and ", dirs, " direction(s)");
  const Tensor* bt = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (bt && bt->shape() != Shape{dirs, 2 * gh}) ctx.fail("B has shape ", shape_str(bt->shape()), "; expected [", dirs, ",", 2 * gh, "]");
  std::vector<int64_t> lens(size_t(batch), seq);
  if (ctx.has_input(4)) {
    lens = ctx.input(4).to_i64();
    if (int64_t(lens.size()) != batch) ctx.fail("sequence_lens has ", lens.size(), " values for batch ", batch);
    for (int64_t l : lens)
      if (l < 0 || l > seq) ctx.fail("sequence_lens value ", l, " is outside [0, ", seq, "]");
  }
  // Initial state tensors [dirs, batch, H] (layout 1: [batch, dirs, H]) read into [dirs][batch][H].
  auto read_state = [&](int i, const char* what) {
    std::vector<float> s(size_t(dirs * batch * hs), 0.0f);
    if (!ctx.has_input(i)) return s;
    const Tensor& t = ctx.input(i);
    Shape want = layout ? Shape{batch, dirs, hs} : Shape{dirs, batch, hs};
    if (t.shape() != want) ctx.fail(what, " has shape ", shape_str(t.shape()), "; expected ", shape_str(want));
    std::vector<float> widened;
    const float* v = t.dtype() == DType::Float32 ? t.data<float>() : (widened = t.to_f32()).data();
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t b = 0; b < batch; ++b)
        std::memcpy(&s[size_t((d * batch + b) * hs)], v + (layout ? (b * dirs + d) * hs : (d * batch + b) * hs),
                    size_t(hs) * 4);
    return s;
  };
  int p_in = cell == Cell::Lstm ? 7 : -1;
  std::vector<float> h0 = read_state(5, "initial_h");
  std::vector<float> c0 = cell == Cell::Lstm ? read_state(6, "initial_c") : std::vector<float>{};
  const float* peep = nullptr;
  std::vector<float> peep_buf;
  if (p_in > 0 && ctx.has_input(p_in)) {
    if (ctx.input(p_in).numel() != dirs * 3 * hs) ctx.fail("P has shape ", shape_str(ctx.input(p_in).shape()), "; expected [", dirs, ",", 3 * hs, "]");
    peep_buf = ctx.input(p_in).to_f32();
    peep = peep_buf.data();
  }
  std::vector<Act> acts = read_activations(ctx, cell, int(dirs));
  const bool has_clip = n.has("clip");
  const float clip = n.attr_f("clip", 0);
  const bool lbr = n.attr_i("linear_before_reset", 0) != 0;
  const bool couple = n.attr_i("input_forget", 0) != 0;
  auto clipf = [&](float v) { return has_clip ? std::clamp(v, -clip, clip) : v; };

  // X as [seq, batch, in].
  std::vector<float> xs(size_t(seq * batch * in));
  const float* xp = xt.data<float>();
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t b = 0; b < batch; ++b)
      std::memcpy(&xs[size_t((t * batch + b) * in)], xp + (layout ? (b * seq + t) : (t * batch + b)) * in, size_t(in) * 4);

  std::vector<float> ys(size_t(dirs * seq * batch * hs), 0.0f);  // [dirs][seq][batch][H]
  std::vector<float> hn = h0, cn = c0;
  std::vector<float> xw(size_t(seq * batch * gh)), g(size_t(batch * gh)), hr(size_t(batch * gh)), tmp(size_t(batch * hs));
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const float* w = wt.data<float>() + d * gh * in;
    const float* r = rt.data<float>() + d * gh * hs;
    const float* wb = bt ? bt->data<float>() + d * 2 * gh : nullptr;
    const float* rb = wb ? wb + gh : nullptr;
    const Act* act = &acts[size_t(d * (cell == Cell::Lstm ? 3 : cell == Cell::Gru ? 2 : 1))];
    // Input projection of all steps, with the biases that simply add.
    gemm_nt(ctx, seq * batch, gh, in, xs.data(), in, w, in, 0.0f, xw.data(), gh);
    if (wb)
      for (int64_t row = 0; row < seq * batch; ++row)
        for (int64_t j = 0; j < gh; ++j) {
          bool inner_rb = cell == Cell::Gru && lbr && j >= 2 * hs;  // Rb_h is applied inside r * (...)
          xw[size_t(row * gh + j)] += wb[j] + (inner_rb ? 0.0f : rb[j]);
        }
    float* h = &hn[size_t(d * batch * hs)];
    float* c = cell == Cell::Lstm ? &cn[size_t(d * batch * hs)] : nullptr;
    const float* pd = peep ? peep + d * 3 * hs : nullptr;
    for (int64_t s = 0; s < seq; ++s) {
      // The recurrent part for the whole batch (GRU without linear_before_reset
      // needs r first, so its candidate gate is projected below).
      int64_t cols = cell == Cell::Gru && !lbr ? 2 * hs : gh;
      gemm_nt(ctx, batch, cols, hs, h, hs, r, hs, 0.0f, hr.data(), gh);
      for (int64_t b = 0; b < batch; ++b) {
        if (s >= lens[size_t(b)]) continue;
        int64_t t = reverse ? lens[size_t(b)] - 1 - s : s;
        const float* x = &xw[size_t((t * batch + b) * gh)];
        float* gb = &g[size_t(b * gh)];
        const float* hb = &hr[size_t(b * gh)];
        float* hv = h + b * hs;
        float* y = &ys[size_t(((d * seq + t) * batch + b) * hs)];
        if (cell == Cell::Lstm) {
          // Gates in phases over whole rows (gb: i, o, f, c~ as in ONNX's
          // iofc order), so each activation runs as one vector loop.
          float* cv = c + b * hs;
          float *gi = gb, *go = gb + hs, *gf = gb + 2 * hs, *gc = gb + 3 * hs;
          for (int64_t j = 0; j < gh; ++j) gb[j] = x[j] + hb[j];
          if (pd)
            for (int64_t j = 0; j < hs; ++j) gi[j] += pd[j] * cv[j], gf[j] += pd[2 * hs + j] * cv[j];
          if (has_clip)
            for (int64_t j = 0; j < gh; ++j) gb[j] = clipf(gb[j]);  // o is clipped after its peephole below
          act[0].apply(gi, hs);
          if (couple)
            for (int64_t j = 0; j < hs; ++j) gf[j] = 1 - gi[j];
          else
            act[0].apply(gf, hs);
          act[1].apply(gc, hs);
          for (int64_t j = 0; j < hs; ++j) cv[j] = gf[j] * cv[j] + gi[j] * gc[j];
          if (pd) {
            for (int64_t j = 0; j < hs; ++j) go[j] = clipf(x[hs + j] + hb[hs + j] + pd[hs + j] * cv[j]);
          }
          act[0].apply(go, hs);
          for (int64_t j = 0; j < hs; ++j) y[j] = cv[j];
          act[2].apply(y, hs);
          for (int64_t j = 0; j < hs; ++j) y[j] *= go[j];
        } else if (cell == Cell::Rnn) {
          for (int64_t j = 0; j < hs; ++j) y[j] = act[0](clipf(x[j] + hb[j]));
        } else {
          for (int64_t j = 0; j < 2 * hs; ++j) gb[j] = act[0](clipf(x[j] + hb[j]));  // z, r
          if (lbr) {
            for (int64_t j = 0; j < hs; ++j)
              gb[2 * hs + j] = x[2 * hs + j] + gb[hs + j] * (hb[2 * hs + j] + (rb ? rb[2 * hs + j] : 0));
          } else {
            for (int64_t j = 0; j < hs; ++j) tmp[size_t(b * hs + j)] = gb[hs + j] * hv[j];
          }
        }
      }
      if (cell == Cell::Gru) {
        if (!lbr) gemm_nt(ctx, batch, hs, hs, tmp.data(), hs, r + 2 * hs * hs, hs, 0.0f, hr.data(), gh);
        for (int64_t b = 0; b < batch; ++b) {
          if (s >= lens[size_t(b)]) continue;
          int64_t t = reverse ? lens[size_t(b)] - 1 - s : s;
          const float* x = &xw[size_t((t * batch + b) * gh)];
          float* gb = &g[size_t(b * gh)];
          float* y = &ys[size_t(((d * seq + t) * batch + b) * hs)];
          const float* hv = h + b * hs;
          for (int64_t j = 0; j < hs; ++j) {
            float pre = lbr ? gb[2 * hs + j] : x[2 * hs + j] + hr[size_t(b * gh + j)];
            float z = gb[j], cand = act[1](clipf(pre));
            y[j] = (1 - z) * cand + z * hv[j];
          }
        }
      }
      // The new hidden state of each running sequence is its output at this step.
      for (int64_t b = 0; b < batch; ++b) {
        if (s >= lens[size_t(b)]) continue;
        int64_t t = reverse ? lens[size_t(b)] - 1 - s : s;
        std::memcpy(h + b * hs, &ys[size_t(((d * seq + t) * batch + b) * hs)], size_t(hs) * 4);
      }
    }
  }

  // Outputs in the requested layout.
  if (ctx.wants_output(0)) {
    Tensor& y = ctx.output(0, DType::Float32, layout ? Shape{batch, seq, dirs, hs} : Shape{seq, dirs, batch, hs});
    float* yp = y.data<float>();
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t t = 0; t < seq; ++t)
        for (int64_t b = 0; b < batch; ++b)
          std::memcpy(yp + (layout ? ((b * seq + t) * dirs + d) : ((t * dirs + d) * batch + b)) * hs,
                      &ys[size_t(((d * seq + t) * batch + b) * hs)], size_t(hs) * 4);
  }
  auto write_state = [&](int i, const std::vector<float>& s) {
    if (!ctx.wants_output(i)) return;
    Tensor& o = ctx.output(i, DType::Float32, layout ? Shape{batch, dirs, hs} : Shape{dirs, batch, hs});
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t b = 0; b < batch; ++b)
        std::memcpy(o.data<float>() + (layout ? (b * dirs + d) : (d * batch + b)) * hs, &s[size_t((d * batch + b) * hs)],
                    size_t(hs) * 4);
  };
  write_state(1, hn);
  if (cell == Cell::Lstm) write_state(2, cn);
}

void run_lstm(KernelContext& ctx) { run_cell(ctx, Cell::Lstm); }
void run_gru(KernelContext& ctx) { run_cell(ctx, Cell::Gru); }
void run_rnn(KernelContext& ctx) { run_cell(ctx, Cell::Rnn); }

}  // namespace

KESTREL_OP(LSTM, {.min_opset = 7, .run = run_lstm, .uses_products = true});
KESTREL_OP(GRU, {.min_opset = 7, .run = run_gru, .uses_products = true});
KESTREL_OP(RNN, {.min_opset = 7, .run = run_rnn, .uses_products = true});

}  // namespace kestrel::ops

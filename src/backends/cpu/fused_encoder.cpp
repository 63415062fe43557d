// The fused encoders (com.kestrel TransformerEncoder, RopeEncoder,
// ViTDetEncoder; families/encoder_schedule.h) on the CPU: each step kind of
// the one schedule, in float32 (the residual stream included), GEMMs
// through the run's products (ops::sgemm) and attention per (sequence, head) on one thread each.
//
// Every node runs through run_checked (fused_check.h): checked against the
// node's original ops on the first run of each input shape.
#include <cmath>

#include "backends/cpu/fused_check.h"
#include "families/encoder_schedule.h"
#include "families/rope_spec.h"
#include "ops/common.h"
#include "ops/gemm_util.h"

namespace kestrel::backends::cpu {
namespace {

using ops::KernelContext;
using ops::parallel_for;
namespace fam = kestrel::families;
using fam::Buffer;
using fam::Step;

class CpuSteps final : public fam::StepRunner {
 public:
  CpuSteps(KernelContext& ctx, const fam::EncoderSchedule& s) : ctx_(ctx), s_(s) {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::Float32) ctx.fail("expects a float32 input, got ", dtype_name(x.dtype()));
    shape_ = fam::EncoderShape::of(ctx.node, s, x.shape());
    const auto floats = fam::buffer_floats(s, shape_, [&](int w) { return weight(w).dim(1); });
    for (int b = 0; b < fam::kBufferCount; ++b) buffers_[size_t(b)].resize(size_t(floats[size_t(b)]));
    width_[size_t(Buffer::Input)] = shape_.channels;
    if (s.mask_input >= 0) {
      const Tensor& m = ctx.input(s.mask_input);
      const int64_t batch = shape_.batch, tokens = shape_.height;
      fam::check_padding_mask(ctx.node, m.shape(), batch, tokens);
      if (s.mask_right_padded) {
        const std::vector<int64_t> lengths = fam::right_padded_lengths(ctx.node, m, batch, tokens);
        if (s.padding_free) {
          live_ = fam::LiveRows::of(lengths, tokens);
          shape_.live_rows = int64_t(live_.packed.size());
        }
      }
      mask_ = m.to_f32();
      key_end_.assign(size_t(batch), 0);  // past the last key any query may see
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t j = 0; j < tokens; ++j)
          if (mask_[size_t(b * tokens + j)] != 0.f) key_end_[size_t(b)] = j + 1;
    }
    outs_.resize(size_t(s.outputs));
  }
  std::vector<Tensor> outputs() { return std::move(outs_); }

  void norm(const Step& st) override {
    const int64_t rows = shape_.rows(s_, st), d = shape_.channels;
    const float *x = in(st.in), *g = ctx_.input(st.weight).data<float>(), *b = optional(st.bias);
    float* y = out(st.out, d);
    parallel_for(ctx_, rows, 8, [&](int64_t r) {  // mean and variance in double
      const float* xr = x + r * d;
      float* yr = y + r * d;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < d; ++i) mean += xr[i];
      mean /= double(d);
      for (int64_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
      const double inv = 1.0 / std::sqrt(var / double(d) + st.epsilon);
      for (int64_t i = 0; i < d; ++i) yr[i] = float((xr[i] - mean) * inv) * g[i] + (b ? b[i] : 0.f);
    });
  }

  void copy(const Step& st) override {
    const int64_t n = shape_.rows(s_, st) * shape_.channels;
    std::copy(in(st.in), in(st.in) + n, out(st.out, shape_.channels));
  }

  // A residual projection goes through a scratch buffer and is then added,
  // so the stream sees x + (x' w + b) as the graph computes it.
  void linear(const Step& st) override {
    const Tensor& w = weight(st.weight);
    const int64_t rows = shape_.rows(s_, st), k = w.dim(0), n = w.dim(1);
    if (width_[size_t(st.in)] != k)
      ctx_.fail("layer ", st.layer, ": a ", shape_str(w.shape()), " weight does not take rows of ", width_[size_t(st.in)]);
    const float* bias = optional(st.bias);
    float* y = st.residual ? scratch(rows * n) : out(st.out, n);
    ops::sgemm(ctx_, false, false, rows, n, k, 1.f, in(st.in), k, w.data<float>(), n, 0.f, y, n);
    if (bias || st.act != ops::Activation::None) {
      parallel_for(ctx_, rows, 8, [&](int64_t r) {
        float* yr = y + r * n;
        for (int64_t j = 0; j < n; ++j) yr[j] = ops::activate(st.act, 0, 0, yr[j] + (bias ? bias[j] : 0.f));
      });
    }
    if (st.residual) {
      float* x = out(st.out, n);
      parallel_for(ctx_, rows, 8, [&](int64_t r) {
        for (int64_t j = 0; j < n; ++j) x[r * n + j] += y[r * n + j];
      });
    }
  }

  void window(const Step& st) override { move_windows(st, false); }
  void unwindow(const Step& st) override { move_windows(st, true); }

  // Each head of Q and K rotated at its row's position.
  void rotary(const Step& st) override {
    const int64_t tokens = shape_.height, hd = s_.head_dim, half = hd / 2, rows = shape_.rows();
    const auto tables = ctx_.rotary_cache().get(s_.frequencies(st.layer), tokens);
    for (Buffer b : {Buffer::Q, Buffer::K}) {
      float* x = buf(b);
      const int64_t width = width_[size_t(b)];
      parallel_for(ctx_, rows, 8, [&](int64_t r) {
        const int64_t pos = r % tokens;
        for (int64_t j = 0; j < half; ++j) {
          const float c = tables->cos[size_t(pos * half + j)], s = tables->sin[size_t(pos * half + j)];
          for (int64_t h = 0; h < width / hd; ++h) {
            float* head = x + r * width + h * hd;
            const float a = head[j], bb = head[j + half];
            head[j] = a * c - bb * s;
            head[j + half] = bb * c + a * s;
          }
        }
      });
    }
  }

  void attention(const Step& st) override;

  void glu(const Step& st) override {
    const int64_t rows = shape_.rows(s_, st), f = width_[size_t(st.in)] / 2;
    const float* h = in(st.in);
    float* y = out(st.out, f);
    parallel_for(ctx_, rows, 8, [&](int64_t r) {
      for (int64_t j = 0; j < f; ++j)
        y[r * f + j] = ops::activate(st.act, 0, 0, h[r * 2 * f + j]) * h[r * 2 * f + f + j];
    });
  }

  void tap(const Step& st) override {
    const float* x = in(st.in);
    if (!s_.padding_free) {
      outs_[size_t(st.output)] =
          Tensor::from_f32(ctx_.input(0).shape(), std::vector<float>(x, x + shape_.rows() * shape_.channels));
      return;
    }
    std::vector<float> y(size_t(shape_.rows() * shape_.channels));
    move_rows(x, y.data(), live_.grid);
    outs_[size_t(st.output)] = Tensor::from_f32(ctx_.input(0).shape(), std::move(y));
  }
  void pack(const Step& st) override { move_rows(in(st.in), out(st.out, shape_.channels), live_.packed); }
  void unpack(const Step& st) override { move_rows(in(st.in), out(st.out, shape_.channels), live_.grid); }

 private:
  const Tensor& weight(int input) const {
    const Tensor& w = ctx_.input(input);
    if (w.rank() != 2 || w.dtype() != DType::Float32) ctx_.fail("input ", input, " is not a float32 matrix");
    return w;
  }
  const float* optional(int input) const {
    return input >= 0 && ctx_.has_input(input) ? ctx_.input(input).data<float>() : nullptr;
  }
  float* buf(Buffer b) { return buffers_[size_t(b)].data(); }
  const float* in(Buffer b) { return b == Buffer::Input ? ctx_.input(0).data<float>() : buf(b); }
  float* out(Buffer b, int64_t width) {
    width_[size_t(b)] = width;
    return buf(b);
  }
  float* scratch(int64_t floats) {
    if (int64_t(scratch_.size()) < floats) scratch_.resize(size_t(floats));
    return scratch_.data();
  }

  // y's row r = x's row map[r], zeros where map[r] < 0 (rows of the stream's width).
  void move_rows(const float* x, float* y, const std::vector<int32_t>& map) {
    const int64_t d = shape_.channels;
    parallel_for(ctx_, int64_t(map.size()), 64, [&](int64_t r) {
      const int32_t from = map[size_t(r)];
      if (from < 0) {
        std::fill(y + r * d, y + (r + 1) * d, 0.f);
      } else {
        std::copy(x + int64_t(from) * d, x + (int64_t(from) + 1) * d, y + r * d);
      }
    });
  }

  // Row of window token (w, t) on the grid, or -1 for padding.
  int64_t grid_row(const fam::WindowGrid& g, int64_t w, int64_t t) const {
    const int64_t per_image = g.per_row * g.per_col;
    const int64_t b = w / per_image, wr = (w % per_image) / g.per_col, wc = w % g.per_col;
    const int64_t r = wr * g.rows + t / g.cols, c = wc * g.cols + t % g.cols;
    if (r >= shape_.height || c >= shape_.width) return -1;
    return (b * shape_.height + r) * shape_.width + c;
  }
  void move_windows(const Step& st, bool scatter) {
    const auto a = shape_.attention(s_, st.window);
    const int64_t d = shape_.channels, T = a.tokens, wrows = a.sequences * T;
    const float* from = in(st.in);
    float* to = out(st.out, d);
    if (!scatter) std::fill(to, to + wrows * d, 0.f);  // the padding past the grid's edge
    parallel_for(ctx_, wrows, 64, [&](int64_t r) {
      const int64_t g = grid_row(a.grid, r / T, r % T);
      if (g < 0) return;
      if (scatter) {
        std::copy(from + r * d, from + (r + 1) * d, to + g * d);
      } else {
        std::copy(from + g * d, from + (g + 1) * d, to + r * d);
      }
    });
  }

  KernelContext& ctx_;
  const fam::EncoderSchedule& s_;
  fam::EncoderShape shape_;
  std::array<std::vector<float>, fam::kBufferCount> buffers_;
  std::array<int64_t, fam::kBufferCount> width_{};
  std::vector<float> scratch_, mask_;
  std::vector<int64_t> key_end_;
  fam::LiveRows live_;  // a padding-free run's
  std::vector<Tensor> outs_;
};

// softmax(scale q k^T [+ relative-position bias]) v per (sequence, head),
// over the keys each query may see: scores are computed for keys before
// the sequence's last unmasked one only (right padding costs nothing), and
// in a padding-free run for its live queries only.
void CpuSteps::attention(const Step& st) {
  const auto a = shape_.attention(s_, st.window);
  const int64_t T = a.tokens, heads = s_.heads, hd = s_.head_dim, d = shape_.channels;
  const fam::WindowGrid& g = a.grid;
  const float *rel_h = nullptr, *rel_w = nullptr;
  if (st.rel_h >= 0) {
    const Tensor &rh = ctx_.input(st.rel_h), &rw = ctx_.input(st.rel_w);
    fam::check_relative_tables(ctx_.node, st, g, rh.dim(0), rw.dim(0));
    rel_h = rh.data<float>(), rel_w = rw.data<float>();
  }
  const float *Q = buf(Buffer::Q), *K = buf(Buffer::K), *V = buf(Buffer::V);
  float* O = out(Buffer::Context, d);
  const bool masked = st.masked && !mask_.empty();
  parallel_for(ctx_, a.sequences * heads, 1, [&](int64_t task) {
    static thread_local std::vector<float> scores, bias;
    static thread_local std::vector<char> empty;
    const int64_t b = task / heads, h = task % heads, n = masked ? key_end_[size_t(b)] : T, ld = std::max<int64_t>(n, 1);
    // A padding-free run reads the live queries' rows only (right padding:
    // the first n); the others are left as they are.
    const int64_t queries = masked && s_.padding_free ? n : T;
    const float *q = Q + b * T * d + h * hd, *k = K + b * T * d + h * hd, *v = V + b * T * d + h * hd;
    float* o = O + b * T * d + h * hd;
    scores.assign(size_t(queries * ld), 0.f);
    empty.assign(size_t(queries), 0);
    if (n > 0) ops::sgemm(ctx_, false, true, queries, n, hd, st.scale, q, d, k, d, 0.f, scores.data(), ld);
    auto visible = [&](int64_t i, int64_t j) {
      if (masked && mask_[size_t(b * T + j)] == 0.f) return false;
      return st.sliding < 0 || std::abs(i - j) <= st.sliding;
    };
    for (int64_t i = 0; i < queries; ++i) {
      float* row = scores.data() + i * ld;
      if (rel_h) {  // bias[(r, c), (kr, kc)] = q . rel_h[r - kr + rows - 1] + q . rel_w[c - kc + cols - 1]
        bias.resize(size_t(g.rows + g.cols));
        const float* qi = q + i * d;
        const int64_t r = i / g.cols, c = i % g.cols;
        for (int64_t kk = 0; kk < g.rows + g.cols; ++kk) {
          const float* t = kk < g.rows ? rel_h + (r - kk + g.rows - 1) * hd : rel_w + (c - (kk - g.rows) + g.cols - 1) * hd;
          float s = 0;
          for (int64_t e = 0; e < hd; ++e) s += qi[e] * t[e];
          bias[size_t(kk)] = s;
        }
        for (int64_t j = 0; j < n; ++j) row[j] += bias[size_t(j / g.cols)] + bias[size_t(g.rows + j % g.cols)];
      }
      float mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j)
        if (visible(i, j)) mx = std::max(mx, row[j]);
      if (mx == -INFINITY) {
        std::fill(row, row + ld, 0.f);
        empty[size_t(i)] = 1;
        continue;
      }
      double sum = 0;
      for (int64_t j = 0; j < n; ++j)
        if (visible(i, j)) sum += (row[j] = std::exp(row[j] - mx));
      const float inv = float(1.0 / sum);
      for (int64_t j = 0; j < n; ++j) row[j] = visible(i, j) ? row[j] * inv : 0.f;
    }
    if (n > 0) {
      ops::sgemm(ctx_, false, false, queries, hd, n, 1.f, scores.data(), ld, v, d, 0.f, o, d);
    } else {
      for (int64_t i = 0; i < queries; ++i) std::fill(o + i * d, o + i * d + hd, 0.f);
    }
    for (int64_t i = 0; i < queries; ++i) {
      if (!empty[size_t(i)]) continue;
      float* oi = o + i * d;
      std::fill(oi, oi + hd, 0.f);
      if (!st.finite_masked) continue;
      for (int64_t j = 0; j < T; ++j)
        for (int64_t e = 0; e < hd; ++e) oi[e] += v[j * d + e] / float(T);
    }
  });
}

std::vector<Tensor> run_fused(KernelContext& ctx) {
  const fam::EncoderSchedule schedule = fam::EncoderSchedule::of(ctx.node);
  CpuSteps steps(ctx, schedule);
  fam::run_schedule(schedule, steps);
  return steps.outputs();
}

void run_fused_encoder(KernelContext& ctx) { run_checked(ctx, run_fused); }

}  // namespace

KESTREL_OP(TransformerEncoder, {.domain = "com.kestrel", .run = run_fused_encoder, .uses_products = true});
KESTREL_OP(RopeEncoder, {.domain = "com.kestrel", .run = run_fused_encoder, .uses_products = true});
KESTREL_OP(ViTDetEncoder, {.domain = "com.kestrel", .run = run_fused_encoder, .uses_products = true});

}  // namespace kestrel::backends::cpu

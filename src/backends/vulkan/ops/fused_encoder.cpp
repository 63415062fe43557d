// The fused encoders (com.kestrel TransformerEncoder, RopeEncoder,
// ViTDetEncoder; families/encoder_schedule.h) on Vulkan: each step kind of
// the one schedule as dispatches (encoder_steps.h). LayerNorm is norm_rows;
// a projection is one GEMM with bias, activation and residual in its
// epilogue; attention is flash attention (one pass per tile of queries, the
// masks and relative-position terms applied inside it) where its kernels
// take the head dim, else the scores of every (sequence, head) as one
// batched GEMM reading Q and K through strides, the Softmax (plain, masked
// or with the relative-position terms), the context GEMM writing each
// head's columns in place, in chunks of query rows; windows, the rotary
// embedding (cos/sin tables from the host) and the gate are one shader each.
//
// A node runs here once its claim has been checked on the CPU for the
// input's shape (the first run of each shape goes there).
#include <map>

#include "backends/vulkan/ops/encoder_steps.h"
#include "backends/vulkan/ops/row_dispatch.h"
#include "families/encoder_schedule.h"
#include "families/encoder_spec.h"
#include "families/rope_spec.h"

namespace kestrel::vulkan {
namespace {

namespace fam = kestrel::families;
using fam::Buffer;
using fam::Step;

struct WindowPush {  // shaders/window.comp
  uint32_t base, n, height, width, channels, rows, cols, per_row, per_col;
};
struct RopePush {  // shaders/rope.comp
  uint32_t base, n, tokens, heads, half_dim;
};
struct GluPush {  // shaders/glu.comp
  uint32_t base, n, f;
  float a, b;
};
struct RowsPush {  // shaders/rows_by_map.comp
  uint32_t base, n, units;
};
struct RelSoftmaxPush {  // shaders/relpos_softmax.comp
  uint32_t row_base, row_end, rows, cols, q0, chunk_rows, h_stride, w_stride;
};

// ViT-Det's decomposed relative position: every query's dot product with
// every row of a table [2 * span - 1, D] (head h's columns of q), one GEMM on
// the device's fastest tile: p[(sequence, head), token, r] = q . table[r],
// rows of relative_stride(span). The
// Softmax then picks, for query (i, j) and key (ki, kj), p_h[.., i - ki +
// rows - 1] and p_w[.., j - kj + cols - 1] (relpos_softmax.comp): twice the
// products a per-pair kernel computes, all on the GEMM (a per-pair kernel of
// scalar dot products took 28% of SAM ViT-B's time on an H200).
void relative_products(OpContext& ctx, const GpuTensor& q, const GpuTensor& table, const GpuTensor& p,
                       int64_t sequences, int64_t tokens, int64_t heads, int64_t hd) {
  const int64_t span = (table.shape[0] + 1) / 2;
  per_head_products(ctx, q, table, p, sequences, tokens, tokens, table.shape[0], heads, hd, 1.0f, hd, 0, 0,
                    relative_stride(span));
}

class VulkanSteps final : public fam::StepRunner {
 public:
  VulkanSteps(OpContext& ctx, const fam::EncoderSchedule& s)
      : ctx_(ctx), s_(s), stream32_(ctx.half() && !s.half_stream), flash_(flash_attention_takes(ctx, s.head_dim)) {
    const GpuTensor& x = fused_encoder_input(ctx, s.input_rank);
    shape_ = fam::EncoderShape::of(ctx.node, s, x.shape);
    // The padding mask goes to the attention as int32 on the device, so a
    // kept run replays with each run's mask (integers and booleans are int32
    // there already; a float mask is truncated toward zero, as the CPU reads it).
    if (s.mask_input >= 0) {
      const GpuTensor& m = need(s.mask_input);
      fam::check_padding_mask(ctx.node, m.shape, shape_.batch, shape_.height);
      // The rotary encoder runs each sequence at its own length on the CPU,
      // so its mask must be right padding there and here alike.
      auto lengths = [&node = ctx.node, b = shape_.batch, t = shape_.height](const Tensor& mask) {
        return fam::right_padded_lengths(node, mask, b, t);
      };
      if (s.padding_free) {
        // The live tokens size the recorded work: a kept run replays for
        // masks of the same lengths (the buffers are sized for every token).
        const std::vector<int64_t> live = ctx.recorded_for(s.mask_input, lengths);
        live_ = fam::LiveRows::of(live, shape_.height);
        shape_.live_rows = int64_t(live_.packed.size());
        key_ends_ = ctx.upload_i32(std::vector<int32_t>(live.begin(), live.end()));
      } else if (s.mask_right_padded) {
        ctx.check_values(s.mask_input, [lengths](const Tensor& mask) { lengths(mask); });
      }
      if (!m.is_float()) {
        padding_ = m;
      } else {
        padding_ = ctx.temp_words(size_t(m.numel()));
        uint32_t p[2] = {0, 0};
        ctx.dispatch_elements("cast", {1}, {In(m), Out(padding_)}, p, sizeof p, uint64_t(m.numel()));
      }
    }
    // Buffers sized for the largest step (windowed layers cover the padding
    // too); the scores and relative-position terms for the largest layer.
    const auto floats = fam::buffer_floats(s, shape_, [&](int w) { return need(w).shape.back(); });
    int64_t score_words = 0, rel_floats = 0;
    for (const Step& st : s.steps) {
      if (st.kind != fam::StepKind::Attention) continue;
      const auto a = shape_.attention(s, st.window);
      if (st.rel_h >= 0) {
        fam::check_relative_tables(ctx.node, st, a.grid, need(st.rel_h).shape[0], need(st.rel_w).shape[0]);
        rel_floats = std::max(rel_floats,
                              a.sequences * s.heads * a.tokens * relative_stride(std::max(a.grid.rows, a.grid.cols)));
      }
      if (flash_) continue;  // no scores in memory
      plans_.emplace(st.layer, plan_attention(ctx, a.sequences, s.heads, a.tokens, shape_.channels));
      score_words = std::max(score_words, plans_.at(st.layer).score_words);
    }
    for (int b = 1; b < fam::kBufferCount; ++b)
      if (floats[size_t(b)] > 0) buffers_[size_t(b)] = ctx.temp_words(size_t(floats[size_t(b)]));
    if (score_words > 0) scores_ = ctx.temp_words(size_t(score_words));
    if (rel_floats > 0) rel_h_ = ctx.temp_words(size_t(rel_floats)), rel_w_ = ctx.temp_words(size_t(rel_floats));
    for (int i = 0; i < s.outputs; ++i) outs_.push_back(&ctx.output(i, DType::Float32, x.shape));
    for (Buffer b : {Buffer::Input, Buffer::Stream, Buffer::Normed, Buffer::Windowed, Buffer::Context, Buffer::Gridded,
                     Buffer::PackedContext})
      width_[size_t(b)] = shape_.channels;
    if (s.padding_free) {
      grid_map_ = ctx.upload_i32(live_.grid);
      if (!live_.packed.empty()) packed_map_ = ctx.upload_i32(live_.packed);
    }
  }

  // A padding-free run with no live token computes nothing: its outputs are zeros.
  bool nothing_live() const { return shape_.live_rows == 0; }

  void norm(const Step& st) override {
    if (float32(st.out)) ctx_.unsupported("a LayerNorm into the float32 stream of a float16 node");
    layer_norm(ctx_, buf(st.in), need(st.weight), optional(st.bias), buf(st.out), shape_.rows(s_, st),
               shape_.channels, st.epsilon, float32(st.in));
  }
  void copy(const Step& st) override {
    transfer(st.in, buf(st.out), float32(st.out), shape_.rows(s_, st) * shape_.channels);
    wrote(st.out);
  }
  void linear(const Step& st) override {
    const GpuTensor& w = need(st.weight);
    const GpuTensor& y = buf(st.out);
    if (w.shape.size() != 2 || width_[size_t(st.in)] != w.shape[0])
      ctx_.fail("layer ", st.layer, ": a ", shape_str(w.shape), " weight does not take rows of ", width_[size_t(st.in)]);
    const int64_t rows = shape_.rows(s_, st);
    vulkan::linear(ctx_, operand(st.in, rows * w.shape[0]), rows, w.shape[0], w, optional(st.bias), w.shape[1], y,
                   shader_activation(st.act), st.residual ? &y : nullptr, float32(st.out));
    width_[size_t(st.out)] = w.shape[1];
    wrote(st.out);
  }
  void window(const Step& st) override { move_windows(st, false); }
  void unwindow(const Step& st) override { move_windows(st, true); }

  void rotary(const Step& st) override {
    const int64_t half = s_.head_dim / 2;
    std::vector<float> freq = s_.frequencies(st.layer);
    auto it = tables_.find(freq);  // global and local layers differ
    if (it == tables_.end()) {
      auto t = ctx_.rotary_cache().get(freq, shape_.height);
      it = tables_.emplace(freq, std::make_pair(ctx_.upload_f32(t->cos), ctx_.upload_f32(t->sin))).first;
    }
    const auto& [cos_t, sin_t] = it->second;
    for (Buffer b : {Buffer::Q, Buffer::K}) {
      RopePush p{0, 0, uint32_t(shape_.height), uint32_t(s_.heads), uint32_t(half)};
      ctx_.dispatch_elements("rope", {}, {Out(buf(b)), In(cos_t), In(sin_t)}, &p, sizeof p,
                             uint64_t(shape_.rows() * s_.heads * half));
    }
  }

  void attention(const Step& st) override {
    const auto a = shape_.attention(s_, st.window);
    const GpuTensor &q = buf(Buffer::Q), &k = buf(Buffer::K), &v = buf(Buffer::V), &out = buf(Buffer::Context);
    AttentionMask mask{st.masked ? &padding_ : nullptr, st.sliding, st.finite_masked,
                       s_.padding_free ? &key_ends_ : nullptr};
    const bool plain = !mask.padding && mask.window < 0;
    const fam::WindowGrid& g = a.grid;
    const bool relative = st.rel_h >= 0;
    if (relative) {
      relative_products(ctx_, q, need(st.rel_h), rel_h_, a.sequences, a.tokens, s_.heads, s_.head_dim);
      relative_products(ctx_, q, need(st.rel_w), rel_w_, a.sequences, a.tokens, s_.heads, s_.head_dim);
    }
    if (flash_) {
      const RelativeTerms rel{&rel_h_, &rel_w_, g.rows, g.cols};
      flash_attention(ctx_, q, k, v, out, a.sequences, a.tokens, s_.heads, s_.head_dim, st.scale,
                      plain ? nullptr : &mask, relative ? &rel : nullptr);
      return;
    }
    const AttentionPlan& plan = plans_.at(st.layer);
    if (!relative) {
      vulkan::attention(ctx_, q, k, v, scores_, out, a.sequences, a.tokens, s_.heads, s_.head_dim, st.scale,
                        plain ? nullptr : &mask, plan);
      return;
    }
    chunked_attention(ctx_, q, k, v, scores_, out, a.sequences, a.tokens, s_.heads, s_.head_dim, st.scale, plan,
                      [&](int64_t q0, int64_t n_q) {
                        RelSoftmaxPush sp{0, 0, uint32_t(g.rows), uint32_t(g.cols), uint32_t(q0), uint32_t(n_q),
                                          uint32_t(relative_stride(g.rows)), uint32_t(relative_stride(g.cols))};
                        dispatch_rows(ctx_, "relpos_softmax", {}, {Out(scores_), In(rel_h_), In(rel_w_)}, &sp,
                                      sizeof sp, uint64_t(a.sequences * s_.heads * n_q), uint64_t(2 * a.tokens));
                      });
  }

  void glu(const Step& st) override {
    const int64_t f = width_[size_t(st.in)] / 2;
    const ActParams act = shader_activation(st.act);
    GluPush gp{0, 0, uint32_t(f), act.a, act.b};
    ctx_.dispatch_elements("glu", {int32_t(act.act)}, {In(buf(st.in)), Out(buf(st.out))}, &gp, sizeof gp,
                           uint64_t(shape_.rows(s_, st) * f));
    width_[size_t(st.out)] = f;
  }

  void tap(const Step& st) override {
    const GpuTensor& out = *outs_[size_t(st.output)];
    if (s_.padding_free)
      move_rows(buf(st.in), float32(st.in), out, ctx_.half() && !out.half, grid_map_, shape_.rows());
    else
      transfer(st.in, out, ctx_.half() && !out.half, shape_.rows() * shape_.channels);
  }
  void pack(const Step& st) override {
    move_rows(buf(st.in), input_float32(st.in), buf(st.out), float32(st.out), packed_map_, shape_.live_rows);
    wrote(st.out);
  }
  void unpack(const Step& st) override {
    move_rows(buf(st.in), float32(st.in), buf(st.out), float32(st.out), grid_map_, shape_.rows());
    wrote(st.out);
  }

 private:
  const GpuTensor& need(int input) const {
    if (input < 0 || !ctx_.has_input(input)) ctx_.fail("misses input ", input);
    return ctx_.input(input);
  }
  const GpuTensor* optional(int input) const {
    return input >= 0 && ctx_.has_input(input) ? &ctx_.input(input) : nullptr;
  }
  const GpuTensor& buf(Buffer b) const { return b == Buffer::Input ? ctx_.input(0) : buffers_[size_t(b)]; }
  // Whether b holds float32 in a float16 node: the stream, when the
  // schedule keeps it float32 (EncoderSchedule::half_stream).
  bool float32(Buffer b) const { return stream32_ && b == Buffer::Stream; }
  // Bytes of one value in b. (The scratch buffers are untyped words: their
  // values are the node's storage precision, or float32 where float32(b).)
  size_t value_bytes(Buffer b) const {
    if (b == Buffer::Input) return ctx_.input(0).element_bytes();
    return ctx_.half() && !float32(b) ? 2 : 4;
  }
  // n elements of `from` into y (float32 when y_float32), converted where
  // their precisions differ.
  void transfer(Buffer from, const GpuTensor& y, bool y_float32, int64_t n) {
    copy_mixed(ctx_, buf(from), float32(from), y, y_float32, n);
  }
  // b as a GEMM operand (n elements): the node's storage precision. A
  // float32 stream read by a projection (ModernBERT's first layer has no
  // attention norm) is converted once per write of the stream.
  const GpuTensor& operand(Buffer b, int64_t n) {
    if (!float32(b)) return buf(b);
    if (!stream_half_valid_) {
      if (stream_half_.numel() < (n + 1) / 2) stream_half_ = ctx_.temp_words(size_t(n + 1) / 2);
      copy_mixed(ctx_, buf(b), true, stream_half_, false, n);
      stream_half_valid_ = true;
    }
    return stream_half_;
  }
  // Rows of whole 16-byte words, both bindings aligned to them: a row moves a
  // word at a time (window.comp, rows_by_map.comp).
  static bool sixteen_byte_rows(const GpuTensor& x, const GpuTensor& y, size_t row_bytes) {
    return row_bytes % 16 == 0 && x.range(false).offset % 16 == 0 && y.range(false).offset % 16 == 0;
  }
  // Whether b holds float32 values, the node input included.
  bool input_float32(Buffer b) const {
    return b == Buffer::Input ? ctx_.half() && !ctx_.input(0).half : float32(b);
  }
  // y's `rows` rows: x's row map[r], zeros where map[r] < 0 (rows_by_map.comp).
  // Rows of another precision go through x's precision first.
  void move_rows(const GpuTensor& x, bool x_float32, const GpuTensor& y, bool y_float32, const GpuTensor& map,
                 int64_t rows) {
    const bool x4 = !ctx_.half() || x_float32, y4 = !ctx_.half() || y_float32;
    if (x4 != y4) {
      const int64_t n = shape_.rows() * shape_.channels;  // sized for every token, as the buffers are
      if (!converting_.memory) converting_ = ctx_.temp_words(size_t(n));
      move_rows(x, x_float32, converting_, x_float32, map, rows);
      copy_mixed(ctx_, converting_, x_float32, y, y_float32, rows * shape_.channels);
      return;
    }
    const size_t row_bytes = size_t(shape_.channels) * (x4 ? 4 : 2);
    if (row_bytes % 4) ctx_.unsupported("rows of ", shape_.channels, " float16 values are not whole 32-bit words");
    const bool wide = sixteen_byte_rows(x, y, row_bytes);
    const int64_t units = int64_t(row_bytes / (wide ? 16 : 4));
    RowsPush p{0, 0, uint32_t(units)};
    if (rows > 0)
      ctx_.dispatch_elements("rows_by_map", {wide ? 1 : 0}, {In(x), Out(y), In(map)}, &p, sizeof p,
                             uint64_t(rows * units));
  }
  void wrote(Buffer b) {
    if (b == Buffer::Stream) stream_half_valid_ = false;
  }
  void move_windows(const Step& st, bool scatter) {
    const auto a = shape_.attention(s_, st.window);
    const fam::WindowGrid& g = a.grid;
    const GpuTensor &x = buf(st.in), &y = buf(st.out);
    const size_t row_bytes = size_t(shape_.channels) * value_bytes(st.in);
    const bool words = value_bytes(st.in) == value_bytes(st.out) && sixteen_byte_rows(x, y, row_bytes);
    const int64_t units = words ? int64_t(row_bytes / 16) : shape_.channels;
    WindowPush p{0, 0, uint32_t(shape_.height), uint32_t(shape_.width), uint32_t(units), uint32_t(g.rows),
                 uint32_t(g.cols), uint32_t(g.per_row), uint32_t(g.per_col)};
    ctx_.dispatch_elements("window", {scatter ? 1 : 0, words ? 1 : 0}, {In(x), Out(y)}, &p, sizeof p,
                           uint64_t(a.sequences * a.tokens * units));
  }

  OpContext& ctx_;
  const fam::EncoderSchedule& s_;
  const bool stream32_;  // the stream is float32 in this float16 node
  const bool flash_;     // attention in one pass (flash_attention), else through a scores buffer
  fam::EncoderShape shape_;
  std::array<GpuTensor, fam::kBufferCount> buffers_;
  std::array<int64_t, fam::kBufferCount> width_{};  // the columns each buffer holds now
  GpuTensor scores_, rel_h_, rel_w_, padding_;  // rel_*: relative_products' outputs
  GpuTensor stream_half_;                       // operand(): the float32 stream in float16
  bool stream_half_valid_ = false;
  fam::LiveRows live_;                 // a padding-free run's rows
  GpuTensor packed_map_, grid_map_;    // live_'s maps on the device
  GpuTensor key_ends_;                 // each sequence's live tokens (AttentionMask::key_ends)
  GpuTensor converting_;               // move_rows' rows between precisions
  std::map<int64_t, AttentionPlan> plans_;  // per layer
  std::map<std::vector<float>, std::pair<GpuTensor, GpuTensor>> tables_;  // rotary cos/sin per frequency set
  std::vector<GpuTensor*> outs_;
};

void record_fused_encoder(OpContext& ctx) {
  const fam::EncoderSchedule schedule = fam::EncoderSchedule::of(ctx.node);
  VulkanSteps steps(ctx, schedule);
  if (!steps.nothing_live()) {
    fam::run_schedule(schedule, steps);
    return;
  }
  for (const Step& st : schedule.steps)  // zeros at every (padded) token
    if (st.kind == fam::StepKind::Tap) steps.tap(st);
}

}  // namespace

// The key padding mask (input 1) is a device input. Under float16
// storage the rotary encoder keeps its stream float32
// (EncoderSchedule::half_stream): its GEMMs read float16 operands and
// write the stream's float32 in their epilogue, and its outputs (taps of
// the stream) stay float32.
KESTREL_VK_OP(TransformerEncoder, {.domain = "com.kestrel", .record = record_fused_encoder});
KESTREL_VK_OP(RopeEncoder, {.domain = "com.kestrel", .record = record_fused_encoder, .float32_outputs = true});
KESTREL_VK_OP(ViTDetEncoder, {.domain = "com.kestrel", .record = record_fused_encoder});

}  // namespace kestrel::vulkan

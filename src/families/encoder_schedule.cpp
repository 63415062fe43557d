#include "families/encoder_schedule.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "families/encoder_spec.h"
#include "families/rope_spec.h"

namespace kestrel::families {
namespace {

// Appends steps for one family; `present(i)` tells an absent optional input.
struct Builder {
  const ir::Node& n;
  EncoderSchedule& s;

  int optional(int input) const {
    return input < int(n.inputs.size()) && n.inputs[size_t(input)] >= 0 ? input : -1;
  }
  void add(Step st) { s.steps.push_back(st); }
  void norm(int64_t layer, Buffer in, Buffer out, int scale, int bias, float eps) {
    Step st{.kind = StepKind::Norm, .layer = layer, .in = in, .out = out, .weight = scale, .bias = optional(bias)};
    st.epsilon = eps;
    add(st);
  }
  // `window` > 0: the rows are that layer's window tokens (Step::windowed).
  void linear(int64_t layer, Buffer in, Buffer out, int weight, int bias, ops::Activation act = ops::Activation::None,
              bool residual = false, int64_t window = 0) {
    Step st{.kind = StepKind::Linear, .layer = layer, .in = in, .out = out, .windowed = window > 0, .weight = weight,
            .bias = optional(bias), .window = window};
    st.act = act;
    st.residual = residual;
    add(st);
  }
  // Q, K and V from `in`; in a padding-free run on the live rows, then
  // unpacked onto the grid.
  template <typename Spec>
  void projections(const Spec& spec, int64_t l, Buffer in, int64_t window = 0) {
    const Buffer out[3] = {Buffer::Q, Buffer::K, Buffer::V};
    const Buffer packed[3] = {Buffer::PackedQ, Buffer::PackedK, Buffer::PackedV};
    for (int j = 0; j < 3; ++j)
      linear(l, in, s.padding_free ? packed[j] : out[j], spec.input(l, kQWeight + j), spec.input(l, kQBias + j),
             ops::Activation::None, false, window);
    if (s.padding_free)
      for (int j = 0; j < 3; ++j) add(Step{.kind = StepKind::Unpack, .layer = l, .in = packed[j], .out = out[j]});
  }
  // The output projection and the MLP; fc1 feeds a gate with `gated`.
  template <typename Spec>
  void after_attention(const Spec& spec, int64_t l, Buffer context, bool gated) {
    linear(l, context, Buffer::Stream, spec.input(l, kOutWeight), spec.input(l, kOutBias), ops::Activation::None,
           true);
    norm(l, Buffer::Stream, Buffer::Normed, spec.input(l, kNorm2Scale), spec.input(l, kNorm2Bias),
         spec.epsilons[size_t(2 * l + 1)]);
    if (gated) {
      linear(l, Buffer::Normed, Buffer::Hidden, spec.input(l, kFc1Weight), spec.input(l, kFc1Bias));
      add(Step{.kind = StepKind::Glu, .layer = l, .in = Buffer::Hidden, .out = Buffer::Gated});
      s.steps.back().act = spec.activation;
      linear(l, Buffer::Gated, Buffer::Stream, spec.input(l, kFc2Weight), spec.input(l, kFc2Bias),
             ops::Activation::None, true);
    } else {
      linear(l, Buffer::Normed, Buffer::Hidden, spec.input(l, kFc1Weight), spec.input(l, kFc1Bias), spec.activation);
      linear(l, Buffer::Hidden, Buffer::Stream, spec.input(l, kFc2Weight), spec.input(l, kFc2Bias),
             ops::Activation::None, true);
    }
  }
  // The sizes every family's schedule takes from its spec.
  template <typename Spec>
  void sizes(const Spec& spec) {
    s.heads = spec.heads, s.head_dim = spec.head_dim;
    s.outputs = int(spec.taps.size());
  }
  // Layer l's first LayerNorm (slot kNorm1Scale), stream -> Normed.
  template <typename Spec>
  void first_norm(const Spec& spec, int64_t l) {
    norm(l, Buffer::Stream, Buffer::Normed, spec.input(l, kNorm1Scale), spec.input(l, kNorm1Bias),
         spec.epsilons[size_t(2 * l)]);
  }
  // Layer l's attention of Q, K, V into Context at the spec's scale, leaving
  // out the padded keys when the node has a mask; the caller adds it.
  template <typename Spec>
  Step attention(const Spec& spec, int64_t l) const {
    Step st{.kind = StepKind::Attention, .layer = l, .in = Buffer::Q, .out = Buffer::Context};
    st.scale = spec.scales[size_t(l)];
    st.masked = s.mask_input >= 0;
    return st;
  }
  void taps(const std::vector<int64_t>& taps, int64_t l) {
    for (size_t i = 0; i < taps.size(); ++i)
      if (taps[i] == l) add(Step{.kind = StepKind::Tap, .layer = l, .in = Buffer::Stream, .output = int(i)});
  }
};

void build_transformer(const ir::Node& n, EncoderSchedule& s) {
  const EncoderSpec spec = EncoderSpec::of(n);
  Builder b{n, s};
  b.sizes(spec);
  s.mask_input = b.optional(EncoderSpec::kMaskInput);
  if (spec.pre_norm) {
    b.norm(-1, Buffer::Input, Buffer::Stream, spec.pre_norm_input, spec.pre_norm_input + 1, spec.pre_norm_epsilon);
  } else {
    b.add(Step{.kind = StepKind::Copy, .in = Buffer::Input, .out = Buffer::Stream});
  }
  for (int64_t l = 0; l < spec.layers; ++l) {
    b.first_norm(spec, l);
    b.projections(spec, l, Buffer::Normed);
    b.add(b.attention(spec, l));  // a padding mask of -inf
    b.after_attention(spec, l, Buffer::Context, false);
    b.taps(spec.taps, l);
  }
}

void build_rope(const ir::Node& n, EncoderSchedule& s) {
  const RopeSpec spec = RopeSpec::of(n);
  Builder b{n, s};
  b.sizes(spec);
  s.half_stream = false;
  s.mask_input = b.optional(RopeSpec::kMaskInput);
  s.mask_right_padded = true;
  s.padding_free = s.mask_input >= 0 && n.attr_i("padding_free", 0) != 0;
  s.inv_freq = spec.inv_freq;
  b.add(Step{.kind = s.padding_free ? StepKind::Pack : StepKind::Copy, .in = Buffer::Input, .out = Buffer::Stream});
  for (int64_t l = 0; l < spec.layers; ++l) {
    Buffer a_in = Buffer::Stream;  // ModernBERT's first layer has no attention norm
    if (b.optional(spec.input(l, kNorm1Scale)) >= 0) {
      b.first_norm(spec, l);
      a_in = Buffer::Normed;
    }
    b.projections(spec, l, a_in);
    b.add(Step{.kind = StepKind::Rotary, .layer = l});
    Step att = b.attention(spec, l);
    att.sliding = spec.windows[size_t(l)];
    att.finite_masked = std::isfinite(spec.masked_scores[size_t(l)]);
    b.add(att);
    if (s.padding_free) b.add(Step{.kind = StepKind::Pack, .layer = l, .in = Buffer::Context, .out = Buffer::PackedContext});
    b.after_attention(spec, l, s.padding_free ? Buffer::PackedContext : Buffer::Context, true);
    b.taps(spec.taps, l);
  }
}

void build_vitdet(const ir::Node& n, EncoderSchedule& s) {
  const ViTDetSpec spec = ViTDetSpec::of(n);
  Builder b{n, s};
  b.sizes(spec);
  s.input_rank = 4;
  b.add(Step{.kind = StepKind::Copy, .in = Buffer::Input, .out = Buffer::Stream});
  for (int64_t l = 0; l < spec.layers; ++l) {
    const int64_t window = spec.windows[size_t(l)];
    const bool windowed = window > 0;
    b.first_norm(spec, l);
    if (windowed)
      b.add(Step{.kind = StepKind::Window, .layer = l, .in = Buffer::Normed, .out = Buffer::Windowed, .windowed = true,
                 .window = window});
    b.projections(spec, l, windowed ? Buffer::Windowed : Buffer::Normed, window);
    Step att = b.attention(spec, l);  // ViTDet has no mask
    att.windowed = windowed, att.window = window;
    att.rel_h = spec.input(l, kRelPosH), att.rel_w = spec.input(l, kRelPosW);
    b.add(att);
    if (windowed)
      b.add(Step{.kind = StepKind::Unwindow, .layer = l, .in = Buffer::Context, .out = Buffer::Gridded,
                 .windowed = true, .window = window});
    b.after_attention(spec, l, windowed ? Buffer::Gridded : Buffer::Context, false);
    b.taps(spec.taps, l);
  }
}

}  // namespace

EncoderSchedule EncoderSchedule::of(const ir::Node& n) {
  EncoderSchedule s;
  if (n.op_type == kEncoderOp) {
    build_transformer(n, s);
  } else if (n.op_type == kRopeEncoderOp) {
    build_rope(n, s);
  } else if (n.op_type == kViTDetEncoderOp) {
    build_vitdet(n, s);
  } else {
    fail(n.where(), ": not a fused encoder");
  }
  return s;
}

std::vector<float> EncoderSchedule::frequencies(int64_t layer) const {
  const int64_t half = head_dim / 2;
  return std::vector<float>(inv_freq.begin() + layer * half, inv_freq.begin() + (layer + 1) * half);
}

EncoderShape::Attention EncoderShape::attention(const EncoderSchedule& s, int64_t window) const {
  if (s.input_rank == 3) return {batch, height, {}};
  const WindowGrid g = WindowGrid::of(height, width, window);
  return {batch * g.per_row * g.per_col, g.tokens(), g};
}

int64_t EncoderShape::rows(const EncoderSchedule& s, const Step& step) const {
  if (!step.windowed) return live_rows >= 0 ? live_rows : rows();
  const Attention a = attention(s, step.window);
  return a.sequences * a.tokens;
}

EncoderShape EncoderShape::of(const ir::Node& n, const EncoderSchedule& s, const Shape& x) {
  if (x.size() != s.input_rank)
    fail(n.where(), ": expects a float ", s.input_rank == 3 ? "[batch, tokens, width]" : "[batch, height, width, channels]",
         " input, got ", shape_str(x));
  EncoderShape e;
  e.batch = x[0], e.height = x[1], e.width = s.input_rank == 4 ? x[2] : 1, e.channels = x.back();
  if (s.heads * s.head_dim != e.channels)
    fail(n.where(), ": width ", e.channels, " is not heads ", s.heads, " x head_dim ", s.head_dim);
  return e;
}

LiveRows LiveRows::of(const std::vector<int64_t>& lengths, int64_t tokens) {
  LiveRows r;
  const int64_t grid = int64_t(lengths.size()) * tokens;
  if (grid > INT32_MAX) fail("a padding-free encoder run of ", grid, " tokens is past int32 row indices");
  r.grid.assign(size_t(grid), -1);
  for (size_t b = 0; b < lengths.size(); ++b)
    for (int64_t t = 0; t < lengths[b]; ++t) {
      const int32_t g = int32_t(int64_t(b) * tokens + t);
      r.grid[size_t(g)] = int32_t(r.packed.size());
      r.packed.push_back(g);
    }
  return r;
}

std::array<int64_t, kBufferCount> buffer_floats(const EncoderSchedule& s, const EncoderShape& given,
                                                const std::function<int64_t(int input)>& columns) {
  EncoderShape shape = given;
  shape.live_rows = -1;  // every token: the same memory for every run at these shapes
  std::array<int64_t, kBufferCount> floats{}, width{};
  width[size_t(Buffer::Input)] = shape.channels;
  auto need = [&](Buffer b, int64_t rows, int64_t cols) {
    floats[size_t(b)] = std::max(floats[size_t(b)], rows * cols);
    width[size_t(b)] = cols;
  };
  for (const Step& st : s.steps) {
    switch (st.kind) {
      case StepKind::Norm:
      case StepKind::Copy:
      case StepKind::Window:
        need(st.out, shape.rows(s, st), shape.channels);
        break;
      case StepKind::Unwindow:
      case StepKind::Pack:
      case StepKind::Unpack:
        need(st.out, shape.rows(), shape.channels);
        break;
      case StepKind::Linear:
        need(st.out, shape.rows(s, st), columns(st.weight));
        break;
      case StepKind::Glu:
        need(st.out, shape.rows(s, st), width[size_t(st.in)] / 2);
        break;
      case StepKind::Attention:
        need(Buffer::Context, shape.rows(s, st), shape.channels);
        break;
      case StepKind::Rotary:
      case StepKind::Tap:
        break;
    }
  }
  return floats;
}

void check_padding_mask(const ir::Node& n, const Shape& mask, int64_t batch, int64_t tokens) {
  if (mask.size() != 2 || mask[0] != batch || mask[1] != tokens)
    fail(n.where(), ": key padding mask ", shape_str(mask), " does not match ", batch, " sequences of ", tokens,
         " tokens");
}

void check_relative_tables(const ir::Node& n, const Step& attention, const WindowGrid& g, int64_t rows_h,
                           int64_t rows_w) {
  if (rows_h != 2 * g.rows - 1 || rows_w != 2 * g.cols - 1)
    fail(n.where(), ": layer ", attention.layer, ": relative-position tables of ", rows_h, " and ", rows_w,
         " rows do not span its ", g.rows, "x", g.cols, " attention grid (", 2 * g.rows - 1, " and ", 2 * g.cols - 1,
         " rows)");
}

void run_schedule(const EncoderSchedule& s, StepRunner& r) {
  for (const Step& st : s.steps) {
    switch (st.kind) {
      case StepKind::Norm: r.norm(st); break;
      case StepKind::Copy: r.copy(st); break;
      case StepKind::Linear: r.linear(st); break;
      case StepKind::Window: r.window(st); break;
      case StepKind::Unwindow: r.unwindow(st); break;
      case StepKind::Rotary: r.rotary(st); break;
      case StepKind::Attention: r.attention(st); break;
      case StepKind::Glu: r.glu(st); break;
      case StepKind::Tap: r.tap(st); break;
      case StepKind::Pack: r.pack(st); break;
      case StepKind::Unpack: r.unpack(st); break;
    }
  }
}

}  // namespace kestrel::families

// Folds a space-to-depth written as strided Slices into the Conv that reads
// it. YOLOv5's and YOLOX's "Focus" stem takes the four pixels of each 2x2
// block of the image as channels (x[..., ::2, ::2], x[..., 1::2, ::2], ...:
// four Slices of step 2, often two chained, concatenated on channels) and
// convolves the result; that is one convolution of the image with a kernel
// twice as wide, stride 2 and twice the padding, whose weight is the
// original's taps spread over the 2x2 offsets (Ultralytics made the same
// change to YOLOv5's stem). The image is then read once by the Conv rather
// than copied by eight Slices and a Concat (YOLOX-nano at 416: 0.5 ms of
// 14.5 on one core).
#include <array>
#include <optional>

#include "passes/graph_uses.h"
#include "passes/passes.h"

namespace kestrel::passes {
namespace {

// Where a 2x2 block's pixel comes from: its row and column offset, and the
// source tensor the Slices read.
struct Phase {
  int source = -1;
  std::array<int64_t, 2> offset{-1, -1};  // (row, column), each 0 or 1
};

// Follows Slices back from `v` (each read by nothing else) while they take
// every second row or column of a rank-4 tensor with known even sizes,
// starting at 0 or 1, to the end. Nothing when anything else is sliced.
std::optional<Phase> phase_of(const ir::Graph& g, const GraphUses& uses, int v, std::vector<int>& slices) {
  Phase p;
  for (int hops = 0; hops < 2; ++hops) {
    const int at = uses.producer(v);
    if (at < 0 || !uses.private_to_one_reader(v)) break;
    const ir::Node& s = g.nodes[size_t(at)];
    if (s.op_type != "Slice" || !s.domain.empty() || s.opset < 10 || s.inputs.size() != 5 || s.inputs[0] < 0) return {};
    const Tensor *starts = constant(g, s.inputs[1]), *ends = constant(g, s.inputs[2]), *axes = constant(g, s.inputs[3]),
                 *steps = constant(g, s.inputs[4]);
    if (!starts || !ends || !axes || !steps) return {};
    const int src = s.inputs[0];
    const auto& shape = g.values[size_t(src)].shape;
    if (!shape || shape->size() != 4) return {};
    const std::vector<int64_t> st = starts->to_i64(), en = ends->to_i64(), ax = axes->to_i64(), sp = steps->to_i64();
    if (st.size() != ax.size() || en.size() != ax.size() || sp.size() != ax.size()) return {};
    for (size_t i = 0; i < ax.size(); ++i) {
      const int64_t axis = ax[i] < 0 ? ax[i] + 4 : ax[i];
      if (axis != 2 && axis != 3) return {};
      const ir::Dim& d = (*shape)[size_t(axis)];
      // Even sizes only: of an odd one the two phases differ in length and
      // the model's Concat fails, which the folded Conv would not.
      if (!d.known() || d.value % 2 != 0 || sp[i] != 2 || (st[i] != 0 && st[i] != 1) || en[i] < d.value) return {};
      int64_t& o = p.offset[size_t(axis - 2)];
      if (o >= 0) return {};  // one axis sliced twice
      o = st[i];
    }
    slices.push_back(at);
    v = src;
    if (p.offset[0] >= 0 && p.offset[1] >= 0) {
      p.source = v;
      return p;
    }
  }
  return {};
}

}  // namespace

int fold_space_to_depth(ir::Graph& g) {
  const GraphUses uses(g);
  std::vector<bool> removed(g.nodes.size(), false);
  int folded = 0;
  for (ir::Node& conv : g.nodes) {
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2 || conv.inputs[0] < 0) continue;
    if (conv.attr_s("auto_pad", "NOTSET") != "NOTSET" || conv.attr_i("group", 1) != 1) continue;
    auto wit = g.initializers.find(conv.inputs[1]);
    if (wit == g.initializers.end() || wit->second.rank() != 4 || wit->second.dtype() != DType::Float32) continue;
    const Tensor& w = wit->second;
    if (conv.attr_ints("strides", {1, 1}) != std::vector<int64_t>{1, 1} ||
        conv.attr_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1})
      continue;
    const int x = conv.inputs[0];
    const int c = uses.producer(x);
    if (c < 0 || removed[size_t(c)] || !uses.private_to_one_reader(x)) continue;
    const ir::Node& concat = g.nodes[size_t(c)];
    if (concat.op_type != "Concat" || !concat.domain.empty() || concat.inputs.size() != 4) continue;
    const int64_t axis = concat.attr_i("axis", 0);
    if (axis != 1 && axis != -3) continue;
    // Each input a distinct (row, column) phase of one source.
    std::vector<int> slices;
    std::array<int, 4> position_of_phase{-1, -1, -1, -1};
    int source = -1;
    bool ok = true;
    for (size_t k = 0; k < 4 && ok; ++k) {
      const std::optional<Phase> p = concat.inputs[k] >= 0 ? phase_of(g, uses, concat.inputs[k], slices) : std::nullopt;
      ok = p && (source < 0 || p->source == source);
      if (!ok) break;
      source = p->source;
      int& at = position_of_phase[size_t(p->offset[0] * 2 + p->offset[1])];
      ok = at < 0;
      at = int(k);
    }
    if (!ok) continue;
    const auto& shape = *g.values[size_t(source)].shape;
    const int64_t C = shape[1].value, M = w.dim(0), KH = w.dim(2), KW = w.dim(3);
    std::vector<int64_t> pads = conv.attr_ints("pads", {0, 0, 0, 0});
    if (C <= 0 || w.dim(1) != 4 * C || pads.size() != 4) continue;
    // Tap (a, b) of concatenated channel k*C + c, where input k holds the
    // pixels at offset (dy, dx), reads image row 2(i + a - pad) + dy: tap
    // (2a + dy, 2b + dx) of a stride-2 window padded by 2 * pad.
    Tensor wide(DType::Float32, {M, C, 2 * KH, 2 * KW});
    const float* src = w.data<float>();
    float* dst = wide.data<float>();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t dy = 0; dy < 2; ++dy)
        for (int64_t dx = 0; dx < 2; ++dx) {
          const int64_t k = position_of_phase[size_t(dy * 2 + dx)];
          for (int64_t ch = 0; ch < C; ++ch)
            for (int64_t a = 0; a < KH; ++a)
              for (int64_t b = 0; b < KW; ++b)
                dst[((m * C + ch) * 2 * KH + 2 * a + dy) * 2 * KW + 2 * b + dx] =
                    src[((m * 4 * C + k * C + ch) * KH + a) * KW + b];
        }
    const int wv = g.add_value(g.values[size_t(conv.inputs[1])].name + ".space_to_depth");
    g.values[size_t(wv)].dtype = DType::Float32;
    g.initializers.emplace(wv, std::move(wide));
    for (int64_t& p : pads) p *= 2;
    conv.inputs[0] = source;
    conv.inputs[1] = wv;
    ir::set_attr(conv, "kernel_shape", std::vector<int64_t>{2 * KH, 2 * KW});
    ir::set_attr(conv, "strides", std::vector<int64_t>{2, 2});
    ir::set_attr(conv, "pads", pads);
    conv.attrs.erase("dilations");
    removed[size_t(c)] = true;
    for (int s : slices) removed[size_t(s)] = true;
    ++folded;
  }
  erase_nodes(g, removed);
  return folded;
}

}  // namespace kestrel::passes

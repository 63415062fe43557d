#include "backends/cpu/channels_last.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "backends/cpu/nhwc_conv.h"
#include "backends/cpu/residual_fusion.h"
#include "core/cpu_isa.h"
#include "ops/conv_channels_last.h"
#include "passes/graph_uses.h"

namespace kestrel::backends::cpu {
namespace {

// A chain is kept with at least this many Convs per reorder at its ends.
constexpr int kConvsPerReorder = 4;

bool default_op(const ir::Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

bool scalar_constant(const ir::Graph& g, int v) {
  auto it = g.initializers.find(v);
  return it != g.initializers.end() && it->second.numel() == 1;
}

// A constant of rank 4 entering a chain (BlazeFace's zero channels,
// concatenated onto a residual to widen it) is transposed once here, into
// an initializer of its own, not by a Transpose on every run: it costs the
// chain no reorder.
bool rank4_constant(const ir::Graph& g, int v) {
  auto it = g.initializers.find(v);
  return it != g.initializers.end() && it->second.rank() == 4;
}

Tensor channels_last_constant(const Tensor& t) {
  const int64_t N = t.dim(0), C = t.dim(1), HW = t.dim(2) * t.dim(3);
  Tensor out(t.dtype(), {N, t.dim(2), t.dim(3), C});
  const size_t e = dtype_size(t.dtype());
  const uint8_t* src = t.raw();
  uint8_t* dst = out.raw();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < HW; ++i)
        std::memcpy(dst + size_t((n * HW + i) * C + c) * e, src + size_t((n * C + c) * HW + i) * e, e);
  return out;
}

// A Conv the oneDNN kernel takes: float32, 2-D, constant weight.
bool conv_candidate(const ir::Graph& g, const ir::Node& n) {
  if (!default_op(n, "Conv") || n.inputs.size() < 2 || n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs[0] < 0)
    return false;
  auto w = g.initializers.find(n.inputs[1]);
  if (w == g.initializers.end() || w->second.rank() != 4 || w->second.dtype() != DType::Float32) return false;
  if (g.values[size_t(n.inputs[0])].dtype != DType::Float32) return false;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0 && !g.initializers.count(n.inputs[2])) return false;
  const int64_t r = n.attr_i(kResidualAttr, -1);
  if (n.inputs.size() > 3 && !(r == 3 && n.inputs.size() == 4)) return false;
  // A 1x1 layer adding a residual of channels in no whole number of
  // oneDNN's vectors (16 floats on AVX-512, 8 on AVX2): its kernel on the
  // ragged tail, with the residual copied into its output first, lost to
  // the planar kernel, which adds it in cache (BlazeFace back's 24 -> 24
  // layers at 128x128 on AVX-512: 0.35 ms for 0.26). On AVX2, 24 channels
  // are three whole vectors, and Kestrel's own channels-last kernel takes
  // the others (nhwc_conv.h).
  const Tensor& wt = w->second;
  const bool pointwise = wt.dim(2) == 1 && wt.dim(3) == 1;
  const int64_t vector = cpu_isa() >= CpuIsa::Avx512 ? 16 : 8;
  if (!(pointwise && r == 3 && wt.dim(0) % vector != 0)) return true;
  const int64_t group = n.attr_i("group", 1);
  ops::ConvShape s{1, wt.dim(1) * group, wt.dim(0), group, wt.dim(1), wt.dim(0) / group, {}};
  s.g.nd = 2;
  s.g.kernel = {1, 1};
  return nhwc_conv_kernel() != nullptr && nhwc_conv_suits(s, true);
}

// Ops computed element by element, the same in any layout.
bool elementwise(const ir::Node& n) {
  static const std::set<std::string> unary{"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
                                           "Elu", "Selu", "Softplus", "Abs", "Neg", "Exp", "Sqrt", "Identity"};
  static const std::set<std::string> binary{"Add", "Sub", "Mul", "Div", "Max", "Min"};
  if (!n.domain.empty() || n.outputs.size() != 1) return false;
  return unary.count(n.op_type) || binary.count(n.op_type) || n.op_type == "Clip";
}

// The input of a Resize the layout takes that holds its target: scales (2)
// or sizes (3), 4 values; -1 where the layout does not take the node:
// opset 11 on, nearest or linear without antialias, no axes, crop box or
// aspect policy, float32 X of rank 4. Resizing is separable, so the same
// values permuted to [N, H, W, C] resize the channels-last image alike
// (ops/resize.cpp runs bilinear there with the planar path's bits).
int resize_target_input(const ir::Graph& g, const ir::Node& n) {
  if (!default_op(n, "Resize") || n.opset < 11 || n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] < 0 ||
      n.has("axes"))
    return -1;
  const std::string mode = n.attr_s("mode", "nearest");
  if ((mode != "nearest" && mode != "linear") || n.attr_i("antialias", 0) != 0 ||
      n.attr_s("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize" ||
      n.attr_s("keep_aspect_ratio_policy", "stretch") != "stretch")
    return -1;
  const ir::Value& x = g.values[size_t(n.inputs[0])];
  if (x.dtype != DType::Float32 || !x.shape || x.shape->size() != 4) return -1;
  // An input is given unless absent or an empty constant (exporters write
  // empty scales beside sizes).
  const auto given = [&](size_t k) {
    if (k >= n.inputs.size() || n.inputs[k] < 0) return false;
    auto it = g.initializers.find(n.inputs[k]);
    return it == g.initializers.end() || it->second.numel() != 0;
  };
  const int at = given(3) ? 3 : given(2) ? 2 : -1;
  if (at < 0) return -1;
  auto it = g.initializers.find(n.inputs[size_t(at)]);
  return it == g.initializers.end() || it->second.numel() == 4 ? at : -1;
}

// A MaxPool the layout takes (MaxPoolChannelsLast): float32, 2-D, no
// Indices output, undilated (the forms its fast kernel runs; YOLO's SPP and
// the stride-2 downsamplings).
bool max_pool_member(const ir::Graph& g, const ir::Node& n) {
  if (!default_op(n, "MaxPool") || n.outputs.size() != 1 || n.inputs.size() != 1 || n.inputs[0] < 0) return false;
  const ir::Value& x = g.values[size_t(n.inputs[0])];
  if (x.dtype != DType::Float32 || !x.shape || x.shape->size() != 4 || n.attr_ints("kernel_shape").size() != 2)
    return false;
  for (int64_t d : n.attr_ints("dilations")) if (d != 1) return false;
  return true;
}

// A Shape node of the whole shape: it reads a channels-last value as well,
// its dims then put back in NCHW order by a Gather (M-LSD computes each
// Resize's sizes from the Shape of a chain's value, which would otherwise
// take the value out of the layout).
bool shape_reader(const ir::Node& n) {
  return default_op(n, "Shape") && n.inputs.size() == 1 && n.outputs.size() == 1 && !n.has("start") && !n.has("end");
}

// The data inputs of a member node that are in the layout (X and the
// residual of a Conv; every input of the others but a Clip's bounds).
std::vector<size_t> layout_inputs(const ir::Node& n) {
  if (default_op(n, "Conv")) return n.inputs.size() == 4 ? std::vector<size_t>{0, 3} : std::vector<size_t>{0};
  if (default_op(n, "Clip") || default_op(n, "Resize")) return {0};
  std::vector<size_t> all(n.inputs.size());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

bool concat_on_channels(const ir::Node& n) {
  if (!default_op(n, "Concat")) return false;
  const int64_t axis = n.attr_i("axis", 0);
  return axis == 1 || axis == -3;
}

// Which nodes join the layout, given the Convs allowed to.
std::vector<bool> members(const ir::Graph& g, const std::vector<bool>& conv_ok) {
  std::vector<bool> member(g.nodes.size(), false), cl(g.values.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    bool in = false;
    if (conv_ok[i]) {
      in = true;
    } else if (elementwise(n) || concat_on_channels(n) || resize_target_input(g, n) >= 0 || max_pool_member(g, n)) {
      // Every input in the layout, but constant scalars (and a Clip's
      // bounds) and constants of rank 4 (transposed once, rank4_constant).
      bool any = false, all = true;
      for (size_t k : layout_inputs(n)) {
        const int v = n.inputs[k];
        if (v < 0) continue;
        if (cl[size_t(v)]) any = true;
        else if (!(elementwise(n) && scalar_constant(g, v)) && !rank4_constant(g, v)) all = false;
      }
      if (default_op(n, "Clip"))
        for (size_t k = 1; k < n.inputs.size(); ++k) all = all && (n.inputs[k] < 0 || g.initializers.count(n.inputs[k]));
      in = any && all;
    }
    if (!in) continue;
    member[i] = true;
    cl[size_t(n.outputs[0])] = true;
  }
  return member;
}

int find_root(std::vector<int>& parent, int i) {
  while (parent[size_t(i)] != i) i = parent[size_t(i)] = parent[size_t(parent[size_t(i)])];
  return i;
}

// A new value for the other layout of v (its shape permuted where known).
int layout_twin(ir::Graph& g, int v, bool to_channels_last) {
  const ir::Value src = g.values[size_t(v)];
  const int t = g.add_value(src.name + (to_channels_last ? ".channels_last" : ".channels_first"));
  ir::Value& dst = g.values[size_t(t)];
  dst.dtype = src.dtype;
  if (src.shape && src.shape->size() == 4) {
    const auto& s = *src.shape;
    dst.shape = to_channels_last ? std::vector<ir::Dim>{s[0], s[2], s[3], s[1]} : std::vector<ir::Dim>{s[0], s[3], s[1], s[2]};
  }
  return t;
}

// A 1x1 stride-1 Conv of fewer than 16 output channels, no residual: its
// kernel writes a planar output at no cost (ops/conv_channels_last.h).
bool few_channels_pointwise(const ir::Graph& g, const ir::Node& n) {
  const Tensor& w = g.initializers.at(n.inputs[1]);
  if (w.dim(0) >= 16 || w.dim(2) != 1 || w.dim(3) != 1 || n.attr_i("group", 1) != 1 || n.inputs.size() > 3) return false;
  const std::string pad = n.attr_s("auto_pad", "NOTSET");
  for (int64_t v : n.attr_ints("strides")) if (v != 1) return false;
  for (int64_t v : n.attr_ints("pads")) if (v != 0) return false;
  return pad == "NOTSET" || pad == "VALID";
}

// Conv n as ConvChannelsLast (its residual, if any, stays input 3).
void to_conv_channels_last(ir::Node& n) {
  n.op_type = "ConvChannelsLast";
  n.domain = "com.kestrel";
  n.opset = 1;
  n.attrs.erase(kResidualAttr);
  n.inputs.resize(std::max<size_t>(n.inputs.size(), 3), -1);
}

ir::Node transpose(const std::string& name, int opset, int from, int to, bool to_channels_last) {
  ir::Node t;
  t.name = name;
  t.op_type = "Transpose";
  t.opset = opset;
  t.inputs = {from};
  t.outputs = {to};
  ir::set_attr(t, "perm", to_channels_last ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 3, 1, 2});
  return t;
}

// A Transpose of a channels-last image into channels-first (an NHWC
// model's first node, as in M-LSD).
bool to_channels_first(const ir::Node& n) {
  return default_op(n, "Transpose") && n.inputs.size() == 1 && n.outputs.size() == 1 &&
         n.attr_ints("perm") == std::vector<int64_t>{0, 3, 1, 2};
}

// A new value `name`: a vector of 4 values of `dtype` (a shape, scales or
// sizes, or their order).
int four_values(ir::Graph& g, const std::string& name, DType dtype) {
  const int v = g.add_value(name);
  g.values[size_t(v)].dtype = dtype;
  g.values[size_t(v)].shape = std::vector<ir::Dim>{ir::Dim{4, ""}};
  return v;
}

// A Gather of the 4 values of `from` in `order` into `to`, the order a new
// constant named `name`.
ir::Node gather_order(ir::Graph& g, const std::string& name, int opset, int from, const std::vector<int64_t>& order,
                      int to) {
  const int idx = four_values(g, name, DType::Int64);
  g.initializers[idx] = Tensor::from_i64(order);
  ir::Node gather;
  gather.name = name;
  gather.op_type = "Gather";
  gather.opset = opset;
  gather.inputs = {from, idx};
  gather.outputs = {to};
  ir::set_attr(gather, "axis", int64_t(0));
  return gather;
}

// A member Resize's scales or sizes (input `at`, resize_target_input of
// the node before its X moved to the layout) as [N, H, W, C] takes them: a
// permuted constant (the original may have other readers), or a Gather of
// the value computed at run time (M-LSD's sizes: Shape, Slice, Concat)
// added to `out` before the node.
void permute_resize_target(ir::Graph& g, ir::Node& n, int at, std::vector<ir::Node>& out) {
  const int src = n.inputs[size_t(at)];
  const std::string what = at == 2 ? "scales" : "sizes";
  const int v = four_values(g, n.name + "/channels_last_" + what, g.values[size_t(src)].dtype);
  const std::vector<int64_t> order{0, 2, 3, 1};
  auto it = g.initializers.find(src);
  if (it != g.initializers.end()) {
    const Tensor& t = it->second;
    Tensor p(t.dtype(), t.shape());
    const size_t es = dtype_size(t.dtype());
    for (size_t k = 0; k < 4; ++k) std::memcpy(p.raw() + k * es, t.raw() + size_t(order[k]) * es, es);
    g.initializers[v] = std::move(p);
  } else {
    out.push_back(gather_order(g, n.name + "/channels_last_order", n.opset, src, order, v));
  }
  n.inputs[size_t(at)] = v;
}

}  // namespace

bool channels_last_suits_cpu() { return KESTREL_X86 && cpu_isa() >= CpuIsa::Avx2; }

int channels_last_chains(ir::Graph& g) {
  std::vector<bool> conv_ok(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) conv_ok[i] = conv_candidate(g, g.nodes[i]);
  std::vector<bool> member;
  // Values read by a non-member or returned by the graph, for the final
  // member set once the loop settles (its last round changes nothing).
  std::vector<bool> read_planar;
  // Drop the chains too short for their reorders until none is left.
  for (bool again = true; again;) {
    again = false;
    member = members(g, conv_ok);
    std::vector<int> parent(g.nodes.size());
    std::iota(parent.begin(), parent.end(), 0);
    std::vector<int> producer(g.values.size(), -1);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!member[i]) continue;
      for (size_t k : layout_inputs(g.nodes[i])) {
        const int v = k < g.nodes[i].inputs.size() ? g.nodes[i].inputs[k] : -1;
        if (v >= 0 && producer[size_t(v)] >= 0)
          parent[size_t(find_root(parent, int(i)))] = find_root(parent, producer[size_t(v)]);
      }
      producer[size_t(g.nodes[i].outputs[0])] = int(i);
    }
    // Per chain: its Convs, and the reorders at its ends (values entering,
    // and values leaving for a planar reader).
    std::vector<int> convs(g.nodes.size(), 0), reorders(g.nodes.size(), 0);
    read_planar.assign(g.values.size(), false);
    for (int v : g.outputs) read_planar[size_t(v)] = true;
    std::set<std::pair<int, int>> entering;  // (chain, value)
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ir::Node& n = g.nodes[i];
      const std::vector<size_t> li = member[i] ? layout_inputs(n) : std::vector<size_t>{};
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const int v = n.inputs[k];
        if (v < 0) continue;
        const bool in_layout = std::find(li.begin(), li.end(), k) != li.end();
        // (A Shape of a member's output reads the channels-last value.)
        if (!in_layout && !(shape_reader(n) && producer[size_t(v)] >= 0)) read_planar[size_t(v)] = true;
        else if (producer[size_t(v)] < 0 && !scalar_constant(g, v) && !rank4_constant(g, v))
          entering.insert({find_root(parent, int(i)), v});
      }
    }
    for (const auto& e : entering) ++reorders[size_t(e.first)];
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!member[i]) continue;
      const int root = find_root(parent, int(i));
      if (conv_ok[i]) ++convs[size_t(root)];
      const bool free_exit = conv_ok[i] && few_channels_pointwise(g, g.nodes[i]);
      if (read_planar[size_t(g.nodes[i].outputs[0])] && !free_exit) ++reorders[size_t(root)];
    }
    // A chain pays for its reorders only when they are few beside its
    // layers: PP-OCR's classifier leaves the layout at each squeeze-and-
    // excite pool (53 Convs, 20 reorders) and BlazeFace front at each pooled
    // residual (37, 25), both slower so; UltraFace (52, 3), YOLOX-nano and
    // M-LSD (one reorder to 5 to 9 Convs) gain (BENCHMARKS.md).
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const int root = find_root(parent, int(i));
      if (conv_ok[i] && convs[size_t(root)] < std::max(2, kConvsPerReorder * reorders[size_t(root)]))
        conv_ok[i] = false, again = true;
    }
  }
  const int moved = int(std::count_if(conv_ok.begin(), conv_ok.end(), [](bool b) { return b; }));
  if (moved == 0) return 0;

  const passes::GraphUses uses(g);
  std::vector<int> twin_cl(g.values.size(), -1);  // value -> its channels-last twin
  std::vector<bool> read_in_layout(g.values.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (member[i])
      for (size_t k : layout_inputs(g.nodes[i]))
        if (k < g.nodes[i].inputs.size() && g.nodes[i].inputs[k] >= 0) read_in_layout[size_t(g.nodes[i].inputs[k])] = true;

  std::vector<ir::Node> out;
  out.reserve(g.nodes.size() + 16);
  std::vector<bool> left(g.values.size(), false);  // a member's output also written planar
  std::vector<int> made_by(g.values.size(), -1);  // value -> the node writing it
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int y : g.nodes[i].outputs)
      if (y >= 0) made_by[size_t(y)] = int(i);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node n = g.nodes[i];
    const int opset = n.opset;  // the default domain's, for the Transposes
    if (!member[i]) {
      const int v = n.inputs.empty() ? -1 : n.inputs[0];
      // A transpose into channels-first that only the chain reads: the
      // chain reads its input instead (below), so it goes.
      if (to_channels_first(n) && !read_planar[size_t(n.outputs[0])] && read_in_layout[size_t(n.outputs[0])] &&
          uses.only_node_inputs_read(n.outputs[0]))
        continue;
      const bool only_channels_last =  // a member's output that does not leave the layout
          v >= 0 && made_by[size_t(v)] >= 0 && member[size_t(made_by[size_t(v)])] && twin_cl[size_t(v)] >= 0 &&
          !left[size_t(v)];
      if (shape_reader(n) && only_channels_last) {
        // The shape of the channels-last value, its dims back in NCHW order.
        n.inputs[0] = twin_cl[size_t(v)];
        const int y = n.outputs[0], dims = four_values(g, g.values[size_t(y)].name + ".channels_last", DType::Int64);
        n.outputs[0] = dims;
        out.push_back(std::move(n));
        out.push_back(gather_order(g, g.nodes[i].name + "/channels_first_order", opset, dims, {0, 3, 1, 2}, y));
        continue;
      }
      out.push_back(std::move(n));
      continue;
    }
    for (size_t k : layout_inputs(n)) {
      const int v = n.inputs[k];
      if (v < 0 || scalar_constant(g, v)) continue;
      if (twin_cl[size_t(v)] < 0) {  // enters the layout here
        const int from = made_by[size_t(v)];
        if (from >= 0 && to_channels_first(g.nodes[size_t(from)])) {
          // v is itself a channels-last value transposed (an NHWC model's
          // input, as M-LSD's): the chain reads that value instead.
          twin_cl[size_t(v)] = g.nodes[size_t(from)].inputs[0];
        } else if (rank4_constant(g, v)) {
          Tensor t = channels_last_constant(g.initializers.at(v));
          twin_cl[size_t(v)] = layout_twin(g, v, true);
          g.initializers.emplace(twin_cl[size_t(v)], std::move(t));
        } else {
          twin_cl[size_t(v)] = layout_twin(g, v, true);
          out.push_back(transpose(n.name + "/to_channels_last_" + std::to_string(k), n.opset, v, twin_cl[size_t(v)], true));
        }
      }
      n.inputs[k] = twin_cl[size_t(v)];
    }
    const int y = n.outputs[0];
    if (default_op(n, "Conv") && !read_in_layout[size_t(y)] && few_channels_pointwise(g, n)) {
      to_conv_channels_last(n);  // the chain ends in this layer's planar output
      ir::set_attr(n, ops::kPlanarOutputAttr, int64_t(1));
      out.push_back(std::move(n));
      continue;
    }
    const int y_cl = layout_twin(g, y, true);
    twin_cl[size_t(y)] = y_cl;
    n.outputs[0] = y_cl;
    if (default_op(n, "Conv")) to_conv_channels_last(n);
    else if (concat_on_channels(n)) ir::set_attr(n, "axis", int64_t(3));
    else if (default_op(n, "Resize")) permute_resize_target(g, n, resize_target_input(g, g.nodes[i]), out);
    else if (default_op(n, "MaxPool")) {
      n.op_type = "MaxPoolChannelsLast";
      n.domain = "com.kestrel";
      n.opset = 1;
      n.attrs.erase("storage_order");  // (it orders only the Indices output)
    }
    const std::string name = n.name;
    out.push_back(std::move(n));
    if (read_planar[size_t(y)] || !uses.only_node_inputs_read(y)) {  // leaves the layout here
      out.push_back(transpose(name + "/to_channels_first", opset, y_cl, y, false));
      left[size_t(y)] = true;
    }
  }
  g.nodes = std::move(out);
  return moved;
}

}  // namespace kestrel::backends::cpu

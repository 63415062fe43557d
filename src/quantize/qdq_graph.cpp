#include "quantize/qdq_graph.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "onnx/loader.h"

namespace kestrel::quantize {
namespace {

const onnx::TensorProto* initializer(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return def;
}

void write_tensor(onnx::TensorProto* p, const std::string& name, const Tensor& t) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(int32_t(t.dtype()));  // Kestrel's DType numbers are ONNX's
  for (int64_t d : t.shape()) p->add_dims(d);
  p->set_raw_data(t.raw(), t.nbytes());
}

Tensor floats(const Shape& shape, const std::vector<float>& v) { return Tensor::from_f32(shape, v); }

template <typename T>
Tensor bytes_of(DType dt, const Shape& shape, const std::vector<T>& v) {
  Tensor t(dt, shape);
  std::memcpy(t.raw(), v.data(), v.size() * sizeof(T));
  return t;
}

// Names not yet in the model, from a stem.
class Namer {
 public:
  explicit Namer(const onnx::GraphProto& g) {
    for (const auto& i : g.input()) used_.insert(i.name());
    for (const auto& t : g.initializer()) used_.insert(t.name());
    for (const auto& n : g.node()) {
      for (const auto& o : n.output()) used_.insert(o);
      used_.insert(n.name());
    }
  }
  std::string operator()(const std::string& stem) {
    std::string s = stem;
    for (int k = 1; used_.count(s); ++k) s = stem + "_" + std::to_string(k);
    used_.insert(s);
    return s;
  }

 private:
  std::set<std::string> used_;
};

onnx::NodeProto make_node(const std::string& op, const std::string& name, std::vector<std::string> in,
                          const std::string& out, int axis = -1) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (auto& i : in) n.add_input(i);
  n.add_output(out);
  if (axis >= 0) {
    auto* a = n.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
  }
  return n;
}

// The nodes reading each value, in graph order.
std::map<std::string, std::vector<int>> readers_of(const onnx::GraphProto& g) {
  std::map<std::string, std::vector<int>> r;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& in : g.node(i).input())
      if (!in.empty() && (r[in].empty() || r[in].back() != i)) r[in].push_back(i);
  return r;
}

bool default_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

// The one-op activations a quantized value is taken past.
const std::set<std::string> kOneOpActivations = {"Relu", "Clip", "LeakyRelu", "HardSigmoid", "Sigmoid", "HardSwish"};

// The node that alone reads v, when it is a default-domain op of `ops` with
// one output (and, with constant_operand, a constant other operand); -1
// otherwise.
int sole_reader(const onnx::GraphProto& g, const std::map<std::string, std::vector<int>>& readers,
                const std::string& v, const std::set<std::string>& ops, bool constant_operand = false) {
  const auto it = readers.find(v);
  if (it == readers.end() || it->second.size() != 1) return -1;
  const onnx::NodeProto& n = g.node(it->second[0]);
  if (!default_domain(n) || !ops.count(n.op_type()) || n.output_size() != 1) return -1;
  if (constant_operand && (n.input_size() != 2 || !initializer(g, n.input(0) == v ? n.input(1) : n.input(0))))
    return -1;
  return it->second[0];
}

// The value a Conv's output quantizer goes after (QuantTarget::output): its
// output, past any Mul or Add of a constant that alone reads it (a scale and
// bias Kestrel folds into the Conv, passes/fold_conv_affine.cpp), and past
// the activation that alone reads that (one op, x * Sigmoid(x), or hard
// swish as x * Clip(x + 3, 0, 6) / 6); empty where the value is a graph
// output.
std::string quantized_output(const onnx::GraphProto& g, const std::map<std::string, std::vector<int>>& readers,
                             const onnx::NodeProto& conv) {
  const std::vector<int> none;
  std::string y = conv.output(0);
  for (int n; (n = sole_reader(g, readers, y, {"Mul", "Add"}, true)) >= 0;) y = g.node(n).output(0);
  const std::string x = y;  // the activation's input
  const auto rx = readers.find(x);
  const std::vector<int>& r = rx == readers.end() ? none : rx->second;
  const int one_op = sole_reader(g, readers, y, kOneOpActivations);
  if (one_op >= 0)
    y = g.node(one_op).output(0);
  else if (r.size() == 2) {
    // x * Clip(x + 3, 0, 6) / 6: x read by the Add and the Mul.
    for (int k = 0; k < 2; ++k) {
      const onnx::NodeProto& add = g.node(r[size_t(k)]);
      if (add.op_type() != "Add" || !default_domain(add) || add.output_size() != 1) continue;
      const int clip = sole_reader(g, readers, add.output(0), {"Clip"});
      const int mul = clip < 0 ? -1 : sole_reader(g, readers, g.node(clip).output(0), {"Mul"});
      const int div = mul != r[size_t(1 - k)] ? -1 : sole_reader(g, readers, g.node(mul).output(0), {"Div"});
      if (div >= 0) {
        y = g.node(div).output(0);
        break;
      }
    }
  }
  if (y == x && r.size() == 2) {
    for (int k = 0; k < 2; ++k) {
      const onnx::NodeProto& gate = g.node(r[size_t(k)]);
      const onnx::NodeProto& mul = g.node(r[size_t(1 - k)]);
      if (!default_domain(gate) || !default_domain(mul) || gate.op_type() != "Sigmoid" || mul.op_type() != "Mul" ||
          gate.output_size() != 1 || mul.input_size() != 2)
        continue;
      const bool gate_to_mul = sole_reader(g, readers, gate.output(0), {"Mul"}) == r[size_t(1 - k)];
      const bool pair = (mul.input(0) == y && mul.input(1) == gate.output(0)) ||
                        (mul.input(1) == y && mul.input(0) == gate.output(0));
      if (gate_to_mul && pair) {
        y = mul.output(0);
        break;
      }
    }
  }
  for (const auto& o : g.output())
    if (o.name() == y) return "";
  return y;
}

}  // namespace

std::shared_ptr<onnx::ModelProto> read_model(const std::string& path) {
  KESTREL_CHECK_AS(ErrorKind::NoSuchFile, std::filesystem::is_regular_file(path), "model file '", path,
                   "' does not exist");
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto m = std::make_shared<onnx::ModelProto>();
  KESTREL_CHECK_AS(ErrorKind::InvalidModel, bytes.size() < (size_t(1) << 31) && m->ParseFromString(bytes), "'",
                   path, "' is not an ONNX model Kestrel can rewrite (not a protobuf ModelProto under 2 GiB)");
  const std::string dir = std::filesystem::path(path).parent_path().string();
  // Exporters that store weights as Constant nodes (Paddle2ONNX) get them as
  // initializers, the form the rewrite reads weights in.
  onnx::GraphProto* g = m->mutable_graph();
  for (int i = g->node_size() - 1; i >= 0; --i) {
    const onnx::NodeProto& n = g->node(i);
    if (n.op_type() != "Constant" || !(n.domain().empty() || n.domain() == "ai.onnx") || n.output_size() != 1 ||
        n.attribute_size() != 1 || n.attribute(0).name() != "value")
      continue;
    onnx::TensorProto* t = g->add_initializer();
    *t = n.attribute(0).t();
    t->set_name(n.output(0));
    g->mutable_node()->DeleteSubrange(i, 1);
  }
  for (auto& t : *m->mutable_graph()->mutable_initializer())
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      const std::string name = t.name();
      write_tensor(&t, name, onnx_io::tensor_from_proto(t, dir.empty() ? "." : dir));
    }
  return m;
}

int default_opset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return int(o.version());
  return 0;
}

Tensor weight_tensor(const onnx::ModelProto& m, const std::string& name) {
  const onnx::TensorProto* t = initializer(m.graph(), name);
  KESTREL_CHECK(t, "no initializer '", name, "'");
  return onnx_io::tensor_from_proto(*t, "");
}

void convert_opset(onnx::ModelProto& m, int target) {
  for (int v = default_opset(m); v < target; ++v) {
    m.mutable_graph()->clear_value_info();
    onnx::shape_inference::InferShapes(m);
    m = onnx::version_conversion::ConvertVersion(m, v + 1);
  }
  m.mutable_graph()->clear_value_info();
}

std::vector<QuantTarget> find_targets(const onnx::ModelProto& m, std::vector<std::string>* skipped) {
  const onnx::GraphProto& g = m.graph();
  const auto readers = readers_of(g);
  std::vector<QuantTarget> out;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    const std::string& op = n.op_type();
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    if (op != "Conv" && op != "MatMul" && op != "Gemm") continue;
    const std::string who = "node '" + onnx_io::node_name(n, i) + "' (" + op + ")";
    const onnx::TensorProto* w = n.input_size() >= 2 ? initializer(g, n.input(1)) : nullptr;
    if (!w) {
      if (skipped) skipped->push_back(who + ": its second input is not a constant weight");
      continue;
    }
    if (w->data_type() != onnx::TensorProto::FLOAT) {
      if (skipped) skipped->push_back(who + ": its weight is not float32");
      continue;
    }
    if (initializer(g, n.input(0))) {
      if (skipped) skipped->push_back(who + ": its first input is a constant");
      continue;
    }
    QuantTarget t{i, onnx_io::node_name(n, i), n.input(0), n.input(1), 0, ""};
    if (op == "Conv" && n.output_size() == 1) t.output = quantized_output(g, readers, n);
    if (op == "MatMul") {
      if (w->dims_size() < 2) {
        if (skipped) skipped->push_back(who + ": a 1-D right side");
        continue;
      }
      t.weight_axis = w->dims_size() - 1;
    } else if (op == "Gemm") {
      if (attr_int(n, "transA", 0) != 0) {
        if (skipped) skipped->push_back(who + ": transA");
        continue;
      }
      t.weight_axis = attr_int(n, "transB", 0) ? 0 : 1;
    }
    out.push_back(t);
  }
  return out;
}

std::vector<std::string> find_residual_sums(const onnx::ModelProto& m) {
  const onnx::GraphProto& g = m.graph();
  const auto readers = readers_of(g);
  std::set<std::string> outputs;
  for (const auto& o : g.output()) outputs.insert(o.name());
  std::vector<std::string> sums;
  for (const onnx::NodeProto& n : g.node()) {
    if (n.op_type() != "Add" || !default_domain(n) || n.input_size() != 2 || n.output_size() != 1) continue;
    if (initializer(g, n.input(0)) || initializer(g, n.input(1))) continue;
    std::string y = n.output(0);
    if (const int act = sole_reader(g, readers, y, kOneOpActivations); act >= 0) y = g.node(act).output(0);
    if (!outputs.count(y) && readers.count(y)) sums.push_back(y);
  }
  return sums;
}

std::string with_outputs(const onnx::ModelProto& m, const std::vector<std::string>& names) {
  onnx::ModelProto c = m;
  std::set<std::string> present;
  for (const auto& o : c.graph().output()) present.insert(o.name());
  for (const std::string& n : names)
    if (present.insert(n).second) c.mutable_graph()->add_output()->set_name(n);
  return c.SerializeAsString();
}

namespace {

onnx::AttributeProto* int_attribute(onnx::NodeProto& n, const char* name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
  return a;
}

// MatMul(x, W) -> com.microsoft MatMulNBits(x, W in 4-bit blocks, scales).
template <typename Namer>
void to_matmul_nbits(onnx::GraphProto& g, Namer& name, onnx::NodeProto& node, const std::string& weight) {
  const Tensor w = onnx_io::tensor_from_proto(*initializer(g, weight), "");
  const Int4Blocks b = quantize_int4_blocks(w, kInt4Block);
  const std::string bq = name(weight + "_int4"), bs = name(weight + "_int4_scales");
  write_tensor(g.add_initializer(), bq, b.packed);
  write_tensor(g.add_initializer(), bs, floats({int64_t(b.scales.size())}, b.scales));
  node.set_op_type("MatMulNBits");
  node.set_domain("com.microsoft");
  node.set_input(1, bq);
  node.add_input(bs);
  int_attribute(node, "K", w.dim(0));
  int_attribute(node, "N", w.dim(1));
  int_attribute(node, "bits", 4);
  int_attribute(node, "block_size", kInt4Block);
}

}  // namespace

std::string qdq_model(const onnx::ModelProto& m, const std::vector<QuantTarget>& targets,
                      const std::vector<std::string>& sums, const std::map<std::string, Range>& ranges,
                      bool per_channel, bool int4_matmuls, int weight_limit) {
  onnx::ModelProto q = m;
  onnx::GraphProto* g = q.mutable_graph();
  Namer name(*g);
  const auto readers = readers_of(*g);
  // Each quantized value gets one QuantizeLinear -> DequantizeLinear pair,
  // placed just before its first reader (so after its producer). A target's
  // activation goes to that target alone; a quantized output to every
  // reader (the pair's own QuantizeLinear aside).
  std::map<int, std::vector<onnx::NodeProto>> before;
  std::map<std::string, std::string> dequantized;  // value -> its dequantized name
  auto pair_for = [&](const std::string& v) -> const std::string& {
    auto it = dequantized.find(v);
    if (it != dequantized.end()) return it->second;
    const auto r = ranges.find(v);
    KESTREL_CHECK(r != ranges.end(), "no calibrated range for '", v, "'");
    const ActivationParams p = activation_params(r->second);
    const std::string scale = name(v + "_scale"), zp = name(v + "_zero_point");
    write_tensor(g->add_initializer(), scale, floats({}, {p.scale}));
    write_tensor(g->add_initializer(), zp, bytes_of<uint8_t>(DType::UInt8, {}, {p.zero_point}));
    const std::string qn = name(v + "_quantized"), dqn = name(v + "_dequantized");
    auto& list = before[readers.at(v).front()];
    list.push_back(make_node("QuantizeLinear", name(v + "_QuantizeLinear"), {v, scale, zp}, qn));
    list.push_back(make_node("DequantizeLinear", name(v + "_DequantizeLinear"), {qn, scale, zp}, dqn));
    return dequantized.emplace(v, dqn).first->second;
  };
  // A quantized output would also round the input of a Conv, MatMul or Gemm
  // left in float (the search of quantize.cpp leaves the nodes whose input
  // rounds worst in float): such outputs stay float.
  std::set<int> chosen;
  for (const QuantTarget& t : targets) chosen.insert(t.node);
  const auto read_by_float_product = [&](const std::string& v) {
    for (int r : readers.at(v)) {
      const onnx::NodeProto& n = g->node(r);
      if (default_domain(n) && (n.op_type() == "Conv" || n.op_type() == "MatMul" || n.op_type() == "Gemm") &&
          !chosen.count(r))
        return true;
    }
    return false;
  };
  // A quantized output or residual sum: every reader takes it dequantized.
  const auto quantize_for_every_reader = [&](const std::string& v) {
    if (v.empty() || !ranges.count(v) || !readers.count(v) || read_by_float_product(v)) return;
    const std::string dq = pair_for(v);
    for (int r : readers.at(v)) {
      onnx::NodeProto* reader = g->mutable_node(r);
      for (int k = 0; k < reader->input_size(); ++k)
        if (reader->input(k) == v) reader->set_input(k, dq);
    }
  };
  std::vector<onnx::NodeProto> weight_nodes;
  bool nbits = false;
  for (const QuantTarget& t : targets) {
    onnx::NodeProto* node = g->mutable_node(t.node);
    if (int4_matmuls && node->op_type() == "MatMul" && default_domain(*node)) {
      to_matmul_nbits(*g, name, *node, t.weight);
      nbits = true;
      continue;
    }
    node->set_input(0, pair_for(t.activation));
    quantize_for_every_reader(t.output);

    const onnx::TensorProto* wp = initializer(*g, t.weight);
    const Tensor w = onnx_io::tensor_from_proto(*wp, "");
    const QuantizedWeight qw = quantize_weight(w, per_channel ? t.weight_axis : -1, weight_limit);
    const std::string wq = name(t.weight + "_quantized"), ws = name(t.weight + "_scale"),
                      wz = name(t.weight + "_zero_point"), wdq = name(t.weight + "_dequantized");
    const Shape sshape = per_channel ? Shape{int64_t(qw.scales.size())} : Shape{};
    write_tensor(g->add_initializer(), wq, qw.q);
    write_tensor(g->add_initializer(), ws, floats(sshape, qw.scales));
    write_tensor(g->add_initializer(), wz,
                 bytes_of<int8_t>(DType::Int8, sshape, std::vector<int8_t>(qw.scales.size(), 0)));
    weight_nodes.push_back(
        make_node("DequantizeLinear", name(t.weight + "_DequantizeLinear"), {wq, ws, wz}, wdq, qw.axis));
    node->set_input(1, wdq);
  }
  for (const std::string& v : sums) quantize_for_every_reader(v);
  // The float weights that no node reads any more go.
  std::set<std::string> read;
  for (const auto& n : g->node())
    for (const auto& i : n.input()) read.insert(i);
  for (const auto& n : weight_nodes)
    for (const auto& i : n.input()) read.insert(i);
  for (const auto& o : g->output()) read.insert(o.name());
  std::set<std::string> quantized;
  for (const QuantTarget& t : targets) quantized.insert(t.weight);
  auto* inits = g->mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i)
    if (quantized.count(inits->Get(i).name()) && !read.count(inits->Get(i).name())) inits->DeleteSubrange(i, 1);
  // Topological order: weights' DequantizeLinear first, each value's pair
  // just before its first reader (after its producer).
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (auto& n : weight_nodes) *nodes.Add() = n;
  for (int i = 0; i < g->node_size(); ++i) {
    for (auto& n : before[i]) *nodes.Add() = n;
    *nodes.Add() = g->node(i);
  }
  g->mutable_node()->Swap(&nodes);
  if (nbits) {  // MatMulNBits' domain, version 1
    bool imported = false;
    for (const auto& os : q.opset_import()) imported = imported || os.domain() == "com.microsoft";
    if (!imported) {
      auto* os = q.add_opset_import();
      os->set_domain("com.microsoft");
      os->set_version(1);
    }
  }
  const std::string bytes = q.SerializeAsString();
  KESTREL_CHECK(bytes.size() < (size_t(1) << 31), "the quantized model is over 2 GiB, which one ONNX file cannot hold");
  return bytes;
}

}  // namespace kestrel::quantize

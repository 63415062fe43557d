#include "onnx/loader.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <filesystem>
#include <algorithm>
#include <fstream>
#include <limits>
#include <set>

#include "onnx/model_checks.h"
#include "ops/registry.h"

namespace kestrel::onnx_io {
namespace {

// The element types ONNX added after bfloat16 (TensorProto.DataType 17 on,
// IR versions 9 to 12), which Kestrel does not hold.
const char* newer_element_type(int32_t t) {
  static const char* const names[] = {"FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",
                                      "INT4", "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"};
  const int32_t i = t - 17;
  return i >= 0 && i < int32_t(std::size(names)) ? names[i] : "unknown to Kestrel";
}

void read_type(const onnx::TypeProto& tp, ir::Value& v) {
  // Refused here, before ONNX's shape inference sees it: its functions take a
  // sparse value's shape as present and then index the dense type's, which
  // is empty (a sparse ConvTranspose weight crashed the process).
  KESTREL_CHECK_AS(ErrorKind::NotImplemented, !tp.has_sparse_tensor_type(), "value '", v.name,
                   "' is declared a sparse tensor, which Kestrel does not support");
  if (!tp.has_tensor_type()) return;
  const auto& tt = tp.tensor_type();
  KESTREL_CHECK_AS(ErrorKind::NotImplemented, tt.elem_type() <= int32_t(DType::BFloat16), "value '", v.name,
                   "' has ONNX element type ", tt.elem_type(), " (", newer_element_type(tt.elem_type()),
                   "), which Kestrel does not support");
  v.dtype = static_cast<DType>(tt.elem_type());
  if (!tt.has_shape()) return;
  std::vector<ir::Dim> dims;
  for (const auto& d : tt.shape().dim()) {
    ir::Dim dim;
    if (d.has_dim_value()) dim.value = d.dim_value();
    // "?" is how some exporters (insightface's SCRFD) write "unknown" in every
    // open dim: read as a name, it would make batch, height and width one size.
    else if (d.has_dim_param() && d.dim_param() != "?") dim.symbol = d.dim_param();
    dims.push_back(dim);
  }
  v.shape = dims;
}

ir::Graph convert_graph(const onnx::GraphProto& gp, const Domains& domains, const std::string& base_dir,
                        const ir::Graph* parent);

ir::Attribute convert_attr(const onnx::AttributeProto& a, const Domains& domains, const std::string& base_dir,
                           const ir::Graph& owner) {
  ir::Attribute r;
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::FLOAT: r.kind = ir::Attribute::Kind::Float; r.f = a.f(); break;
    case A::INT: r.kind = ir::Attribute::Kind::Int; r.i = a.i(); break;
    case A::STRING: r.kind = ir::Attribute::Kind::String; r.s = a.s(); break;
    case A::TENSOR: r.kind = ir::Attribute::Kind::Tensor; r.t = tensor_from_proto(a.t(), base_dir); break;
    case A::GRAPH:
      r.kind = ir::Attribute::Kind::Graph;
      r.g = std::make_shared<ir::Graph>(convert_graph(a.g(), domains, base_dir, &owner));
      break;
    case A::FLOATS: r.kind = ir::Attribute::Kind::Floats; r.floats.assign(a.floats().begin(), a.floats().end()); break;
    case A::INTS: r.kind = ir::Attribute::Kind::Ints; r.ints.assign(a.ints().begin(), a.ints().end()); break;
    case A::STRINGS: r.kind = ir::Attribute::Kind::Strings; r.strings.assign(a.strings().begin(), a.strings().end()); break;
    case A::SPARSE_TENSOR:
    case A::SPARSE_TENSORS:
      fail_as(ErrorKind::NotImplemented, "attribute '", a.name(), "' holds a sparse tensor, which Kestrel does not support");
    default: fail("attribute '", a.name(), "' has a type (", int(a.type()), ") Kestrel does not read");
  }
  return r;
}

ir::Graph convert_graph(const onnx::GraphProto& gp, const Domains& domains, const std::string& base_dir,
                        const ir::Graph* parent) {
  ir::Graph g;
  g.name = gp.name();
  if (gp.sparse_initializer_size() > 0)
    fail_as(ErrorKind::NotImplemented, "graph '", g.name, "' has a sparse initializer '",
            gp.sparse_initializer(0).values().name(), "'; Kestrel does not support sparse tensors");
  for (const auto& t : gp.initializer()) {
    KESTREL_CHECK(!t.name().empty(), "graph '", g.name, "' has an initializer without a name");
    int id = g.add_value(t.name());
    g.initializers[id] = tensor_from_proto(t, base_dir);
    g.values[size_t(id)].dtype = g.initializers[id].dtype();
  }
  for (const auto& i : gp.input()) {
    int id = g.add_value(i.name());
    read_type(i.type(), g.values[size_t(id)]);
    if (!g.initializers.count(id)) g.inputs.push_back(id);  // IR < 4 lists initializers as inputs too
  }
  for (const auto& vi : gp.value_info()) read_type(vi.type(), g.values[size_t(g.add_value(vi.name()))]);

  // Outputs of nodes are defined here; anything read but defined nowhere in
  // this graph is an outer-scope reference when a parent exists.
  std::set<std::string> produced;
  for (const auto& n : gp.node())
    for (const auto& o : n.output())
      if (!o.empty()) produced.insert(o);
  int index = 0;
  for (const auto& np : gp.node()) {
    ir::Node n;
    n.op_type = np.op_type();
    n.domain = canonical_domain(np.domain());
    n.name = node_name(np, index);
    ++index;
    auto dom = domains.find(n.domain);
    if (dom == domains.end())
      fail(n.where(), " uses domain '", n.domain, "', which the model does not import (opset_import)");
    n.opset = dom->second;
    for (const auto& in : np.input()) {
      if (in.empty()) { n.inputs.push_back(-1); continue; }
      bool known = g.find(in) >= 0 || produced.count(in);
      int id = g.add_value(in);
      if (!known && parent) g.outer_refs.push_back(id);  // resolved in an enclosing scope at run time
      n.inputs.push_back(id);
    }
    for (const auto& out : np.output()) n.outputs.push_back(out.empty() ? -1 : g.add_value(out));
    for (const auto& a : np.attribute()) {
      KESTREL_CHECK(!a.name().empty(), n.where(), " has an attribute without a name");
      try {
        n.attrs[a.name()] = convert_attr(a, domains, base_dir, g);
      } catch (const Error& e) {
        fail_as(e.kind(), n.where(), ": ", e.what());
      }
    }
    g.nodes.push_back(std::move(n));
  }
  for (const auto& o : gp.output()) {
    bool local = produced.count(o.name()) || g.find(o.name()) >= 0;
    KESTREL_CHECK(local || parent, "graph output '", o.name(), "' is not produced by any node, input or initializer");
    int id = g.add_value(o.name());
    if (!local) g.outer_refs.push_back(id);  // a branch that just forwards an outer value
    read_type(o.type(), g.values[size_t(id)]);
    g.outputs.push_back(id);
  }
  topo_sort(g);
  return g;
}

// ONNX's inference functions (libonnx 1.12) assume each node already passed
// its schema's checks and dereference missing attributes or inputs otherwise
// (a Scan without num_scan_inputs crashes), so inference only runs on a model
// whose every node, in subgraphs too, verifies against its schema. Nodes
// without a schema (custom domains) are fine: inference skips them.
// (check_model refuses most attributes inference would trip on; a schema out
// of date for the model's opset can still fail Verify here.)
bool inference_is_safe(const onnx::GraphProto& g, const Domains& domains) {
  for (const auto& n : g.node()) {
    // DepthToSpace's inference divides the channels by blocksize squared; a
    // square that wraps to 0 stops the process. Such a model loads without
    // inference and its run names the blocksize.
    if (n.op_type() == "DepthToSpace" && canonical_domain(n.domain()).empty())
      for (const auto& a : n.attribute())
        if (a.name() == "blocksize" && (a.i() <= 0 || a.i() > std::numeric_limits<int64_t>::max() / a.i()))
          return false;
    auto dom = domains.find(canonical_domain(n.domain()));
    if (dom == domains.end()) return false;
    if (const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), dom->second, dom->first)) {
      try {
        schema->Verify(n);
      } catch (const std::exception&) {
        return false;
      }
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g() && !inference_is_safe(a.g(), domains)) return false;
      for (const auto& sub : a.graphs())
        if (!inference_is_safe(sub, domains)) return false;
    }
  }
  return true;
}

// Copies the types that shape inference wrote into value_info and the
// outputs onto the already converted graph's values.
void annotate_types(const onnx::GraphProto& gp, ir::Graph& g) {
  for (const auto& vi : gp.value_info())
    if (int id = g.find(vi.name()); id >= 0) read_type(vi.type(), g.values[size_t(id)]);
  for (const auto& o : gp.output())
    if (int id = g.find(o.name()); id >= 0) read_type(o.type(), g.values[size_t(id)]);
}

}  // namespace

std::string canonical_domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

std::string node_name(const onnx::NodeProto& n, int index) {
  return n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
}

namespace {
Model parse_model_bytes(const void* data, size_t size, const std::string& base_dir);
Model convert_model(onnx::ModelProto& mp, const std::string& base_dir);
}

// Whatever stops a model from being read is, unless it says otherwise (a
// missing external-data file, a newer element type), an invalid model.
Model load_model_bytes(const void* data, size_t size, const std::string& base_dir) {
  return with_kind(ErrorKind::InvalidModel, [&] { return parse_model_bytes(data, size, base_dir); });
}

Model load_model_proto(onnx::ModelProto& mp, const std::string& base_dir) {
  return with_kind(ErrorKind::InvalidModel, [&] { return convert_model(mp, base_dir); });
}

namespace {
Model parse_model_bytes(const void* data, size_t size, const std::string& base_dir) {
  KESTREL_CHECK(size > 0, "the model is empty (0 bytes)");
  KESTREL_CHECK(size < (size_t(1) << 31), "the model file is over 2 GiB; store its weights as external data");
  onnx::ModelProto mp;
  if (!mp.ParseFromArray(data, int(size)))
    fail_as(ErrorKind::InvalidModel, "the file is not a valid ONNX model: protobuf parsing failed (truncated or not an ONNX file)");
  return convert_model(mp, base_dir);
}

Model convert_model(onnx::ModelProto& mp, const std::string& base_dir) {
  KESTREL_CHECK(mp.has_graph(), "the file parsed but holds no graph: not an ONNX model");
  Model m;
  m.ir_version = mp.ir_version();
  m.producer = mp.producer_name() + (mp.producer_version().empty() ? "" : " " + mp.producer_version());
  for (const auto& kv : mp.metadata_props()) m.metadata[kv.key()] = kv.value();
  KESTREL_CHECK(m.ir_version >= kMinIrVersion, "ONNX IR version ", m.ir_version, " is not supported (Kestrel reads ",
                kMinIrVersion, " and later)");
  for (const auto& os : mp.opset_import()) {
    KESTREL_CHECK(os.version() >= 0 && os.version() <= std::numeric_limits<int>::max(), "opset_import of domain '",
                  os.domain(), "' has an invalid version ", os.version());
    m.opsets[canonical_domain(os.domain())] = int(os.version());
  }
  auto def = m.opsets.find("");
  KESTREL_CHECK(def != m.opsets.end(), "the model imports no default-domain (ai.onnx) opset");
  KESTREL_CHECK_AS(ErrorKind::NotImplemented, def->second >= kMinOpset && def->second <= kMaxOpset,
                   "default-domain opset ", def->second, " is not supported (Kestrel runs opsets ", kMinOpset, " to ",
                   kMaxOpset, ")");

  // What ONNX itself declares invalid is refused before anything reads the
  // graph: ONNX's shape inference trusts attributes it divides by.
  check_model(mp, m.opsets);
  // Converting then checks every tensor (initializers and Constant values, in
  // subgraphs too) against its declared shape: ONNX's shape inference trusts
  // them and reads past the end of a tensor whose raw data is too short.
  m.graph = convert_graph(mp.graph(), m.opsets, base_dir, nullptr);
  // ONNX's own shape inference then adds static and symbolic shapes. It is
  // advisory: Kestrel computes real shapes at run time, so an inference
  // failure (e.g. an op it does not know) is not fatal. Models with local
  // functions are skipped: inference would expand their bodies unchecked.
  if (mp.functions_size() == 0 && inference_is_safe(mp.graph(), m.opsets)) {
    try {
      onnx::ShapeInferenceOptions opts{false, 0, false};
      onnx::shape_inference::InferShapes(mp, onnx::OpSchemaRegistry::Instance(), opts);
      annotate_types(mp.graph(), m.graph);
    } catch (const std::exception&) {
    }
  }
  KESTREL_CHECK(!m.graph.outputs.empty(), "the model's graph has no outputs");
  return m;
}
}  // namespace

Model load_model_file(const std::string& path) {
  std::error_code ec;
  KESTREL_CHECK_AS(ErrorKind::NoSuchFile, std::filesystem::exists(path, ec), "model file '", path,
                   "' does not exist");
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, !std::filesystem::is_directory(path, ec), "'", path,
                   "' is a folder, not a model file");
  // A FIFO or a device such as /dev/zero would block or never end.
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, std::filesystem::is_regular_file(path, ec), "'", path,
                   "' is not a regular file");
  std::ifstream f(path, std::ios::binary);
  KESTREL_CHECK_AS(ErrorKind::NoSuchFile, f, "model file '", path, "' cannot be opened");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string base = std::filesystem::path(path).parent_path().string();
  if (base.empty()) base = ".";
  try {
    return load_model_bytes(bytes.data(), bytes.size(), base);
  } catch (const Error& e) {
    fail_as(e.kind(), "cannot load '", path, "': ", e.what());
  }
}

namespace {
void collect_unsupported(const ir::Graph& g, std::vector<std::string>& out) {
  for (const ir::Node& n : g.nodes) {
    if (!ops::find_op(n.domain, n.op_type, n.opset))
      out.push_back(n.where() + ", domain '" + (n.domain.empty() ? "ai.onnx" : n.domain) + "', opset " +
                    std::to_string(n.opset) + ": " + ops::why_unsupported(n.domain, n.op_type, n.opset));
    for (const auto& [k, a] : n.attrs)
      if (a.g) collect_unsupported(*a.g, out);
  }
}
}  // namespace

std::vector<std::string> unsupported_nodes(const ir::Graph& g) {
  std::vector<std::string> out;
  collect_unsupported(g, out);
  return out;
}

void validate_supported(const ir::Graph& g) {
  auto bad = unsupported_nodes(g);
  if (bad.empty()) return;
  std::string msg = std::to_string(bad.size()) + " node(s) cannot run on Kestrel:";
  for (const auto& b : bad) msg += "\n  " + b;
  fail_as(ErrorKind::NotImplemented, msg);
}

}  // namespace kestrel::onnx_io

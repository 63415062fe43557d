#include "runtime/session.h"

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <sstream>
#include <thread>

#include "backends/backend.h"
#include "backends/vulkan/vulkan_backend.h"
#include "onnx/loader.h"
#include "runtime/config.h"
#include "runtime/prepare.h"

namespace kestrel {

std::string TensorInfo::shape_str() const {
  if (!shape) return "?";
  std::string s = "[";
  for (size_t i = 0; i < shape->size(); ++i) {
    const ir::Dim& d = (*shape)[i];
    s += (i ? "," : "") + (d.known() ? std::to_string(d.value) : (d.symbol.empty() ? "?" : d.symbol));
  }
  return s + "]";
}

namespace {
// A model input or output as callers see it. ONNX's shape inference names
// each open dim it cannot relate to another "unk__N": those names are its own,
// not the model's, so such dims are described as unnamed (as ONNX Runtime
// describes them). A model that itself names a dim "unk__..." loses that name here.
TensorInfo info_of(const ir::Graph& g, int id) {
  const ir::Value& v = g.values[size_t(id)];
  TensorInfo info{v.name, v.dtype, v.shape};
  if (info.shape)
    for (ir::Dim& d : *info.shape)
      if (d.symbol.rfind("unk__", 0) == 0) d.symbol.clear();
  return info;
}
}  // namespace

std::unique_ptr<Session> Session::load(const std::string& path, const SessionOptions& opts) {
  // Every edge (CLI, C API, Python) lands here: the options are checked and
  // completed from the environment before the work of loading.
  const runtime::Config c = runtime::configure(opts);
  std::unique_ptr<Session> s(new Session());
  s->model_ = std::make_unique<onnx_io::Model>(onnx_io::load_model_file(path));
  s->init(c);
  return s;
}

std::unique_ptr<Session> Session::load_bytes(const void* data, size_t size, const SessionOptions& opts) {
  const runtime::Config c = runtime::configure(opts);
  std::unique_ptr<Session> s(new Session());
  s->model_ = std::make_unique<onnx_io::Model>(onnx_io::load_model_bytes(data, size, ""));
  s->init(c);
  return s;
}

std::unique_ptr<Session> Session::load_model(onnx_io::Model&& model, const SessionOptions& opts) {
  const runtime::Config c = runtime::configure(opts);
  std::unique_ptr<Session> s(new Session());
  s->model_ = std::make_unique<onnx_io::Model>(std::move(model));
  s->init(c);
  return s;
}

Session::~Session() = default;

void Session::init(const runtime::Config& c) {
  onnx_io::validate_supported(model_->graph);
  families_ = runtime::prepare_graph(model_->graph, c);
  const ir::Graph& g = model_->graph;
  const bool vulkan = runtime::runs_on_vulkan(c);
  backend_ = vulkan ? backends::make_vulkan_backend(c.vulkan) : backends::make_cpu_backend(c.cpu_kernels);
  backend_name_ = backend_->name();
  compiled_ = backend_->compile(g);
  threads_ = c.threads;
  max_loop_iterations_ = c.max_loop_iterations;
  for (int id : g.inputs) inputs_.push_back(info_of(g, id));
  for (int id : g.outputs) outputs_.push_back(info_of(g, id));
}

std::vector<backends::NodeVerdict> Session::partition() const { return backend_->capability(model_->graph); }

std::string Session::placement_summary() const {
  auto p = placement();
  return p ? p->summary() : backend_name_ + ": every node";
}

std::vector<Tensor> Session::bind(const std::map<std::string, Tensor>& given) const {
  for (const auto& [name, t] : given) {
    bool known = false;
    for (const auto& in : inputs_) known |= in.name == name;
    if (!known) {
      std::string names;
      for (const auto& in : inputs_) names += (names.empty() ? "" : ", ") + in.name;
      fail("unknown input '", name, "'; the model's inputs are: ", names);
    }
  }
  std::map<std::string, int64_t> symbols;  // a symbolic dim must take one size across inputs
  std::vector<Tensor> bound;
  for (const auto& in : inputs_) {
    auto it = given.find(in.name);
    KESTREL_CHECK(it != given.end(), "missing input '", in.name, "' (", dtype_name(in.dtype), " ", in.shape_str(), ")");
    const Tensor& t = it->second;
    KESTREL_CHECK(t.defined(), "input '", in.name, "' is an empty tensor handle");
    KESTREL_CHECK(in.dtype == DType::Undefined || t.dtype() == in.dtype, "input '", in.name, "' must be ",
                  dtype_name(in.dtype), ", got ", dtype_name(t.dtype()));
    if (in.shape) {
      const auto& dims = *in.shape;
      KESTREL_CHECK(t.rank() == int(dims.size()), "input '", in.name, "' must have rank ", dims.size(), " ",
                    in.shape_str(), ", got shape ", kestrel::shape_str(t.shape()));
      for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d].known()) {
          KESTREL_CHECK(t.shape()[d] == dims[d].value, "input '", in.name, "' dimension ", d, " must be ",
                        dims[d].value, " ", in.shape_str(), ", got shape ", kestrel::shape_str(t.shape()));
        } else if (!dims[d].symbol.empty()) {
          auto [s, fresh] = symbols.emplace(dims[d].symbol, t.shape()[d]);
          KESTREL_CHECK(fresh || s->second == t.shape()[d], "input '", in.name, "' dimension ", d, " ('",
                        dims[d].symbol, "') is ", t.shape()[d], " but another input set '", dims[d].symbol, "' to ",
                        s->second);
        }
      }
    }
    bound.push_back(t);
  }
  return bound;
}

backends::RunOptions Session::run_options(const RunControl& control) const {
  KESTREL_CHECK(control.timeout_ms >= 0, "a run's timeout must be 0 (none) or more milliseconds, got ",
                control.timeout_ms);
  backends::RunOptions ro;
  ro.threads = threads_;
  ro.limits.max_loop_iterations = max_loop_iterations_;
  ro.limits.cancel = control.cancel;
  ro.output_sink = control.output_sink;
  if (control.timeout_ms > 0) {
    ro.limits.timeout_ms = control.timeout_ms;
    // (Clamped to a year: a huge timeout must not overflow the clock.)
    auto wait = std::chrono::duration<double, std::milli>(std::min(control.timeout_ms, 3.2e10));
    ro.limits.deadline =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait);
  }
  return ro;
}

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& inputs, RunStats* stats) const {
  return run(inputs, RunControl{}, stats);
}

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& inputs, const RunControl& control,
                                 RunStats* stats) const {
  auto t0 = std::chrono::steady_clock::now();
  backends::RunOptions ro = with_kind(ErrorKind::InvalidArgument, [&] { return run_options(control); });
  auto out = compiled_->run(with_kind(ErrorKind::InvalidArgument, [&] { return bind(inputs); }), ro);
  if (stats) stats->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::vector<Tensor> Session::run_traced(const std::map<std::string, Tensor>& inputs,
                                        backends::NodeObserver on_node, void* user) const {
  backends::RunOptions ro = run_options({});
  ro.on_node = on_node;
  ro.user = user;
  return compiled_->run(with_kind(ErrorKind::InvalidArgument, [&] { return bind(inputs); }), ro);
}

}  // namespace kestrel

// The public C++ API: load a model once, then run it (from any number of
// threads at once) with named tensors.
//
//   auto s = kestrel::Session::load("model.onnx");
//   auto out = s->run({{"images", tensor}});
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "families/families.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "runtime/session_options.h"

namespace kestrel {

namespace onnx_io { struct Model; }
namespace runtime { struct Config; }

struct TensorInfo {
  std::string name;
  DType dtype = DType::Undefined;
  std::optional<std::vector<ir::Dim>> shape;  // nullopt: unknown rank
  std::string shape_str() const;               // "[batch,3,224,224]"
};

// How one run may be stopped early. Either way the run throws RunCancelled
// (a kestrel::Error) saying where it stopped.
struct RunControl {
  // Set to true from any thread to cancel the run; it must outlive the run.
  const std::atomic<bool>* cancel = nullptr;
  double timeout_ms = 0;  // 0: no timeout
  // Where outputs may be read back to (backends/backend.h's OutputSink: the
  // ONNX Runtime plugin's own output tensors); it must outlive the run. The
  // Vulkan backend writes the outputs it reads from the device there; other
  // outputs come back in tensors of their own.
  const backends::OutputSink* output_sink = nullptr;
};

struct RunStats {
  double ms = 0;  // wall time of the run
};

class Session {
 public:
  static std::unique_ptr<Session> load(const std::string& path, const SessionOptions& opts = {});
  static std::unique_ptr<Session> load_bytes(const void* data, size_t size, const SessionOptions& opts = {});
  // A model already loaded (onnx_io::load_model_proto: a graph that never was a file).
  static std::unique_ptr<Session> load_model(onnx_io::Model&& model, const SessionOptions& opts = {});
  ~Session();

  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  const onnx_io::Model& model() const { return *model_; }
  const std::string& backend_name() const { return backend_name_; }
  // Per node: runs on the backend, or why it stays on the CPU.
  std::vector<backends::NodeVerdict> partition() const;
  // Where the latest run put the nodes (Vulkan backend only).
  std::optional<backends::PlacementReport> placement() const { return compiled_->placement(); }
  // Where the nodes go before any run: the static partition (Vulkan backend only).
  std::optional<backends::PlacementReport> planned_placement() const { return compiled_->planned_placement(); }
  // "vulkan on <device>: 120 of 130 nodes, 99.2% of FLOPs on the GPU; on the CPU: 10 ..."
  std::string placement_summary() const;
  int threads() const { return threads_; }
  // The transformer encoders fused at load, and encoder-like stacks left as they were.
  const families::ClaimReport& families() const { return families_; }
  // Which fused encoders agreed with their original ops so far, and which were withdrawn.
  const ops::FusedChecks& fused_checks() const { return compiled_->fused_checks(); }

  // Runs with every model input given by name. Returns outputs in the model's
  // order. Throws Error on an unknown, missing or mistyped input.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, RunStats* stats = nullptr) const;
  // Same, and stops early (throwing RunCancelled) when `control` says so.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, const RunControl& control,
                          RunStats* stats = nullptr) const;
  // Same, but each node's wall time is reported to `on_node` (for tracing).
  std::vector<Tensor> run_traced(const std::map<std::string, Tensor>& inputs,
                                 backends::NodeObserver on_node, void* user) const;

 private:
  Session() = default;
  void init(const runtime::Config& c);
  std::vector<Tensor> bind(const std::map<std::string, Tensor>& inputs) const;
  backends::RunOptions run_options(const RunControl& control) const;

  std::unique_ptr<onnx_io::Model> model_;
  std::unique_ptr<backends::Backend> backend_;
  std::unique_ptr<backends::CompiledGraph> compiled_;
  std::vector<TensorInfo> inputs_, outputs_;
  std::string backend_name_;
  families::ClaimReport families_;
  int threads_ = 1;
  int64_t max_loop_iterations_ = 0;
};

}  // namespace kestrel

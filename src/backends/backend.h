// The backend interface. A backend says which nodes it can run (capability),
// then compiles a graph once (weights packed once) and runs it many times.
// Runs of one compiled graph may happen on several threads at once.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/run_limits.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/fused_checks.h"
#include "ops/node_state.h"
#include "ops/rotary_tables.h"
#include "partition/placement_report.h"

namespace kestrel::backends {

using partition::PlacementReport;

// The storage precision of a backend's runs (Vulkan; the CPU backend
// computes in the model's types).
enum class Precision {
  Auto,  // float16 on GPUs that store it, when the first run agrees; float32 on CPU-type devices (lavapipe)
  Fp32,
  Fp16,  // float16 storage, float32 arithmetic
};

// Which kernels the CPU runs a node with: the CPU backend's fast kernels and
// products (backends/cpu) where it has them, or only the plain reference
// kernels of ops/, the oracle the fast ones are checked against (slower;
// for checking a result and for the parity tests).
enum class CpuKernels { Fast, Reference };

struct NodeVerdict {
  bool supported = false;
  std::string reason;  // why not, when unsupported
};

// What an observer learns about each node run (for tracing and profiles).
struct NodeTiming {
  const ir::Node* node = nullptr;
  std::vector<Shape> input_shapes;  // empty shape for an omitted input
  double ms = 0;                    // wall time of the kernel
  std::vector<Shape> output_shapes;
};
using NodeObserver = void (*)(void* user, const NodeTiming& timing);

// Where a run may put a graph output on the host: called with the output's
// index, dtype and shape once the backend knows them, it returns a tensor of
// that dtype and shape to write into (the ONNX Runtime plugin hands over
// ONNX Runtime's own output tensors, so each output is read back once, into
// the caller's memory), or an undefined tensor to let the backend allocate.
// The run's outputs are then those tensors. Backends that cannot write in
// place ignore it; callers compare data pointers to know.
using OutputSink = std::function<Tensor(size_t output, DType dtype, const Shape& shape)>;

struct RunOptions {
  int threads = 1;
  // Optional (above); set only for the graph a caller runs, never passed to
  // the graphs inside it, and dropped by runs whose outputs are compared
  // with another run's (float16 calibration).
  const OutputSink* output_sink = nullptr;
  NodeObserver on_node = nullptr;  // optional: called after each node
  void* user = nullptr;
  RunLimits limits;  // cancellation, deadline and the loop iteration cap
  // The fused-node checks of the compiled graph the run belongs to (set by
  // CompiledGraph::with_checks; a graph that wraps others passes its own).
  ops::FusedChecks* fused_checks = nullptr;
  // Its rotary tables (set the same way).
  ops::RotaryCache* rotary = nullptr;
  // What its fast kernels keep per node (ops/node_state.h; set the same way).
  ops::NodeStateCache* node_state = nullptr;

  // Executors call this before each node: throws RunCancelled naming the node
  // the run stopped before, once the run is cancelled or past its deadline.
  void check_stop_before(const ir::Node& n) const {
    if (limits.stop_requested()) limits.stop("before " + n.where());
  }
};

// Where a run put the graph's nodes (backends that split a graph report it).
class CompiledGraph {
 public:
  virtual ~CompiledGraph() = default;
  // Inputs in the order of graph.inputs; outputs in the order of graph.outputs.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& opts) const = 0;
  // The placement of the latest run, for backends that split graphs.
  virtual std::optional<PlacementReport> placement() const { return std::nullopt; }
  // Where the nodes go before any run (the static partition), for backends
  // that split graphs.
  virtual std::optional<PlacementReport> planned_placement() const { return std::nullopt; }
  // Which fused encoders agreed with their original ops, for which input
  // shapes, and which were withdrawn: this graph's, for its lifetime.
  const ops::FusedChecks& fused_checks() const { return checks_; }

 protected:
  // opts with this graph's ledger and rotary tables, unless an enclosing
  // graph gave its own.
  RunOptions with_checks(const RunOptions& opts) const {
    RunOptions o = opts;
    if (!o.fused_checks) o.fused_checks = &checks_;
    if (!o.rotary) o.rotary = &rotary_;
    if (!o.node_state) o.node_state = &node_state_;
    return o;
  }

 private:
  mutable ops::FusedChecks checks_;
  mutable ops::RotaryCache rotary_;
  mutable ops::NodeStateCache node_state_;
};

// Floating-point operations of one node given its input and output shapes:
// 2*MACs for Conv, ConvTranspose, MatMul and Gemm, else one per output element.
double node_flops(const ir::Node& n, const std::vector<Shape>& inputs, const std::vector<Shape>& outputs);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // One verdict per node of g.nodes, in order.
  virtual std::vector<NodeVerdict> capability(const ir::Graph& g) const = 0;
  // The graph must outlive the compiled result.
  virtual std::unique_ptr<CompiledGraph> compile(const ir::Graph& g) const = 0;
};

// The CPU backend (always present).
std::unique_ptr<Backend> make_cpu_backend(CpuKernels kernels = CpuKernels::Fast);

}  // namespace kestrel::backends

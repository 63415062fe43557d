// How an op is defined: one file per op in src/ops/, holding its reference
// kernel, which also computes its output shapes from the actual inputs (so
// shapes resolve at run time), and a static registration:
//
//   static void run_relu(KernelContext& ctx) { ... }
//   KESTREL_OP(Relu, {.run = run_relu});
//
// There is no central list to edit.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/run_limits.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/fused_checks.h"
#include "ops/kernel_table.h"
#include "ops/node_state.h"
#include "ops/products.h"
#include "ops/rotary_tables.h"

namespace kestrel::ops {

// What a kernel sees: the node, its inputs, and where to put its outputs.
class KernelContext {
 public:
  virtual ~KernelContext() = default;
  explicit KernelContext(const ir::Node& n) : node(n) {}

  const ir::Node& node;

  int num_inputs() const { return int(node.inputs.size()); }
  // False for an omitted optional input (empty name) or one past the end.
  virtual bool has_input(int i) const = 0;
  // Throws an Error naming the node when input i is absent.
  virtual const Tensor& input(int i) const = 0;
  int num_outputs() const { return int(node.outputs.size()); }
  bool wants_output(int i) const { return i < num_outputs() && node.outputs[size_t(i)] >= 0; }
  // Allocates output i; an output the model does not use is still allocated
  // (and dropped) so kernels need not special-case it.
  virtual Tensor& output(int i, DType dtype, Shape shape) = 0;
  // Hands over an already computed tensor (aliasing is fine: tensors are immutable once set).
  virtual void set_output(int i, Tensor t) = 0;
  // Threads this run may use.
  virtual int threads() const = 0;
  // Runs a subgraph (an If branch, a Loop body) with these inputs. Names the
  // subgraph reads but does not define resolve in the scope of this node.
  virtual std::vector<Tensor> run_subgraph(const ir::Graph& g, const std::vector<Tensor>& inputs) = 0;
  // What bounds this run (cancellation, deadline, loop cap); none by default.
  virtual const RunLimits& limits() const;
  // The compiled graph's ledger of fused-node checks (fused_checks.h);
  // throws an Error naming the node where the run has none.
  virtual FusedChecks& fused_checks() const;
  // The compiled graph's rotary tables (rotary_tables.h); throws an Error
  // naming the node where the run has none.
  virtual RotaryCache& rotary_cache() const;
  // What fast kernels keep per node across runs (node_state.h), or null
  // outside a compiled graph: then they prepare on every run.
  virtual NodeStateCache* node_state() const { return nullptr; }
  // How this run computes matrix products (products.h): the plain loops
  // unless the backend has its own.
  virtual const Products& products() const { return reference_products(); }
  // Loop and Scan call this before each iteration, `done` being how many
  // this node has run so far: throws once the node reaches the run's
  // iteration cap (an Error naming the node and the cap) or the run is
  // cancelled (RunCancelled naming the node and the iteration).
  void check_iteration(int64_t done) const;

  // Throws an Error prefixed with the node (`where()`).
  template <typename... A>
  [[noreturn]] void fail(const A&... parts) const { ::kestrel::fail(node.where(), ": ", parts...); }
};

using KernelFn = void (*)(KernelContext&);

// Storage for a kernel's output. Its contents are unspecified: kernels must
// write every element. With poisoning on (set_poison_outputs) it is filled
// with NaN bytes (0xFF) so a kernel that relies on zeroed memory fails its tests.
// Given `storage`, the tensor is placed there at `offset` (a run's arena)
// instead of allocated; the caller has checked that it fits.
Tensor new_output_tensor(DType dtype, Shape shape, std::shared_ptr<uint8_t[]> storage = {}, size_t offset = 0);
// For the whole process (runtime::Config sets it from KESTREL_POISON_OUTPUTS=1
// when a session is made).
void set_poison_outputs(bool on);

struct OpDef {
  std::string name;
  std::string domain;  // "" is the default ONNX domain
  int min_opset = 1;   // first opset version whose semantics the kernel implements
  int max_opset = 21;
  KernelFn run = nullptr;
  // When false, float16/bfloat16 inputs are widened to float32 before the
  // kernel runs and float32 outputs are rounded back: one rounding per op, as
  // a half-precision kernel with float32 accumulation would give.
  bool half_native = false;
  // Reads only input 0's shape, never its data (Shape, Size): a backend that
  // holds that input elsewhere need not bring its data back.
  bool shape_only = false;
  // Its float outputs hold sums far past float16's 65504 until a later op
  // rescales them (ConvInteger, MatMulInteger): a graph with it keeps
  // float32 storage.
  bool needs_fp32_storage = false;
  // Multiplies through KernelContext::products (products.h), whose fast CPU
  // version then computes part of it: its parity cases check that part too.
  bool uses_products = false;
  const char* file = "";  // the source file that registers it (KESTREL_OP sets it)
};

// Returns true so it can initialise a static.
bool register_op(OpDef def);
// nullptr when no kernel handles (domain, op) at this opset.
const OpDef* find_op(const std::string& domain, const std::string& op, int opset);
// Why find_op failed, for the validation report ("unknown op", "opset 5 not supported (7..21)").
std::string why_unsupported(const std::string& domain, const std::string& op, int opset);
// Every registered op, sorted by name (for reports).
std::vector<const OpDef*> all_ops();

#define KESTREL_OP_CAT2(a, b) a##b
#define KESTREL_OP_CAT(a, b) KESTREL_OP_CAT2(a, b)
// KESTREL_OP(Name, {designated initializers of OpDef without .name})
#define KESTREL_OP(NAME, ...)                                                         \
  static const bool KESTREL_OP_CAT(kestrel_registered_, __LINE__) = [] {              \
    ::kestrel::ops::OpDef d __VA_ARGS__;                                             \
    d.name = #NAME;                                                                   \
    d.file = __FILE__;                                                                \
    return ::kestrel::ops::register_op(d);                                            \
  }()

}  // namespace kestrel::ops

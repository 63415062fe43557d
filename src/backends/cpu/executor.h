// Runs a graph node by node, each with its op's fast CPU kernel where one is
// registered (fast_kernels.h) and its reference kernel otherwise, and the
// fast matrix products (fast_products.h); or, with CpuKernels::Reference,
// with the reference kernels and products only. Values are freed as soon as
// their last reader has run, so peak memory follows the live set.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/arena_plan.h"
#include "backends/cpu/host_arena.h"
#include "ops/registry.h"

namespace kestrel::backends::cpu {

// A name -> tensor lookup chain for subgraphs reading outer-scope values
// (a graph's initializers are found in the graph itself, not in env).
struct Scope {
  const ir::Graph* graph = nullptr;
  const std::vector<Tensor>* env = nullptr;
  const Scope* parent = nullptr;
  const Tensor* lookup(const std::string& name) const;
  // Value `id` of this scope's graph: its env entry, else its initializer.
  const Tensor* value(int id) const;
};

// The per-graph facts the executor needs, worked out once at compile time:
// the kernel per node, when each value dies, float32 copies of half-precision
// weights for kernels that compute in float32, and the plans of subgraphs.
struct Plan {
  const ir::Graph* graph = nullptr;
  std::vector<const ops::OpDef*> kernels;  // the op's definition (its facts), per node
  std::vector<ops::KernelFn> runs;          // what runs it: the fast kernel or the reference
  const ops::Products* products = nullptr;  // the products its kernels compute with
  // value id -> the graph's initializer, or null. Kernels read initializers
  // in place: copying each into the run's values costs an allocation apiece
  // per run, which is much of a small model's time (Silero VAD's If branches).
  std::vector<const Tensor*> constants;
  std::vector<std::vector<int>> release_after;  // node index -> values to free after it
  // node index -> values of this graph its subgraphs read (If, Loop), found
  // once here: walking the bodies on every run costs more than small models do
  std::vector<std::vector<int>> implicit_inputs;
  // node index -> (input index, widened initializer) for non-half-native kernels
  std::vector<std::vector<std::pair<int, Tensor>>> widened;
  std::map<const ir::Graph*, std::unique_ptr<Plan>> subgraphs;  // If/Loop/Scan bodies, at any depth
  // Per outer reference (g.outer_refs): the nearest enclosing graph with that
  // name, how many scopes up it is, and the value's id there (null graph when
  // none has it), found once here rather than by name on every run.
  struct OuterSlot {
    const ir::Graph* graph = nullptr;
    int up = 0, id = -1;
  };
  std::vector<OuterSlot> outer_slots;

  // `enclosing`: the graphs around g, innermost last (empty for a model's graph).
  static Plan build(const ir::Graph& g, CpuKernels kernels = CpuKernels::Fast,
                    const std::vector<const ir::Graph*>& enclosing = {});
  const Plan& subgraph(const ir::Graph& g) const;  // throws if g is not a subgraph of this plan
};

// Runs node i of the plan's graph with its inputs in env, or among the
// plan's constants where env has no value (the Vulkan backend uses this for
// the nodes it leaves on the CPU). With `arena`, outputs go where its plan
// puts them; with `recorder`, what the node allocates is recorded.
void run_node(const Plan& plan, size_t i, std::vector<Tensor>& env, const Scope& scope, const RunOptions& opts,
              RunArena* arena = nullptr, ArenaRecorder* recorder = nullptr);

// Runs a graph. With `arenas` (a model's graph, not a subgraph), the run lays
// its tensors out by the arena plan of its input signature, or records one
// when that signature is new (see backends/arena_plan.h).
std::vector<Tensor> execute(const Plan& plan, const std::vector<Tensor>& inputs, const Scope* outer,
                            const RunOptions& opts, ArenaPlans* arenas = nullptr);

}  // namespace kestrel::backends::cpu

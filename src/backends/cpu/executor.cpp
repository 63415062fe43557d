#include "backends/cpu/executor.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <unordered_set>

#include "backends/cpu/fast_kernels.h"
#include "backends/cpu/fast_products.h"
#include "core/buffer_pool.h"

namespace kestrel::backends::cpu {

const Tensor* Scope::value(int id) const {
  if ((*env)[size_t(id)].defined()) return &(*env)[size_t(id)];
  auto it = graph->initializers.find(id);
  return it != graph->initializers.end() ? &it->second : nullptr;
}

const Tensor* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent) {
    int id = s->graph->find(name);
    if (id < 0) continue;
    if (const Tensor* t = s->value(id)) return t;
  }
  return nullptr;
}

Plan Plan::build(const ir::Graph& g, CpuKernels kernels, const std::vector<const ir::Graph*>& enclosing) {
  Plan p;
  p.graph = &g;
  const bool fast = kernels == CpuKernels::Fast;
  p.products = fast ? &fast_products() : &ops::reference_products();
  p.widened.resize(g.nodes.size());
  p.constants.assign(g.values.size(), nullptr);
  for (const auto& [v, t] : g.initializers) p.constants[size_t(v)] = &t;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    const ops::OpDef* d = ops::find_op(n.domain, n.op_type, n.opset);
    if (!d) fail(n.where(), ": ", ops::why_unsupported(n.domain, n.op_type, n.opset));
    p.kernels.push_back(d);
    const FastKernel* f = fast ? find_fast_kernel(n.domain, n.op_type, n.opset) : nullptr;
    p.runs.push_back(f ? f->run : d->run);
    for (size_t k = 0; k < n.inputs.size() && !d->half_native; ++k) {
      auto it = g.initializers.find(n.inputs[k]);
      if (it != g.initializers.end() && dtype_is_half(it->second.dtype()))
        p.widened[i].emplace_back(int(k), it->second.cast(DType::Float32));
    }
    std::vector<const ir::Graph*> inner = enclosing;
    inner.push_back(&g);
    for (const auto& [name, a] : n.attrs)
      if (a.g && !p.subgraphs.count(a.g.get())) p.subgraphs[a.g.get()] = std::make_unique<Plan>(build(*a.g, kernels, inner));
  }
  for (int v : g.outer_refs) {
    const std::string& name = g.values[size_t(v)].name;
    OuterSlot slot;
    for (size_t up = 1; up <= enclosing.size() && !slot.graph; ++up) {
      const ir::Graph* e = enclosing[enclosing.size() - up];
      if (int id = e->find(name); id >= 0) slot = {e, int(up), id};
    }
    p.outer_slots.push_back(slot);
  }
  // A value dies after its last reader, unless it is a graph output or an
  // initializer (initializers are shared with the graph, never freed here).
  std::vector<int> last(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs)
      if (v >= 0) last[size_t(v)] = int(i);
  // A node with subgraphs (If, Loop) also reads, through them, the outer
  // names they use: keep those alive until the node has run.
  p.implicit_inputs.resize(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& name : ir::implicit_reads(g.nodes[i])) {
      int v = g.find(name);
      if (v < 0) continue;
      p.implicit_inputs[i].push_back(v);
      last[size_t(v)] = std::max(last[size_t(v)], int(i));
    }
  // Outputs nobody reads die right after they are produced.
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].outputs)
      if (v >= 0 && last[size_t(v)] < 0) last[size_t(v)] = int(i);
  std::unordered_set<int> keep(g.outputs.begin(), g.outputs.end());
  for (auto& [v, t] : g.initializers) keep.insert(v);
  p.release_after.resize(g.nodes.size());
  for (size_t v = 0; v < last.size(); ++v)
    if (last[v] >= 0 && !keep.count(int(v))) p.release_after[size_t(last[v])].push_back(int(v));
  return p;
}

const Plan& Plan::subgraph(const ir::Graph& g) const {
  auto it = subgraphs.find(&g);
  if (it == subgraphs.end()) fail("subgraph '", g.name, "' was not compiled with its graph");
  return *it->second;
}

namespace {

class CpuKernelContext : public ops::KernelContext {
 public:
  CpuKernelContext(const ir::Node& n, int index, std::vector<Tensor>& env, const Scope& scope, const Plan& plan,
                   const RunOptions& opts, RunArena* arena, ArenaRecorder* recorder)
      : KernelContext(n), index_(index), env_(env), scope_(scope), plan_(plan), opts_(opts), arena_(arena),
        recorder_(recorder) {}

  bool has_input(int i) const override {
    return i < num_inputs() && node.inputs[size_t(i)] >= 0 && input_ptr(i)->defined();
  }
  const Tensor& input(int i) const override {
    if (i >= num_inputs() || node.inputs[size_t(i)] < 0) fail("required input ", i, " is missing");
    const Tensor* t = input_ptr(i);
    if (!t->defined()) fail("input ", i, " ('", scope_.graph->values[size_t(node.inputs[size_t(i)])].name, "') has no value");
    return *t;
  }
  Tensor& output(int i, DType dtype, Shape shape) override {
    for (int64_t d : shape)
      if (d < 0) fail("computed a negative dimension for output ", i, ": ", shape_str(shape));
    // A size that overflows, passes kMaxTensorBytes or cannot be allocated
    // is an error naming the output.
    try {
      const int v = i < num_outputs() ? node.outputs[size_t(i)] : -1;
      // A float32 output that run_node narrows to half afterwards is a
      // temporary of this node; the value itself is the half copy.
      const bool temporary = narrowing && dtype == DType::Float32 && v >= 0;
      const int position = num_inputs() + i;
      if (arena_) {
        Tensor t = temporary ? arena_->place_temporary(index_, position, dtype, shape) : arena_->place(v, index_, dtype, shape);
        if (t.defined()) return slot(i) = std::move(t);
      }
      Tensor& out = slot(i) = ops::new_output_tensor(dtype, std::move(shape));
      if (recorder_ && temporary) recorder_->temporary(index_, position, out.nbytes());
      else if (recorder_ && v >= 0) recorder_->allocated(v, storage_key(out));
      return out;
    } catch (const Error& e) {
      int v = i < num_outputs() ? node.outputs[size_t(i)] : -1;
      fail("output ", v >= 0 ? "'" + scope_.graph->values[size_t(v)].name + "'" : std::to_string(i), ": ", e.what());
    }
  }
  void set_output(int i, Tensor t) override { slot(i) = std::move(t); }
  int threads() const override { return opts_.threads; }
  const RunLimits& limits() const override { return opts_.limits; }
  ops::FusedChecks& fused_checks() const override {
    return opts_.fused_checks ? *opts_.fused_checks : ops::KernelContext::fused_checks();
  }
  const ops::Products& products() const override { return *plan_.products; }
  ops::RotaryCache& rotary_cache() const override {
    return opts_.rotary ? *opts_.rotary : ops::KernelContext::rotary_cache();
  }
  ops::NodeStateCache* node_state() const override { return opts_.node_state; }
  std::vector<Tensor> run_subgraph(const ir::Graph& g, const std::vector<Tensor>& inputs) override {
    return execute(plan_.subgraph(g), inputs, &scope_, opts_);
  }

  // Inputs replaced by widened float32 copies (see OpDef::half_native).
  std::vector<std::pair<int, Tensor>> overrides;
  bool narrowing = false;  // float32 outputs will be rounded to half

  // A float32 copy of half input k for the kernel, in the arena where planned.
  Tensor widened_input(int k, const Tensor& t) {
    Tensor w = arena_ ? arena_->place_temporary(index_, k, DType::Float32, t.shape()) : Tensor();
    if (!w.defined()) w = Tensor::uninitialized(DType::Float32, t.shape());
    t.cast_into(w);
    if (recorder_) recorder_->temporary(index_, k, w.nbytes());
    return w;
  }

 private:
  const Tensor* input_ptr(int i) const {
    for (auto& [k, t] : overrides)
      if (k == i) return &t;
    const int v = node.inputs[size_t(i)];
    const Tensor& t = env_[size_t(v)];
    return t.defined() || !plan_.constants[size_t(v)] ? &t : plan_.constants[size_t(v)];
  }
  Tensor& slot(int i) {
    if (i >= num_outputs()) fail("kernel wrote output ", i, " but the node has ", num_outputs());
    int v = node.outputs[size_t(i)];
    if (v < 0) return scratch_;
    return env_[size_t(v)];
  }
  int index_;  // the node's place in its graph
  std::vector<Tensor>& env_;
  const Scope& scope_;
  const Plan& plan_;
  const RunOptions& opts_;
  RunArena* arena_;
  ArenaRecorder* recorder_;
  Tensor scratch_;
};

}  // namespace

void run_node(const Plan& plan, size_t i, std::vector<Tensor>& env, const Scope& scope, const RunOptions& opts,
              RunArena* arena, ArenaRecorder* recorder) {
  const ir::Graph& g = *plan.graph;
  const ir::Node& n = g.nodes[i];
  const ops::OpDef* def = plan.kernels[i];
  CpuKernelContext ctx(n, int(i), env, scope, plan, opts, arena, recorder);
  // Kernels that compute in float32 see half inputs widened (weights were
  // widened once in the plan) and their float32 outputs rounded back.
  DType half = DType::Undefined;
  if (!def->half_native) {
    for (const auto& [k, t] : plan.widened[i]) {
      half = plan.constants[size_t(n.inputs[size_t(k)])]->dtype();  // widened entries are initializers
      ctx.overrides.emplace_back(k, t);
    }
    for (int k = 0; k < ctx.num_inputs(); ++k) {
      int v = n.inputs[size_t(k)];
      if (v >= 0 && env[size_t(v)].defined() && dtype_is_half(env[size_t(v)].dtype()) && !g.initializers.count(v)) {
        half = env[size_t(v)].dtype();
        ctx.overrides.emplace_back(k, ctx.widened_input(k, env[size_t(v)]));
      }
    }
    ctx.narrowing = half != DType::Undefined;
  }
  try {
    plan.runs[i](ctx);
  } catch (const RunCancelled&) {
    throw;  // says where it stopped; the enclosing Loop or If adds nothing
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind("node '", 0) == 0) throw;  // already names its node
    fail(n.where(), ": ", msg);
  } catch (const std::bad_alloc&) {
    fail(n.where(), ": out of memory");
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    int v = n.outputs[k];
    if (v < 0) continue;
    Tensor& out = env[size_t(v)];
    if (!out.defined()) fail(n.where(), ": kernel produced no value for output ", k);
    if (half == DType::Undefined || out.dtype() != DType::Float32) continue;
    // The value is the half copy: that is what the arena plans and holds.
    Tensor narrow = arena ? arena->place(v, int(i), half, out.shape()) : Tensor();
    if (!narrow.defined()) narrow = Tensor::uninitialized(half, out.shape());
    out.cast_into(narrow);
    out = std::move(narrow);
    if (recorder) recorder->allocated(v, storage_key(out));
  }
}

std::vector<Tensor> execute(const Plan& plan, const std::vector<Tensor>& inputs, const Scope* outer,
                            const RunOptions& opts, ArenaPlans* arenas) {
  const ir::Graph& g = *plan.graph;
  std::vector<Tensor> env(g.values.size());  // initializers stay in plan.constants
  KESTREL_CHECK(inputs.size() == g.inputs.size(), "graph '", g.name, "' takes ", g.inputs.size(), " inputs, got ",
                inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[size_t(g.inputs[i])] = inputs[i];
  Scope scope{&g, &env, outer};
  // Libraries that thread with OpenMP (oneDNN's GEMM) take their thread count
  // from the calling thread's default; make it this run's.
  omp_set_num_threads(std::max(1, opts.threads));
  for (size_t k = 0; k < g.outer_refs.size(); ++k) {
    const int v = g.outer_refs[k];
    // The slot found at plan time; by name where the scopes are not the
    // plan's (a caller's own chain) or the slot holds no value yet.
    const Plan::OuterSlot& slot = plan.outer_slots[k];
    const Scope* s = outer;
    for (int d = 1; s && d < slot.up; ++d) s = s->parent;
    const Tensor* t = s && slot.graph && s->graph == slot.graph ? s->value(slot.id) : nullptr;
    if (!t && outer) t = outer->lookup(g.values[size_t(v)].name);
    KESTREL_CHECK(t, "subgraph '", g.name, "' reads '", g.values[size_t(v)].name, "', which no enclosing scope defines");
    env[size_t(v)] = *t;
  }

  // A known signature runs in its planned arena; a new one is recorded,
  // its freed buffers going back to the system rather than idling in the
  // pool (see PoolRetentionOff), and planned at the end.
  std::optional<RunArena> arena;
  std::optional<ArenaRecorder> recorder;
  std::optional<PoolRetentionOff> no_retention;
  if (arenas) {
    if (auto p = arenas->find(inputs)) {
      arena.emplace(std::move(p));
    } else {
      recorder.emplace(g, plan.release_after, /*outputs_leave=*/true);
      no_retention.emplace();
      for (const Tensor& t : inputs) recorder->input(storage_key(t));
    }
  }
  RunArena* arena_ptr = arena ? &*arena : nullptr;
  ArenaRecorder* recorder_ptr = recorder ? &*recorder : nullptr;

  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    opts.check_stop_before(n);
    std::chrono::steady_clock::time_point t0;
    if (opts.on_node) t0 = std::chrono::steady_clock::now();
    run_node(plan, i, env, scope, opts, arena_ptr, recorder_ptr);
    if (arena_ptr) arena_ptr->settle(n.outputs, env);
    if (recorder_ptr)
      for (int v : n.outputs)
        if (v >= 0 && env[size_t(v)].defined() && env[size_t(v)].storage()) {
          const Tensor& t = env[size_t(v)];
          recorder_ptr->produced(int(i), v, storage_key(t), size_t(t.raw() - t.storage().get()) + t.nbytes());
        }
    if (opts.on_node) {
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      NodeTiming t{&n, {}, ms};
      for (int v : n.inputs) {
        const Tensor* in = v < 0 ? nullptr : env[size_t(v)].defined() ? &env[size_t(v)] : plan.constants[size_t(v)];
        t.input_shapes.push_back(in ? in->shape() : Shape{});
      }
      for (int v : n.outputs) t.output_shapes.push_back(v >= 0 && env[size_t(v)].defined() ? env[size_t(v)].shape() : Shape{});
      opts.on_node(opts.user, t);
    }
    for (int v : plan.release_after[i]) env[size_t(v)] = Tensor();
  }

  std::vector<Tensor> outs;
  for (int v : g.outputs) {
    if (env[size_t(v)].defined()) outs.push_back(env[size_t(v)]);
    else if (plan.constants[size_t(v)]) outs.push_back(*plan.constants[size_t(v)]);
    else fail("graph output '", g.values[size_t(v)].name, "' was never computed");
  }
  if (recorder) arenas->add(inputs, recorder->finish(kHostArenaAlign));
  return outs;
}

}  // namespace kestrel::backends::cpu

#include "backends/vulkan/graph_runner.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "backends/vulkan/transfer.h"

namespace kestrel::vulkan {

// What one run needs for itself, reused by later runs: runs on several
// threads at once each take their own. The recorder is declared last so that
// it goes first: its destructor waits for any work still in flight before
// the memory that work writes is freed.
struct RunResources {
  RunResources(Context& c, double wait_s, std::shared_ptr<MemoryBudget> b, bool exact_buffers)
      : budget(std::move(b)),
        device(c, MemoryKind::Device, budget.get(), exact_buffers),
        host(c, MemoryKind::Host, budget.get(), exact_buffers),
        rec(c, wait_s) {}
  std::shared_ptr<MemoryBudget> budget;
  Allocator device;
  Allocator host;
  Recorder rec;
  // The arena plan these allocators last served: when a run brings another
  // that needs a larger block, the blocks the recording run grew are freed
  // first, so that the arena's own block is about all the device memory a
  // planned run holds.
  const backends::ArenaPlan* serving = nullptr;
};

// What a compiled graph leaves behind when its device work may still be
// running (a wait gave up): freed by Context::retire once the device is done.
// Tensors go before the allocator they came from.
struct Leftovers {
  std::shared_ptr<MemoryBudget> budget;  // the allocators below count against it
  std::unique_ptr<Allocator> weights;
  std::vector<std::shared_ptr<GpuTensor>> resident;
  std::unique_ptr<RunResources> run;
  std::vector<std::shared_ptr<DeviceMemory>> staging;
};

namespace {

constexpr int64_t kSmallHostElements = 4096;
// Why a node with a Vulkan kernel still ran on the host.
const std::string kSmallHost = "small tensors already on the host";

std::string value_range(const Tensor& t) {
  if (!t.defined() || !dtype_is_float(t.dtype()) || t.numel() == 0) return "";
  std::vector<float> v = t.to_f32();
  float lo = v[0], hi = v[0];
  size_t bad = 0;
  for (float x : v) {
    if (!std::isfinite(x)) ++bad;
    else lo = std::min(lo, x), hi = std::max(hi, x);
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, " [%.4g, %.4g]%s", lo, hi, bad ? " non-finite!" : "");
  return buf;
}

std::shared_ptr<DeviceMemory> device_memory(Allocator& a, size_t bytes) {
  return std::make_shared<DeviceMemory>(&a, a.allocate(bytes));
}

}  // namespace

std::string static_verdict(const ir::Node& n, const ir::Graph& g, bool half) {
  const VkOpDef* d = find_vk_op(n.domain, n.op_type, n.opset);
  if (!d) return "no Vulkan kernel for " + (n.domain.empty() ? "" : n.domain + ".") + n.op_type;
  if (half && !d->half_ok) return n.op_type + " runs in float32 only";
  for (int v : n.outputs)
    if (v >= 0 && g.values[size_t(v)].dtype != DType::Undefined && !device_dtype(g.values[size_t(v)].dtype))
      return std::string("output dtype ") + dtype_name(g.values[size_t(v)].dtype) + " stays on the CPU";
  if (d->check) return d->check(n, g);
  return "";
}

// The state of one run: every value on the host, on the device, or both.
struct RunState {
  const VulkanCompiled& c;
  RunResources& res;
  const backends::RunOptions& opts;
  std::vector<Tensor> host;
  std::vector<std::shared_ptr<GpuTensor>> gpu;
  std::vector<std::shared_ptr<DeviceMemory>> staging;  // alive until the run ends
  backends::PlacementReport report;
  // The static memory plan of this signature (backends/arena_plan.h) and the
  // run's device arena it lays out; or, for a new signature, its recorder.
  std::shared_ptr<const backends::ArenaPlan> arena_plan;
  std::shared_ptr<DeviceMemory> arena;
  backends::ArenaRecorder* recorder = nullptr;
  int node = 0;  // the node being run

  RunState(const VulkanCompiled& cc, RunResources& r, const backends::RunOptions& o)
      : c(cc), res(r), opts(o), host(cc.g_.values.size()), gpu(cc.g_.values.size()) {}

  const ir::Graph& g() const { return c.g_; }
  const std::string& name(int v) const { return g().values[size_t(v)].name; }

  // The device copy of value v, uploading the host tensor when needed.
  const GpuTensor& to_device(int v) {
    if (gpu[size_t(v)]) return *gpu[size_t(v)];
    if (c.resident_[size_t(v)]) return *(gpu[size_t(v)] = c.resident_[size_t(v)]);
    const Tensor& t = host[size_t(v)];
    if (!t.defined()) throw Unsupported{"input '" + name(v) + "' has no value"};
    std::string why = storable(t);
    if (!why.empty()) throw Unsupported{"input '" + name(v) + "': " + why};
    if (storage_bytes(t, c.half_) > c.ctx_->info().max_storage_buffer_range)
      throw Unsupported{"tensor '" + name(v) + "' is past the device's maxStorageBufferRange"};
    return *(gpu[size_t(v)] = std::make_shared<GpuTensor>(upload(t, v)));
  }

  // A device copy of host tensor t in the run's storage. It goes through
  // staging, in stream order: the device range may have been freed by this
  // run with recorded work still reading it.
  // v: the value it becomes (planned in the arena like a kernel's output),
  // or -1 for a kernel's own constants.
  GpuTensor upload(const Tensor& t, int v = -1) {
    GpuTensor g;
    g.dtype = t.dtype();
    g.shape = t.shape();
    g.half = c.half_ && g.is_float();
    size_t bytes = std::max<size_t>(g.bytes(), 4);
    if (!place(v, g)) {
      g.memory = device_memory(res.device, bytes);
      if (recorder && v >= 0) {
        recorder->allocated(v, g.memory);
        recorder->produced(node, v, g.memory, bytes);
      }
    }
    auto stg = device_memory(res.host, bytes);
    write_storage(t, g.half, stg->a.mapped());
    res.host.host_wrote(stg->a);
    res.rec.copy(range_of(stg->a, 0, bytes, false), g.range(true));
    staging.push_back(std::move(stg));
    return g;
  }

  // Makes every listed value available on the host, with one submit.
  void to_host(const std::vector<int>& values) {
    std::vector<std::pair<int, std::shared_ptr<DeviceMemory>>> reads;
    for (int v : values) {
      if (v < 0 || host[size_t(v)].defined() || !gpu[size_t(v)]) continue;
      const GpuTensor& t = *gpu[size_t(v)];
      if (t.memory->a.mapped()) {
        reads.emplace_back(v, nullptr);
      } else {
        auto stg = device_memory(res.host, t.bytes());
        res.rec.copy(t.range(false), range_of(stg->a, 0, std::max<size_t>(t.bytes(), 4), true));
        reads.emplace_back(v, std::move(stg));
      }
    }
    if (reads.empty()) return;
    res.rec.flush();
    for (auto& [v, stg] : reads) {
      const GpuTensor& t = *gpu[size_t(v)];
      if (stg) stg->owner->host_will_read(stg->a);
      else t.memory->owner->host_will_read(t.memory->a);
      host[size_t(v)] = read_storage(t, stg ? stg->a.mapped() : t.memory->a.mapped() + t.view_offset);
    }
  }

  // Gives output tensor g of value v its planned place in the arena; false
  // when v has none or g does not fit it (the data chose another size).
  bool place(int v, GpuTensor& g) const {
    const int64_t at = arena ? arena_plan->slot(v, node, g.bytes()) : -1;
    if (at < 0) return false;
    g.memory = arena;
    g.view_offset = size_t(at);
    return true;
  }

  // After node i ran on the GPU: its outputs are recorded for a plan, or an
  // output found in the arena outside its planned region (a view the plan
  // did not foresee, whose bytes a later tensor may take) moves to memory of
  // its own, by a copy in stream order.
  void settle_outputs(size_t i) {
    for (int v : g().nodes[i].outputs) {
      if (v < 0 || !gpu[size_t(v)]) continue;
      const GpuTensor& t = *gpu[size_t(v)];
      if (recorder) recorder->produced(int(i), v, t.memory, t.view_offset + t.bytes());
      if (!arena || t.memory != arena || arena_plan->holds(v, t.view_offset, t.bytes())) continue;
      auto own = std::make_shared<GpuTensor>(t);
      own->memory = device_memory(res.device, t.bytes());
      own->view_offset = 0;
      res.rec.copy(t.range(false), own->range(true));
      gpu[size_t(v)] = std::move(own);
    }
  }

  void run_cpu(size_t i, const backends::cpu::Scope& scope) {
    const ir::Node& n = g().nodes[i];
    // A shape-only op (Shape, Size) reads only the input's shape: a device
    // tensor need not come back (that would wait for the GPU and copy it
    // all). The kernel gets a stand-in with the shape and no data.
    const ops::OpDef* def = c.plan_.kernels[i];
    if (def && def->shape_only && !n.inputs.empty() && n.inputs[0] >= 0 && gpu[size_t(n.inputs[0])] &&
        !host[size_t(n.inputs[0])].defined()) {
      int v = n.inputs[0];
      host[size_t(v)] = Tensor(gpu[size_t(v)]->dtype, gpu[size_t(v)]->shape, nullptr);
      try {
        backends::cpu::run_node(c.plan_, i, host, scope, opts);
      } catch (...) {
        host[size_t(v)] = Tensor();
        throw;
      }
      host[size_t(v)] = Tensor();
      return;
    }
    std::vector<int> need(n.inputs.begin(), n.inputs.end());
    const std::vector<int>& implicit = c.plan_.implicit_inputs[i];
    need.insert(need.end(), implicit.begin(), implicit.end());
    to_host(need);
    backends::cpu::run_node(c.plan_, i, host, scope, opts);
  }

  void run_gpu(size_t i, const VkOpDef& def);

  std::vector<Shape> shapes_of(const std::vector<int>& vs) const {
    std::vector<Shape> s;
    for (int v : vs) {
      if (v < 0) s.emplace_back();
      else if (gpu[size_t(v)]) s.push_back(gpu[size_t(v)]->shape);
      else if (host[size_t(v)].defined()) s.push_back(host[size_t(v)].shape());
      else s.emplace_back();
    }
    return s;
  }
};

namespace {

class VkOpContext : public OpContext {
 public:
  VkOpContext(const ir::Node& n, const VkOpDef& def, RunState& st) : OpContext(n), def_(def), st_(st) {}

  bool has_input(int i) const override { return i < num_inputs() && node.inputs[size_t(i)] >= 0; }
  const GpuTensor& input(int i) const override {
    if (!has_input(i)) fail("required input ", i, " is missing");
    const auto& g = st_.gpu[size_t(node.inputs[size_t(i)])];
    if (!g) fail("input ", i, " is a host input of this Vulkan kernel");
    return *g;
  }
  const Tensor& host_input(int i) const override {
    if (!has_input(i)) fail("required input ", i, " is missing");
    const Tensor& t = st_.host[size_t(node.inputs[size_t(i)])];
    if (!t.defined()) fail("host input ", i, " has no value");
    return t;
  }
  GpuTensor& output(int i, DType dtype, Shape shape) override {
    if (i >= num_outputs()) fail("kernel wrote output ", i, " but the node has ", num_outputs());
    for (int64_t d : shape)
      if (d < 0) fail("computed a negative dimension for output ", i, ": ", shape_str(shape));
    if (!device_dtype(dtype)) unsupported("output dtype ", dtype_name(dtype), " stays on the CPU");
    auto g = std::make_shared<GpuTensor>();
    g->dtype = dtype;
    g->shape = std::move(shape);
    g->half = st_.c.half() && g->is_float();
    if (g->bytes() > device().max_storage_buffer_range)
      unsupported("output ", i, " ", shape_str(g->shape), " is past the device's maxStorageBufferRange");
    const int v = node.outputs[size_t(i)];
    if (!st_.place(v, *g)) {
      g->memory = device_memory(st_.res.device, g->bytes());
      if (st_.recorder && v >= 0) st_.recorder->allocated(v, g->memory);
    }
    return *put(i, std::move(g));
  }
  void set_output(int i, const GpuTensor& t) override {
    if (i >= num_outputs()) fail("kernel wrote output ", i, " but the node has ", num_outputs());
    put(i, std::make_shared<GpuTensor>(t));
  }
  bool half() const override { return st_.c.half(); }
  const DeviceInfo& device() const override { return st_.c.context().info(); }
  int64_t attention_chunk() const override { return st_.c.attention_chunk(); }
  const ops::FusedChecks& fused_checks() const override {
    if (!st_.opts.fused_checks) fail("runs outside a compiled graph, which keeps fused-node checks");
    return *st_.opts.fused_checks;
  }
  GpuTensor upload_i32(const std::vector<int32_t>& values) override {
    Tensor t(DType::Int32, {int64_t(values.size())});
    std::memcpy(t.raw(), values.data(), values.size() * 4);
    return st_.upload(t);
  }
  GpuTensor upload_f32(const std::vector<float>& values) override {
    return st_.upload(Tensor::from_f32({int64_t(values.size())}, values));
  }
  GpuTensor temp_words(size_t words) override {
    GpuTensor g;
    g.dtype = DType::Int32;
    g.shape = {int64_t(std::max<size_t>(words, 1))};
    g.memory = device_memory(st_.res.device, g.bytes());
    return g;
  }
  void dispatch(const std::string& shader, const std::vector<int32_t>& spec, const std::vector<Binding>& bindings,
                const void* push, uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) override {
    const Pipeline& p = st_.c.context().pipeline(shader, half(), spec, uint32_t(bindings.size()));
    std::vector<BufferRange> ranges;
    for (const Binding& b : bindings) ranges.push_back(b.tensor->range(b.write));
    st_.res.rec.dispatch(p, ranges, push, push_bytes, gx, gy, gz);
  }
  void dispatch_elements(const std::string& shader, const std::vector<int32_t>& spec,
                         const std::vector<Binding>& bindings, void* push, uint32_t push_bytes, uint64_t n,
                         uint32_t local_size) override {
    KESTREL_CHECK(push_bytes >= 8, "Vulkan: element-wise push constants must begin with {base, n}");
    // At most 2^22 invocations per dispatch: a few ms on a desktop GPU, well
    // under the ~500 ms some mobile drivers allow.
    const uint64_t chunk = uint64_t(1) << 22;
    for (uint64_t base = 0; base < n; base += chunk) {
      uint32_t head[2] = {uint32_t(base), uint32_t(n)};
      std::memcpy(push, head, sizeof head);
      uint64_t count = std::min(chunk, n - base);
      uint32_t gx, gy;
      grid_for((count + local_size - 1) / local_size, device().max_workgroup_count[0], gx, gy);
      dispatch(shader, spec, bindings, push, push_bytes, gx, gy, 1);
    }
  }

  std::vector<int> produced;  // value ids this attempt set (undone if it falls back)

 private:
  std::shared_ptr<GpuTensor>& put(int i, std::shared_ptr<GpuTensor> g) {
    int v = node.outputs[size_t(i)];
    if (v < 0) return scratch_ = std::move(g);
    produced.push_back(v);
    return st_.gpu[size_t(v)] = std::move(g);
  }
  const VkOpDef& def_;
  RunState& st_;
  std::shared_ptr<GpuTensor> scratch_;
};

}  // namespace

void RunState::run_gpu(size_t i, const VkOpDef& def) {
  const ir::Node& n = g().nodes[i];
  std::vector<int> host_needed;
  for (int k : def.host_inputs)
    if (k < int(n.inputs.size()) && n.inputs[size_t(k)] >= 0) host_needed.push_back(n.inputs[size_t(k)]);
  to_host(host_needed);
  VkOpContext ctx(n, def, *this);
  auto undo = [&] {
    for (int v : ctx.produced) gpu[size_t(v)].reset();
  };
  try {
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      int v = n.inputs[k];
      if (v < 0 || std::count(def.host_inputs.begin(), def.host_inputs.end(), int(k))) continue;
      to_device(v);
    }
    def.record(ctx);
  } catch (Unsupported&) {
    undo();
    throw;
  } catch (const OutOfDeviceMemory& e) {
    // Past the budget or the device's memory: this node runs on the CPU
    // (what it recorded writes only memory given back with its outputs).
    undo();
    throw Unsupported{e.what()};
  } catch (const PipelineFailed& e) {
    undo();
    throw Unsupported{e.what()};
  } catch (const DeviceLost&) {
    throw;  // the whole run moves to the CPU (VulkanCompiled::run)
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind("node '", 0) == 0) throw;
    fail(n.where(), ": ", msg);
  }
  for (size_t k = 0; k < n.outputs.size(); ++k)
    if (n.outputs[k] >= 0 && !gpu[size_t(n.outputs[k])])
      fail(n.where(), ": Vulkan kernel produced no value for output ", k);
}

namespace {
// The node's work before it is recorded (for where submits close): its
// outputs' shapes as the graph declares them, or its first input's where
// the graph does not know them.
double estimated_flops(const ir::Node& n, const RunState& st) {
  std::vector<Shape> in = st.shapes_of(n.inputs), out;
  for (int v : n.outputs) {
    const std::optional<std::vector<ir::Dim>>* declared = v >= 0 ? &st.g().values[size_t(v)].shape : nullptr;
    bool known = declared && declared->has_value();
    Shape s;
    if (known)
      for (const ir::Dim& d : **declared) {
        if (!d.known()) known = false;
        s.push_back(d.value);
      }
    out.push_back(known ? std::move(s) : (in.empty() ? Shape{} : in[0]));
  }
  return backends::node_flops(n, in, out);
}

// Integer-quantized graphs (ConvInteger/MatMulInteger sums scaled back to
// float) hold float values far past float16's 65504 between the integer op
// and its rescale, so they keep float32 storage (OpDef::needs_fp32_storage).
bool integer_quantized(const backends::cpu::Plan& plan) {
  for (const ops::OpDef* def : plan.kernels)
    if (def && def->needs_fp32_storage) return true;
  return false;
}
}  // namespace

VulkanCompiled::VulkanCompiled(std::shared_ptr<Context> ctx, const ir::Graph& g, bool half,
                               const backends::VulkanOptions& opts, std::shared_ptr<MemoryBudget> budget)
    : ctx_(std::move(ctx)),
      g_(g),
      keep_small_host_work_(opts.keep_small_host_work),
      device_wait_s_(opts.device_wait_s),
      exact_buffers_(opts.exact_buffers),
      trace_(opts.trace),
      attention_chunk_(opts.attention_chunk),
      plan_(backends::cpu::Plan::build(g)) {
  half_refused_ = half && integer_quantized(plan_);
  half_ = half && !half_refused_;
  gpu_def_.resize(g.nodes.size());
  cpu_reason_.resize(g.nodes.size());
  resident_.resize(g.values.size());
  budget_ = budget ? std::move(budget) : std::make_shared<MemoryBudget>(opts.device_memory_bytes);
  weights_ = std::make_unique<Allocator>(*ctx_, MemoryKind::Device, budget_.get(), exact_buffers_);
  auto upload = std::make_unique<RunResources>(*ctx_, device_wait_s_, budget_, exact_buffers_);
  std::vector<std::shared_ptr<DeviceMemory>> staging;
  try {
    place_and_upload(*upload, staging);
    upload->rec.flush();
  } catch (...) {
    // Copies into the weights may still be running: keep their memory.
    auto left = take_weights();
    left->run = std::move(upload);
    left->staging = std::move(staging);
    ctx_->retire(std::move(left));
    throw;
  }
}

// Per node: its Vulkan kernel or why it stays on the CPU; the weights of the
// GPU nodes go to the device once, now, in the storage precision.
void VulkanCompiled::place_and_upload(RunResources& upload, std::vector<std::shared_ptr<DeviceMemory>>& staging) {
  const ir::Graph& g = g_;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    cpu_reason_[i] = static_verdict(n, g, half_);
    if (!cpu_reason_[i].empty()) continue;
    gpu_def_[i] = find_vk_op(n.domain, n.op_type, n.opset);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      int v = n.inputs[k];
      if (v < 0 || resident_[size_t(v)] || std::count(gpu_def_[i]->host_inputs.begin(), gpu_def_[i]->host_inputs.end(), int(k)))
        continue;
      auto it = g.initializers.find(v);
      if (it == g.initializers.end() || !storable(it->second).empty()) continue;
      const Tensor& t = it->second;
      size_t bytes = storage_bytes(t, half_);
      if (bytes > ctx_->info().max_storage_buffer_range) continue;
      auto gt = std::make_shared<GpuTensor>();
      gt->dtype = t.dtype();
      gt->shape = t.shape();
      gt->half = half_ && gt->is_float();
      std::shared_ptr<DeviceMemory> stg;
      try {
        gt->memory = device_memory(*weights_, bytes);
        if (!gt->memory->a.mapped()) stg = device_memory(upload.host, bytes);
      } catch (const OutOfDeviceMemory&) {
        continue;  // past the budget: uploaded per run if its node fits then, else the node runs on the CPU
      }
      if (uint8_t* p = gt->memory->a.mapped()) {
        write_storage(t, half_, p);
        weights_->host_wrote(gt->memory->a);
      } else {
        write_storage(t, half_, stg->a.mapped());
        upload.host.host_wrote(stg->a);
        upload.rec.copy(range_of(stg->a, 0, std::max<size_t>(bytes, 4), false), gt->range(true));
        staging.push_back(std::move(stg));
        if (staging.size() >= 64) {  // bound the staging memory held at once
          upload.rec.flush();
          staging.clear();
        }
      }
      resident_[size_t(v)] = std::move(gt);
    }
  }
}

VulkanCompiled::~VulkanCompiled() {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.clear();
  // The weights stay until the device has finished whatever may still read
  // them (freed at once when nothing is in flight).
  ctx_->retire(take_weights());
}

std::shared_ptr<Leftovers> VulkanCompiled::take_weights() {
  auto left = std::make_shared<Leftovers>();
  left->budget = budget_;
  left->weights = std::move(weights_);
  left->resident = std::move(resident_);
  return left;
}

size_t VulkanCompiled::resident_bytes() const { return weights_->reserved_bytes(); }

std::unique_ptr<RunResources> VulkanCompiled::acquire() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      auto r = std::move(idle_.back());
      idle_.pop_back();
      return r;
    }
  }
  return std::make_unique<RunResources>(*ctx_, device_wait_s_, budget_, exact_buffers_);
}

void VulkanCompiled::give_back(std::unique_ptr<RunResources> r) const {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(r));
}

std::optional<backends::PlacementReport> VulkanCompiled::placement() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

std::vector<Tensor> VulkanCompiled::run(const std::vector<Tensor>& inputs, const backends::RunOptions& given) const {
  const backends::RunOptions opts = with_checks(given);
  if (ctx_->lost())
    return run_on_cpu(inputs, opts, "Vulkan: device '" + ctx_->info().name + "' was lost by an earlier run");
  try {
    return run_on_device(inputs, opts);
  } catch (const DeviceLost& e) {
    return run_on_cpu(inputs, opts, e.what());  // what it left in flight was retired on the way out
  }
}

std::vector<Tensor> VulkanCompiled::run_on_cpu(const std::vector<Tensor>& inputs, const backends::RunOptions& opts,
                                               const std::string& why) const {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> outs = backends::cpu::execute(plan_, inputs, nullptr, opts, &host_arenas_);
  backends::PlacementReport report;
  report.device = ctx_->info().name + " (vulkan, lost)";
  report.cpu_nodes = int(g_.nodes.size());
  report.cpu_reasons[why + ": every node runs on the CPU"] = report.cpu_nodes;
  report.cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(mu_);
  last_ = report;
  return outs;
}

std::vector<Tensor> VulkanCompiled::run_on_device(const std::vector<Tensor>& inputs,
                                                  const backends::RunOptions& opts) const {
  KESTREL_CHECK(inputs.size() == g_.inputs.size(), "graph '", g_.name, "' takes ", g_.inputs.size(), " inputs, got ",
                inputs.size());
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  if (!opts.on_node && trace_ == 0) {
    bool same = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      same = all_cpu_shapes_ && *all_cpu_shapes_ == shapes;
    }
    if (same) {
      // (Any node the placement walk would now put on the GPU, say after a
      // data-dependent size grew, runs on the CPU reference instead: the
      // same result.)
      auto t0 = std::chrono::steady_clock::now();
      std::vector<Tensor> outs = backends::cpu::execute(plan_, inputs, nullptr, opts, &host_arenas_);
      std::lock_guard<std::mutex> lock(mu_);
      if (last_) last_->cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      return outs;
    }
  }
  std::unique_ptr<RunResources> res = acquire();
  // After the run, or on its way out with an error: resources whose work has
  // finished are reused; any other (a wait gave up, the device was lost)
  // are kept until the device is done with them.
  struct Return {
    const VulkanCompiled& c;
    std::unique_ptr<RunResources>& r;
    ~Return() {
      if (!r->rec.failed()) {
        try {
          r->rec.reset();
          r->device.destroy_released_buffers();
          r->host.destroy_released_buffers();
          c.give_back(std::move(r));
          return;
        } catch (...) {
        }
      }
      auto left = std::make_shared<Leftovers>();
      left->run = std::move(r);
      c.ctx_->retire(std::move(left));
    }
  } give_back_on_exit{*this, res};

  RunState st(*this, *res, opts);
  // A known signature lays its device tensors out in one arena; a new one is
  // recorded. Past the memory budget, tensors are allocated one by one.
  std::optional<backends::ArenaRecorder> recorder;
  res->device.reset_high_water();
  if (!exact_buffers_) {
    if (auto p = device_arenas_.find(inputs)) {
      // When the arena fits none of the blocks the recording grew, they go
      // before it takes one of its own (a reused RunResources holds nothing
      // now). Otherwise they stay: freeing memory has a cost of its own on
      // lavapipe, whose device memory is malloc'd (glibc then raises its mmap
      // threshold and keeps later large buffers in its heap).
      if (res->serving != p.get()) {
        if (res->device.largest_free_range() < p->total) res->device.release_empty_blocks();
        res->serving = p.get();
      }
      try {
        if (p->total) st.arena = device_memory(res->device, p->total);
        st.arena_plan = std::move(p);
      } catch (const OutOfDeviceMemory&) {
      }
    } else {
      recorder.emplace(g_, plan_.release_after, /*outputs_leave=*/false);
      st.recorder = &*recorder;
    }
  }
  for (auto& [v, t] : g_.initializers) st.host[size_t(v)] = t;
  for (size_t i = 0; i < inputs.size(); ++i) st.host[size_t(g_.inputs[i])] = inputs[i];
  backends::cpu::Scope scope{&g_, &st.host, nullptr};
  omp_set_num_threads(std::max(1, opts.threads));
  // Trace 1: op, placement, time and shapes per node; 2 adds the range of
  // each float output (finds where a value overflows or turns NaN).
  const int trace_lv = trace_;
  const bool trace = trace_lv > 0;
  const bool timed = trace || opts.on_node;
  st.report.device = ctx_->info().name + " (vulkan, " + (half_ ? "fp16" : "fp32") + " storage" +
                     (half_refused_ ? ": float16 is not used for integer-quantized graphs" : "") + ")";

  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const ir::Node& n = g_.nodes[i];
    st.node = int(i);
    opts.check_stop_before(n);
    auto t0 = std::chrono::steady_clock::now();
    bool on_gpu = false;
    const std::string* reason = &cpu_reason_[i];
    std::string refused;  // an Unsupported's reason
    if (gpu_def_[i]) {
      // Shape arithmetic on small host tensors stays on the host.
      bool small_host = keep_small_host_work_;
      for (int v : n.inputs)
        if (v >= 0 && (st.gpu[size_t(v)] || st.host[size_t(v)].numel() > kSmallHostElements)) small_host = false;
      if (small_host) {
        reason = &kSmallHost;
      } else {
        res->rec.begin_node(estimated_flops(n, st));
        try {
          st.run_gpu(i, *gpu_def_[i]);
          on_gpu = true;
          st.settle_outputs(i);
        } catch (const Unsupported& u) {
          refused = u.reason;
          reason = &refused;
        }
      }
    }
    auto t1 = std::chrono::steady_clock::now();
    if (!on_gpu) st.run_cpu(i, scope);
    (on_gpu ? st.report.record_ms : st.report.cpu_ms) +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - (on_gpu ? t0 : t1)).count();
    std::vector<Shape> in_shapes = st.shapes_of(n.inputs), out_shapes = st.shapes_of(n.outputs);
    double flops = backends::node_flops(n, in_shapes, out_shapes);
    st.report.total_flops += flops;
    if (on_gpu) {
      st.report.gpu_nodes++;
      st.report.gpu_flops += flops;
      res->rec.end_node(flops);
    } else {
      st.report.cpu_nodes++;
      st.report.cpu_reasons[*reason]++;
    }
    if (timed) {
      if (on_gpu) res->rec.flush();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (trace) {
        std::string ins, outs;
        for (const Shape& s : in_shapes) ins += (ins.empty() ? "" : " ") + shape_str(s);
        for (const Shape& s : out_shapes) outs += (outs.empty() ? "" : " ") + shape_str(s);
        if (trace_lv >= 2) {
          st.to_host(n.outputs);
          for (int v : n.outputs)
            if (v >= 0) outs += value_range(st.host[size_t(v)]);
        }
        std::fprintf(stderr, "[kestrel trace] %4zu %-22s %-4s %9.3f ms  in %s -> %s%s%s\n", i, n.op_type.c_str(),
                     on_gpu ? "gpu" : "cpu", ms, ins.c_str(), outs.c_str(), on_gpu ? "" : "  (", on_gpu ? "" : (*reason + ")").c_str());
      }
      if (opts.on_node) opts.on_node(opts.user, backends::NodeTiming{&n, in_shapes, ms, out_shapes});
    }
    for (int v : plan_.release_after[i]) {
      st.host[size_t(v)] = Tensor();
      st.gpu[size_t(v)].reset();
    }
  }
  st.to_host(g_.outputs);
  std::vector<Tensor> outs;
  for (int v : g_.outputs) {
    if (!st.host[size_t(v)].defined()) fail("graph output '", g_.values[size_t(v)].name, "' was never computed");
    outs.push_back(st.host[size_t(v)]);
  }
  st.report.dispatches = res->rec.dispatches();
  st.report.barriers = res->rec.barriers();
  st.report.submits = res->rec.submits();
  st.report.wait_ms = res->rec.wait_ms();
  st.report.longest_wait_ms = res->rec.longest_wait_ms();
  st.report.device_bytes = res->device.reserved_bytes() + res->host.reserved_bytes() + weights_->reserved_bytes();
  st.report.device_tensor_peak_bytes = res->device.high_water_bytes();
  if (st.arena_plan) st.report.device_arena_bytes = st.arena_plan->total;
  if (recorder) {
    const size_t align = std::max<size_t>(256, size_t(ctx_->info().min_storage_buffer_offset_alignment));
    device_arenas_.add(inputs, recorder->finish(align));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_ = st.report;
    if (st.report.gpu_nodes == 0) all_cpu_shapes_ = std::move(shapes);
    else all_cpu_shapes_.reset();
  }
  return outs;
}

}  // namespace kestrel::vulkan

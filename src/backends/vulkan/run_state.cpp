#include "backends/vulkan/run_state.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "backends/vulkan/transfer.h"

namespace kestrel::vulkan {
namespace {

// " [lo, hi]" of a float tensor (with a mark for NaN or infinity): trace level 2.
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

}  // namespace

std::shared_ptr<DeviceMemory> device_memory(Allocator& a, size_t bytes) {
  return std::make_shared<DeviceMemory>(&a, a.allocate(bytes));
}

const GpuTensor& RunState::to_device(int v, bool half) {
  if (gpu[size_t(v)]) return *gpu[size_t(v)];
  // A weight kept in float16 is uploaded again for a float32 reader: a
  // conversion on the device would keep float16's rounding.
  if (const auto& r = c.resident_[size_t(v)]; r && !(r->half && !half)) return *(gpu[size_t(v)] = r);
  const Tensor& t = host[size_t(v)];
  if (!t.defined()) throw Unsupported{"input '" + name(v) + "' has no value"};
  std::string why = storable(t);
  // int64 values past int32's range are a matter of this run's data, not its shapes.
  if (!why.empty()) throw Unsupported{"input '" + name(v) + "': " + why, /*passing=*/t.dtype() == DType::Int64};
  if (storage_bytes(t, half) > c.ctx_->info().max_storage_buffer_range)
    throw Unsupported{"tensor '" + name(v) + "' is past the device's maxStorageBufferRange"};
  return *(gpu[size_t(v)] = std::make_shared<GpuTensor>(upload(t, v, half)));
}

GpuTensor RunState::upload(const Tensor& t, int v, bool half) {
  GpuTensor g;
  g.dtype = t.dtype();
  g.shape = t.shape();
  g.half = half && g.is_float();
  size_t bytes = std::max<size_t>(g.bytes(), 4);
  if (!place(v, g)) {
    g.memory = device_memory(res.device, bytes);
    if (recorder && v >= 0) {
      recorder->allocated(v, g.memory);
      recorder->produced(node, v, g.memory, bytes);
    }
  }
  auto stg = device_memory(res.host, bytes);
  const auto t0 = std::chrono::steady_clock::now();
  write_storage(t, g.half, stg->a.mapped(), opts.threads);
  report.transfer_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  res.host.host_wrote(stg->a);
  res.rec.copy(range_of(stg->a, 0, bytes, false), g.range(true));
  if (capture && v >= 0 && c.input_index(v) >= 0) capture->replay.inputs.push_back({size_t(c.input_index(v)), stg, g.half});
  staging.push_back(std::move(stg));
  return g;
}

void RunState::outputs_to_host() {
  const std::vector<int>& outs = g().outputs;
  std::map<int, Tensor> into;  // (a value that is two outputs goes to the first's tensor)
  for (size_t i = 0; i < outs.size() && opts.output_sink; ++i) {
    const int v = outs[i];
    if (v >= 0 && !host[size_t(v)].defined() && gpu[size_t(v)] && !into.count(v))
      into[v] = output_destination(opts.output_sink, i, *gpu[size_t(v)]);
  }
  to_host(outs, into);
}

void RunState::to_host(const std::vector<int>& values, const std::map<int, Tensor>& into) {
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
  if (capture) {
    if (!capture->outputs_phase) capture->refuse("the host read device values back before the outputs");
    for (auto& [v, stg] : reads) capture->downloads.push_back({v, *gpu[size_t(v)], stg});
  }
  res.rec.flush();
  for (auto& [v, stg] : reads) {
    const GpuTensor& t = *gpu[size_t(v)];
    if (stg) stg->owner->host_will_read(stg->a);
    else t.memory->owner->host_will_read(t.memory->a);
    const auto dst = into.find(v);
    const auto t0 = std::chrono::steady_clock::now();
    host[size_t(v)] = read_storage(t, stg ? stg->a.mapped() : t.memory->a.mapped() + t.view_offset, opts.threads,
                                   dst == into.end() ? Tensor() : dst->second);
    report.transfer_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
}

bool RunState::place(int v, GpuTensor& g) const {
  const int64_t at = arena ? arena_plan->slot(v, node, g.bytes()) : -1;
  if (at < 0) return false;
  g.memory = arena;
  g.view_offset = size_t(at);
  return true;
}

void RunState::settle_outputs(size_t i) {
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

void RunState::run_cpu(size_t i, const backends::cpu::Scope& scope) {
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
  if (capture && !(def && def->shape_only))
    for (int v : need)
      if (v >= 0 && c.input_index(v) >= 0) capture->refuse(n.where() + " ran on the CPU from a graph input's values");
  to_host(need);
  backends::cpu::run_node(c.plan_, i, host, scope, opts);
}

std::vector<Shape> RunState::shapes_of(const std::vector<int>& vs) const {
  std::vector<Shape> s;
  for (int v : vs) {
    if (v < 0) s.emplace_back();
    else if (gpu[size_t(v)]) s.push_back(gpu[size_t(v)]->shape);
    else if (host[size_t(v)].defined()) s.push_back(host[size_t(v)].shape());
    else s.emplace_back();
  }
  return s;
}

namespace {

class VkOpContext : public OpContext {
 public:
  VkOpContext(const ir::Node& n, const VkOpDef& def, RunState& st) : OpContext(n), def_(def), st_(st) {}

  bool has_input(int i) const override { return i < num_inputs() && node.inputs[size_t(i)] >= 0; }
  const GpuTensor& input(int i) const override {
    if (!has_input(i)) fail("required input ", i, " is missing");
    const int v = node.inputs[size_t(i)];
    const auto& g = st_.gpu[size_t(v)];
    if (!g) fail("input ", i, " is a host input of this Vulkan kernel");
    if (g->is_float() && g->half != st_.node_half) {
      if (!st_.converted[size_t(v)]) fail("input ", i, " was not converted to this node's float precision");
      return *st_.converted[size_t(v)];
    }
    return *g;
  }
  // Device input i in this node's float precision: a float input its
  // producer stored in the other precision is converted once per run.
  void convert_input(int i) {
    const int v = node.inputs[size_t(i)];
    const GpuTensor& g = *st_.gpu[size_t(v)];
    if (!g.is_float() || g.half == st_.node_half || st_.converted[size_t(v)]) return;
    auto c = std::make_shared<GpuTensor>(g);
    c->half = st_.node_half;
    c->view_offset = 0;
    c->memory = device_memory(st_.res.device, std::max<size_t>(c->bytes(), 4));
    convert_float(*this, g, *c, uint64_t(g.numel()), c->half ? FloatConversion::ToFloat16 : FloatConversion::ToFloat32);
    st_.converted[size_t(v)] = std::move(c);
  }
  const Tensor& host_input(int i) const override {
    if (!has_input(i)) fail("required input ", i, " is missing");
    const Tensor& t = st_.host[size_t(node.inputs[size_t(i)])];
    if (!t.defined()) fail("host input ", i, " has no value");
    return t;
  }
  std::vector<int64_t> recorded_for(int i, std::function<std::vector<int64_t>(const Tensor&)> key) override {
    if (!has_input(i)) fail("required input ", i, " is missing");
    const int v = node.inputs[size_t(i)];
    st_.to_host({v});  // a graph input is there already
    std::vector<int64_t> k = key(st_.host[size_t(v)]);
    const int index = st_.c.input_index(v);
    if (st_.capture && index >= 0)
      st_.capture->replay.checks.push_back(
          {size_t(index), [key = std::move(key), k](const Tensor& t) { return key(t) == k; }});
    return k;
  }
  GpuTensor& output(int i, DType dtype, Shape shape) override {
    if (i >= num_outputs()) fail("kernel wrote output ", i, " but the node has ", num_outputs());
    for (int64_t d : shape)
      if (d < 0) fail("computed a negative dimension for output ", i, ": ", shape_str(shape));
    if (!device_dtype(dtype)) unsupported("output dtype ", dtype_name(dtype), " stays on the CPU");
    auto g = std::make_shared<GpuTensor>();
    g->dtype = dtype;
    g->shape = std::move(shape);
    g->half = st_.node_half && g->is_float() && !def_.float32_outputs;
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
  bool half() const override { return st_.node_half; }
  const DeviceInfo& device() const override { return st_.c.context().info(); }
  int64_t attention_chunk() const override { return st_.c.attention_chunk(); }
  GemmTiles gemm_tiles() const override { return st_.c.gemm_tiles(); }
  IntegerDot integer_dot() const override { return st_.c.integer_dot(); }
  AttentionKernel attention_kernel() const override { return st_.c.attention_kernel(); }
  const ops::FusedChecks& fused_checks() const override {
    if (!st_.opts.fused_checks) fail("runs outside a compiled graph, which keeps fused-node checks");
    return *st_.opts.fused_checks;
  }
  ops::RotaryCache& rotary_cache() const override {
    if (!st_.opts.rotary) fail("runs outside a compiled graph, which keeps rotary tables");
    return *st_.opts.rotary;
  }
  GpuTensor upload_i32(const std::vector<int32_t>& values) override {
    Tensor t(DType::Int32, {int64_t(values.size())});
    std::memcpy(t.raw(), values.data(), values.size() * 4);
    return st_.upload(t, -1, st_.node_half);
  }
  GpuTensor upload_f32(const std::vector<float>& values) override {
    return st_.upload(Tensor::from_f32({int64_t(values.size())}, values), -1, st_.node_half);
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
  if (capture)
    for (int v : host_needed)
      if (c.input_index(v) >= 0) capture->refuse(n.where() + " took a graph input as a host input");
  to_host(host_needed);
  VkOpContext ctx(n, def, *this);
  auto undo = [&] {
    for (int v : ctx.produced) gpu[size_t(v)].reset();
  };
  try {
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      int v = n.inputs[k];
      if (v < 0 || std::count(def.host_inputs.begin(), def.host_inputs.end(), int(k))) continue;
      to_device(v, node_half);
      ctx.convert_input(int(k));
    }
    def.record(ctx);
  } catch (Unsupported&) {
    undo();
    throw;
  } catch (const OutOfDeviceMemory& e) {
    // Past the budget or the device's memory: this node runs on the CPU
    // (what it recorded writes only memory given back with its outputs).
    undo();
    throw Unsupported{e.what(), /*passing=*/true};
  } catch (const PipelineFailed& e) {
    undo();
    throw Unsupported{e.what(), /*passing=*/true};
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


void trace_node(RunState& st, size_t i, int level, bool on_gpu, double ms, const std::string& cpu_reason,
                const std::vector<Shape>& in_shapes, const std::vector<Shape>& out_shapes) {
  const ir::Node& n = st.g().nodes[i];
  std::string ins, outs;
  for (const Shape& s : in_shapes) ins += (ins.empty() ? "" : " ") + shape_str(s);
  for (const Shape& s : out_shapes) outs += (outs.empty() ? "" : " ") + shape_str(s);
  if (level >= 2) {
    st.to_host(n.outputs);
    for (int v : n.outputs)
      if (v >= 0) outs += value_range(st.host[size_t(v)]);
  }
  std::fprintf(stderr, "[kestrel trace] %4zu %-22s %-4s %9.3f ms  in %s -> %s%s%s\n", i, n.op_type.c_str(),
               on_gpu ? "gpu" : "cpu", ms, ins.c_str(), outs.c_str(), on_gpu ? "" : "  (",
               on_gpu ? "" : (cpu_reason + ")").c_str());
}

}  // namespace kestrel::vulkan

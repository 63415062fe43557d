#include "backends/vulkan/graph_runner.h"

#include <omp.h>

#include <algorithm>
#include <chrono>

#include "backends/vulkan/replay.h"
#include "backends/vulkan/run_state.h"
#include "backends/vulkan/transfer.h"

namespace kestrel::vulkan {

// Integer-quantized graphs (ConvInteger/MatMulInteger sums scaled back to
// float) hold float values far past float16's 65504 between the integer op
// and its rescale, so they keep float32 storage (OpDef::needs_fp32_storage).
namespace {
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
      replay_(opts.replay),
      trace_(opts.trace),
      attention_chunk_(opts.attention_chunk),
      gemm_tiles_(opts.gemm_tiles),
      integer_dot_(opts.integer_dot),
      attention_kernel_(opts.attention_kernel),
      plan_(backends::cpu::Plan::build(g, opts.cpu_kernels)),
      half_refused_(half && integer_quantized(plan_)),
      half_(half && !half_refused_),
      partition_(g) {
  resident_.resize(g.values.size());
  input_index_.assign(g.values.size(), -1);
  for (size_t k = 0; k < g.inputs.size(); ++k) input_index_[size_t(g.inputs[k])] = int(k);
  auto first = std::make_shared<PrecisionPlan>();
  first->decided = !half_;  // float16 asked for: the first run decides (precision_calibration.cpp)
  precision_ = std::move(first);
  budget_ = budget ? std::move(budget) : std::make_shared<MemoryBudget>(opts.device_memory_bytes);
  weights_ = std::make_unique<Allocator>(*ctx_, MemoryKind::Device, budget_.get(), exact_buffers_);
  auto upload = std::make_unique<RunResources>(*ctx_, device_wait_s_, budget_, exact_buffers_);
  std::vector<std::shared_ptr<DeviceMemory>> staging;
  try {
    upload_weights(*upload, staging, *precision_);
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

// The weights of the nodes the static partition puts on the GPU go to the
// device once, now, each in the float precision its readers compute in under
// `plan` (float32 where they differ; a reader in the other precision gets a
// converted copy per run, run_state.cpp).
void VulkanCompiled::upload_weights(RunResources& upload, std::vector<std::shared_ptr<DeviceMemory>>& staging,
                                    const PrecisionPlan& plan) const {
  const ir::Graph& g = g_;
  ++weights_generation_;  // runs kept for replay bind the weights as they were
  std::vector<int8_t> want_half(g.values.size(), -1);  // -1: no GPU reader
  std::vector<int> readers;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    const VkOpDef* kernel = partition_.kernel(i);
    if (!kernel) continue;
    const bool h = half_ && !plan.half.empty() && plan.half[i];
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      int v = n.inputs[k];
      if (v < 0 || std::count(kernel->host_inputs.begin(), kernel->host_inputs.end(), int(k))) continue;
      if (!g.initializers.count(v)) continue;
      if (want_half[size_t(v)] < 0) readers.push_back(v);
      want_half[size_t(v)] = int8_t(want_half[size_t(v)] < 0 ? h : (want_half[size_t(v)] && h));
    }
  }
  for (int v : readers) {
    const Tensor& t = g.initializers.at(v);
    const bool half = want_half[size_t(v)] == 1 && (t.dtype() == DType::Float32 || t.dtype() == DType::Float16);
    if (resident_[size_t(v)] && resident_[size_t(v)]->half == half) continue;
    if (!storable(t).empty()) continue;
    size_t bytes = storage_bytes(t, half);
    if (bytes > ctx_->info().max_storage_buffer_range) continue;
    auto gt = std::make_shared<GpuTensor>();
    gt->dtype = t.dtype();
    gt->shape = t.shape();
    gt->half = half;
    std::shared_ptr<DeviceMemory> stg;
    try {
      gt->memory = device_memory(*weights_, bytes);
      if (!gt->memory->a.mapped()) stg = device_memory(upload.host, bytes);
    } catch (const OutOfDeviceMemory&) {
      continue;  // past the budget: uploaded per run if its node fits then, else the node runs on the CPU
    }
    if (uint8_t* p = gt->memory->a.mapped()) {
      write_storage(t, half, p);
      weights_->host_wrote(gt->memory->a);
    } else {
      write_storage(t, half, stg->a.mapped());
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

std::optional<backends::PlacementReport> VulkanCompiled::planned_placement() const {
  return partition_.planned(device_label());
}

std::shared_ptr<const PrecisionPlan> VulkanCompiled::precision() const {
  std::lock_guard<std::mutex> lock(mu_);
  return precision_;
}

std::string VulkanCompiled::device_label() const {
  return ctx_->info().name + " (vulkan, " + (half_ ? "fp16" : "fp32") + " storage" +
         (half_refused_ ? ": float16 is not used for integer-quantized graphs" : "") + ")";
}

std::vector<Tensor> VulkanCompiled::run(const std::vector<Tensor>& inputs, const backends::RunOptions& given) const {
  const backends::RunOptions opts = with_checks(given);
  if (ctx_->lost())
    return run_on_cpu(inputs, opts, "Vulkan: device '" + ctx_->info().name + "' was lost by an earlier run");
  try {
    if (!half_) return run_on_device(inputs, opts, fp32_plan_);
    std::shared_ptr<const PrecisionPlan> plan = precision();
    return plan->decided ? run_mixed(inputs, opts, *plan) : calibrate(inputs, opts);
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

bool VulkanCompiled::may_replay(const backends::RunOptions& opts, const PrecisionPlan& plan, bool sampled) const {
  // Calibration's trial plans (not decided) are never kept.
  return replay_ && !exact_buffers_ && trace_ == 0 && !opts.on_node && !sampled && opts.fused_checks &&
         (&plan == &fp32_plan_ || plan.decided);
}

std::vector<Tensor> VulkanCompiled::run_on_device(const std::vector<Tensor>& inputs, const backends::RunOptions& opts,
                                                  const PrecisionPlan& plan, std::vector<ValueSample>* samples,
                                                  bool* settled_out) const {
  KESTREL_CHECK(inputs.size() == g_.inputs.size(), "graph '", g_.name, "' takes ", g_.inputs.size(), " inputs, got ",
                inputs.size());
  // The verdicts a settled run at this signature learned (partition.h); the
  // signature also keys the device arena plans.
  partition::Signature sig = partition::signature_of(inputs);
  const std::shared_ptr<const Partition::Verdicts> known = partition_.learned(sig);
  if (known && known->all_cpu() && !opts.on_node && trace_ == 0 && !samples) {
    // A graph of control flow and small tensors (such as Silero VAD's) goes
    // straight to the CPU executor, without device resources or the per-node
    // walk. (Any node a walk would now put on the GPU, say after a
    // data-dependent size grew, runs on the CPU instead: the same
    // result.)
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> outs = backends::cpu::execute(plan_, inputs, nullptr, opts, &host_arenas_);
    std::lock_guard<std::mutex> lock(mu_);
    if (last_) last_->cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return outs;
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

  // A run kept at this signature serves it (replay.h); one kept at another
  // goes before this run allocates.
  const bool replayable = known && may_replay(opts, plan, samples != nullptr);
  const uint64_t generation = weights_generation_;
  const size_t withdrawals = opts.fused_checks ? opts.fused_checks->withdrawals() : 0;
  if (res->replay) {
    if (replayable && res->replay->matches(sig, plan, generation, withdrawals)) {
      if (!g_.nodes.empty()) opts.check_stop_before(g_.nodes.front());
      std::vector<Tensor> outs;
      double transfer_ms = 0;
      if (replay_run(*res, *res->replay, inputs, outs, opts.threads, opts.output_sink, transfer_ms)) {
        backends::PlacementReport report = res->replay->report;
        report.replayed = true;
        report.record_ms = report.cpu_ms = 0;
        report.transfer_ms = transfer_ms;
        report.submits = res->rec.submits();
        report.wait_ms = res->rec.wait_ms();
        report.longest_wait_ms = res->rec.longest_wait_ms();
        std::lock_guard<std::mutex> lock(mu_);
        last_ = std::move(report);
        return outs;
      }
    }
    res->rec.drop_kept();
    res->replay.reset();
  }

  RunState st(*this, *res, opts, plan);
  // A run that times its nodes (bench --profile) also times each dispatch.
  res->rec.set_profiling(opts.on_node != nullptr);
  // A known signature lays its device tensors out in one arena; a new one is
  // recorded. Past the memory budget, tensors are allocated one by one.
  std::optional<backends::ArenaRecorder> recorder;
  res->device.reset_high_water();
  if (!exact_buffers_) {
    if (auto p = device_arenas_.find(sig)) {
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
  // Only a run with the signature's verdicts and arena is kept: its work is
  // then what every later run at the signature records.
  std::optional<ReplayCapture> capture;
  if (replayable && st.arena_plan) st.capture = &capture.emplace();
  for (auto& [v, t] : g_.initializers) st.host[size_t(v)] = t;
  for (size_t i = 0; i < inputs.size(); ++i) st.host[size_t(g_.inputs[i])] = inputs[i];
  backends::cpu::Scope scope{&g_, &st.host, nullptr};
  omp_set_num_threads(std::max(1, opts.threads));
  // Trace 1: op, placement, time and shapes per node; 2 adds the range of
  // each float output (finds where a value overflows or turns NaN).
  const int trace_lv = trace_;
  const bool trace = trace_lv > 0;
  const bool timed = trace || opts.on_node;
  st.report.device = device_label();
  if (half_) st.report.precision_note = plan.note;
  if (samples) {
    samples->assign(g_.values.size(), ValueSample());
    for (size_t i = 0; i < inputs.size(); ++i) (*samples)[size_t(g_.inputs[i])] = sample_of(inputs[i]);
  }

  // What this run learns, when its signature is new.
  Partition::Verdicts found;
  if (!known) {
    found.node.assign(g_.nodes.size(), Learned::Cpu);
    found.why.resize(g_.nodes.size());
  }
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const ir::Node& n = g_.nodes[i];
    st.node = int(i);
    st.node_half = half_ && !plan.half.empty() && plan.half[i];
    opts.check_stop_before(n);
    auto t0 = std::chrono::steady_clock::now();
    bool on_gpu = false;
    const VkOpDef* kernel = partition_.kernel(i);
    const std::string* reason = &partition_.static_reason(i);
    const Learned was = known ? known->node[i] : Learned::Retry;
    if (was == Learned::Cpu) {
      kernel = nullptr;
      reason = &known->why[i];
    }
    Learned verdict = Learned::Cpu;
    std::string refused;  // an Unsupported's reason
    if (kernel) {
      // Shape arithmetic on small host tensors stays on the host (a learned
      // GPU verdict already said it is not that).
      bool small_host = keep_small_host_work_ && was != Learned::Gpu;
      for (int v : n.inputs)
        if (v >= 0 && (st.gpu[size_t(v)] || st.host[size_t(v)].numel() > kSmallHostElements)) small_host = false;
      if (small_host) {
        reason = &kSmallHostWork;
      } else {
        res->rec.begin_node(estimated_flops(n, st));
        try {
          st.run_gpu(i, *kernel);
          on_gpu = true;
          verdict = Learned::Gpu;
          st.settle_outputs(i);
        } catch (const Unsupported& u) {
          refused = u.reason;
          reason = &refused;
          if (u.passing) verdict = Learned::Retry;
        }
      }
    }
    if (!known) {
      found.node[i] = verdict;
      if (verdict == Learned::Cpu) found.why[i] = *reason;
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
      if (trace) trace_node(st, i, trace_lv, on_gpu, ms, *reason, in_shapes, out_shapes);
      if (opts.on_node) opts.on_node(opts.user, backends::NodeTiming{&n, in_shapes, ms, out_shapes});
    }
    if (samples) {
      st.to_host(n.outputs);
      for (int v : n.outputs)
        if (v >= 0) (*samples)[size_t(v)] = sample_of(st.host[size_t(v)]);
    }
    for (int v : plan_.release_after[i]) {
      st.host[size_t(v)] = Tensor();
      st.gpu[size_t(v)].reset();
      st.converted[size_t(v)].reset();
    }
  }
  if (capture) capture->outputs_phase = true;
  st.outputs_to_host();
  std::vector<Tensor> outs;
  for (int v : g_.outputs) {
    if (!st.host[size_t(v)].defined()) fail("graph output '", g_.values[size_t(v)].name, "' was never computed");
    outs.push_back(st.host[size_t(v)]);
  }
  st.report.kernels = res->rec.take_profile();
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
    device_arenas_.add(sig, recorder->finish(align));
  }
  // A run in which some node stayed on the CPU for a reason of the moment
  // teaches nothing: where that node runs next time moves its readers'
  // inputs, and with them whether they are small host work.
  const bool settled = std::none_of(found.node.begin(), found.node.end(), [](Learned l) { return l == Learned::Retry; });
  if (settled_out) *settled_out = known ? true : settled;
  if (capture) keep_for_replay(st, *capture, std::move(sig), generation, withdrawals);
  else if (!known && settled) partition_.learn(std::move(sig), std::move(found));
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_ = st.report;
  }
  return outs;
}

}  // namespace kestrel::vulkan

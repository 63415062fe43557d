// The state of one Vulkan run: every value on the host, on the device, or
// both, and what the run needs for itself (its allocators, its recorder).
// graph_runner.cpp walks the nodes; this moves values between host and
// device and runs one node on either side.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/arena_plan.h"
#include "backends/cpu/executor.h"
#include "backends/vulkan/graph_runner.h"
#include "backends/vulkan/precision_plan.h"
#include "backends/vulkan/replay.h"

namespace kestrel::vulkan {

// What one run needs for itself, reused by later runs: runs on several
// threads at once each take their own. The recorder is declared last so that
// it goes first: its destructor waits for any work still in flight before
// the memory that work writes is freed (a kept replay's included).
struct RunResources {
  RunResources(Context& c, double wait_s, std::shared_ptr<MemoryBudget> b, bool exact_buffers)
      : budget(std::move(b)),
        device(c, MemoryKind::Device, budget.get(), exact_buffers),
        host(c, MemoryKind::Host, budget.get(), exact_buffers),
        rec(c, wait_s) {}
  std::shared_ptr<MemoryBudget> budget;
  Allocator device;
  Allocator host;
  // A run kept for replay (replay.h), with what its command buffers bind:
  // while it is held nothing else allocates from `device` or `host`.
  std::unique_ptr<Replay> replay;
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

// The state of one run: every value on the host, on the device, or both.
struct RunState {
  const VulkanCompiled& c;
  RunResources& res;
  const backends::RunOptions& opts;
  const PrecisionPlan& precision;
  std::vector<Tensor> host;
  std::vector<std::shared_ptr<GpuTensor>> gpu;
  // A device value's copy in the other float precision, made for a reader
  // whose precision differs from its producer's (released with the value).
  std::vector<std::shared_ptr<GpuTensor>> converted;
  std::vector<std::shared_ptr<DeviceMemory>> staging;  // alive until the run ends
  backends::PlacementReport report;
  // The static memory plan of this signature (backends/arena_plan.h) and the
  // run's device arena it lays out; or, for a new signature, its recorder.
  std::shared_ptr<const backends::ArenaPlan> arena_plan;
  std::shared_ptr<DeviceMemory> arena;
  backends::ArenaRecorder* recorder = nullptr;
  // Set when this run may be kept for replay: what it learns to that end.
  ReplayCapture* capture = nullptr;
  int node = 0;            // the node being run
  bool node_half = false;  // ... computes and stores its float tensors in float16 (precision_plan.h)

  RunState(const VulkanCompiled& cc, RunResources& r, const backends::RunOptions& o, const PrecisionPlan& p)
      : c(cc),
        res(r),
        opts(o),
        precision(p),
        host(cc.g_.values.size()),
        gpu(cc.g_.values.size()),
        converted(cc.g_.values.size()) {}

  const ir::Graph& g() const { return c.g_; }
  const std::string& name(int v) const { return g().values[size_t(v)].name; }

  // The device copy of value v, uploading the host tensor when needed (its
  // float storage: float16 when `half`).
  const GpuTensor& to_device(int v, bool half);

  // A device copy of host tensor t (float storage float16 when `half`). It goes through
  // staging, in stream order: the device range may have been freed by this
  // run with recorded work still reading it.
  // v: the value it becomes (planned in the arena like a kernel's output),
  // or -1 for a kernel's own constants.
  GpuTensor upload(const Tensor& t, int v, bool half);

  // Makes every listed value available on the host, with one submit;
  // a value in `into` is read back into the tensor there.
  void to_host(const std::vector<int>& values, const std::map<int, Tensor>& into = {});
  // The same for the graph's outputs, read into what opts.output_sink gives.
  void outputs_to_host();

  // Gives output tensor g of value v its planned place in the arena; false
  // when v has none or g does not fit it (the data chose another size).
  bool place(int v, GpuTensor& g) const;

  // After node i ran on the GPU: its outputs are recorded for a plan, or an
  // output found in the arena outside its planned region (a view the plan
  // did not foresee, whose bytes a later tensor may take) moves to memory of
  // its own, by a copy in stream order.
  void settle_outputs(size_t i);

  // Node i on the CPU, with its inputs brought to the host.
  void run_cpu(size_t i, const backends::cpu::Scope& scope);
  // Node i with its Vulkan kernel; throws Unsupported when the kernel refuses
  // (nothing it made stays), DeviceLost when the device went.
  void run_gpu(size_t i, const VkOpDef& def);

  // The shapes of the listed values, wherever they are (empty: no value).
  std::vector<Shape> shapes_of(const std::vector<int>& vs) const;
};


// A block of `bytes` from allocator a, given back when the last holder lets go.
std::shared_ptr<DeviceMemory> device_memory(Allocator& a, size_t bytes);

// The node's work before it is recorded (for where submits close): its
// outputs' shapes as the graph declares them, or its first input's where the
// graph does not know them.
double estimated_flops(const ir::Node& n, const RunState& st);

// KESTREL_TRACE's line for node i (level 2 adds the range of each float
// output, which brings the outputs to the host).
void trace_node(RunState& st, size_t i, int level, bool on_gpu, double ms, const std::string& cpu_reason,
                const std::vector<Shape>& in_shapes, const std::vector<Shape>& out_shapes);

}  // namespace kestrel::vulkan

// A graph compiled for the Vulkan backend: its partition (partition.h), the
// weights of its GPU nodes uploaded once, and the loop that runs it, node by
// node, on the side its partition says (run_state.h moves the values).
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/arena_plan.h"
#include "backends/cpu/executor.h"
#include "backends/vulkan/op.h"
#include "backends/vulkan/partition.h"
#include "backends/vulkan/precision_plan.h"
#include "backends/vulkan/vulkan_backend.h"

namespace kestrel::vulkan {

struct RunResources;
struct Leftovers;

class VulkanCompiled : public backends::CompiledGraph {
 public:
  // `budget`: the session's device memory, shared with its other compiled
  // graphs (null: a budget of opts.device_memory_bytes for this one alone).
  VulkanCompiled(std::shared_ptr<Context> ctx, const ir::Graph& g, bool half, const backends::VulkanOptions& opts,
                 std::shared_ptr<MemoryBudget> budget = nullptr);
  ~VulkanCompiled() override;
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const backends::RunOptions& opts) const override;
  std::optional<backends::PlacementReport> placement() const override;
  std::optional<backends::PlacementReport> planned_placement() const override;

  const Partition& partition() const { return partition_; }
  Context& context() const { return *ctx_; }
  // Float16 storage was asked for: nodes take it where precision() says.
  bool half() const { return half_; }
  // Which nodes store float16 (undecided until the first run calibrates it).
  std::shared_ptr<const PrecisionPlan> precision() const;
  int64_t attention_chunk() const { return attention_chunk_; }
  GemmTiles gemm_tiles() const { return gemm_tiles_; }
  IntegerDot integer_dot() const { return integer_dot_; }
  AttentionKernel attention_kernel() const { return attention_kernel_; }
  size_t resident_bytes() const;
  // Value id -> its index in graph.inputs, or -1.
  int input_index(int v) const { return input_index_[size_t(v)]; }

 private:
  friend struct RunState;
  std::string device_label() const;  // "<device> (vulkan, fp16 storage)"
  void upload_weights(RunResources& upload, std::vector<std::shared_ptr<DeviceMemory>>& staging,
                      const PrecisionPlan& plan) const;
  std::unique_ptr<RunResources> acquire() const;
  std::shared_ptr<Leftovers> take_weights();  // the weights and their allocator, for Context::retire
  // One run with `plan`'s precisions; `samples` (by value id), when given,
  // gets what it saw of every float value; `settled`, whether every node's
  // placement was of its shapes (partition.h), so what it saw holds.
  std::vector<Tensor> run_on_device(const std::vector<Tensor>& inputs, const backends::RunOptions& opts,
                                    const PrecisionPlan& plan, std::vector<ValueSample>* samples = nullptr,
                                    bool* settled = nullptr) const;
  // Float16 asked for (precision_calibration.cpp): the first run decides the
  // plan; later ones follow it, recomputing in float32 an output float16
  // made non-finite.
  std::vector<Tensor> calibrate(const std::vector<Tensor>& inputs, const backends::RunOptions& opts) const;
  std::vector<Tensor> run_mixed(const std::vector<Tensor>& inputs, const backends::RunOptions& opts,
                                const PrecisionPlan& plan) const;
  // Uploads the weights the GPU nodes read, each in the precision its
  // readers want under `plan` (float32 where they differ); replaces a
  // resident weight held in the other precision.
  void sync_weights(const PrecisionPlan& plan) const;
  // After the device was lost: the whole graph on the CPU, reported so.
  std::vector<Tensor> run_on_cpu(const std::vector<Tensor>& inputs, const backends::RunOptions& opts,
                                 const std::string& why) const;
  void give_back(std::unique_ptr<RunResources> r) const;
  // Whether a run at a known signature with `plan` may be kept for replay,
  // and whether one kept may serve it (the same checks: a run that samples,
  // traces or times its nodes walks them).
  bool may_replay(const backends::RunOptions& opts, const PrecisionPlan& plan, bool sampled) const;

  std::shared_ptr<Context> ctx_;
  const ir::Graph& g_;
  bool keep_small_host_work_ = true;
  double device_wait_s_ = 120;
  bool exact_buffers_ = false;
  bool replay_ = true;  // VulkanOptions::replay
  int trace_ = 0;
  int64_t attention_chunk_ = 0;
  GemmTiles gemm_tiles_ = GemmTiles::Auto;
  IntegerDot integer_dot_ = IntegerDot::Auto;
  AttentionKernel attention_kernel_ = AttentionKernel::Auto;
  backends::cpu::Plan plan_;
  bool half_refused_ = false;  // float16 was asked for but the graph keeps float32
  bool half_ = false;
  Partition partition_;
  std::shared_ptr<MemoryBudget> budget_;
  std::unique_ptr<Allocator> weights_;
  // By value id (initializers used on the GPU); replaced only while
  // calibration holds calibrating_ and no run is in flight.
  mutable std::vector<std::shared_ptr<GpuTensor>> resident_;
  // Counts the uploads of weights: a kept replay binds the weights of its
  // generation (replay.h).
  mutable std::atomic<uint64_t> weights_generation_{0};
  std::vector<int> input_index_;
  mutable std::mutex calibrating_;
  mutable std::shared_ptr<const PrecisionPlan> precision_;  // under mu_
  const PrecisionPlan fp32_plan_;                          // every node float32
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<RunResources>> idle_;
  mutable std::optional<backends::PlacementReport> last_;
  // Static memory plans by input signature: the device tensors of a run (not
  // in exact-buffer mode, where each tensor needs a buffer of its own), and
  // the host tensors of runs that go wholly to the CPU executor.
  mutable backends::ArenaPlans device_arenas_, host_arenas_;
};

}  // namespace kestrel::vulkan

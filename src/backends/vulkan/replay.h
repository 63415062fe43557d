// Replaying a run. The second run at an input signature (once its verdicts
// and device arena are known) may be kept whole: its command buffers and
// descriptor sets, and every range they bind (the arena, the staging its
// inputs were written to and its outputs read from, the constants its
// kernels uploaded). A later run at that signature, with the same precision
// plan and weights, then writes its inputs into that staging, submits the
// kept command buffers again and reads its outputs back: no node is walked,
// no kernel records, no descriptor is written.
//
// A run is kept only when what it recorded depends on its inputs' shapes
// alone, not on their values: no node on the CPU read a graph input (other
// than its shape), no GPU kernel took a graph input as a host input (one it
// reads on the device and checks on the host is checked again on each replay:
// OpContext::check_values), the host
// read nothing back before the outputs, and every output came from the
// device or is a graph input. (Values computed on the host from initializers
// and shapes alone are the same for every run at the signature.)
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/vulkan/op.h"
#include "backends/vulkan/precision_plan.h"
#include "partition/placement_report.h"
#include "partition/signature_cache.h"

namespace kestrel::vulkan {

struct Replay {
  partition::Signature sig;
  const PrecisionPlan* plan = nullptr;
  uint64_t weights_generation = 0;  // VulkanCompiled's, when it was kept
  size_t withdrawals = 0;           // fused-encoder claims withdrawn by then (FusedChecks)
  struct Input {
    size_t index = 0;                       // in graph.inputs
    std::shared_ptr<DeviceMemory> staging;  // where the run writes it
    bool half = false;                      // in float16 storage
  };
  struct Output {
    int input = -1;  // >= 0: the graph input of that index, passed through
    GpuTensor tensor;
    std::shared_ptr<DeviceMemory> staging;  // null: read from tensor's own (mapped) memory
  };
  std::vector<Input> inputs;
  // The kernels' checks of graph inputs' values (OpContext::check_values,
  // recorded_for), run on each replay's inputs before anything is written:
  // fn throws an Error naming what is wrong, or returns false where the
  // kept run's recording does not serve these values.
  struct Check {
    size_t index = 0;  // in graph.inputs
    std::function<bool(const Tensor&)> fn;
  };
  std::vector<Check> checks;
  std::vector<Output> outputs;  // in graph.outputs order
  // Every other range the kept command buffers read: staged constants and
  // weights, the arena.
  std::vector<std::shared_ptr<DeviceMemory>> held;
  partition::PlacementReport report;  // of the kept run

  bool matches(const partition::Signature& s, const PrecisionPlan& p, uint64_t generation, size_t withdrawn) const {
    return plan == &p && weights_generation == generation && withdrawals == withdrawn && sig == s;
  }
};

// What a run being kept learns as it goes (RunState::capture).
struct ReplayCapture {
  Replay replay;
  // "" while the run stays replayable, else the first reason it is not.
  std::string refused;
  // The device values read back at the end, by value id.
  struct Download {
    int value;
    GpuTensor tensor;
    std::shared_ptr<DeviceMemory> staging;
  };
  std::vector<Download> downloads;
  bool outputs_phase = false;  // the host reads from here on are the outputs'

  void refuse(const std::string& why) {
    if (refused.empty()) refused = why;
  }
};

// Checks `inputs` as the kept run's kernels checked theirs (an Error names
// the node), writes them into the kept run's staging, submits it and reads the
// outputs back (Recorder::replay), into what `sink` gives (backend.h's
// OutputSink). False, with nothing submitted, when an
// input cannot be stored as the kept run stored it (int64 values past
// int32's range) or its recording depends on values these inputs do not
// share (OpContext::recorded_for): the caller then runs the graph the usual way.
// transfer_ms: the host's time writing the inputs and reading the outputs.
struct RunResources;
struct RunState;
bool replay_run(RunResources& res, const Replay& r, const std::vector<Tensor>& inputs, std::vector<Tensor>& outs,
                int threads, const backends::OutputSink* sink, double& transfer_ms);


// At the end of a run that captured (st.capture): when it stayed
// replayable, st's resources keep it (RunResources::replay, Recorder::keep).
void keep_for_replay(RunState& st, ReplayCapture& capture, partition::Signature sig, uint64_t weights_generation,
                     size_t withdrawals);

}  // namespace kestrel::vulkan

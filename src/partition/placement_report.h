// What a graph's placement is: how many nodes run where and why the rest
// stay on the CPU, before a run (the static partition) or measured by one.
#pragma once
#include <cstddef>
#include <map>
#include <string>

namespace kestrel::partition {

struct PlacementReport {
  std::string device;                        // "NVIDIA H200 (vulkan, fp16 storage)"
  int gpu_nodes = 0, cpu_nodes = 0;
  double gpu_flops = 0, total_flops = 0;     // see node_flops()
  std::map<std::string, int> cpu_reasons;    // why nodes stayed on the CPU -> how many
  size_t dispatches = 0, barriers = 0, submits = 0;
  double wait_ms = 0;                        // host time spent waiting for the device
  double longest_wait_ms = 0;                // ... of which the longest for one submit
  double record_ms = 0, cpu_ms = 0;          // host time recording GPU nodes / running CPU nodes
  double transfer_ms = 0;                    // host time writing inputs into staging memory and reading outputs out
  bool replayed = false;                     // the run replayed an earlier run's recorded work (no recording)
  std::string not_replayable;                // why later runs at this signature record again, when they must
  // Device time by kernel (shader name -> ms, dispatches), from timestamps
  // written after each dispatch; only in runs that time their nodes (bench
  // --profile). A dispatch is charged from the end of the one before it.
  std::map<std::string, std::pair<double, int>> kernels;
  size_t device_bytes = 0;                   // device and staging memory held (weights included)
  size_t device_tensor_peak_bytes = 0;       // device memory the run's tensors needed (Allocator::high_water_bytes)
  size_t device_arena_bytes = 0;             // of which the planned arena (0: the run recorded a plan)
  std::string precision_note;                // how precision "auto" decided, when it did
  // false: the static partition, before any run (no FLOPs, dispatches or
  // times; a run may keep more nodes on the CPU, partition.h).
  bool ran = true;
  double gpu_flops_share() const { return total_flops > 0 ? gpu_flops / total_flops : 0; }
  // "<device>: 120 of 130 nodes and 99.2% of FLOPs on the GPU; ...", then a
  // line per reason nodes stayed on the CPU.
  std::string summary() const;
};

}  // namespace kestrel::partition

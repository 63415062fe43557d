// The one configuration of a session: its options, completed from the
// environment, checked, and turned into what each layer below takes as
// arguments. It is built here, once per session; nothing below runtime/
// reads the environment.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/vulkan/vulkan_backend.h"
#include "core/cpu_isa.h"
#include "families/families.h"
#include "runtime/session_options.h"

namespace kestrel::runtime {

// Settings of the process rather than of one session: it has one tensor
// pool, one CPU kernel dispatch and one way of handing out kernel outputs.
// Each session applies them as it is made; they come from
// set_process_options (session_options.h), else the environment.
struct ProcessSettings {
  size_t pool_cap_bytes = size_t(4096) << 20;  // KESTREL_POOL_MB: the most idle tensor memory kept
  CpuIsa cpu_isa = CpuIsa::Avx512;              // KESTREL_CPU_ISA=baseline|avx2: the CPU kernels at most at that level
  bool poison_outputs = false;                  // KESTREL_POISON_OUTPUTS=1: kernel outputs start as NaN bytes

  void apply() const;
};

struct Config {
  BackendChoice backend = BackendChoice::Auto;
  int threads = 1;  // resolved: 0 in the options becomes every hardware thread
  int64_t max_loop_iterations = 0;
  CpuKernels cpu_kernels = CpuKernels::Fast;
  families::ClaimOptions claims;
  backends::VulkanOptions vulkan;
  ProcessSettings process;

  // The options completed from the environment. Throws an Error naming the
  // option or the variable whose value is out of range.
  static Config of(const SessionOptions& opts);
};

// What every session starts from (and what asks what a session would do,
// node_placement.h): Config::of, its failures reported as invalid arguments,
// with the process settings applied.
Config configure(const SessionOptions& opts);


}  // namespace kestrel::runtime

// The Vulkan backend: claims the nodes it has kernels for, keeps their
// weights resident on the device, and runs the rest on the CPU backend's
// kernels, copying tensors only where the two meet.
#pragma once
#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/vulkan/context.h"

namespace kestrel::backends {

// Built once by runtime::Config from the session's options and the environment.
struct VulkanOptions {
  Precision precision = Precision::Auto;
  // How the process's one device is opened: the first session's options
  // open it, later sessions share it while any is alive.
  vulkan::DeviceOptions device;
  // Small tensors already on the host (shape arithmetic) are computed there
  // instead of round-tripping through the device. Tests turn it off.
  bool keep_small_host_work = true;
  // The longest the host waits for one submit of GPU work before the run
  // fails. Submits are sized to finish far within it (recorder.h).
  double device_wait_s = 120;
  // The Vulkan memory a session may hold (0: no limit). Past it a node runs
  // on the CPU instead, and the placement report says why.
  size_t device_memory_bytes = 0;
  // A VkBuffer of exactly its bytes for every tensor (memory.h), for runs
  // under the validation layer: slower, and every access is bounds-checked.
  bool exact_buffers = false;
  // 1: each node's op, placement, time and shapes on stderr, the device
  // waited for after each; 2: also each float output's range (KESTREL_TRACE).
  int trace = 0;
  // At most this many query rows per attention chunk in the fused encoders
  // (0: as many as the device's buffer range allows; KESTREL_ATTENTION_CHUNK).
  int64_t attention_chunk = 0;
  // The GEMM's output tile (KESTREL_GEMM_TILES=auto|small|large).
  vulkan::GemmTiles gemm_tiles = vulkan::GemmTiles::Auto;
  // Packed int8 dot products for the integer products (KESTREL_INT_DOT=auto|on|off).
  vulkan::IntegerDot integer_dot = vulkan::IntegerDot::Auto;
  // How the fused encoders compute attention (KESTREL_ATTENTION=auto|flash|chunked).
  vulkan::AttentionKernel attention_kernel = vulkan::AttentionKernel::Auto;
  // The kernels of the nodes left on the CPU.
  CpuKernels cpu_kernels = CpuKernels::Fast;
  // A run at a known input signature replays the command buffers an earlier
  // run at it recorded, when that run's work depended on shapes alone
  // (replay.h; KESTREL_VK_REPLAY=off records every run).
  bool replay = true;
};

// Throws Error when no Vulkan device can be opened.
std::unique_ptr<Backend> make_vulkan_backend(const VulkanOptions& opts = {});

// True when a Vulkan device that is not a CPU implementation is present
// (what "auto" requires before choosing Vulkan over the CPU backend).
bool gpu_vulkan_device_present();

}  // namespace kestrel::backends

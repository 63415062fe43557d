// What a session may be asked for: the C++ API's options, which the CLI,
// the C API and Python fill from their own flags and arguments (their
// strings become these enums at the edge, by parse_backend and
// parse_precision). runtime::Config (config.h) completes them from the
// environment.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "backends/backend.h"
#include "backends/vulkan/attention_kernel.h"
#include "backends/vulkan/gemm_tiles.h"
#include "core/cpu_isa.h"

namespace kestrel {

// auto: Vulkan when a GPU (not a CPU implementation such as lavapipe) is
// present, else cpu. vulkan: the Vulkan device `vulkan_device` names or the
// best one, whatever its kind. cpu: the CPU backend.
enum class BackendChoice { Auto, Cpu, Vulkan };
using backends::CpuKernels;
using backends::Precision;

// "auto", "cpu", "vulkan"; anything else is an error listing those.
BackendChoice parse_backend(const std::string& name);
// "auto", "fp32", "fp16"; anything else is an error listing those.
Precision parse_precision(const std::string& name);
// "fast", "reference"; anything else is an error listing those.
CpuKernels parse_cpu_kernels(const std::string& name);
// "auto", "tiny", "small", "wide", "large"; anything else is an error listing those.
vulkan::GemmTiles parse_gemm_tiles(const std::string& name);
vulkan::AttentionKernel parse_attention_kernel(const std::string& name);  // "auto", "flash" or "chunked"
CpuIsa parse_cpu_isa(const std::string& name);  // "baseline", "avx2" or "avx512"
const char* name_of(BackendChoice b);
const char* name_of(Precision p);
const char* name_of(CpuKernels k);

struct SessionOptions {
  BackendChoice backend = BackendChoice::Auto;
  Precision precision = Precision::Auto;  // Vulkan storage (KESTREL_PRECISION when Auto)
  int threads = 0;                 // 0: all hardware threads; at most kMaxThreads
  // Vulkan: the longest wait for one submit of GPU work before a run fails
  // with an error (the work's memory stays alive until the device is done).
  double device_wait_s = 120;
  // Vulkan: the device memory (MiB) the session may hold: weights, tensors
  // and staging. Past it nodes run on the CPU, reported in the placement.
  // 0: KESTREL_VK_MEMORY_MB when set, else no limit.
  int64_t device_memory_mb = 0;
  // Vulkan: a buffer of exactly its size for every tensor, so the validation
  // layer bounds-checks each access (slower; KESTREL_VK_EXACT_BUFFERS=1 sets it).
  bool exact_buffers = false;
  // The most iterations one Loop or Scan node may run within one run; 0: no
  // cap. Exported loops run for tokens, boxes or sequence steps (thousands,
  // rarely more), so a million only stops a loop that would not end (a trip
  // count of 2^62, a condition that stays true) within seconds, before its
  // per-iteration outputs fill memory.
  int64_t max_loop_iterations = 1'000'000;
  // Fuse the transformer encoders Kestrel recognizes (false, or
  // KESTREL_FAMILIES=off: they run op by op, as the benchmarks compare).
  bool families = true;
  // A fused text encoder (ModernBERT) given a right-padding attention mask
  // computes its live tokens only, and its outputs read zero at padded
  // tokens, as PyTorch's unpadded ModernBERT gives them, instead of what the
  // graph (and ONNX Runtime) computes there, which a mask-aware pooling
  // never reads. Batches of mixed lengths then cost their live tokens.
  bool padding_free = false;
  // The head count of a vision encoder whose graph does not show it (0:
  // KESTREL_ENCODER_HEADS when set, else the encoder runs op by op).
  int64_t encoder_heads = 0;
  // Vulkan: the device, by index or a case-insensitive part of its name
  // ("": KESTREL_VK_DEVICE when set, else the best). The process opens one
  // device, for its first Vulkan session; later ones share it.
  std::string vulkan_device;
  // The CPU's kernels (on the CPU backend, and for the nodes a GPU leaves to
  // the CPU): the fast ones, or the plain reference kernels alone, to check
  // a result against the oracle (slower; KESTREL_CPU_KERNELS=reference).
  CpuKernels cpu_kernels = CpuKernels::Fast;
  // Vulkan tuning and diagnosis, each also an environment variable (read when
  // the option is left at its default):
  // 1: each node's op, placement, time and shapes on stderr, the device
  // waited for after each; 2: also each float output's range (KESTREL_TRACE).
  int trace = 0;
  // At most this many query rows per attention chunk in the fused encoders
  // (0: as many as the device's buffer range allows; KESTREL_ATTENTION_CHUNK).
  int64_t attention_chunk = 0;
  // The GEMM's output tile (KESTREL_GEMM_TILES=auto|tiny|small|wide|large).
  vulkan::GemmTiles gemm_tiles = vulkan::GemmTiles::Auto;
  // How the fused encoders compute attention: in one pass (flash), or the
  // scores through memory in chunks; auto: flash on tensor cores
  // (KESTREL_ATTENTION=auto|flash|chunked; vulkan/attention_kernel.h).
  vulkan::AttentionKernel attention_kernel = vulkan::AttentionKernel::Auto;
  // Replay the recorded work of a run at a known input signature (false, or
  // KESTREL_VK_REPLAY=off: record every run).
  bool replay = true;
  // float16 GEMMs on the device's tensor cores where it has them (false, or
  // KESTREL_COOPMAT=off: the scalar kernels). A device option: it holds for
  // the device the process opens, with its first Vulkan session.
  bool tensor_cores = true;

  // More threads than this is a mistake, not a machine: the largest
  // two-socket servers have under 1,024 hardware threads, and OpenMP aborts
  // the process when it cannot create the threads asked for (100,000 does).
  static constexpr int kMaxThreads = 1024;
};

// Settings of the process rather than of one session: it has one tensor
// pool, one CPU kernel dispatch and one way of handing out kernel outputs.
// Set them before the first session (each session applies them as it is
// made, so a later call reaches the sessions made after it). A field left
// unset keeps its environment variable's value, else the default.
struct ProcessOptions {
  std::optional<int64_t> pool_mb;      // the most idle tensor memory the pool keeps, MiB (KESTREL_POOL_MB; 4096)
  std::optional<CpuIsa> cpu_isa;       // the CPU kernels at most at this level (KESTREL_CPU_ISA; the CPU's highest)
  std::optional<bool> poison_outputs;  // kernel outputs start as NaN bytes (KESTREL_POISON_OUTPUTS; no)
};
// Checks and keeps them for the sessions made from now on (throws an
// InvalidArgument Error naming a field out of range).
void set_process_options(const ProcessOptions& o);
ProcessOptions process_options();

}  // namespace kestrel

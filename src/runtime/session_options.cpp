#include "runtime/session_options.h"

#include <mutex>

#include "core/error.h"

namespace kestrel {

BackendChoice parse_backend(const std::string& b) {
  if (b == "auto") return BackendChoice::Auto;
  if (b == "cpu") return BackendChoice::Cpu;
  if (b == "vulkan") return BackendChoice::Vulkan;
  fail_as(ErrorKind::InvalidArgument, "unknown backend '", b, "' (this build has: auto, cpu, vulkan)");
}

Precision parse_precision(const std::string& p) {
  if (p == "auto") return Precision::Auto;
  if (p == "fp32") return Precision::Fp32;
  if (p == "fp16") return Precision::Fp16;
  fail_as(ErrorKind::InvalidArgument, "unknown precision '", p, "' (use fp32, fp16 or auto)");
}

CpuKernels parse_cpu_kernels(const std::string& k) {
  if (k == "fast") return CpuKernels::Fast;
  if (k == "reference") return CpuKernels::Reference;
  fail_as(ErrorKind::InvalidArgument, "unknown CPU kernels '", k, "' (use fast or reference)");
}

vulkan::GemmTiles parse_gemm_tiles(const std::string& t) {
  if (t == "auto") return vulkan::GemmTiles::Auto;
  if (t == "tiny") return vulkan::GemmTiles::Tiny;
  if (t == "small") return vulkan::GemmTiles::Small;
  if (t == "wide") return vulkan::GemmTiles::Wide;
  if (t == "large") return vulkan::GemmTiles::Large;
  fail_as(ErrorKind::InvalidArgument, "unknown GEMM tiles '", t, "' (use auto, tiny, small, wide or large)");
}

vulkan::AttentionKernel parse_attention_kernel(const std::string& a) {
  if (a == "auto") return vulkan::AttentionKernel::Auto;
  if (a == "flash") return vulkan::AttentionKernel::Flash;
  if (a == "chunked") return vulkan::AttentionKernel::Chunked;
  fail_as(ErrorKind::InvalidArgument, "unknown attention kernel '", a, "' (use auto, flash or chunked)");
}

CpuIsa parse_cpu_isa(const std::string& i) {
  if (i == "baseline") return CpuIsa::Baseline;
  if (i == "avx2") return CpuIsa::Avx2;
  if (i == "avx512") return CpuIsa::Avx512;
  fail_as(ErrorKind::InvalidArgument, "unknown CPU instruction set '", i, "' (use baseline, avx2 or avx512)");
}

namespace {
std::mutex process_mutex;
ProcessOptions process;  // what set_process_options kept
}  // namespace

void set_process_options(const ProcessOptions& o) {
  if (o.pool_mb && (*o.pool_mb < 0 || *o.pool_mb > (int64_t(1) << 30)))
    fail_as(ErrorKind::InvalidArgument, "pool_mb must be 0 to ", int64_t(1) << 30, ", got ", *o.pool_mb);
  std::lock_guard<std::mutex> lock(process_mutex);
  process = o;
}

ProcessOptions process_options() {
  std::lock_guard<std::mutex> lock(process_mutex);
  return process;
}

const char* name_of(CpuKernels k) { return k == CpuKernels::Reference ? "reference" : "fast"; }

const char* name_of(BackendChoice b) {
  switch (b) {
    case BackendChoice::Cpu: return "cpu";
    case BackendChoice::Vulkan: return "vulkan";
    case BackendChoice::Auto: break;
  }
  return "auto";
}

const char* name_of(Precision p) {
  switch (p) {
    case Precision::Fp32: return "fp32";
    case Precision::Fp16: return "fp16";
    case Precision::Auto: break;
  }
  return "auto";
}

}  // namespace kestrel

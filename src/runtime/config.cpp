#include "runtime/config.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <thread>

#include "core/buffer_pool.h"
#include "core/error.h"
#include "ops/registry.h"

namespace kestrel::runtime {
namespace {

// The variable's value, or "" when it is unset.
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A whole number in [lo, hi] from variable `name`, or `fallback` when unset
// or empty; anything else is an Error naming the variable.
int64_t env_int(const char* name, int64_t lo, int64_t hi, int64_t fallback) {
  const std::string v = env(name);
  if (v.empty()) return fallback;
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  KESTREL_CHECK(errno == 0 && *end == 0 && x >= lo && x <= hi, name, " must be a whole number from ", lo, " to ", hi,
                ", got '", v, "'");
  return x;
}

// One of `allowed` from variable `name` ("" when unset); anything else is an
// Error naming the variable and the values it takes.
std::string env_choice(const char* name, std::initializer_list<const char*> allowed) {
  const std::string v = env(name);
  if (v.empty()) return v;
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return v;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  fail(name, " must be one of ", list, ", got '", v, "'");
}

// Where the Vulkan pipeline cache lives: $XDG_CACHE_HOME/kestrel, else
// ~/.cache/kestrel; "" (no cache kept) with neither.
std::string pipeline_cache_dir() {
  if (std::string x = env("XDG_CACHE_HOME"); !x.empty()) return x + "/kestrel";
  if (std::string h = env("HOME"); !h.empty()) return h + "/.cache/kestrel";
  return "";
}

}  // namespace

void ProcessSettings::apply() const {
  set_pool_cap(pool_cap_bytes);
  cap_cpu_isa(cpu_isa);
  ops::set_poison_outputs(poison_outputs);
}

Config Config::of(const SessionOptions& o) {
  // Checked before the work of loading: every edge (CLI, C API, Python) lands here.
  KESTREL_CHECK(o.threads >= 0 && o.threads <= SessionOptions::kMaxThreads, "threads must be 0 (every hardware "
                "thread) to ", SessionOptions::kMaxThreads, ", got ", o.threads);
  KESTREL_CHECK(o.max_loop_iterations >= 0, "max_loop_iterations must be 0 (no cap) or more, got ",
                o.max_loop_iterations);
  KESTREL_CHECK(o.device_wait_s > 0, "device_wait_s must be positive, got ", o.device_wait_s);
  KESTREL_CHECK(o.device_memory_mb >= 0, "device_memory_mb must be 0 (no limit) or more, got ", o.device_memory_mb);
  KESTREL_CHECK(o.encoder_heads >= 0, "encoder_heads must be 0 (not given) or more, got ", o.encoder_heads);
  KESTREL_CHECK(o.trace >= 0 && o.trace <= 2, "trace must be 0, 1 or 2, got ", o.trace);
  KESTREL_CHECK(o.attention_chunk >= 0, "attention_chunk must be 0 (no cap) or more, got ", o.attention_chunk);
  Config c;
  c.backend = o.backend;
  c.threads = o.threads > 0 ? o.threads
                            : std::min(SessionOptions::kMaxThreads, int(std::max(1u, std::thread::hardware_concurrency())));
  c.max_loop_iterations = o.max_loop_iterations;
  c.cpu_kernels = o.cpu_kernels;
  if (c.cpu_kernels == CpuKernels::Fast)  // env_choice has checked the value
    if (std::string k = env_choice("KESTREL_CPU_KERNELS", {"fast", "reference"}); !k.empty())
      c.cpu_kernels = parse_cpu_kernels(k);

  const std::string families = env_choice("KESTREL_FAMILIES", {"on", "off", "1", "0"});
  c.claims.enabled = o.families && families != "off" && families != "0";
  c.claims.padding_free = o.padding_free;
  c.claims.encoder_heads = o.encoder_heads > 0 ? o.encoder_heads : env_int("KESTREL_ENCODER_HEADS", 1, 1 << 20, 0);

  backends::VulkanOptions& v = c.vulkan;
  v.precision = o.precision;
  if (v.precision == Precision::Auto)  // env_choice has checked the value
    if (std::string p = env_choice("KESTREL_PRECISION", {"auto", "fp32", "fp16"}); !p.empty())
      v.precision = parse_precision(p);
  v.device.device = o.vulkan_device.empty() ? env("KESTREL_VK_DEVICE") : o.vulkan_device;
  v.device.pipeline_cache_dir = pipeline_cache_dir();
  v.device.coop_matrix = o.tensor_cores && env_choice("KESTREL_COOPMAT", {"on", "off"}) != "off";
  v.device_wait_s = o.device_wait_s;
  const int64_t mb = o.device_memory_mb > 0 ? o.device_memory_mb
                                            : env_int("KESTREL_VK_MEMORY_MB", 0, (int64_t(1) << 40) - 1, 0);
  v.device_memory_bytes = size_t(mb) << 20;
  v.exact_buffers = o.exact_buffers || env_choice("KESTREL_VK_EXACT_BUFFERS", {"0", "1"}) == "1";
  v.trace = o.trace > 0 ? o.trace : int(env_int("KESTREL_TRACE", 0, 2, 0));
  v.attention_chunk = o.attention_chunk > 0 ? o.attention_chunk : env_int("KESTREL_ATTENTION_CHUNK", 0, int64_t(1) << 40, 0);
  v.gemm_tiles = o.gemm_tiles;
  if (v.gemm_tiles == vulkan::GemmTiles::Auto)
    if (std::string t = env_choice("KESTREL_GEMM_TILES", {"auto", "tiny", "small", "wide", "large"}); !t.empty())
      v.gemm_tiles = parse_gemm_tiles(t);
  if (std::string d = env_choice("KESTREL_INT_DOT", {"auto", "on", "off"}); !d.empty())
    v.integer_dot = d == "on" ? vulkan::IntegerDot::On : d == "off" ? vulkan::IntegerDot::Off : vulkan::IntegerDot::Auto;
  v.attention_kernel = o.attention_kernel;
  if (v.attention_kernel == vulkan::AttentionKernel::Auto)
    if (std::string a = env_choice("KESTREL_ATTENTION", {"auto", "flash", "chunked"}); !a.empty())
      v.attention_kernel = parse_attention_kernel(a);
  v.cpu_kernels = c.cpu_kernels;
  v.replay = o.replay && env_choice("KESTREL_VK_REPLAY", {"on", "off"}) != "off";

  // The process's settings: set_process_options, else the environment.
  const ProcessOptions po = process_options();
  c.process.pool_cap_bytes = size_t(po.pool_mb ? *po.pool_mb : env_int("KESTREL_POOL_MB", 0, int64_t(1) << 30, 4096))
                             << 20;
  if (po.cpu_isa) {
    c.process.cpu_isa = *po.cpu_isa;
  } else {
    const std::string isa = env_choice("KESTREL_CPU_ISA", {"baseline", "avx2", "avx512"});
    c.process.cpu_isa = isa.empty() ? CpuIsa::Avx512 : parse_cpu_isa(isa);
  }
  c.process.poison_outputs = po.poison_outputs ? *po.poison_outputs
                                               : env_choice("KESTREL_POISON_OUTPUTS", {"0", "1"}) == "1";
  return c;
}

Config configure(const SessionOptions& opts) {
  Config c = with_kind(ErrorKind::InvalidArgument, [&] { return Config::of(opts); });
  c.process.apply();
  return c;
}

}  // namespace kestrel::runtime

#include "core/cpu_isa.h"

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#if KESTREL_X86
#include <cpuid.h>
#endif

#include <algorithm>
#include <atomic>

namespace kestrel {
namespace {
std::atomic<CpuIsa> cap{CpuIsa::Avx512};
}  // namespace

CpuIsa cpu_isa_detected() {
  // AVX2, FMA and F16C together (the AVX2 kernels use all three), with the
  // OS saving the YMM state, which __builtin_cpu_supports checks. F16C is
  // read from CPUID itself: clang's builtin does not know it.
  static const CpuIsa detected = [] {
#if !KESTREL_X86
    return CpuIsa::Baseline;
#else
    __builtin_cpu_init();
    unsigned a = 0, b = 0, c = 0, d = 0;
    const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !f16c) return CpuIsa::Baseline;
    return __builtin_cpu_supports("avx512f") ? CpuIsa::Avx512 : CpuIsa::Avx2;
#endif
  }();
  return detected;
}

CpuIsa cpu_isa() { return std::min(cpu_isa_detected(), cap.load(std::memory_order_relaxed)); }

bool cpu_avx512_vnni() {
  static const bool vnni = [] {
#if KESTREL_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") != 0;
#else
    return false;
#endif
  }();
  return vnni && cpu_isa() >= CpuIsa::Avx512;
}

bool cpu_arm_dotprod() {
#if defined(__aarch64__) && defined(__linux__)
  static const bool dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  return dotprod;
#else
  return false;
#endif
}

void cap_cpu_isa(CpuIsa c) { cap.store(c, std::memory_order_relaxed); }

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Baseline: return "baseline";
    case CpuIsa::Avx2: return "avx2";
    case CpuIsa::Avx512: return "avx512";
  }
  return "?";
}

}  // namespace kestrel

#include "ops/logistic.h"

#include "core/cpu_isa.h"
#include "core/cpu_isa_target.h"
#if KESTREL_X86
#include <immintrin.h>
#endif

namespace kestrel::ops {

namespace baseline_isa {
#include "ops/logistic_kernels.inc"
}  // namespace baseline_isa
KESTREL_ISA_AVX2_BEGIN
namespace avx2_isa {
#include "ops/logistic_kernels.inc"
#if KESTREL_X86
// logistic_run<true>'s bits eight values at a time, written with
// intrinsics (ops/logistic_lanes.inc): GCC's vectorization of the loop made
// each clamp a compare and blends, which took more of the time than the
// polynomials.
namespace {
#include "ops/simd_lanes8.inc"
#include "ops/logistic_lanes.inc"
}  // namespace
void logistic_fused(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, logistic_lanes<Lanes8>(_mm256_loadu_ps(x + i)));
  logistic_run<true>(x + i, y + i, n - i);
}
#else
void logistic_fused(const float* x, float* y, int64_t n) { logistic_run<true>(x, y, n); }
#endif
}  // namespace avx2_isa
KESTREL_ISA_END
// The same bits sixteen values at a time where the CPU has AVX-512 (the
// lanes' steps are the same instructions at twice the width): a QDQ
// YOLOX-nano's SiLUs, or a float one's, are mostly this function. (GCC 12
// reports the AVX-512 intrinsics' undefined operands as maybe
// uninitialized: not a fault here.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
KESTREL_ISA_AVX512_BEGIN
namespace avx512_isa {
#include "ops/logistic_kernels.inc"
#if KESTREL_X86
namespace {
#include "ops/simd_lanes16.inc"
#include "ops/logistic_lanes.inc"
}  // namespace
void logistic_fused(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, logistic_lanes<Lanes16>(_mm512_loadu_ps(x + i)));
  logistic_run<true>(x + i, y + i, n - i);
}
#else
void logistic_fused(const float* x, float* y, int64_t n) { logistic_run<true>(x, y, n); }
#endif
}  // namespace avx512_isa
KESTREL_ISA_END
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

void logistic(const float* x, float* y, int64_t n) {
  if (cpu_isa() >= CpuIsa::Avx512)
    avx512_isa::logistic_fused(x, y, n);
  else if (cpu_isa() >= CpuIsa::Avx2)
    avx2_isa::logistic_fused(x, y, n);
  else
    baseline_isa::logistic_run<false>(x, y, n);
}

}  // namespace kestrel::ops

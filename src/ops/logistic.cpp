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
// intrinsics: GCC's vectorization of the loop made each clamp a compare and
// blends, which took more of the time than the polynomials. MAXPS and MINPS
// return their second operand where either is NaN (so NaN stays NaN, as the
// loop's comparisons keep it) or both are zeros (so -0.0 stays, as there).
namespace {
inline __m256 logistic8(__m256 x0) {
  const __m256 x = _mm256_min_ps(_mm256_set1_ps(18.0f), _mm256_max_ps(_mm256_set1_ps(-18.0f), x0));
  const __m256 x2 = _mm256_mul_ps(x, x);
  const auto madd = [](__m256 a, __m256 b, float c) { return _mm256_fmadd_ps(a, b, _mm256_set1_ps(c)); };
  __m256 p = madd(x2, _mm256_set1_ps(4.37031012579801e-11f), 1.15627324459942e-07f);
  p = madd(p, x2, 6.08574864600143e-05f);
  p = madd(p, x2, 8.51377133304701e-03f);
  p = madd(p, x2, 2.48287947061529e-01f);
  p = _mm256_mul_ps(p, x);
  __m256 q = madd(x2, _mm256_set1_ps(6.10247389755681e-13f), 5.76102136993427e-09f);
  q = madd(q, x2, 6.29106785017040e-06f);
  q = madd(q, x2, 1.70198817374094e-03f);
  q = madd(q, x2, 1.16817656904453e-01f);
  q = madd(q, x2, 9.93151921023180e-01f);
  const __m256 y = _mm256_add_ps(_mm256_div_ps(p, q), _mm256_set1_ps(0.5f));
  return _mm256_min_ps(_mm256_set1_ps(1.0f), _mm256_max_ps(_mm256_setzero_ps(), y));
}
}  // namespace
void logistic_fused(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, logistic8(_mm256_loadu_ps(x + i)));
  logistic_run<true>(x + i, y + i, n - i);
}
#else
void logistic_fused(const float* x, float* y, int64_t n) { logistic_run<true>(x, y, n); }
#endif
}  // namespace avx2_isa
KESTREL_ISA_END

void logistic(const float* x, float* y, int64_t n) {
  if (cpu_isa() >= CpuIsa::Avx2)
    avx2_isa::logistic_fused(x, y, n);
  else
    baseline_isa::logistic_run<false>(x, y, n);
}

}  // namespace kestrel::ops

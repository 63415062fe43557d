#include "ops/logistic.h"

#include "core/cpu_isa.h"
#include "core/cpu_isa_target.h"

namespace kestrel::ops {

namespace baseline_isa {
#include "ops/logistic_kernels.inc"
}  // namespace baseline_isa
KESTREL_ISA_AVX2_BEGIN
namespace avx2_isa {
#include "ops/logistic_kernels.inc"
void logistic_fused(const float* x, float* y, int64_t n) { logistic_run<true>(x, y, n); }
}  // namespace avx2_isa
KESTREL_ISA_END

void logistic(const float* x, float* y, int64_t n) {
  if (cpu_isa() >= CpuIsa::Avx2)
    avx2_isa::logistic_fused(x, y, n);
  else
    baseline_isa::logistic_run<false>(x, y, n);
}

}  // namespace kestrel::ops

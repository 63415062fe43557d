// An activation over a block of values (Epilogue::apply, ops/epilogue.h),
// with a bias and a residual added first where asked (Epilogue::finish),
// compiled for the baseline and for AVX2: the epilogues of every fused Conv,
// Gemm and MatMul run here, and at the baseline's 4-wide SSE2 a Clip's
// compares and selects cost M-LSD's 1x1 layers a sixth of their time.
// Compiled without contraction (CMakeLists.txt), so a level changes no
// result: a * x + b rounds the product as the reference does.
#include "core/cpu_isa.h"
#include "core/cpu_isa_target.h"
#include "ops/activation.h"
#include "ops/logistic.h"

namespace kestrel::ops {

namespace baseline_isa {
#include "ops/activation_apply_kernels.inc"
}  // namespace baseline_isa
KESTREL_ISA_AVX2_BEGIN
namespace avx2_isa {
#include "ops/activation_apply_kernels.inc"
void apply(Activation kind, float a, float b, float* y, int64_t n) { apply_kind(kind, a, b, y, n); }
void finish(Activation kind, float a, float b, const float* bias, const float* r, const float* x, float* y,
            int64_t n) {
  finish_kind(kind, a, b, bias, r, x, y, n);
}
}  // namespace avx2_isa
KESTREL_ISA_END

void apply_activation(Activation kind, float a, float b, float* y, int64_t n) {
  if (cpu_isa() >= CpuIsa::Avx2) return avx2_isa::apply(kind, a, b, y, n);
  baseline_isa::apply_kind(kind, a, b, y, n);
}

void finish_activation(Activation kind, float a, float b, const float* bias, const float* residual, const float* x,
                       float* y, int64_t n) {
  if (cpu_isa() >= CpuIsa::Avx2) return avx2_isa::finish(kind, a, b, bias, residual, x, y, n);
  baseline_isa::finish_kind(kind, a, b, bias, residual, x, y, n);
}

}  // namespace kestrel::ops

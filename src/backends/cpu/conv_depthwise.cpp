#include "backends/cpu/conv_depthwise.h"

#include <algorithm>
#include <array>
#include <vector>

#include "core/cpu_isa.h"
#include "core/cpu_isa_target.h"

namespace kestrel::backends::cpu {

// The kernels, compiled for the baseline and for AVX2 + FMA, where each v8
// is one YMM register and each tap's multiply-add one FMA (BlazeFace went
// from 36.2 to 13.9 ms on a 2-core AVX2 machine, BENCHMARKS.md). At the
// baseline a v8 is two SSE registers, and GCC notes (-Wpsabi, at the end of
// the file, so CMakeLists.txt turns it off here) that returning one changes
// the ABI: these functions are internal, so no caller sees it.
namespace baseline_isa {
#include "backends/cpu/conv_depthwise_kernels.inc"
}  // namespace baseline_isa
KESTREL_ISA_AVX2_BEGIN
namespace avx2_isa {
#include "backends/cpu/conv_depthwise_kernels.inc"
}  // namespace avx2_isa
KESTREL_ISA_END

void depthwise_plane(const WindowGeom& g, const float* x, const float* w, float bias, float* y) {
  if (cpu_isa() >= CpuIsa::Avx2) return avx2_isa::depthwise_plane(g, x, w, bias, y);
  baseline_isa::depthwise_plane(g, x, w, bias, y);
}

}  // namespace kestrel::backends::cpu

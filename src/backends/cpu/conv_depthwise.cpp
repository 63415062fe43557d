#include "backends/cpu/conv_depthwise.h"

#include <algorithm>
#include <array>
#include <type_traits>
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
constexpr int kLanes = 8, kRows = 4;
#include "backends/cpu/conv_depthwise_kernels.inc"
}  // namespace baseline_isa
KESTREL_ISA_AVX2_BEGIN
namespace avx2_isa {
constexpr int kLanes = 8, kRows = 4;
#include "backends/cpu/conv_depthwise_kernels.inc"
}  // namespace avx2_isa
KESTREL_ISA_END
// On AVX-512 a block's 16 columns are one ZMM register, so a block holds 8
// rows in the same 8 accumulators (twice the rows sharing each tap's load)
// and each tap is half the multiply-adds. Measured at 1 thread on an Intel
// Xeon (a Conv + Relu model each, `kestrel bench`, medians): 5x5 over 24
// channels of 128x128 0.35 -> 0.28-0.31 ms; 3x3 over 32 of 120x160, which
// moves more data than it multiplies, 0.375 -> 0.355 ms.
KESTREL_ISA_AVX512_BEGIN
namespace avx512_isa {
constexpr int kLanes = 16, kRows = 8;
#include "backends/cpu/conv_depthwise_kernels.inc"
}  // namespace avx512_isa
KESTREL_ISA_END

void depthwise_plane(const WindowGeom& g, const float* x, const float* w, float bias, float* y,
                     const DepthwiseFinish& f) {
  if (cpu_isa() >= CpuIsa::Avx512) return avx512_isa::depthwise_plane(g, x, w, bias, y, f);
  if (cpu_isa() >= CpuIsa::Avx2) return avx2_isa::depthwise_plane(g, x, w, bias, y, f);
  baseline_isa::depthwise_plane(g, x, w, bias, y, f);
}

namespace {
template <typename B>
bool bytes_at_level(const WindowGeom& g, const B* x, int32_t zp, const float* w, float* y) {
  if (cpu_isa() >= CpuIsa::Avx512) return avx512_isa::depthwise_plane_bytes(g, x, zp, w, y);
  if (cpu_isa() >= CpuIsa::Avx2) return avx2_isa::depthwise_plane_bytes(g, x, zp, w, y);
  return baseline_isa::depthwise_plane_bytes(g, x, zp, w, y);
}
}  // namespace

bool depthwise_plane_bytes(const WindowGeom& g, const uint8_t* x, int32_t zp, const float* w, float* y) {
  return bytes_at_level(g, x, zp, w, y);
}
bool depthwise_plane_bytes(const WindowGeom& g, const int8_t* x, int32_t zp, const float* w, float* y) {
  return bytes_at_level(g, x, zp, w, y);
}

}  // namespace kestrel::backends::cpu

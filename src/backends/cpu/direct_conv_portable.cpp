// The direct convolution's tile in portable C++: four-float vectors of the
// compiler's vector extension, which GCC and clang compile to SSE2 on the
// x86-64 baseline and to NEON on arm64 (its 32 registers hold twice the
// channels; a multiply-add contracts to one fmla there).
#include <cstdint>
#include <cstring>

#include "backends/cpu/direct_conv.h"
#include "backends/cpu/each_index.h"

namespace kestrel::backends::cpu::direct_conv_portable {
typedef float Vec __attribute__((vector_size(16)));
constexpr int kWidth = 4;
#if defined(__aarch64__)
constexpr int kRows = 8;
#else
constexpr int kRows = 4;
#endif
constexpr int kVecs = 3;
inline Vec vzero() { return Vec{0.f, 0.f, 0.f, 0.f}; }
inline Vec vload(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void vstore(float* p, Vec v) { std::memcpy(p, &v, sizeof v); }
inline Vec vsplat(const float* p) { return Vec{*p, *p, *p, *p}; }
inline Vec vfma(Vec a, Vec b, Vec c) { return a * b + c; }
#include "backends/cpu/direct_conv_kernel.inc"
}  // namespace kestrel::backends::cpu::direct_conv_portable

// The inner loops of the CPU's QLinearConv (qlinear_conv.cpp), compiled for
// the instruction sets that make them fast and called only where the CPU
// reports those (core/cpu_isa.h; arm64's dot product: qconv_kernels_neon.cpp).
// The files use nothing from a header but intrinsics, so no out-of-line copy
// of a template compiled for AVX2, AVX-512 or the dot product is shared with
// the baseline code.
#pragma once
#include <cstdint>

#include "core/cpu_isa.h"

// Where the packed product is built (qlinear_conv.cpp's path around it).
#if KESTREL_X86 || defined(__aarch64__)
#define KESTREL_PACKED_QCONV 1
#else
#define KESTREL_PACKED_QCONV 0
#endif

namespace kestrel::backends::cpu {

// What the packed product's rows become in place of int32 sums, where a
// QLinearConv's output takes nothing else: row m's sums plus bias[m],
// requantized by mult[m] and the zero point (qconv_avx2's requantize_u8 /
// requantize_s8 bits) into y + m * ldy, uint8 unless y_signed; rows from
// `rows` on (the padding to a multiple of 8) are not written.
struct QConvRequant {
  const int32_t* bias = nullptr;
  const float* mult = nullptr;
  int32_t zero_point = 0;
  bool y_signed = false;
  void* y = nullptr;
  int64_t ldy = 0;
  int64_t rows = 0;
};

// A QLinearConv's fused activation (the QDQ fusion of Conv -> activation ->
// QuantizeLinear) as the loops below take it: each sum plus its bias
// converted to float and times `real` (x_scale * w_scale), the activation
// with ops::activate()'s bits (Sigmoid and Silu with the Sigmoid op's
// logistic), then QuantizeLinear by `scale` and `zero_point`. Other
// activations take the reference's passes (qlinear_conv.cpp). An enum of its
// own, not ops::Activation: the kernel files include no header with code, and
// ops/activation.h's inline functions compiled there for AVX-512 could be the
// copies the linker keeps for every caller.
enum class QConvActivation { Relu, Clip, LeakyRelu, Sigmoid, Silu };
struct QConvActivate {
  QConvActivation kind = QConvActivation::Relu;
  float a = 0, b = 0;  // Clip's bounds; LeakyRelu's alpha in a
  float real = 1;
  float scale = 1;
  int32_t zero_point = 0;
};

// The activated rows, one per instruction-set level below (AVX-512: 16
// values a step, AVX2: 8): y[i] = QuantizeLinear(act(float(acc[i] + bias) *
// real)) for i < n (the int32 sum wrapping as the reference's does), and from
// sums that float32 holds exactly (the depthwise layers), (sums[i] + bias) *
// real.
#define KESTREL_QCONV_ACTIVATE_DECLARATIONS                                                                   \
  void activate_requantize(const QConvActivate& p, const int32_t* acc, int64_t n, int32_t bias, uint8_t* y);  \
  void activate_requantize(const QConvActivate& p, const int32_t* acc, int64_t n, int32_t bias, int8_t* y);   \
  void activate_requantize_floats(const QConvActivate& p, const float* sums, int64_t n, float bias, uint8_t* y); \
  void activate_requantize_floats(const QConvActivate& p, const float* sums, int64_t n, float bias, int8_t* y);

namespace qconv_avx512 {
KESTREL_QCONV_ACTIVATE_DECLARATIONS
// C[m, n] = sum_k U[k, n] S[m, k] exactly in int32, on AVX-512 VNNI: U is
// u8 packed as [K4][ldu][4] (four consecutive k of a column together; N of
// each row of ldu used), S is s8 rows [M8][K4 * 4] (M8 a multiple of 8, the
// rows beyond M zero), C rows of N (ldc). N needs no padding.
void igemm_u8s8_packed(int64_t M8, int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int8_t* S, int32_t* C,
                       int64_t ldc);
// The same product with each block requantized as it leaves the registers
// (QConvRequant): no int32 row is written.
void igemm_u8s8_requantized(int64_t M8, int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int8_t* S,
                            const QConvRequant& rq);
// qconv_avx2's requantizing loops (below) sixteen values at a time, with
// their bits.
void requantize_u8(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zero_point, uint8_t* y);
void requantize_s8(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zero_point, int8_t* y);
void requantize_exact_floats_u8(const float* sums, int64_t n, float bias, float mult, int32_t zero_point, uint8_t* y);
void requantize_exact_floats_s8(const float* sums, int64_t n, float bias, float mult, int32_t zero_point, int8_t* y);
}  // namespace qconv_avx512

namespace qconv_avx2 {
KESTREL_QCONV_ACTIVATE_DECLARATIONS
// qconv_avx512's igemm_u8s8_packed on AVX2 alone (int16 pairs, exact), for
// CPUs without AVX-512 VNNI: the same U and result, the weights S given as
// widen_pairs makes them.
void igemm_u8s8_pairs(int64_t M8, int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int32_t* W, int32_t* C,
                      int64_t ldc);
// The n quads of s8 weights S as igemm_u8s8_pairs reads them: two int32 per
// quad, its bytes 0 and 2 then 1 and 3 as sign-extended int16 pairs.
void widen_pairs(const int8_t* S, int64_t n, int32_t* W);
// out[i] = the bytes planes[0][i] ^ flip, planes[1][i] ^ flip, planes[2][i]
// ^ flip, planes[3][i] ^ flip, lowest first, for i < n; a null plane gives
// `pad` bytes (QLinearConv's channel quads, qlinear_conv.cpp).
void interleave_quads(const uint8_t* const planes[4], int64_t n, uint8_t flip, uint8_t pad, uint32_t* out);
// acc[i] += scale * (sums[i] - offset) for i < n, wrapping as int32 does.
void add_scaled(int32_t* acc, const int32_t* sums, int64_t n, int32_t scale, int32_t offset);
// y[i] = ops::requantize<Q>(acc[i] + bias, mult, zero_point) for i < n
// (the int32 sum wraps as the reference's does).
void requantize_u8(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zero_point, uint8_t* y);
void requantize_s8(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t zero_point, int8_t* y);
// The same from sums held exactly in float (integers below 2^24 in
// magnitude, as is bias): float(sum + bias) is then the one rounding of the
// exact value that float(int32 sum + bias) is, so the results are the same.
void requantize_exact_floats_u8(const float* sums, int64_t n, float bias, float mult, int32_t zero_point, uint8_t* y);
void requantize_exact_floats_s8(const float* sums, int64_t n, float bias, float mult, int32_t zero_point, int8_t* y);
}  // namespace qconv_avx2

namespace qconv_neon {
// The weights S ([M8][K4 * 4] s8, M8 a multiple of 8) as igemm_u8s8_dot
// reads them, W of the same size, and each row's 128 * sum of S in fix (M8).
void arrange_rows(const int8_t* S, int64_t M8, int64_t K4, int8_t* W, int32_t* fix);
// qconv_avx512's igemm_u8s8_packed on arm64's dot product (SDOT, exact): the
// same U and result, the weights as arrange_rows makes them.
void igemm_u8s8_dot(int64_t M8, int64_t N, int64_t K4, const uint8_t* U, int64_t ldu, const int8_t* W,
                    const int32_t* fix, int32_t* C, int64_t ldc);
// qconv_avx2's interleave_quads on NEON.
void interleave_quads(const uint8_t* const planes[4], int64_t n, uint8_t flip, uint8_t pad, uint32_t* out);
}  // namespace qconv_neon

}  // namespace kestrel::backends::cpu

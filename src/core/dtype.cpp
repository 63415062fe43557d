#include "core/dtype.h"


#include <cmath>

#include "core/cpu_isa.h"

#if KESTREL_X86
#include <immintrin.h>
#endif

namespace kestrel {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: case DType::Int32: case DType::UInt32: return 4;
    case DType::UInt8: case DType::Int8: case DType::Bool: case DType::UInt4: case DType::Int4: return 1;
    case DType::UInt16: case DType::Int16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int64: case DType::Float64: case DType::UInt64: return 8;
    default: return 0;
  }
}

bool dtype_supported(DType t) { return dtype_size(t) != 0; }

bool dtype_is_float(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16 || t == DType::Float64;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::UInt16: return "uint16";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::String: return "string";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::Float64: return "float64";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    case DType::BFloat16: return "bfloat16";
    case DType::UInt4: return "uint4";
    case DType::Int4: return "int4";
    default: return "undefined";
  }
}

DType dtype_from_name(const std::string& n) {
  for (int i = 0; i <= 22; ++i) {
    DType t = static_cast<DType>(i);
    if (n == dtype_name(t)) return t;
  }
  return DType::Undefined;
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  uint32_t u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      do { man <<= 1; ++e; } while (!(man & 0x400));
      man &= 0x3ff;
      u = sign | uint32_t(127 - 15 - e) << 23 | man << 13;
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | man << 13;
  } else {
    u = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint16_t sign = uint16_t((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00;       // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00;      // overflow to inf (incl. rounding)
  if (abs < 0x38800000u) {                           // subnormal or zero in half
    if (abs < 0x33000000u) return sign;              // rounds to zero
    uint32_t exp = abs >> 23;
    uint32_t man = (abs & 0x7fffff) | 0x800000;
    // The half subnormal unit is 2^-24, the float's mantissa unit 2^(exp-150):
    // shift right by (126 - exp) bits, rounding to nearest even.
    uint32_t total = uint32_t(126 - int(exp));
    uint32_t q = man >> total;
    uint32_t rem = man & ((1u << total) - 1);
    uint32_t half = 1u << (total - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    return sign | uint16_t(q);
  }
  uint32_t q = (abs - 0x38000000u) >> 13;            // rebias exponent 127 -> 15
  uint32_t rem = abs & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (q & 1))) ++q;
  return sign | uint16_t(q);
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // keep NaN a NaN
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

namespace {
// float16 <-> float32: the whole blocks of 8 with the CPU's F16C
// instructions where it has them (every x86-64-v3 CPU; chosen at run time,
// core/cpu_isa.h), returning how many they did; the rest one by one, rounding
// to nearest even like them.
#if KESTREL_X86
__attribute__((target("avx,f16c"))) int64_t half_to_float_f16c(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  return i;
}
__attribute__((target("avx,f16c"))) int64_t float_to_half_f16c(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  return i;
}
#else
// (No F16C off x86-64: cpu_isa() is the baseline there and these never run.)
int64_t half_to_float_f16c(const uint16_t*, float*, int64_t) { return 0; }
int64_t float_to_half_f16c(const float*, uint16_t*, int64_t) { return 0; }
#endif
}  // namespace

void halves_to_floats(const uint16_t* s, float* d, int64_t n) {
  for (int64_t i = cpu_isa() >= CpuIsa::Avx2 ? half_to_float_f16c(s, d, n) : 0; i < n; ++i) d[i] = half_to_float(s[i]);
}
void floats_to_halves(const float* s, uint16_t* d, int64_t n) {
  for (int64_t i = cpu_isa() >= CpuIsa::Avx2 ? float_to_half_f16c(s, d, n) : 0; i < n; ++i) d[i] = float_to_half(s[i]);
}

}  // namespace kestrel

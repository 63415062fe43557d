// Element types. The numeric values are ONNX's TensorProto.DataType codes so a
// model's types map over without a table.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace kestrel {

enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
  // 4-bit integers (ONNX opset 21), held one value a byte (sign-extended for
  // Int4): files pack two a byte, the loader unpacks them. Only the
  // quantization ops and the loader take them; other ops refuse them.
  UInt4 = 21,
  Int4 = 22,
};
// The range of values a 4-bit type holds.
inline int32_t dtype_4bit_lowest(DType t) { return t == DType::Int4 ? -8 : 0; }
inline int32_t dtype_4bit_max(DType t) { return t == DType::Int4 ? 7 : 15; }

size_t dtype_size(DType t);          // bytes per element; 0 for unsupported types
const char* dtype_name(DType t);     // "float32", "int64", ...
bool dtype_supported(DType t);       // Kestrel can hold tensors of this type
bool dtype_is_float(DType t);        // float16/bfloat16/float32/float64
inline bool dtype_is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
DType dtype_from_name(const std::string& name);  // numpy-style names; Undefined if unknown

// IEEE half and bfloat16 conversions (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
inline float bf16_to_float(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t float_to_bf16(float f);
// n of them at once (F16C where the CPU has it), as the ones above round.
void halves_to_floats(const uint16_t* s, float* d, int64_t n);
void floats_to_halves(const float* s, uint16_t* d, int64_t n);

// Maps C++ types to DType for templates.
template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::Float32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::Float64; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::Int16; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::UInt16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::UInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::UInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::Bool; };

}  // namespace kestrel

#include "backends/vulkan/transfer.h"

#include <cstring>

namespace kestrel::vulkan {

bool device_dtype(DType t) {
  switch (t) {
    case DType::Float32:
    case DType::Float16:
    case DType::Int64:
    case DType::Int32:
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool: return true;
    default: return false;
  }
}

std::string storable(const Tensor& t) {
  if (!device_dtype(t.dtype())) return std::string("dtype ") + dtype_name(t.dtype()) + " is not kept on the GPU";
  if (t.dtype() == DType::Int64) {
    const int64_t* p = t.data<int64_t>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i)
      if (p[i] < INT32_MIN || p[i] > INT32_MAX) return "int64 values past int32's range stay on the host";
  }
  return "";
}

size_t storage_bytes(const Tensor& t, bool half) {
  bool f = t.dtype() == DType::Float32 || t.dtype() == DType::Float16;
  bool byte = t.dtype() == DType::Int8 || t.dtype() == DType::UInt8;
  return (size_t(t.numel()) * (byte ? 1 : f && half ? 2 : 4) + 3) / 4 * 4;
}

void write_storage(const Tensor& t, bool half, uint8_t* dst) {
  switch (t.dtype()) {
    case DType::Float32:
    case DType::Float16: {
      DType want = half ? DType::Float16 : DType::Float32;
      if (t.dtype() == want) std::memcpy(dst, t.raw(), t.nbytes());
      else {
        Tensor c = t.cast(want);
        std::memcpy(dst, c.raw(), c.nbytes());
      }
      return;
    }
    case DType::Int32: std::memcpy(dst, t.raw(), t.nbytes()); return;
    case DType::Int8:
    case DType::UInt8:  // packed four to a word; the last word's padding is zero
      if (t.nbytes() % 4) std::memset(dst + t.nbytes() / 4 * 4, 0, 4);
      std::memcpy(dst, t.raw(), t.nbytes());
      return;
    case DType::Int64: {
      const int64_t* s = t.data<int64_t>();
      int32_t* d = reinterpret_cast<int32_t*>(dst);
      for (int64_t i = 0, n = t.numel(); i < n; ++i) d[i] = int32_t(s[i]);
      return;
    }
    case DType::Bool: {
      const uint8_t* s = t.data<uint8_t>();
      int32_t* d = reinterpret_cast<int32_t*>(dst);
      for (int64_t i = 0, n = t.numel(); i < n; ++i) d[i] = s[i] ? 1 : 0;
      return;
    }
    default: fail("Vulkan: dtype ", dtype_name(t.dtype()), " has no device storage");
  }
}

Tensor read_storage(const GpuTensor& g, const uint8_t* src) {
  if (g.is_float()) {
    DType stored = g.half ? DType::Float16 : DType::Float32;
    Tensor t = Tensor::uninitialized(stored, g.shape);
    std::memcpy(t.raw(), src, t.nbytes());
    return stored == g.dtype ? t : t.cast(g.dtype);
  }
  Tensor t = Tensor::uninitialized(g.dtype, g.shape);
  if (g.is_byte()) {
    std::memcpy(t.raw(), src, t.nbytes());
    return t;
  }
  const int32_t* s = reinterpret_cast<const int32_t*>(src);
  int64_t n = t.numel();
  switch (g.dtype) {
    case DType::Int32: std::memcpy(t.raw(), src, t.nbytes()); break;
    case DType::Int64:
      for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = s[i];
      break;
    case DType::Bool:
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = s[i] != 0;
      break;
    default: fail("Vulkan: dtype ", dtype_name(g.dtype), " has no device storage");
  }
  return t;
}

}  // namespace kestrel::vulkan

#include "backends/vulkan/transfer.h"

#include <algorithm>
#include <cstring>

namespace kestrel::vulkan {

namespace {
void copy_bytes(uint8_t* dst, const uint8_t* src, size_t bytes, int threads) {
  in_blocks(int64_t(bytes), 1, threads, [&](int64_t b, int64_t e) { std::memcpy(dst + b, src + b, size_t(e - b)); });
}
}  // namespace

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

void write_storage(const Tensor& t, bool half, uint8_t* dst, int threads) {
  switch (t.dtype()) {
    case DType::Float32:
    case DType::Float16: {
      // Converted straight into the staging memory: no host tensor between.
      DType want = half ? DType::Float16 : DType::Float32;
      if (t.dtype() == want) copy_bytes(dst, t.raw(), t.nbytes(), threads);
      else if (half)
        in_blocks(t.numel(), 4, threads, [&](int64_t b, int64_t e) {
          floats_to_halves(t.data<float>() + b, reinterpret_cast<uint16_t*>(dst) + b, e - b);
        });
      else
        in_blocks(t.numel(), 4, threads, [&](int64_t b, int64_t e) {
          halves_to_floats(t.data<uint16_t>() + b, reinterpret_cast<float*>(dst) + b, e - b);
        });
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

Tensor output_destination(const backends::OutputSink* sink, size_t index, const GpuTensor& g) {
  return sink && *sink ? (*sink)(index, g.dtype, g.shape) : Tensor();
}

Tensor read_storage(const GpuTensor& g, const uint8_t* src, int threads, const Tensor& into) {
  const bool given = into.defined() && into.dtype() == g.dtype && into.shape() == g.shape;
  if (g.is_float()) {
    // Converted straight out of the staging memory into the result.
    DType stored = g.half ? DType::Float16 : DType::Float32;
    Tensor t = given ? into : Tensor::uninitialized(g.dtype, g.shape);
    if (stored == g.dtype) copy_bytes(t.raw(), src, t.nbytes(), threads);
    else if (g.half)
      in_blocks(t.numel(), 4, threads, [&](int64_t b, int64_t e) {
        halves_to_floats(reinterpret_cast<const uint16_t*>(src) + b, t.data<float>() + b, e - b);
      });
    else
      in_blocks(t.numel(), 4, threads, [&](int64_t b, int64_t e) {
        floats_to_halves(reinterpret_cast<const float*>(src) + b, t.data<uint16_t>() + b, e - b);
      });
    return t;
  }
  Tensor t = given ? into : Tensor::uninitialized(g.dtype, g.shape);
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

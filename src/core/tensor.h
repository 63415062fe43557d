// A dense, row-major tensor on the host. Storage is reference-counted so
// Reshape, Identity and outputs can share bytes without copying.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace kestrel {

using Shape = std::vector<int64_t>;

// The most bytes one tensor may hold: 2^48 (256 TiB). x86-64 and AArch64
// give a process at most 2^47 to 2^48 bytes of virtual address space, so a
// larger tensor can never exist; refusing it up front names the tensor instead
// of leaving it to the allocator (or, with overcommit, to the OOM killer).
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 48;

// The element count of a shape. Dims come from models, input files and
// callers, so the product is checked: it fails, naming the shape, when the
// product of the nonzero dims overflows int64 (a zero dim does not excuse
// the others: loops and strides multiply them too).
int64_t shape_numel(const Shape& s);
// The bytes a tensor of this type and shape holds. Fails, naming the shape,
// on a negative dim, an element count or byte size that overflows, or more
// than kMaxTensorBytes.
size_t tensor_nbytes(DType dtype, const Shape& s);
std::string shape_str(const Shape& s);  // "[1,3,224,224]"

// a + b and a * b for dims and counts, false when the result overflows int64.
inline bool add_fits(int64_t a, int64_t b, int64_t& out) { return !__builtin_add_overflow(a, b, &out); }
inline bool mul_fits(int64_t a, int64_t b, int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }

class Tensor {
 public:
  Tensor() = default;
  // Allocates zero-initialized storage for the shape.
  Tensor(DType dtype, Shape shape);
  // Allocates storage whose contents are unspecified (for outputs a kernel overwrites whole).
  static Tensor uninitialized(DType dtype, Shape shape);
  // Wraps existing shared storage (no copy). `bytes` must hold the shape.
  Tensor(DType dtype, Shape shape, std::shared_ptr<uint8_t[]> storage, size_t offset = 0);

  static Tensor scalar_f32(float v);
  static Tensor scalar_i64(int64_t v);
  static Tensor from_i64(const std::vector<int64_t>& v);
  static Tensor from_f32(const Shape& shape, const std::vector<float>& v);

  bool defined() const { return dtype_ != DType::Undefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return int(shape_.size()); }
  int64_t dim(int i) const { return shape_[size_t(i < 0 ? i + rank() : i)]; }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype_); }

  template <typename T> T* data() { return reinterpret_cast<T*>(raw()); }
  template <typename T> const T* data() const { return reinterpret_cast<const T*>(raw()); }
  uint8_t* raw() { return storage_ ? storage_.get() + offset_ : nullptr; }
  const uint8_t* raw() const { return storage_ ? storage_.get() + offset_ : nullptr; }

  // Same bytes, new shape (element count must match).
  Tensor reshaped(Shape shape) const;
  // Deep copy.
  Tensor clone() const;
  // Converts to another dtype (numeric conversion like ONNX Cast, float->int truncates).
  Tensor cast(DType to) const;
  // The same conversion into `out`, which has this tensor's shape and the
  // target dtype (an output already placed, as in a run's arena).
  void cast_into(Tensor& out) const;
  // Reads integer tensors (any int type) as int64 values; throws for others.
  std::vector<int64_t> to_i64() const;
  // Reads any numeric tensor as float values.
  std::vector<float> to_f32() const;
  // True when both have equal dtype, shape and bytes.
  bool same_as(const Tensor& o) const;
  const std::shared_ptr<uint8_t[]>& storage() const { return storage_; }

 private:
  DType dtype_ = DType::Undefined;
  Shape shape_;
  std::shared_ptr<uint8_t[]> storage_;
  size_t offset_ = 0;
};

// 64-byte aligned, zeroed allocation (from the buffer pool).
std::shared_ptr<uint8_t[]> allocate_bytes(size_t n);

// Calls f with a typed null pointer for the tensor's dtype:
//   dispatch_numeric(t.dtype(), [&](auto* tag) { using T = std::remove_pointer_t<decltype(tag)>; ... });
// Float16/BFloat16 are not included: the executor runs them through float32.
template <typename F>
void dispatch_numeric(DType t, const char* who, F&& f) {
  switch (t) {
    case DType::Float32: f(static_cast<float*>(nullptr)); break;
    case DType::Float64: f(static_cast<double*>(nullptr)); break;
    case DType::Int8: f(static_cast<int8_t*>(nullptr)); break;
    case DType::UInt8: f(static_cast<uint8_t*>(nullptr)); break;
    case DType::Int16: f(static_cast<int16_t*>(nullptr)); break;
    case DType::UInt16: f(static_cast<uint16_t*>(nullptr)); break;
    case DType::Int32: f(static_cast<int32_t*>(nullptr)); break;
    case DType::UInt32: f(static_cast<uint32_t*>(nullptr)); break;
    case DType::Int64: f(static_cast<int64_t*>(nullptr)); break;
    case DType::UInt64: f(static_cast<uint64_t*>(nullptr)); break;
    case DType::Bool: f(static_cast<bool*>(nullptr)); break;
    default: fail(who, ": element type ", dtype_name(t), " is not supported");
  }
}

}  // namespace kestrel

#include "core/tensor.h"

#include "core/buffer_pool.h"

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <type_traits>

namespace kestrel {

int64_t shape_numel(const Shape& s) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int64_t d : s) {
    if (d == 0) empty = true;
    else if (!mul_fits(nonzero, d, nonzero)) fail("the element count of shape ", shape_str(s), " overflows int64");
  }
  return empty ? 0 : nonzero;
}

size_t tensor_nbytes(DType dtype, const Shape& s) {
  for (int64_t d : s) KESTREL_CHECK(d >= 0, "negative dimension in shape ", shape_str(s));
  int64_t bytes = 0;
  if (!mul_fits(shape_numel(s), int64_t(dtype_size(dtype)), bytes))
    fail("a ", dtype_name(dtype), " tensor of shape ", shape_str(s), " needs more bytes than int64 counts (it overflows)");
  if (uint64_t(bytes) > kMaxTensorBytes)
    fail("a ", dtype_name(dtype), " tensor of shape ", shape_str(s), " needs ", bytes, " bytes, more than the 2^48 (",
         kMaxTensorBytes, ") Kestrel allocates for one tensor");
  return size_t(bytes);
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << ']';
  return os.str();
}

std::shared_ptr<uint8_t[]> allocate_bytes(size_t n) { return pooled_bytes(n, true); }

Tensor::Tensor(DType dtype, Shape shape) : Tensor(uninitialized(dtype, std::move(shape))) {
  if (nbytes()) std::memset(raw(), 0, nbytes());
}

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  KESTREL_CHECK(dtype_supported(dtype), "cannot allocate a tensor of type ", dtype_name(dtype));
  const size_t bytes = tensor_nbytes(dtype, shape);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.storage_ = pooled_bytes(bytes, false);
  return t;
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<uint8_t[]> storage, size_t offset)
    : dtype_(dtype), shape_(std::move(shape)), storage_(std::move(storage)), offset_(offset) {}

Tensor Tensor::scalar_f32(float v) {
  Tensor t(DType::Float32, {});
  *t.data<float>() = v;
  return t;
}

Tensor Tensor::scalar_i64(int64_t v) {
  Tensor t(DType::Int64, {});
  *t.data<int64_t>() = v;
  return t;
}

Tensor Tensor::from_i64(const std::vector<int64_t>& v) {
  Tensor t(DType::Int64, {int64_t(v.size())});
  if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * 8);
  return t;
}

Tensor Tensor::from_f32(const Shape& shape, const std::vector<float>& v) {
  Tensor t(DType::Float32, shape);
  KESTREL_CHECK(int64_t(v.size()) == t.numel(), "from_f32: ", v.size(), " values for shape ", shape_str(shape));
  if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * 4);
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  KESTREL_CHECK(shape_numel(shape) == numel(), "cannot reshape ", shape_str(shape_), " to ", shape_str(shape));
  return Tensor(dtype_, std::move(shape), storage_, offset_);
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

namespace {
// Reads element i of any supported type as double (half types widened).
template <typename T>
double load_as_double(const uint8_t* p, int64_t i) { return double(reinterpret_cast<const T*>(p)[i]); }

double load_any(DType t, const uint8_t* p, int64_t i) {
  switch (t) {
    case DType::Int4: return reinterpret_cast<const int8_t*>(p)[i];
    case DType::UInt4: return p[i];
    case DType::Float16: return half_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::BFloat16: return bf16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    default: break;
  }
  double v = 0;
  dispatch_numeric(t, "load", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    v = load_as_double<T>(p, i);
  });
  return v;
}
}  // namespace


Tensor Tensor::cast(DType to) const {
  if (to == dtype_) return clone();
  Tensor out = uninitialized(to, shape_);
  cast_into(out);
  return out;
}

void Tensor::cast_into(Tensor& out) const {
  KESTREL_CHECK(out.shape_ == shape_, "cast into ", shape_str(out.shape_), " from ", shape_str(shape_));
  const DType to = out.dtype_;
  if (to == dtype_) {
    if (nbytes()) std::memcpy(out.raw(), raw(), nbytes());
    return;
  }
  if (dtype_ == DType::Float16 && to == DType::Float32) {
    halves_to_floats(data<uint16_t>(), out.data<float>(), numel());
    return;
  }
  if (dtype_ == DType::Float32 && to == DType::Float16) {
    floats_to_halves(data<float>(), out.data<uint16_t>(), numel());
    return;
  }
  int64_t n = numel();
  const uint8_t* src = raw();
  // Integer-to-integer casts go through int64 so large values stay exact.
  bool int_src = !dtype_is_float(dtype_) && dtype_ != DType::Bool;
  bool int_dst = !dtype_is_float(to) && to != DType::Bool;
  if (int_src && int_dst) {
    std::vector<int64_t> v = to_i64();
    dispatch_numeric(to, "cast", [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      T* d = out.data<T>();
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(v[size_t(i)]);
    });
    return;
  }
  if (to == DType::Float16 || to == DType::BFloat16) {
    uint16_t* d = out.data<uint16_t>();
    for (int64_t i = 0; i < n; ++i) {
      float f = float(load_any(dtype_, src, i));
      d[i] = to == DType::Float16 ? float_to_half(f) : float_to_bf16(f);
    }
    return;
  }
  dispatch_numeric(to, "cast", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    T* d = out.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      double v = load_any(dtype_, src, i);
      if constexpr (std::is_same_v<T, bool>) d[i] = v != 0;
      else d[i] = static_cast<T>(v);
    }
  });
}

std::vector<int64_t> Tensor::to_i64() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  KESTREL_CHECK(!dtype_is_float(dtype_), "expected an integer tensor, got ", dtype_name(dtype_));
  if (dtype_ == DType::Int4 || dtype_ == DType::UInt4) {  // one value a byte
    for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t(load_any(dtype_, raw(), int64_t(i)));
    return v;
  }
  dispatch_numeric(dtype_, "to_i64", [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* s = data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t(s[i]);
  });
  return v;
}

std::vector<float> Tensor::to_f32() const {
  std::vector<float> v(static_cast<size_t>(numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(load_any(dtype_, raw(), int64_t(i)));
  return v;
}

bool Tensor::same_as(const Tensor& o) const {
  return dtype_ == o.dtype_ && shape_ == o.shape_ && (nbytes() == 0 || std::memcmp(raw(), o.raw(), nbytes()) == 0);
}

}  // namespace kestrel

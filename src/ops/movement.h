// Shared pieces of Kestrel's data-movement ops (Transpose, Slice, Expand,
// Tile, Gather, ...). These ops only move bytes, so they work on every dtype
// by element size rather than by type.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ops/common.h"

namespace kestrel::ops {

// Calls f with an unsigned integer type as wide as one element of `t`
// (uint8_t, uint16_t, uint32_t or uint64_t).
template <typename F>
void dispatch_bytes(const KernelContext& ctx, DType t, F&& f) {
  switch (dtype_size(t)) {
    case 1: f(static_cast<uint8_t*>(nullptr)); break;
    case 2: f(static_cast<uint16_t*>(nullptr)); break;
    case 4: f(static_cast<uint32_t*>(nullptr)); break;
    case 8: f(static_cast<uint64_t*>(nullptr)); break;
    default: ctx.fail("element type ", dtype_name(t), " is not supported");
  }
}

// memcpy for the short runs that Slice, Concat and Split meet along a last
// axis of a few elements (a detector's [1, N, 4] boxes split into two
// pairs): a call to memcpy per 8-byte run cost more than the copy itself,
// so runs under 64 bytes go 8 bytes (then 1) at a time, inline.
inline void copy_run(uint8_t* dst, const uint8_t* src, size_t n) {
  if (n >= 64) {
    std::memcpy(dst, src, n);
    return;
  }
  size_t i = 0;
  for (; i + 8 <= n; i += 8) std::memcpy(dst + i, src + i, 8);
  for (; i < n; ++i) dst[i] = src[i];
}

// Row-major element strides of a shape.
std::vector<int64_t> row_strides(const Shape& s);

// Reads input i (any integer type) as int64 values; `what` names it in errors.
std::vector<int64_t> input_ints(const KernelContext& ctx, int i, const char* what);

// Integer list from input `i` from opset `input_since` on, else from
// attribute `attr`. Returns false when neither is given.
bool ints_from_input_or_attr(const KernelContext& ctx, int i, int input_since, const char* attr,
                             std::vector<int64_t>& out);

// Fills dst (dense, `shape`) from a strided view of src: the element at
// multi-index idx comes from src[sum_k idx[k] * strides[k]] (strides in
// elements; 0 broadcasts, negative walks backwards). Picks a memcpy, fill or
// cache-blocked transpose path where the strides allow one.
void strided_copy(const KernelContext& ctx, DType dtype, const uint8_t* src, uint8_t* dst, const Shape& shape,
                  const std::vector<int64_t>& strides);

// Checks index v against an axis of size n (negative counts from the end) and
// returns it in [0, n); fails naming the op's input, the index and the size.
inline int64_t checked_index(const KernelContext& ctx, int64_t v, int64_t n, const char* what) {
  if (v < -n || v >= n) ctx.fail(what, " index ", v, " is out of range for an axis of size ", n);
  return v < 0 ? v + n : v;
}

}  // namespace kestrel::ops

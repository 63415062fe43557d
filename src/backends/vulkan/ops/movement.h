// Shared pieces of the Vulkan data-movement kernels (shaders/copy_nd.comp and
// friends): these only move elements, so one shader serves every dtype by
// storage word (T for float tensors, int32 for integers and booleans).
#pragma once
#include <cstdint>
#include <vector>

#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {

// The WIDE specialization constant: 1 when t is stored as int32 words.
inline int32_t wide(const GpuTensor& t) { return t.is_float() ? 0 : 1; }

// Row-major element strides of a shape.
std::vector<int64_t> row_strides(const Shape& s);

// A strided view: element c (a coordinate over `dims`) reads
// src[src_base + sum c_k * src_strides[k]] and writes
// dst[dst_base + sum c_k * dst_strides[k]]. With `src_mod` set, the source
// coordinate wraps (c_k % src_mod[k]) before its stride applies (Tile).
struct CopyView {
  Shape dims;
  std::vector<int64_t> src_strides, dst_strides, src_mod;
  int64_t src_base = 0, dst_base = 0;
};

// A view writing all of dst densely (dst_strides = row strides of dims).
CopyView dense_view(const Shape& dims, std::vector<int64_t> src_strides, int64_t src_base = 0);

// Records the copy. Size-1 dims are dropped and dims contiguous in both
// source and destination merged first, so views of any rank that fold to 6
// dims run; others (and sizes past int32 indexing) fall back to the CPU.
void record_copy(OpContext& ctx, const GpuTensor& src, const GpuTensor& dst, const CopyView& view);

// Integer values of host input i (shapes, axes, pads, repeats).
std::vector<int64_t> host_ints(const OpContext& ctx, int i);

// An integer list from host input i from opset `input_since` on, else from
// attribute `attr`. False when neither is given.
bool ints_from_input_or_attr(const OpContext& ctx, int i, int input_since, const char* attr,
                             std::vector<int64_t>& out);

// Fails (falls back to the CPU) past int32 element indexing in the shaders.
void require_i32_indexing(const OpContext& ctx, int64_t elements);

}  // namespace kestrel::vulkan

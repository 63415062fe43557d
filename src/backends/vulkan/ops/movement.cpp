// The strided copy every data-movement kernel records (shaders/copy_nd.comp,
// and shaders/transpose2d.comp for batched 2-D transposes), with its view
// simplification: Transpose, Concat, Split, Slice, Expand, Tile, DepthToSpace
// and SpaceToDepth (each in the file named like its op's in src/ops/) are
// views over it.
#include <algorithm>
#include <climits>

#include "backends/vulkan/ops/movement.h"

namespace kestrel::vulkan {

std::vector<int64_t> row_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int k = int(s.size()) - 2; k >= 0; --k) st[size_t(k)] = st[size_t(k + 1)] * s[size_t(k + 1)];
  return st;
}

CopyView dense_view(const Shape& dims, std::vector<int64_t> src_strides, int64_t src_base) {
  CopyView v;
  v.dims = dims;
  v.src_strides = std::move(src_strides);
  v.dst_strides = row_strides(dims);
  v.src_base = src_base;
  return v;
}

std::vector<int64_t> host_ints(const OpContext& ctx, int i) { return ctx.host_input(i).to_i64(); }

bool ints_from_input_or_attr(const OpContext& ctx, int i, int input_since, const char* attr,
                             std::vector<int64_t>& out) {
  if (ctx.node.opset >= input_since) {
    if (!ctx.has_input(i)) return false;
    out = host_ints(ctx, i);
    return true;
  }
  if (!ctx.node.has(attr)) return false;
  out = ctx.node.attr_ints(attr);
  return true;
}

void require_i32_indexing(const OpContext& ctx, int64_t elements) {
  if (elements > INT32_MAX) ctx.unsupported(elements, " elements are past the kernels' int32 indexing");
}

namespace {

struct CopyPush {
  uint32_t base, n;
  int32_t sbase, dbase;
  int32_t dims[kMaxRank], ss[kMaxRank], ds[kMaxRank], smod[kMaxRank];
};

// Drops size-1 dims and merges neighbours that are contiguous in both the
// source and the destination (and do not wrap).
CopyView simplify(const CopyView& v) {
  bool tile = !v.src_mod.empty();
  CopyView s;
  s.src_base = v.src_base;
  s.dst_base = v.dst_base;
  for (size_t k = 0; k < v.dims.size(); ++k) {
    int64_t d = v.dims[k], m = tile ? v.src_mod[k] : d;
    if (d == 1) continue;
    bool plain = m == d;
    if (!s.dims.empty() && plain && s.src_mod.back() == s.dims.back() &&
        s.src_strides.back() == v.src_strides[k] * d && s.dst_strides.back() == v.dst_strides[k] * d) {
      s.dims.back() *= d;
      s.src_mod.back() = s.dims.back();
      s.src_strides.back() = v.src_strides[k];
      s.dst_strides.back() = v.dst_strides[k];
      continue;
    }
    s.dims.push_back(d);
    s.src_strides.push_back(v.src_strides[k]);
    s.dst_strides.push_back(v.dst_strides[k]);
    s.src_mod.push_back(m);
  }
  return s;
}

// [B, R, C] -> [B, C, R] with the tiled shader when the view is one.
bool try_transpose2d(OpContext& ctx, const GpuTensor& src, const GpuTensor& dst, const CopyView& v) {
  size_t r = v.dims.size();
  if (r < 2 || r > 3 || v.src_base || v.dst_base) return false;
  for (size_t k = 0; k < r; ++k)
    if (v.src_mod[k] != v.dims[k]) return false;
  int64_t cols = v.dims[r - 2], rows = v.dims[r - 1], batch = r == 3 ? v.dims[0] : 1;
  if (v.src_strides[r - 2] != 1 || v.src_strides[r - 1] != cols || v.dst_strides[r - 1] != 1 ||
      v.dst_strides[r - 2] != rows)
    return false;
  if (r == 3 && (v.src_strides[0] != rows * cols || v.dst_strides[0] != rows * cols)) return false;
  uint32_t gx = uint32_t((cols + 31) / 32), gy = uint32_t((rows + 31) / 32);
  const auto& lim = ctx.device().max_workgroup_count;
  if (gx > lim[0] || gy > lim[1]) return false;
  // One dispatch per chunk of planes keeps each bounded (about 4M elements).
  int64_t per = std::clamp<int64_t>((int64_t(1) << 22) / (rows * cols), 1, lim[2]);
  for (int64_t b0 = 0; b0 < batch; b0 += per) {
    uint32_t push[3] = {uint32_t(rows), uint32_t(cols), uint32_t(b0)};
    ctx.dispatch("transpose2d", {wide(src)}, {In(src), Out(dst)}, push, sizeof push, gx, gy,
                 uint32_t(std::min(per, batch - b0)));
  }
  return true;
}

}  // namespace

void record_copy(OpContext& ctx, const GpuTensor& src, const GpuTensor& dst, const CopyView& view) {
  if (src.is_float() != dst.is_float()) ctx.fail("copy between float and integer storage");
  int64_t n = shape_numel(view.dims);
  if (n == 0) return;
  require_i32_indexing(ctx, std::max(src.numel(), dst.numel()));
  CopyView v = view;
  if (v.src_mod.empty()) v.src_mod = v.dims;
  v = simplify(v);
  if (v.dims.size() > size_t(kMaxRank)) ctx.unsupported("a copy of rank ", v.dims.size(), " after merging dims");
  if (try_transpose2d(ctx, src, dst, v)) return;
  bool tile = false;
  for (size_t k = 0; k < v.dims.size(); ++k) tile |= v.src_mod[k] != v.dims[k];
  CopyPush p{};
  int pad = kMaxRank - int(v.dims.size());
  for (int k = 0; k < kMaxRank; ++k) {
    bool real = k >= pad;
    size_t j = size_t(k - pad);
    p.dims[k] = real ? int32_t(v.dims[j]) : 1;
    p.ss[k] = real ? int32_t(v.src_strides[j]) : 0;
    p.ds[k] = real ? int32_t(v.dst_strides[j]) : 0;
    p.smod[k] = real ? int32_t(v.src_mod[j]) : 1;
  }
  p.sbase = int32_t(v.src_base);
  p.dbase = int32_t(v.dst_base);
  ctx.dispatch_elements("copy_nd", {wide(src), tile ? 1 : 0, int32_t(std::max<size_t>(1, v.dims.size()))},
                        {In(src), Out(dst)}, &p, sizeof p, uint64_t(n));
}

}  // namespace kestrel::vulkan

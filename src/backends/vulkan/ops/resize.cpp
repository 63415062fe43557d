// Resize (opsets 10+; shaders/resize.comp). The per-axis source indices and
// weights are computed on the host by the CPU reference's own maps
// (src/ops/resize_util.h) and uploaded as tables: nearest
// runs over any axes and dtypes; linear over the last two axes (bilinear, or
// 1-D linear) of float tensors. Cubic, antialiasing, tf_crop_and_resize and
// linear over leading axes are left to the CPU.
#include <algorithm>
#include <cstring>

#include "backends/vulkan/ops/geom_context.h"
#include "backends/vulkan/ops/movement.h"
#include "ops/resize_util.h"

namespace kestrel::vulkan {
namespace {

struct ResizePush {
  uint32_t base, n;
  Dims6 odims, istride, off;
};

std::vector<float> host_floats(const OpContext& ctx, int i) {
  return ctx.has_input(i) ? ctx.host_input(i).to_f32() : std::vector<float>{};
}

void resize(OpContext& ctx) {
  const ir::Node& n = ctx.node;
  const GpuTensor& x = ctx.input(0);
  int rank = int(x.shape.size());
  GeomContext g(n);
  ops::ResizeParams p = ops::resize_params(g);
  bool linear = p.mode == ops::ResizeMode::Linear;
  if (p.mode == ops::ResizeMode::Cubic) ctx.unsupported("cubic mode is left to the CPU");
  if (p.antialias && linear) ctx.unsupported("antialiasing is left to the CPU");
  if (p.ctm == "tf_crop_and_resize") ctx.unsupported("tf_crop_and_resize is left to the CPU");
  if (linear && !x.is_float()) ctx.fail("mode linear needs float input, got ", dtype_name(x.dtype));
  require_rank(ctx, x.shape);
  std::vector<float> scales_in = host_floats(ctx, n.opset >= 11 ? 2 : 1);
  std::vector<int64_t> sizes_in;
  if (n.opset >= 11 && ctx.has_input(3)) sizes_in = host_ints(ctx, 3);
  ops::ResizeTarget t = ops::resize_target(g, x.shape, scales_in, sizes_in);
  const Shape& out = t.out;
  for (int d = 0; d < rank; ++d)
    if (x.shape[size_t(d)] == 0 && out[size_t(d)] > 0)
      ctx.fail("cannot resize axis ", d, " of size 0 to ", out[size_t(d)]);
  require_i32_indexing(ctx, std::max(x.numel(), shape_numel(out)));

  // Tables over the 6 right-aligned dims (padding dims: size 1, identity).
  Shape in6(size_t(kMaxRank), 1), out6(size_t(kMaxRank), 1);
  std::vector<double> scale6(size_t(kMaxRank), 1.0);
  for (int d = 0; d < rank; ++d) {
    in6[size_t(kMaxRank - rank + d)] = x.shape[size_t(d)];
    out6[size_t(kMaxRank - rank + d)] = out[size_t(d)];
    scale6[size_t(kMaxRank - rank + d)] = t.scales[size_t(d)];
  }
  std::vector<int32_t> idx, wbits;
  ResizePush push{};
  std::vector<int64_t> ist = row_strides(in6);
  for (int k = 0; k < kMaxRank; ++k) {
    ops::ResizeAxisMap m = ops::resize_axis_map(p, in6[size_t(k)], out6[size_t(k)], scale6[size_t(k)]);
    if (linear && k < kMaxRank - 2 && !m.identity()) ctx.unsupported("linear resize over a leading axis");
    push.off.d[k] = int32_t(idx.size());
    push.odims.d[k] = int32_t(out6[size_t(k)]);
    push.istride.d[k] = int32_t(ist[size_t(k)]);
    for (int64_t i : m.idx) idx.push_back(int32_t(i));
    for (float w : m.w) {
      int32_t b;
      std::memcpy(&b, &w, 4);
      wbits.push_back(b);
    }
  }
  GpuTensor& y = ctx.output(0, x.dtype, out);
  if (y.numel() == 0) return;
  GpuTensor ti = ctx.upload_i32(idx);
  GpuTensor tw = ctx.upload_i32(linear ? wbits : std::vector<int32_t>{0});
  ctx.dispatch_elements("resize", {wide(x), linear ? 1 : 0}, {In(x), In(ti), In(tw), Out(y)}, &push, sizeof push,
                        uint64_t(y.numel()));
}

}  // namespace

KESTREL_VK_OP(Resize, {.min_opset = 10, .record = resize, .host_inputs = {1, 2, 3}});

}  // namespace kestrel::vulkan

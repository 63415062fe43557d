// What Conv and ConvInteger share on the Vulkan backend: the checked
// geometry of a 1-D/2-D convolution and the tiled implicit-GEMM dispatch
// (shaders/conv_gemm_body.glsl), split into bounded dispatches.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "backends/vulkan/ops/util.h"
#include "backends/vulkan/ops/window.h"

namespace kestrel::vulkan {

struct ConvSetup {
  int64_t N, C, M, group, Cg, Mg;
  ops::WindowGeom g;
  Shape out;
  int32_t kh, kw;  // 1-D runs as kh = 1
};

inline ConvSetup conv_setup(const OpContext& ctx, const Shape& X, const Shape& Wt) {
  if (X.size() < 3) ctx.fail("input must be N x C x spatial..., got ", shape_str(X));
  if (Wt.size() != X.size())
    ctx.fail("weight ", shape_str(Wt), " and input ", shape_str(X), " must have the same rank");
  if (X.size() > 4) ctx.unsupported(X.size() - 2, "-D convolution runs on the CPU");
  ConvSetup s;
  s.N = X[0], s.C = X[1], s.M = Wt[0], s.group = ctx.node.attr_i("group", 1);
  if (s.group < 1 || s.C % s.group || s.M % s.group)
    ctx.fail("group ", s.group, " must divide input channels ", s.C, " and output channels ", s.M);
  s.Cg = s.C / s.group, s.Mg = s.M / s.group;
  if (Wt[1] != s.Cg)
    ctx.fail("weight ", shape_str(Wt), " expects ", Wt[1] * s.group, " input channels (group ", s.group, ") but input ",
             shape_str(X), " has ", s.C);
  std::vector<int64_t> kernel = ops::spatial_dims(Wt);
  if (ctx.node.has("kernel_shape") && ctx.node.attr_ints("kernel_shape") != kernel)
    ctx.fail("kernel_shape attribute ", shape_str(ctx.node.attr_ints("kernel_shape")), " disagrees with weight ",
             shape_str(Wt));
  s.g = window_of(ctx, X, kernel, false);
  s.out = {s.N, s.M};
  s.out.insert(s.out.end(), s.g.out.begin(), s.g.out.end());
  s.kh = s.g.nd == 2 ? int32_t(s.g.kernel[0]) : 1;
  s.kw = int32_t(s.g.kernel.back());
  return s;
}

// Multiply-adds per dispatch: ~2^31 is ~10 ms on a mid-range phone GPU,
// far below the ~500 ms after which mobile drivers kill a dispatch.
constexpr int64_t kConvMacsPerDispatch = int64_t(1) << 31;

// Dispatches an implicit-GEMM convolution shader over its output tiles of
// bm channels x bn pixels, in bounded dispatches: x counts pixel tiles (from
// *tile0, inside `push`), y channel tiles, z (batch, group) pairs.
inline void dispatch_conv_tiles(OpContext& ctx, const ConvSetup& s, int64_t bm, int64_t bn, const std::string& shader,
                                const std::vector<int32_t>& spec, const std::vector<Binding>& bindings, void* push,
                                uint32_t push_bytes, int32_t* tile0) {
  const int64_t P = s.g.out_size(), K = s.Cg * s.g.kernel_size();
  const int64_t m_tiles = (s.Mg + bm - 1) / bm, p_tiles = (P + bn - 1) / bn, zs = s.N * s.group;
  if (m_tiles > 65535 || zs > 65535) ctx.unsupported("convolution grid ", m_tiles, " x ", zs, " is past 65535");
  const int64_t macs_per_tile = bn * s.Mg * K * zs;
  const int64_t macs = int64_t(macs_per_dispatch(ctx.device(), uint64_t(kConvMacsPerDispatch)));
  const int64_t tiles_per = std::clamp<int64_t>(macs / std::max<int64_t>(macs_per_tile, 1), 1, 65535);
  for (int64_t t0 = 0; t0 < p_tiles; t0 += tiles_per) {
    *tile0 = int32_t(t0);
    ctx.dispatch(shader, spec, bindings, push, push_bytes, uint32_t(std::min(tiles_per, p_tiles - t0)),
                 uint32_t(m_tiles), uint32_t(zs));
  }
}

// The plain kernels (conv_gemm_body.glsl): threads own TM channels x TN
// pixels (smaller tiles for few output channels per group or few pixels, so
// small layers do not compute mostly padding). `extra_spec` follows the
// body's TM, TN, KH, KW constants.
inline void record_conv_tiles(OpContext& ctx, const ConvSetup& s, const std::string& shader,
                              const std::vector<int32_t>& extra_spec, const std::vector<Binding>& bindings, void* push,
                              uint32_t push_bytes, int32_t* tile0) {
  const int64_t P = s.g.out_size();
  const int tm = s.Mg > 32 ? 4 : s.Mg > 16 ? 2 : 1;
  const int tn = P > 32 ? 4 : P > 16 ? 2 : 1;
  std::vector<int32_t> spec = {tm, tn, s.kh, s.kw};
  spec.insert(spec.end(), extra_spec.begin(), extra_spec.end());
  dispatch_conv_tiles(ctx, s, 16 * tm, 16 * tn, shader, spec, bindings, push, push_bytes, tile0);
}

}  // namespace kestrel::vulkan

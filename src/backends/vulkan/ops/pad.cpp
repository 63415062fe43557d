// Pad (shaders/pad.comp): modes constant, reflect, edge and wrap (opset 19);
// pads, the constant and axes (opset 18) as host inputs from opset 11,
// attributes before. Semantics of src/ops/pad.cpp.
#include "backends/vulkan/ops/movement.h"

namespace kestrel::vulkan {
namespace {

struct PadPush {
  uint32_t base, n;
  Dims6 odims, idims, before;
  float value;
  int32_t ivalue;
};

int parse_mode(const OpContext& ctx, const std::string& m) {
  if (m == "constant") return 0;
  if (m == "reflect") return 1;
  if (m == "edge") return 2;
  if (m == "wrap" && ctx.node.opset >= 19) return 3;
  ctx.fail("mode '", m, "' is not supported at opset ", ctx.node.opset);
}

void pad(OpContext& ctx) {
  const GpuTensor& x = ctx.input(0);
  int r = int(x.shape.size());
  const ir::Node& n = ctx.node;
  std::string ms = n.attr_s("mode", "constant");
  int mode = parse_mode(ctx, ms);
  std::vector<int64_t> pads, axes;
  double value = 0;
  if (n.opset < 11) {
    pads = n.attr_ints("pads");
    value = n.attr_f("value", 0);
  } else {
    pads = host_ints(ctx, 1);
    if (ctx.has_input(2)) {
      const Tensor& v = ctx.host_input(2);
      if (v.numel() != 1) ctx.fail("constant_value must hold one element, got ", shape_str(v.shape()));
      value = v.to_f32()[0];
      if (!x.is_float()) value = double(v.to_i64()[0]);
    }
    if (n.opset >= 18 && ctx.has_input(3)) axes = host_ints(ctx, 3);
  }
  if (axes.empty())
    for (int k = 0; k < r; ++k) axes.push_back(k);
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads ", shape_str(pads), " must have 2 x ", axes.size(), " entries for input ", shape_str(x.shape));
  std::vector<int64_t> before(size_t(r), 0), after(size_t(r), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int a = norm_axis(ctx, axes[i], r);
    before[size_t(a)] = pads[i];
    after[size_t(a)] = pads[i + axes.size()];
  }
  Shape out = x.shape;
  for (int k = 0; k < r; ++k) {
    int64_t d = x.shape[size_t(k)];
    out[size_t(k)] = d + before[size_t(k)] + after[size_t(k)];
    if (out[size_t(k)] < 0) ctx.fail("pads ", shape_str(pads), " remove more than axis ", k, " holds");
    if (mode != 0 && d == 0 && out[size_t(k)] > 0) ctx.fail("cannot pad the empty axis ", k, " in mode ", ms);
    if (mode != 0 && (before[size_t(k)] < 0 || after[size_t(k)] < 0))
      ctx.fail("negative pads ", shape_str(pads), " are only supported in constant mode");
  }
  if (r == 0) return ctx.set_output(0, x);
  require_rank(ctx, out);
  require_i32_indexing(ctx, std::max(x.numel(), shape_numel(out)));
  GpuTensor& y = ctx.output(0, x.dtype, out);
  PadPush p{};
  p.odims = dims6(out);
  p.idims = dims6(x.shape);
  for (int k = 0; k < kMaxRank; ++k) p.before.d[k] = k < kMaxRank - r ? 0 : int32_t(before[size_t(k - (kMaxRank - r))]);
  p.value = float(value);
  p.ivalue = int32_t(value);
  ctx.dispatch_elements("pad", {wide(x), mode}, {In(x), Out(y)}, &p, sizeof p, uint64_t(y.numel()));
}

}  // namespace

KESTREL_VK_OP(Pad, {.min_opset = 2, .record = pad, .host_inputs = {1, 2, 3}});

}  // namespace kestrel::vulkan

// LayerNormalization, InstanceNormalization (shaders/norm_rows.comp, one
// workgroup per normalized row) and inference BatchNormalization
// (shaders/batchnorm.comp, element-wise).
#include <cmath>

#include "backends/vulkan/ops/row_dispatch.h"
#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {
namespace {

struct NormPush {
  uint32_t row_base, row_end, n, channels, scale_len, bias_len;
  float eps;
};

bool wants_output(const OpContext& ctx, int i) { return i < ctx.num_outputs() && ctx.node.outputs[size_t(i)] >= 0; }

// The length of the trailing part of the row a LayerNorm parameter covers,
// when it broadcasts that way (all its leading dims of size 1, the rest
// equal to the row's); 0 otherwise.
int64_t trailing_len(const Shape& param, const Shape& row) {
  if (param.size() > row.size()) return 0;
  int64_t len = 1;
  bool leading = true;
  for (size_t k = 0; k < row.size(); ++k) {
    size_t pk = k + param.size();
    int64_t d = pk >= row.size() ? param[pk - row.size()] : 1;
    if (leading && d == 1) continue;
    leading = false;
    if (d != row[k]) return 0;
    len *= d;
  }
  return len;
}

void layer_norm(OpContext& ctx) {
  require_float(ctx, {0, 1, 2});
  const GpuTensor& x = ctx.input(0);
  int rank = int(x.shape.size());
  int axis = norm_axis(ctx, ctx.node.attr_i("axis", -1), rank);
  Shape row(x.shape.begin() + axis, x.shape.end()), stat = x.shape;
  for (int i = axis; i < rank; ++i) stat[size_t(i)] = 1;
  int64_t n = shape_numel(row), rows = n ? x.numel() / n : 0;
  const GpuTensor& scale = ctx.input(1);
  bool has_bias = ctx.has_input(2);
  int64_t scale_len = trailing_len(scale.shape, row);
  int64_t bias_len = has_bias ? trailing_len(ctx.input(2).shape, row) : 1;
  if (!scale_len || !bias_len) ctx.fail("Scale/B do not broadcast to the normalized shape ", shape_str(row));
  if (x.numel() == 0) ctx.unsupported("empty input");
  bool stats = wants_output(ctx, 1) || wants_output(ctx, 2);
  GpuTensor& y = ctx.output(0, x.dtype, x.shape);
  // The statistics are float32 (stash_type 1) whatever X is.
  const GpuTensor& mean = wants_output(ctx, 1) ? ctx.output(1, DType::Float32, stat) : x;
  const GpuTensor& inv = wants_output(ctx, 2) ? ctx.output(2, DType::Float32, stat) : x;
  NormPush p{0, 0, uint32_t(n), 1, uint32_t(scale_len), uint32_t(bias_len), ctx.node.attr_f("epsilon", 1e-5f)};
  dispatch_rows(ctx, norm_rows_shader(ctx, n, false), {0, has_bias ? 1 : 0, stats ? 1 : 0},
                {In(x), In(scale), In(has_bias ? ctx.input(2) : scale), Out(y), Out(mean), Out(inv)}, &p, sizeof p,
                uint64_t(rows), uint64_t(2 * n));
}

void instance_norm(OpContext& ctx) {
  require_float(ctx, {0, 1, 2});
  const GpuTensor& x = ctx.input(0);
  if (x.shape.size() < 2) ctx.fail("input must have at least 2 dims [N, C, ...], got ", shape_str(x.shape));
  int64_t c = x.shape[1];
  if (ctx.input(1).numel() != c || ctx.input(2).numel() != c)
    ctx.fail("scale and B must have ", c, " values (one per channel)");
  if (x.numel() == 0) ctx.unsupported("empty input");
  int64_t rows = x.shape[0] * c, n = x.numel() / rows;
  GpuTensor& y = ctx.output(0, x.dtype, x.shape);
  NormPush p{0, 0, uint32_t(n), uint32_t(c), 1, 1, ctx.node.attr_f("epsilon", 1e-5f)};
  dispatch_rows(ctx, norm_rows_shader(ctx, n, false), {1, 1, 0},
                {In(x), In(ctx.input(1)), In(ctx.input(2)), Out(y), Out(y), Out(y)}, &p, sizeof p, uint64_t(rows),
                uint64_t(2 * n));
}

struct BatchNormPush {
  uint32_t base, n, pdiv, pmod;
};

// The parameters fold on the host, in double, into y = x * k + shift: a
// variance or mean past float16's range (65504) would otherwise overflow in
// float16 storage.
void batch_norm(OpContext& ctx) {
  if (ctx.node.attr_i("training_mode", 0)) ctx.fail("training_mode=1 is not supported (Kestrel runs inference only)");
  for (int i = 1; i < 5; ++i)
    if (wants_output(ctx, i)) ctx.unsupported("the training outputs (running mean/var) are computed on the CPU");
  require_float(ctx, {0});
  const GpuTensor& x = ctx.input(0);
  int64_t n = x.shape.size() > 0 ? x.shape[0] : 1, c = x.shape.size() > 1 ? x.shape[1] : 1;
  int64_t s = (n != 0 && c != 0) ? x.numel() / (n * c) : 0;
  // Opsets 7 and 8 allow spatial=0: one parameter per element of [C, D1, ...].
  bool per_elem = ctx.node.opset < 9 && ctx.node.attr_i("spatial", 1) == 0;
  int64_t pc = per_elem ? c * s : c;
  std::vector<float> param[4];
  for (int i = 1; i < 5; ++i) {
    const Tensor& t = ctx.host_input(i);
    if (!dtype_is_float(t.dtype())) ctx.fail("input ", i, " must be float, got ", dtype_name(t.dtype()));
    if (t.numel() != pc) ctx.fail("input ", i, " has shape ", shape_str(t.shape()), " but ", pc, " values are needed");
    param[i - 1] = t.to_f32();
  }
  GpuTensor& y = ctx.output(0, x.dtype, x.shape);
  if (x.numel() == 0) return;
  const double eps = ctx.node.attr_f("epsilon", 1e-5f);
  const size_t count = size_t(pc);
  std::vector<float> mul(count), add(count);
  for (size_t j = 0; j < size_t(pc); ++j) {
    double kj = double(param[0][j]) / std::sqrt(double(param[3][j]) + eps);
    mul[j] = float(kj);
    add[j] = float(double(param[1][j]) - double(param[2][j]) * kj);
  }
  GpuTensor mul_t = ctx.upload_f32(mul), add_t = ctx.upload_f32(add);
  BatchNormPush p{0, 0, uint32_t(per_elem ? 1 : s), uint32_t(pc)};
  ctx.dispatch_elements("batchnorm", {}, {In(x), In(mul_t), In(add_t), Out(y)}, &p, sizeof p, uint64_t(x.numel()));
}

}  // namespace

KESTREL_VK_OP(LayerNormalization, {.min_opset = 17, .record = layer_norm});
KESTREL_VK_OP(InstanceNormalization, {.record = instance_norm});
KESTREL_VK_OP(BatchNormalization, {.min_opset = 7, .record = batch_norm, .host_inputs = {1, 2, 3, 4}});

}  // namespace kestrel::vulkan

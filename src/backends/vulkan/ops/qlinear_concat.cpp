// com.microsoft QLinearConcat (shaders/qlinear_concat.comp), as
// ops/qlinear_concat.cpp has it: each input requantized to the output's
// scale and zero point through the CPU's table, or copied (an identity
// table) where they are the output's, then concatenated along `axis`.
// Scales and zero points (one value each) read on the host.
#include <numeric>

#include "backends/vulkan/ops/requantize.h"
#include "ops/qlinear_concat.h"

namespace kestrel::vulkan {
namespace {

// Inputs whose scales and zero points are host inputs (VkOpDef::host_inputs
// lists a fixed set of indices).
constexpr int kMaxInputs = 64;

std::vector<int> host_inputs() {
  std::vector<int> at = {0, 1};
  for (int k = 0; k < kMaxInputs; ++k) at.push_back(3 + 3 * k), at.push_back(4 + 3 * k);
  return at;
}

struct ConcatPush {
  uint32_t base, n, count, row, out_row, at;
};

void qlinear_concat(OpContext& ctx) {
  int count = 0;
  if (std::string e = ops::qlinear_concat_count(ctx.num_inputs(), count); !e.empty()) ctx.fail(e);
  if (count > kMaxInputs) ctx.unsupported("QLinearConcat of more than ", kMaxInputs, " inputs");
  if (!ctx.has_input(1)) ctx.fail("Y_zero_point is required");
  const DType type = ctx.host_input(1).dtype();
  const ops::QParam yp = host_qparam(ctx, 0, 1, type, "Y");
  std::vector<Shape> shapes;
  std::vector<DType> types;
  for (int k = 0; k < count; ++k) {
    shapes.push_back(ctx.input(2 + 3 * k).shape);
    types.push_back(ctx.input(2 + 3 * k).dtype);
  }
  Shape out;
  int axis = 0;
  if (std::string e = ops::plan_qlinear_concat(shapes, types, type, ctx.node.attr_i("axis", 0), out, axis);
      !e.empty())
    ctx.fail(e);
  const int rank = int(out.size());
  require_int32_sizes(ctx, {shape_numel(out)});
  GpuTensor& Y = ctx.output(0, type, out);
  if (Y.numel() == 0) return;
  int64_t inner = 1;
  for (int d = axis + 1; d < rank; ++d) inner *= out[size_t(d)];
  ConcatPush p{0, 0, 0, 0, uint32_t(out[size_t(axis)] * inner), 0};
  ctx.dispatch_elements("qlinear_concat", {0}, {In(Y), In(Y), Out(Y)}, &p, sizeof p, (uint64_t(Y.numel()) + 3) / 4);
  int64_t at = 0;
  for (int k = 0; k < count; ++k) {
    const GpuTensor& X = ctx.input(2 + 3 * k);
    const ops::QParam xp = host_qparam(ctx, 3 + 3 * k, 4 + 3 * k, type, "X");
    const int64_t row = X.shape[size_t(axis)] * inner;
    std::vector<int32_t> table(256);
    if (ops::same_qparam(xp, yp)) {
      std::iota(table.begin(), table.end(), 0);  // copied
    } else {
      const std::array<uint8_t, 256> t = ops::qlinear_requant_table(type, xp, yp);
      table.assign(t.begin(), t.end());
    }
    if (X.numel() > 0) {
      const GpuTensor t = ctx.upload_i32(table);
      ConcatPush q{0, 0, uint32_t(X.numel()), uint32_t(row), p.out_row, uint32_t(at)};
      ctx.dispatch_elements("qlinear_concat", {1}, {In(X), In(t), Out(Y)}, &q, sizeof q,
                            (uint64_t(X.numel()) + 3) / 4);
    }
    at += row;
  }
}

}  // namespace

KESTREL_VK_OP(QLinearConcat, {.domain = "com.microsoft", .record = qlinear_concat, .host_inputs = host_inputs()});

}  // namespace kestrel::vulkan

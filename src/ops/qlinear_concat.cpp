// com.microsoft QLinearConcat (ONNX Runtime's quantization tools write it
// for Concat): each 8-bit input requantized to the output's scale and zero
// point through a table of its 256 values (qlinear_params.h: dequantized,
// quantized again), or copied where its scale and zero point are the
// output's, as ONNX Runtime does, then concatenated along `axis`.
//
// Inputs: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input.
#include <cstring>

#include "ops/qlinear_concat.h"
#include "ops/qlinear_params.h"
#include "ops/registry.h"

namespace kestrel::ops {
namespace {

void run_qlinear_concat(KernelContext& ctx) {
  int count = 0;
  if (std::string e = qlinear_concat_count(ctx.num_inputs(), count); !e.empty()) ctx.fail(e);
  if (!ctx.has_input(1)) ctx.fail("Y_zero_point is required");
  const DType type = ctx.input(1).dtype();
  const QParam yp = qparam(ctx, 0, 1, type, "Y");
  std::vector<Shape> shapes;
  std::vector<DType> types;
  for (int k = 0; k < count; ++k) {
    shapes.push_back(ctx.input(2 + 3 * k).shape());
    types.push_back(ctx.input(2 + 3 * k).dtype());
  }
  Shape out;
  int axis = 0;
  if (std::string e = plan_qlinear_concat(shapes, types, type, ctx.node.attr_i("axis", 0), out, axis); !e.empty())
    ctx.fail(e);
  const int rank = int(out.size());
  Tensor& Y = ctx.output(0, type, out);
  if (Y.numel() == 0) return;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= out[size_t(d)];
  for (int d = axis + 1; d < rank; ++d) inner *= out[size_t(d)];
  const int64_t out_row = out[size_t(axis)] * inner;
  uint8_t* y = Y.raw();
  int64_t at = 0;  // where this input's block starts in an output row
  for (int k = 0; k < count; ++k) {
    const Tensor& X = ctx.input(2 + 3 * k);
    const QParam xp = qparam(ctx, 3 + 3 * k, 4 + 3 * k, type, "X");
    const bool copy = same_qparam(xp, yp);
    std::array<uint8_t, 256> table{};
    if (!copy) table = qlinear_requant_table(type, xp, yp);
    const int64_t row = X.dim(axis) * inner;
    const uint8_t* x = X.raw();
    for (int64_t o = 0; o < outer; ++o) {
      uint8_t* dst = y + o * out_row + at;
      if (copy) std::memcpy(dst, x + o * row, size_t(row));
      else apply_table(table, x + o * row, dst, row);
    }
    at += row;
  }
}

}  // namespace

KESTREL_OP(QLinearConcat, {.domain = "com.microsoft", .run = run_qlinear_concat});

}  // namespace kestrel::ops

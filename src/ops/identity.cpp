// Identity, Dropout (inference: identity, mask of ones) and Constant.
#include "ops/common.h"

namespace kestrel::ops {
namespace {

void run_identity(KernelContext& ctx) { ctx.set_output(0, ctx.input(0)); }

void run_dropout(KernelContext& ctx) {
  // Inference mode: training_mode (input 2) must be false; ratio is ignored.
  if (ctx.has_input(2) && ctx.input(2).to_f32().at(0) != 0)
    ctx.fail("training_mode=true is not supported (Kestrel runs inference only)");
  ctx.set_output(0, ctx.input(0));
  if (ctx.wants_output(1)) {
    Tensor& mask = ctx.output(1, DType::Bool, ctx.input(0).shape());
    std::fill_n(mask.data<bool>(), mask.numel(), true);
  }
}

void run_constant(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  if (const ir::Attribute* a = n.attr("value")) return ctx.set_output(0, a->t);
  if (const ir::Attribute* a = n.attr("value_float")) return ctx.set_output(0, Tensor::scalar_f32(a->f));
  if (const ir::Attribute* a = n.attr("value_int")) return ctx.set_output(0, Tensor::scalar_i64(a->i));
  if (const ir::Attribute* a = n.attr("value_floats"))
    return ctx.set_output(0, Tensor::from_f32({int64_t(a->floats.size())}, a->floats));
  if (const ir::Attribute* a = n.attr("value_ints")) return ctx.set_output(0, Tensor::from_i64(a->ints));
  ctx.fail("has no value attribute Kestrel can read (sparse_value and strings are not supported)");
}

}  // namespace

KESTREL_OP(Identity, {.run = run_identity, .half_native = true});
KESTREL_OP(Dropout, {.run = run_dropout, .half_native = true});
KESTREL_OP(Constant, {.run = run_constant, .half_native = true});

}  // namespace kestrel::ops

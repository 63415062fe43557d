// Cast between the dtypes the device holds (shaders/cast.comp). Float32 and
// float16 share the run's float storage, int32/int64/bool share int32
// storage: casts within one storage are aliases, except float32 -> float16 in
// a float32 run, which rounds every value to float16. Semantics of
// src/ops/cast.cpp: float -> int truncates toward 0; nonzero (NaN too) is true.
#include "backends/vulkan/ops/movement.h"

namespace kestrel::vulkan {
namespace {

bool is_int_storage(DType t) { return t == DType::Int32 || t == DType::Int64 || t == DType::Bool; }
bool is_float(DType t) { return t == DType::Float32 || t == DType::Float16; }

void cast(OpContext& ctx) {
  const ir::Attribute* a = ctx.node.attr("to");
  if (!a) ctx.fail("missing the 'to' attribute");
  DType to = DType(a->i);
  const GpuTensor& x = ctx.input(0);
  if (!is_float(to) && !is_int_storage(to)) ctx.unsupported("casting to ", dtype_name(to), " is left to the CPU");
  if (x.is_byte()) ctx.unsupported("casting from packed ", dtype_name(x.dtype), " is left to the CPU");
  // Integers (e.g. ConvInteger's int32 sums) routinely pass float16's 65504.
  if (ctx.half() && !x.is_float() && x.dtype != DType::Bool && is_float(to))
    ctx.unsupported("integer to float in float16 storage could overflow; left to the CPU");
  int mode = -1;  // -1: an alias
  if (x.is_float() && is_float(to)) mode = (!ctx.half() && to == DType::Float16 && x.dtype == DType::Float32) ? 0 : -1;
  else if (x.is_float()) mode = to == DType::Bool ? 3 : 1;
  else if (is_float(to)) mode = 2;
  else if (to == DType::Bool && x.dtype != DType::Bool) mode = 4;
  if (mode < 0) {
    GpuTensor y = x;
    y.dtype = to;
    ctx.set_output(0, y);
    return;
  }
  GpuTensor& y = ctx.output(0, to, x.shape);
  uint32_t p[2] = {0, 0};
  ctx.dispatch_elements("cast", {mode}, {In(x), Out(y)}, p, sizeof p, uint64_t(x.numel()));
}

}  // namespace

KESTREL_VK_OP(Cast, {.min_opset = 6, .record = cast});

}  // namespace kestrel::vulkan

#include "backends/cpu/fast_kernels.h"

namespace kestrel::backends::cpu {
namespace {
ops::KernelTable<FastKernel>& table() {
  static ops::KernelTable<FastKernel> t;
  return t;
}
}  // namespace

bool register_fast_kernel(FastKernel k) {
  table().add(std::move(k));
  return true;
}

const FastKernel* find_fast_kernel(const std::string& domain, const std::string& op, int opset) {
  return table().find(domain, op, opset);
}

std::vector<const FastKernel*> all_fast_kernels() { return table().all(); }

void run_reference_kernel(ops::KernelContext& ctx) {
  const ops::OpDef* ref = ops::find_op(ctx.node.domain, ctx.node.op_type, ctx.node.opset);
  if (!ref) ctx.fail("no reference ", ctx.node.op_type, " kernel at opset ", ctx.node.opset);
  ref->run(ctx);
}

}  // namespace kestrel::backends::cpu

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

}  // namespace kestrel::backends::cpu

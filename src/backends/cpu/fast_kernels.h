// The CPU backend's fast kernels: an op's kernel written for speed on the
// CPU (blocking, direct loops for the shapes a GEMM lowering loses on, SIMD),
// registered beside the op's reference kernel in ops/, which stays the
// oracle. The executor runs the fast kernel where one is registered for the
// node's op and opset, unless the session asks for the reference kernels
// (CpuKernels::Reference); the op's facts (OpDef) are the reference's either
// way. Each fast kernel has parity cases against its reference
// (tests/backend_ops, CpuFastKernelsMatchReference).
//
//   static void run_conv(ops::KernelContext& ctx) { ... }
//   KESTREL_CPU_KERNEL(Conv, {.min_opset = 1, .run = run_conv});
#pragma once
#include <string>
#include <vector>

#include "ops/registry.h"

namespace kestrel::backends::cpu {

struct FastKernel {
  std::string name;
  std::string domain;  // "" is the default ONNX domain
  int min_opset = 1;
  int max_opset = 21;
  ops::KernelFn run = nullptr;
  const char* file = "";  // the source file that registers it (KESTREL_CPU_KERNEL sets it)
};

// Returns true so it can initialise a static.
bool register_fast_kernel(FastKernel k);
// nullptr when no fast kernel handles (domain, op) at this opset.
const FastKernel* find_fast_kernel(const std::string& domain, const std::string& op, int opset);
std::vector<const FastKernel*> all_fast_kernels();
// Runs the node's reference kernel: what a fast kernel does with the cases
// it does not take.
void run_reference_kernel(ops::KernelContext& ctx);

#define KESTREL_CPU_KERNEL(NAME, ...)                                               \
  static const bool KESTREL_OP_CAT(kestrel_fast_kernel_, __LINE__) = [] {           \
    ::kestrel::backends::cpu::FastKernel k __VA_ARGS__;                             \
    k.name = #NAME;                                                                 \
    k.file = __FILE__;                                                              \
    return ::kestrel::backends::cpu::register_fast_kernel(k);                       \
  }()

}  // namespace kestrel::backends::cpu

// How Softmax, LogSoftmax and Hardmax see their input: [outer, n, inner],
// the op running along n. Before opset 13 the input is a 2-D matrix
// [prod(dims before axis), prod(dims from axis)] (inner 1); from 13 on only
// the one axis is n. The reference kernels (ops/softmax.cpp) and the CPU
// backend's read it here.
#pragma once
#include <cstdint>

#include "core/tensor.h"
#include "ops/registry.h"

namespace kestrel::ops {

struct SoftmaxLayout {
  int64_t outer = 1, n = 1, inner = 1;
};
SoftmaxLayout softmax_layout(const KernelContext& ctx, const Tensor& x);

}  // namespace kestrel::ops

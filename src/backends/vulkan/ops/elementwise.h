// The element-wise recordings the unary, activation, clip, binary and
// variadic kernels share (shaders/unary.comp, shaders/binary.comp). Each op
// registers in the file named like its op's in src/ops/ (unary_math.cpp,
// activations.cpp, clip.cpp, binary_arith.cpp, variadic.cpp).
#pragma once
#include "backends/vulkan/ops/util.h"

namespace kestrel::vulkan {

// y = act(x; a, b), element-wise over a float tensor.
void record_unary(OpContext& ctx, UnaryFn act, float a, float b);

template <UnaryFn A>
void unary(OpContext& ctx) { record_unary(ctx, A, 0, 0); }

// out = a OP b with broadcasting (op: the binary shader's operation).
void record_binary_of(OpContext& ctx, int op, const GpuTensor& a, const GpuTensor& b, GpuTensor& out);

// The node's output = input 0 OP input 1, broadcast, both float of one type.
void record_binary(OpContext& ctx, int op);

}  // namespace kestrel::vulkan

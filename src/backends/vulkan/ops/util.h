// Small helpers the Vulkan kernels share.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "backends/vulkan/op.h"
#include "ops/activation.h"

namespace kestrel::vulkan {

// The multiply-adds one dispatch may hold. On a mobile or integrated GPU it
// is the kernel's own bound (far under the ~500 ms after which mobile drivers
// kill a dispatch). A discrete GPU takes 32 times that: the dispatches of one
// node write one output, so a barrier separates each from the next, and a
// dispatch must hold enough workgroups to fill a GPU of a hundred or more
// compute units (2^35 multiply-adds: about 3 ms at 25 TFLOP/s). A CPU
// implementation of Vulkan (lavapipe) computes about 1 GFLOP/s when other
// work shares its two cores, so there a dispatch holds at most 2^28 (about
// half a second), and the recorder closes a submit between dispatches of a
// large node (recorder.h), each far within the wait limit.
inline uint64_t macs_per_dispatch(const DeviceInfo& d, uint64_t gpu_bound) {
  if (d.type == "cpu") return std::min<uint64_t>(gpu_bound, uint64_t(1) << 28);
  if (d.type == "discrete") return gpu_bound * 32;
  return gpu_bound;
}

// The function numbers of shaders/activation.glsl: the unary ops' kernels
// and the activations GEMM and Conv epilogues apply (an ops::Activation maps
// to one with shader_activation).
enum class UnaryFn : int32_t {
  None = 0, Relu = 1, Clip = 2, LeakyRelu = 3, HardSigmoid = 4, Sigmoid = 5, Tanh = 6, Exp = 7, Log = 8,
  Sqrt = 9, Abs = 10, Neg = 11, Reciprocal = 12, Floor = 13, Ceil = 14, Round = 15, Erf = 16, Sin = 17,
  Cos = 18, Elu = 19, Selu = 20, HardSwish = 21, Softplus = 22, Softsign = 23, Gelu = 24, GeluTanh = 25,
  Silu = 26, Mish = 27, ThresholdedRelu = 28, Sign = 29, Celu = 30, Tan = 31, Asin = 32, Acos = 33, Atan = 34,
  SigmoidScaled = 35, MulHardSigmoid = 36, Relu6HardSwish = 37,
};

// A shader function and its two parameters.
struct ActParams {
  UnaryFn act = UnaryFn::None;
  float a = 0, b = 0;
};
// An activation (ops/activation.h) as the shaders' function and parameters.
ActParams shader_activation(ops::Activation act, float a = 0, float b = 0);
// The activation the fusion passes recorded on a Conv/Gemm/MatMul node.
ActParams fused_activation(const ir::Node& n);

// Sizes and offsets are int32 in the shaders.
inline void require_int32_sizes(const OpContext& ctx, std::initializer_list<int64_t> numels) {
  for (int64_t n : numels)
    if (n >= (int64_t(1) << 31)) ctx.unsupported("a tensor of ", n, " elements is past int32 indexing");
}

inline Shape broadcast_pair(const OpContext& ctx, const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t y = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (x != y && x != 1 && y != 1)
      ctx.fail("shapes ", shape_str(a), " and ", shape_str(b), " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// Push constants of the broadcasting two-input shaders (binary, compare,
// logic; KESTREL_BROADCAST_PUSH in shaders/common.glsl).
struct BroadcastPush {
  uint32_t base, n;  // filled by dispatch_elements
  Dims6 dims, sa, sb;
};
inline BroadcastPush broadcast_push(const Shape& a, const Shape& b, const Shape& out) {
  return {0, 0, dims6(out), broadcast_strides6(a, out), broadcast_strides6(b, out)};
}

inline int norm_axis(const OpContext& ctx, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) ctx.fail("axis ", axis, " is out of range for rank ", rank);
  return int(axis < 0 ? axis + rank : axis);
}

// Every listed input is a float tensor on the device, else the node runs on the CPU.
inline void require_float(const OpContext& ctx, std::initializer_list<int> inputs) {
  for (int i : inputs)
    if (ctx.has_input(i) && !ctx.input(i).is_float())
      ctx.unsupported("input ", i, " is ", dtype_name(ctx.input(i).dtype), " (float kernels only)");
}
inline void require_rank(const OpContext& ctx, const Shape& s, int max_rank = kMaxRank) {
  if (int(s.size()) > max_rank) ctx.unsupported("rank ", s.size(), " is past the kernel's ", max_rank);
}

}  // namespace kestrel::vulkan

// The backend parity harness: every op case runs as a one-node model on the
// reference kernels (ops/, CpuKernels::Reference), on the CPU backend's fast
// kernels and products, and on the Vulkan backend in each precision, and the
// fast and Vulkan outputs are compared with the reference's (NMSE and max-abs
// error). A case the Vulkan backend leaves on the CPU is "unsupported", which
// fails unless the case says why it is expected (e.g. an op that has no
// float16 path).
//
// Cases live in cases_*.cpp next to this file, one file per family of ops,
// registered statically:
//
//   static const bool reg = add_cases({
//       {.label = "Relu odd", .op = "Relu", .inputs = {rnd("x", {3, 5, 7})}},
//   });
#pragma once
#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace kestrel::backend_ops {

struct InputSpec {
  std::string name;
  Shape shape;
  DType dtype = DType::Float32;
  float lo = -1, hi = 1;       // random values in [lo, hi) (integers: rounded)
  Tensor value;                // when set: this exact tensor
  bool initializer = false;    // a weight (an initializer) rather than a graph input
};
// Random float input in [lo, hi).
InputSpec rnd(const std::string& name, Shape shape, float lo = -1, float hi = 1);
// Random float weight (initializer).
InputSpec weight(const std::string& name, Shape shape, float lo = -1, float hi = 1);
// A constant int64 tensor given as an initializer (shapes, axes, pads...).
InputSpec ints(const std::string& name, const std::vector<int64_t>& v, bool as_1d = true);
// A constant float tensor given as an initializer (scales, bounds...).
InputSpec floats(const std::string& name, const std::vector<float>& v);
// An omitted optional input.
InputSpec absent();

struct OpCase {
  std::string label;
  std::string op;
  int opset = 17;
  std::vector<InputSpec> inputs;
  std::function<void(onnx::NodeProto&)> attrs;  // optional
  int outputs = 1;
  // Tolerances (see harness.cpp for the defaults and why).
  double fp32_nmse = 1e-9, fp16_nmse = 1e-5;
  double fp32_abs = 1e-4, fp16_abs = 1e-2;  // relative to max(1, max |reference|)
  // Integer outputs must match exactly unless this allows a difference (e.g.
  // quantization, where a GPU's division may land on the other side of .5).
  int64_t int_tolerance = 0;
  // Non-empty: the Vulkan backend is expected to leave this case on the CPU in float16.
  std::string fp16_unsupported;
  // Non-empty: the op has a Vulkan kernel, which must leave this case on the
  // CPU (why) in both precisions: the harness fails the case if it runs there.
  std::string vulkan_unsupported;
  // Non-empty: the op has no Vulkan kernel (why); the case checks the CPU's
  // fast kernels and products against the reference only. (The harness
  // fails the case if the op does have one.)
  std::string no_vulkan_kernel;
  std::string domain;
};

bool add_cases(std::vector<OpCase> cases);
const std::vector<OpCase>& all_cases();

// Attribute helpers for OpCase::attrs.
void attr_i(onnx::NodeProto& n, const std::string& name, int64_t v);
void attr_f(onnx::NodeProto& n, const std::string& name, float v);
void attr_s(onnx::NodeProto& n, const std::string& name, const std::string& v);
void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);
void attr_floats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v);

}  // namespace kestrel::backend_ops

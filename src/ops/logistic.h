// The logistic function (Sigmoid) over float32, as ONNX Runtime's CPU
// provider computes it: Eigen's rational approximation of degree 9/10 on x
// clamped to [-18, 18], the result clamped to [0, 1], with fused
// multiply-adds where the CPU has them (x86-64-v3) and separate products and
// sums where it does not, as ONNX Runtime picks its kernel. Within 1e-7 of
// the true logistic; what it buys is ONNX Runtime's bits: in a dynamically
// quantized model (YOLOv8n int8: Conv, Sigmoid, Mul, DynamicQuantizeLinear)
// an ulp of difference can cross a quantization boundary and grow.
#pragma once
#include <cstdint>

namespace kestrel::ops {

void logistic(const float* x, float* y, int64_t n);

}  // namespace kestrel::ops

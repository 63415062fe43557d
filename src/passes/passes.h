// Load-time graph rewrites, run once per Session before the backend compiles.
// Each pass lives in its own file and keeps the graph's results unchanged.
#pragma once
#include "ir/graph.h"

namespace kestrel::passes {

// Evaluates, once at load, every node whose inputs are all constants
// (initializers or Constant nodes), and Shape/Size of tensors whose shape is
// exactly known (initializers, graph inputs with fixed dims). The results
// become initializers and the nodes disappear. Returns the number folded.
// In a subgraph, names read from enclosing scopes are never constant, and
// the graph's inputs (a Loop body's) are not checked against declared dims.
int fold_constants(ir::Graph& g, bool is_subgraph = false);

// Moves a Relu/Clip/LeakyRelu/HardSigmoid/Sigmoid that alone reads a Conv's
// output into that Conv as an epilogue (see ops/epilogue.h). Returns the count.
// only_into_quantizers: only activations of a Conv whose output a
// QuantizeLinear alone reads (the QDQ fusion's input, run before the other
// passes, which must not meet a Conv already carrying its activation: a
// BatchNormalization after it would fold wrongly).
int fuse_activations(ir::Graph& g, bool only_into_quantizers = false);

// Folds a constant-mode zero Pad of the spatial dims, read only by a Conv,
// into that Conv's pads. Returns the count.
int fuse_pads(ir::Graph& g);

// Folds a space-to-depth written as four strided Slices and a Concat
// (YOLOv5's and YOLOX's Focus stem) into the Conv that reads it, as a
// stride-2 Conv of twice the kernel on the image (fold_space_to_depth.cpp).
// Returns the count.
int fold_space_to_depth(ir::Graph& g);

// Folds an inference BatchNormalization (float32 initializer parameters) into
// the Conv/ConvTranspose before it, through an optional per-channel constant
// Add. Returns the count.
int fold_batchnorm(ir::Graph& g);

// Folds per-channel constant Muls and Adds after a Conv into its weights (or
// its weights' dequantization scale) and bias (fold_conv_affine.cpp).
// Returns the number of Convs changed.
int fold_conv_affine(ir::Graph& g);

// Rewrites DequantizeLinear -> Conv [-> Relu] -> QuantizeLinear into one
// QLinearConv with ONNX Runtime's arithmetic (fuse_qdq_conv.cpp). Returns the
// count. Must run before fold_constants.
int fuse_qdq_convs(ir::Graph& g);
// DequantizeLinear, DequantizeLinear -> MatMul -> QuantizeLinear as one
// QLinearMatMul (fuse_qdq_matmul.cpp). Returns the count.
int fuse_qdq_matmuls(ir::Graph& g);
// MatMuls of int4/uint4 blockwise-dequantized weights -> com.microsoft
// MatMulNBits (fuse_nbits_matmul.cpp). Returns the count.
int fuse_nbits_matmuls(ir::Graph& g);
// ONNX Runtime's dynamic quantization of a MatMul (DynamicQuantizeLinear,
// MatMulInteger, Cast, the scales' Muls [, the bias' Add]) as one
// com.microsoft DynamicQuantizeMatMul with the same bits
// (fuse_dynamic_quantize_matmul.cpp). Returns the count.
int fuse_dynamic_quantize_matmuls(ir::Graph& g);

// Rewrites DequantizeLinear, DequantizeLinear -> Add [-> Relu] ->
// QuantizeLinear into one com.kestrel QdqAdd with the same bits
// (fuse_qdq_add.cpp). Returns the count. Runs beside fuse_qdq_convs.
int fuse_qdq_adds(ir::Graph& g);

// Restores MatMul [+ Add] where ONNX Runtime flattened a linear layer on a
// 3-D activation into Reshape -> Gemm -> Reshape (unflatten_gemm.cpp), the
// form the transformer families recognize. Returns the count.
int unflatten_gemms(ir::Graph& g);

// What the backend that will run the graph wants from the passes.
struct PassOptions {
  // A QDQ graph's quantized convolutions, products and sums become integer
  // ops (QLinearConv, QLinearMatMul, MatMulIntegerToFloat,
  // DynamicQuantizeMatMul, QdqAdd), which both backends run; false keeps the
  // float form between the quantizers.
  bool integer_qdq = false;
};

// The passes Kestrel runs by default, in order, on the graph and on every
// subgraph (If branches, Loop and Scan bodies) inside it.
void run_default_passes(ir::Graph& g, const PassOptions& options = {});

}  // namespace kestrel::passes

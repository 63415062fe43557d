// The ONNX side of static quantization: which tensors of a model are
// quantized, the model with those tensors as extra outputs (to calibrate
// them), and the model rewritten in ONNX's QDQ form: QuantizeLinear then
// DequantizeLinear on each quantized activation, DequantizeLinear on each
// int8 weight, as ONNX Runtime's quantize_static writes it, so ONNX Runtime
// and Kestrel both run the result.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "quantize/quant_params.h"

namespace onnx {
class ModelProto;
}

namespace kestrel::quantize {

// One node whose float inputs become quantized: Conv (weight per output
// channel, axis 0), MatMul with a constant right side (per column, its last
// axis) and Gemm with a constant B (per output column).
//
// A Conv's output is quantized too (as ONNX Runtime's quantize_static does),
// after the activation that follows it, if any (Relu, Clip, LeakyRelu,
// HardSigmoid, Sigmoid, HardSwish, or x * Sigmoid(x)): every reader then
// takes the dequantized value, and the whole Conv becomes one integer
// convolution (passes/fuse_qdq_conv.cpp) instead of a float one between
// quantizers. Not where that value is a graph output (those stay float), nor
// where a Conv, MatMul or Gemm left in float reads it (qdq_model).
struct QuantTarget {
  int node = 0;             // index in the main graph
  std::string name;         // the node's name (onnx_io::node_name)
  std::string activation;   // input 0
  std::string weight;       // the initializer
  int weight_axis = 0;      // the output-channel axis of the weight
  std::string output;       // the value quantized after the node (empty: none)
};

// The model read with its external data inlined (the rewritten model is one
// file) and its Constant nodes' tensors as initializers (Paddle2ONNX stores
// weights that way). Fails naming the file or the reason.
std::shared_ptr<onnx::ModelProto> read_model(const std::string& path);
int default_opset(const onnx::ModelProto& m);

// Converts the model to `target` (above its opset) with ONNX's version
// converter, one opset at a time with shapes inferred before each step (the
// converter's Softmax and Reshape adapters need them). Throws what failed.
void convert_opset(onnx::ModelProto& m, int target);

// An initializer of the model as a tensor.
Tensor weight_tensor(const onnx::ModelProto& m, const std::string& name);

// The nodes quantized, in graph order; `skipped` gets "node 'x' (MatMul): its
// right side is not a constant" for nodes of those ops left in float.
std::vector<QuantTarget> find_targets(const onnx::ModelProto& m, std::vector<std::string>* skipped);

// The sums of residual blocks, quantized as ONNX Runtime's quantize_static
// quantizes an Add's output: each Add of two computed values (no constant),
// past the one-op activation that alone reads it; not graph outputs. Every
// reader then takes the sum dequantized, so the block's next addition reads
// two quantized values (a com.kestrel QdqAdd, passes/fuse_qdq_add.cpp).
std::vector<std::string> find_residual_sums(const onnx::ModelProto& m);

// The model's bytes with `names` added as graph outputs (those already
// outputs are left as they are).
std::string with_outputs(const onnx::ModelProto& m, const std::vector<std::string>& names);

// The QDQ model's bytes: each target's activation (and output) and each of
// `sums` quantized to uint8 with its range from `ranges`, and each target's
// weight to int8 per channel (or per tensor when per_channel is false),
// within [-weight_limit, weight_limit] (quant_params.h). With
// int4_matmuls, a MatMul target becomes com.microsoft MatMulNBits instead:
// its weight in 4-bit blocks of kInt4Block (quantize_int4_blocks), its
// activation left float (weight-only, as ONNX Runtime's 4-bit quantizer
// writes it).
constexpr int64_t kInt4Block = 32;
std::string qdq_model(const onnx::ModelProto& m, const std::vector<QuantTarget>& targets,
                      const std::vector<std::string>& sums, const std::map<std::string, Range>& ranges,
                      bool per_channel, bool int4_matmuls = false, int weight_limit = kFullRange);

}  // namespace kestrel::quantize

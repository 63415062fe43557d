// One pre-norm transformer encoder layer as exported by PyTorch, found by
// its topology alone (names are never read):
//
//   x -> LayerNorm -> Q, K, V projections -> per-head scaled scores -> Softmax
//     -> context -> output projection [-> LayerScale] -> + x = h
//   h -> LayerNorm -> fc1 -> activation -> fc2 [-> LayerScale] -> + h = out
//
// The layouts between the projections and the score/context products
// (Reshape, Transpose, scalar Mul/Div) may take any of the exporters' forms;
// the head count comes from the Reshapes that split the projections.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "families/graph_index.h"
#include "ops/activation.h"

namespace kestrel::families {

// The pointwise activation of a transformer MLP (GeluErf, GeluTanh,
// QuickGelu, Silu or Relu), told apart by value (identify_activation).
using ops::Activation;
using ops::activation_name;

struct LayerNormParams {
  Tensor scale, bias;  // bias may be undefined (a bias-less LayerNorm)
  float epsilon = 1e-5f;
};

struct EncoderLayer {
  int input = -1, output = -1;  // residual stream value ids in the graph
  LayerNormParams norm1, norm2;
  Tensor w_q, w_k, w_v, b_q, b_k, b_v;  // [D, D] and [D]
  Tensor w_out, b_out;  // [D, D], [D]
  Tensor w_fc1, b_fc1;  // [D, F], [F]
  Tensor w_fc2, b_fc2;  // [F, D], [D]
  Tensor layer_scale1, layer_scale2;  // [D] or undefined
  Activation act = Activation::GeluErf;
  int64_t heads = 0, head_dim = 0;
  float scale = 0;  // multiplies q.k
  int mask_input = -1;  // a key padding mask's graph input (keys where it is 0 are left out); -1: none
  std::vector<int> nodes;  // node indices the layer covers (its compute; not shape helpers)
};

// Reads a LayerNormalization over the last axis with constant parameters.
bool read_layer_norm(const GraphIndex& gi, const ir::Node* n, LayerNormParams& p, std::string& why);

// The constant [rows, cols] weight (0: any size) when n is MatMul(v, weight), else null.
const Tensor* projection_weight(const GraphIndex& gi, const ir::Node* n, int v, int64_t rows, int64_t cols);
// The projection MatMul's output, through its optional Add of a constant
// [cols] bias (then `bias` is set); both nodes are appended to `nodes`.
int through_bias(const GraphIndex& gi, const ir::Node* mm, Tensor& bias, std::vector<int>& nodes);

// True when v (a projection's output, after its bias) splits three ways right
// away, the mark of a fused QKV projection: a 3-way Split, or a Reshape to
// [.., .., 3, ..] (a gated MLP's fc1, 3D wide at times, splits in two).
bool splits_into_qkv(const GraphIndex& gi, int v);

// The MLP half of a pre-norm layer from its residual value h:
//   h -> LayerNorm -> fc1 -> activation -> fc2 [-> LayerScale] -> + h = output
// where h is read by nothing else. Appends the nodes it covers.
struct MlpBlock {
  LayerNormParams norm;
  Tensor w_fc1, b_fc1, w_fc2, b_fc2, layer_scale;  // layer_scale may be undefined
  Activation act = Activation::GeluErf;
  int output = -1;
};
bool match_mlp(const GraphIndex& gi, int h, int64_t d, MlpBlock& m, std::vector<int>& nodes, std::string& why);

// The head count a fused QKV projection of width d splits into, read from a
// 5-D Reshape [batch, tokens, 3, heads, head_dim] among `nodes`; 0 if none.
int64_t qkv_heads(const GraphIndex& gi, const std::vector<int>& nodes, int64_t d);

// The attention scale of a region (the nodes a QKV projection's output
// `qkv` feeds on the way to the output projection): the product of the
// scalar Mul/Div on the way into the `scores` MatMul and between it and the
// Softmax, each a constant or computed from the head size
// (shape_derived_scalar). nullopt, with `why`, when a Mul/Div of the region
// multiplies anything else.
std::optional<double> attention_scale(const GraphIndex& gi, const std::vector<int>& region, int qkv,
                                      const ir::Node& scores, const ir::Node& softmax, int64_t head_dim,
                                      std::string& why);

// Matches the layer whose residual input is value x, or says why not.
// `given_heads` (> 0) is the head count to use where no projection shows it.
std::optional<EncoderLayer> match_encoder_layer(const GraphIndex& gi, int x, std::string& why, int64_t given_heads);

// Names the pointwise function the nodes from value `from` to value `to`
// compute (all elementwise, fed only by `from` and scalar constants), by
// evaluating them on probe values. Adds the nodes to `nodes`.
std::optional<Activation> identify_activation(const GraphIndex& gi, int from, int to, std::vector<int>& nodes,
                                              std::string& why);

}  // namespace kestrel::families

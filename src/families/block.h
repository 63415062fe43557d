// The part of a graph a claimed encoder replaces: the nodes its matcher
// walked, the helpers only they read (shape arithmetic for Reshapes, mask
// and rotary tables), what it reads from outside and what leaves it; and the
// rewrite that puts one fused node in its place.
#pragma once
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "families/families.h"
#include "families/graph_index.h"
#include "ops/activation.h"

namespace kestrel::families {

struct Block {
  std::set<int> nodes;
  int input = -1;                // the residual stream entering the encoder
  // Graph inputs it also reads (an attention mask, token ids for positions)
  // and values computed outside independently of it (a shared Reshape target or mask).
  std::vector<int> side_inputs;
  std::vector<int> outputs;      // values computed inside and read outside, in node order
  std::vector<int> layer_outputs;  // each layer's residual output (assemble_chain)
};

// The walked nodes plus every node whose outputs only the block reads and
// whose inputs are constants, block values, the input or graph inputs.
// Values computed outside, independently of the block, may be read too (side inputs).
// Then checks the block is sealed: its nodes read nothing else. Returns
// false with `why` when it is not.
bool assemble_block(const GraphIndex& gi, const std::set<int>& walked, int input, Block& b, std::string& why);

// The layers (indices into layer_outputs) whose outputs leave the block, in
// order; false when something else leaves it or the last layer's does not.
bool layer_taps(const Block& b, const std::vector<int>& layer_outputs, std::vector<int>& taps);

// Where walks of encoder layers may start: the first LayerNormalization
// reading each value, in node order.
std::vector<const ir::Node*> first_norm_of_each_input(const ir::Graph& g);

// Layers chained residual to residual from value x: match(gi, x, why)
// returns the layer reading x, or nullopt; `why` keeps the first refusal.
template <typename Match>
auto chain_layers(const GraphIndex& gi, int x, Match match, std::string& why) {
  std::vector<typename decltype(match(gi, x, why))::value_type> layers;
  for (std::string reason;; reason.clear()) {
    auto layer = match(gi, x, reason);
    if (!layer) {
      if (layers.empty()) why = reason;
      return layers;
    }
    x = layer->output;
    layers.push_back(std::move(*layer));
  }
}

// The block of a chain of layers (each with `nodes` and `output`) plus
// `extra` nodes, and its taps; false with `why` when it is not sealed or
// something other than a layer output leaves it.
template <typename Layer>
bool assemble_chain(const GraphIndex& gi, const std::vector<Layer>& layers, const std::set<int>& extra, int input,
                    Block& b, std::vector<int>& taps, std::string& why) {
  std::set<int> walked = extra;
  std::vector<int> outputs;
  for (const Layer& l : layers) {
    walked.insert(l.nodes.begin(), l.nodes.end());
    outputs.push_back(l.output);
  }
  if (!assemble_block(gi, walked, input, b, why)) return false;
  b.layer_outputs = outputs;
  if (!layer_taps(b, outputs, taps)) {
    why = "the encoder's inner values are read outside it";
    return false;
  }
  return true;
}

// (Attributes of a fused node are set by ir::set_attr, ir/graph.h.)

// The attributes every fused encoder node carries, from its claim: layers,
// heads, head_dim, claim_id, family, activation, and per layer the two
// LayerNorm epsilons and the attention scale.
void set_encoder_attrs(ir::Node& n, const FamilyClaim& c, int64_t claim_id, ops::Activation activation,
                       const std::vector<float>& epsilons, const std::vector<float>& scales);

// An initializer named `name` holding t as float32; returns its value id (-1 for an undefined t).
int add_float_constant(ir::Graph& g, const std::string& name, const Tensor& t);

// Part j (0: query, 1: key, 2: value) of a fused QKV projection's weight
// [D, 3D] or bias [3D]: its column block [D, D] or [D]. Undefined stays undefined.
Tensor qkv_part(const Tensor& t, int64_t j);

// A fused node of `op` named `name` in Kestrel's domain, reading `input`.
ir::Node fused_node(const std::string& name, const char* op, int input);

// Finishes `fused` and puts it in the place of a chain's block
// (assemble_chain): its outputs are the tapped layers' outputs (attribute
// "taps"), its "original" subgraph the block's nodes as a subgraph (inputs:
// the block's input, then its side inputs) for the first-run check.
void replace_block(ir::Graph& g, const GraphIndex& gi, const Block& b, const std::vector<int>& taps, ir::Node fused);

}  // namespace kestrel::families

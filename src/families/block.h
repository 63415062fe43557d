// The part of a graph a claimed encoder replaces: the nodes its matcher
// walked, the helpers only they read (shape arithmetic for Reshapes, mask
// and rotary tables), what it reads from outside and what leaves it; and the
// rewrite that puts one fused node in its place.
#pragma once
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "families/graph_index.h"

namespace kestrel::families {

struct Block {
  std::set<int> nodes;
  int input = -1;                // the residual stream entering the encoder
  std::vector<int> side_inputs;  // graph inputs it also reads (an attention mask, token ids for positions)
  std::vector<int> outputs;      // values computed inside and read outside, in node order
};

// The walked nodes plus every node whose outputs only the block reads and
// whose inputs are constants, block values, the input or graph inputs.
// Then checks the block is sealed: its nodes read nothing else. Returns
// false with `why` when it is not.
bool assemble_block(const GraphIndex& gi, const std::set<int>& walked, int input, Block& b, std::string& why);

// The block's nodes as a subgraph (inputs: the input, then the side
// inputs; outputs: `outputs`), for the fused node's first-run check.
std::shared_ptr<ir::Graph> original_subgraph(const ir::Graph& g, const GraphIndex& gi, const Block& b,
                                             const std::vector<int>& outputs, const std::string& name);

// An initializer named `name` holding t as float32; returns its value id (-1 for an undefined t).
int add_float_constant(ir::Graph& g, const std::string& name, const Tensor& t);

// Replaces the block's nodes by `fused`, placed where the first one was.
void replace_block(ir::Graph& g, const Block& b, ir::Node fused);

}  // namespace kestrel::families

// One node ONNX Runtime fused for Kestrel, compiled: a Kestrel session over
// the subgraph, and the compute callbacks that run it on ONNX Runtime's
// tensors (inputs read in place; outputs read back from the GPU straight into
// the tensors ONNX Runtime allocates for them, any other copied there once).
#pragma once
#include <onnxruntime_c_api.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace kestrel::ort_ep {

struct FusedKernel : OrtNodeComputeInfo {
  // `inputs` and `outputs`: the fused node's, in ONNX Runtime's order.
  FusedKernel(uint32_t api_version, std::unique_ptr<Session> session, std::vector<std::string> inputs,
              std::vector<std::string> outputs);

  std::unique_ptr<Session> session;
  std::vector<std::string> inputs, outputs;
  std::vector<bool> input_used;       // the session reads it (a value it folded away is not)
  std::vector<size_t> output_index;   // into the session's outputs

  // The first fused-node output that is session output j; outputs.size() if none.
  size_t fused_output_of(size_t j) const {
    for (size_t o = 0; o < output_index.size(); ++o)
      if (output_index[o] == j) return o;
    return outputs.size();
  }
};

}  // namespace kestrel::ort_ep

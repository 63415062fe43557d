// Small models the Vulkan tests share, built in memory.
#pragma once
#include <onnx/onnx_pb.h>

#include <string>

#include "core/tensor.h"

namespace kestrel::test {

// x[n,n] -> MatMul(W0) -> ... -> MatMul(W{k-1}): k dense products, each 2n^3
// FLOPs, long enough on lavapipe that a wait of a millisecond gives up while
// the device is still writing.
inline std::string matmul_chain(int64_t n, int k) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("matmul_chain");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(n);
  tt->mutable_shape()->add_dim()->set_dim_value(n);
  std::string prev = "x";
  for (int i = 0; i < k; ++i) {
    auto* w = g->add_initializer();
    w->set_name("w" + std::to_string(i));
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(n);
    w->add_dims(n);
    // Entries of +-1/n keep every product's values near the input's.
    for (int64_t j = 0; j < n * n; ++j) w->add_float_data(((j * 7 + i) % 5 - 2) * 0.5f / float(n));
    auto* nd = g->add_node();
    nd->set_op_type("MatMul");
    nd->set_name("mm" + std::to_string(i));
    nd->add_input(prev);
    nd->add_input(w->name());
    prev = "y" + std::to_string(i);
    nd->add_output(prev);
  }
  g->add_output()->set_name(prev);
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

// Its input: values in [-1, 1].
inline Tensor matmul_chain_input(int64_t n) {
  Tensor t(DType::Float32, {n, n});
  for (int64_t i = 0; i < n * n; ++i) t.data<float>()[i] = float(i % 13) / 6.0f - 1.0f;
  return t;
}

}  // namespace kestrel::test

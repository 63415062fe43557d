// The CPU fast kernels' residual fusion (backends/cpu/residual_fusion.h):
// Conv -> Add(same-shape residual) [-> Relu] runs as one Conv, with the
// answer of the reference kernels, which run the graph as given; an Add that
// broadcasts, and a Conv whose output is read elsewhere, stay as they are.
#include <gtest/gtest.h>

#include <map>

#include "core/compare.h"
#include "onnx_builders.h"
#include "runtime/session.h"

using namespace kestrel;
using namespace kestrel::test;

namespace {

void fill(onnx::TensorProto* t, int n, int seed) {
  for (int i = 0; i < n; ++i) t->set_float_data(i, float((i * 37 + seed * 11) % 29) / 29.0f - 0.5f);
}

// x [1,8,12,12]:
//   a = Relu(Conv3x3(x) + x)              fused with its Relu
//   b = DepthwiseConv3x3(a) + a           fused (depthwise)
//   c = Conv1x1(b) + shift[1,8,12,1]      not fused: the Add broadcasts (along
//                                         the width: a per-channel constant
//                                         would fold into the Conv's bias)
//   d = Conv1x1(c) + c; the Conv1x1 output is also a graph output: not fused
std::string residual_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 8, 12, 12});
  fill(add_float_initializer(g, "w3", {8, 8, 3, 3}), 8 * 8 * 9, 1);
  fill(add_float_initializer(g, "b3", {8}), 8, 2);
  fill(add_float_initializer(g, "wd", {8, 1, 3, 3}), 8 * 9, 3);
  fill(add_float_initializer(g, "w1", {8, 8, 1, 1}), 64, 4);
  fill(add_float_initializer(g, "shift", {1, 8, 12, 1}), 8 * 12, 5);
  set_ints(add_node(g, "Conv", {"x", "w3", "b3"}, {"y3"}, "conv3"), "pads", {1, 1, 1, 1});
  add_node(g, "Add", {"y3", "x"}, {"s3"}, "add3");
  add_node(g, "Relu", {"s3"}, {"a"}, "relu3");
  auto* dw = add_node(g, "Conv", {"a", "wd"}, {"yd"}, "dwconv");
  set_ints(dw, "pads", {1, 1, 1, 1});
  set_int(dw, "group", 8);
  add_node(g, "Add", {"a", "yd"}, {"b"}, "add_dw");  // the residual first this time
  add_node(g, "Conv", {"b", "w1"}, {"y1"}, "conv1");
  add_node(g, "Add", {"y1", "shift"}, {"c"}, "add_shift");
  add_node(g, "Conv", {"c", "w1"}, {"y1b"}, "conv1b");
  add_node(g, "Add", {"y1b", "c"}, {"d"}, "add_seen");
  add_output(g, "d");
  add_output(g, "y1b");
  return bytes_of(m);
}

std::unique_ptr<Session> session(CpuKernels kernels) {
  const std::string bytes = residual_model();
  SessionOptions o;
  o.backend = BackendChoice::Cpu;
  o.cpu_kernels = kernels;
  o.threads = 2;
  return Session::load_bytes(bytes.data(), bytes.size(), o);
}

void count_op(void* user, const backends::NodeTiming& t) { (*static_cast<std::map<std::string, int>*>(user))[t.node->op_type]++; }

}  // namespace

TEST(CpuResidualFusion, ConvAddReluRunsAsOneConvWithTheReferencesAnswer) {
  Tensor x(DType::Float32, {1, 8, 12, 12});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float((i * 13) % 31) / 31.0f - 0.5f;
  const std::map<std::string, Tensor> in{{"x", x}};
  std::map<std::string, int> fast_ops, reference_ops;
  const std::vector<Tensor> got = session(CpuKernels::Fast)->run_traced(in, count_op, &fast_ops);
  const std::vector<Tensor> want = session(CpuKernels::Reference)->run_traced(in, count_op, &reference_ops);
  EXPECT_EQ(reference_ops, (std::map<std::string, int>{{"Add", 4}, {"Conv", 4}, {"Relu", 1}}));
  // The first two Adds and the Relu inside their Convs; the broadcast Add and
  // the one after a Conv whose output is also the graph's stay.
  EXPECT_EQ(fast_ops, (std::map<std::string, int>{{"Add", 2}, {"Conv", 4}}));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape());
    const Agreement a = agreement(got[i], want[i]);
    EXPECT_GE(a.cosine, 0.9999999) << "output " << i;
    EXPECT_LE(a.max_rel, 1e-5) << "output " << i;  // float32 sums in another order
  }
}

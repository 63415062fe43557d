// Outputs read back into the caller's tensors (backends/backend.h's
// OutputSink, what the ONNX Runtime plugin gives so each output is read from
// the device once, into ONNX Runtime's memory): a run that records, a
// replayed run and a float16 session's decided plan write there, with the
// bits a run without a sink returns; float16 calibration, whose runs are
// compared with each other, never does; a sink that gives nothing, or a
// tensor of another shape, leaves the backend to allocate.
#include <gtest/gtest.h>

#include <map>

#include "onnx_builders.h"
#include "runtime/session.h"
#include "vulkan_tests_switch.h"

using namespace kestrel;
using namespace kestrel::test;

namespace {

// x[rows, 256] @ W[256, 192] -> Relu (output "h") -> Softmax (output "y"):
// work enough that the partition keeps it on the GPU.
std::string two_output_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {"rows", 256});
  auto* w = add_float_initializer(g, "w", {256, 192});
  for (int i = 0; i < 256 * 192; ++i) w->set_float_data(i, float((i * 29) % 97) / 97.0f - 0.5f);
  add_node(g, "MatMul", {"x", "w"}, {"m"}, "matmul");
  add_node(g, "Relu", {"m"}, {"h"}, "relu");
  set_int(add_node(g, "Softmax", {"h"}, {"y"}, "softmax"), "axis", -1);
  add_output(g, "h");
  add_output(g, "y");
  return bytes_of(m);
}

std::unique_ptr<Session> session(Precision p) {
  const std::string bytes = two_output_model();
  SessionOptions o;
  o.backend = BackendChoice::Vulkan;
  o.precision = p;
  o.threads = 2;
  return Session::load_bytes(bytes.data(), bytes.size(), o);
}

std::map<std::string, Tensor> input(int run) {
  Tensor t(DType::Float32, {512, 256});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float((i * 37 + run * 11) % 101) / 50.0f - 1.0f;
  return {{"x", t}};
}

// The caller's tensors: what the sink hands out, by output index.
struct Destinations {
  std::map<size_t, Tensor> given;
  backends::OutputSink sink = [this](size_t i, DType dtype, const Shape& shape) {
    Tensor t(dtype, shape);
    given[i] = t;
    return t;
  };
};

void expect_same_bits(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].same_as(want[i])) << what << ", output " << i;
}

// Runs 0-5 of `precision` with a sink beside a session without: the same
// bits each run, and from `first_in_place` on both outputs are the sink's.
void expect_outputs_in_place(Precision precision, int first_in_place) {
  auto with_sink = session(precision), plain = session(precision);
  for (int run = 0; run < 6; ++run) {
    const std::string what = "run " + std::to_string(run);
    Destinations d;
    RunControl control;
    control.output_sink = &d.sink;
    const std::vector<Tensor> got = with_sink->run(input(run), control);
    expect_same_bits(got, plain->run(input(run)), what);
    if (run < first_in_place) continue;
    ASSERT_EQ(d.given.size(), 2u) << what << "\n" << with_sink->placement()->summary();
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(got[i].raw(), d.given[i].raw()) << what << ", output " << i;
    if (run >= 3) EXPECT_TRUE(with_sink->placement()->replayed) << what;
  }
}

}  // namespace

TEST(VulkanOutputSink, Float32RunsReadTheirOutputsIntoTheCallersTensors) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  expect_outputs_in_place(Precision::Fp32, 0);
}

// The first float16 run calibrates: its trial runs' outputs are compared with
// float32's, so none is read into the caller's tensors (the plugin copies).
TEST(VulkanOutputSink, Float16CalibrationKeepsItsOwnTensorsThenDecidedRunsUseTheCallers) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto s = session(Precision::Fp16);
  Destinations d;
  RunControl control;
  control.output_sink = &d.sink;
  const std::vector<Tensor> first = s->run(input(0), control);
  EXPECT_TRUE(d.given.empty()) << "a calibrating run asked the sink for " << d.given.size() << " outputs";
  expect_outputs_in_place(Precision::Fp16, 1);
}

TEST(VulkanOutputSink, ASinkThatGivesNothingOrAnotherShapeLeavesTheBackendToAllocate) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto s = session(Precision::Fp32);
  const std::vector<Tensor> want = session(Precision::Fp32)->run(input(1));
  Tensor wrong(DType::Float32, {192, 512});
  int asked = 0;
  const backends::OutputSink sink = [&](size_t i, DType, const Shape&) {
    ++asked;
    return i == 0 ? Tensor() : wrong;
  };
  RunControl control;
  control.output_sink = &sink;
  for (int run = 0; run < 4; ++run) {
    const std::vector<Tensor> got = s->run(input(1), control);
    expect_same_bits(got, want, "run " + std::to_string(run));
    EXPECT_NE(got[1].raw(), wrong.raw());
  }
  EXPECT_EQ(asked, 8);
}

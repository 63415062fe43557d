// Float16 storage is never silently wrong: the first run decides per node
// which keep it (backends/vulkan/precision_plan.h), from the values float32
// computes, and later runs give float32's answer within float16's rounding.
// Each graph here has a part float16 cannot hold and a part it can.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "vulkan_test_models.h"

namespace kestrel::test {
namespace {

bool vulkan_tests_off() {
  const char* off = std::getenv("KESTREL_VULKAN_TESTS");
  return off && std::string(off) == "off";
}

constexpr int64_t kN = 10000;  // past kSmallHostElements: every node runs on the GPU

// A graph node of one output named after it.
void node(onnx::GraphProto* g, const char* op, std::vector<std::string> ins, const char* out) {
  add_node(g, op, ins, {out}, out);
}

void scalar(onnx::GraphProto* g, const char* name, float v) { add_float_initializer(g, name, {}, v); }

// x in [-2, 2] (ramp) times `scale`.
Tensor input(float scale) {
  Tensor x = ramp(kN);
  for (int64_t i = 0; i < kN; ++i) x.data<float>()[i] *= scale;
  return x;
}

// y_i within `rel` of the largest |reference| of reference_i, everywhere.
void expect_close(const Tensor& y, const Tensor& reference, double rel) {
  ASSERT_EQ(y.shape(), reference.shape());
  std::vector<float> a = y.to_f32(), b = reference.to_f32();
  double range = 0;
  for (float v : b) range = std::max(range, double(std::abs(v)));
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(std::isfinite(a[i])) << "element " << i;
    ASSERT_NEAR(a[i], b[i], rel * range) << "element " << i;
  }
}

std::string note_of(Session& s) {
  auto p = s.placement();
  return p ? p->precision_note : "";
}

}  // namespace

// x * 30000 * 8 passes 65504 (float16 would make it infinite); scaled back
// by 1e-5 it is small again. The nodes that read or write the large values
// keep float32; the rest (Relu, Sigmoid, the final Add) take float16.
TEST(MixedPrecision, NodesWithValuesPastFloat16KeepFloat32) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  g->set_name("overflow");
  add_input(g, "x", {1, kN});
  scalar(g, "big", 3e4f);
  scalar(g, "eight", 8.0f);
  scalar(g, "small", 1e-5f);
  node(g, "Mul", {"x", "big"}, "up");
  node(g, "Mul", {"up", "eight"}, "huge");
  node(g, "Mul", {"huge", "small"}, "down");
  node(g, "Relu", {"down"}, "relu");
  node(g, "Sigmoid", {"x"}, "sig");
  node(g, "Add", {"relu", "sig"}, "y");
  add_output(g, "y");
  const std::string bytes = bytes_of(m);
  auto s32 = vulkan_session(bytes, "fp32");
  auto s16 = vulkan_session(bytes, "fp16");
  const Tensor x = input(1.0f);
  const Tensor ref = s32->run({{"x", x}})[0];
  s16->run({{"x", x}});  // calibrates
  const std::string note = note_of(*s16);
  EXPECT_THAT(note, ::testing::HasSubstr("3 of 6 GPU nodes in fp16")) << note;
  EXPECT_THAT(note, ::testing::HasSubstr("node 'huge' (Mul): 'huge' reaches 4.8e+05")) << note;
  expect_close(s16->run({{"x", x}})[0], ref, 2e-3);  // the mixed run
  EXPECT_THAT(s16->placement()->device, ::testing::HasSubstr("fp16 storage"));
}

// 2048 + x - 2048: float16 holds the sum (2048 is within its range) but
// only to a step of 2, so the difference loses x. No range says so; the
// error of the mixed run does, and both the Add and the Sub go back to
// float32 (the Sub shows the error, the Add made it).
TEST(MixedPrecision, CancellationIsFoundByTheMixedRunsError) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  g->set_name("cancel");
  add_input(g, "x", {1, kN});
  scalar(g, "offset", 2048.0f);
  scalar(g, "gain", 100.0f);
  node(g, "Add", {"x", "offset"}, "shifted");
  node(g, "Sub", {"shifted", "offset"}, "back");
  node(g, "Mul", {"back", "gain"}, "y");
  add_output(g, "y");
  const std::string bytes = bytes_of(m);
  auto s32 = vulkan_session(bytes, "fp32");
  auto s16 = vulkan_session(bytes, "fp16");
  const Tensor x = input(0.01f);
  const Tensor ref = s32->run({{"x", x}})[0];
  s16->run({{"x", x}});
  const std::string note = note_of(*s16);
  EXPECT_THAT(note, ::testing::HasSubstr("node 'shifted' (Add)")) << note;
  EXPECT_THAT(note, ::testing::HasSubstr("node 'back' (Sub)")) << note;
  EXPECT_THAT(note, ::testing::HasSubstr("1 of 3 GPU nodes in fp16")) << note;
  expect_close(s16->run({{"x", x}})[0], ref, 1e-3);
}

// y = x * 100 * 0.01 over n values: its middle value overflows float16
// once x passes 655.
std::string up_and_down(int64_t n) {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  g->set_name("up_and_down");
  add_input(g, "x", {1, n});
  scalar(g, "hundred", 100.0f);
  scalar(g, "hundredth", 0.01f);
  node(g, "Mul", {"x", "hundred"}, "up");
  node(g, "Mul", {"up", "hundredth"}, "y");
  add_output(g, "y");
  return bytes_of(m);
}

// Calibrated on small inputs, x * 100 * 0.01 runs in float16; an input 500
// times larger overflows it there. That run's outputs are not finite where
// float32's are: float32's answer is returned, and the report says so.
TEST(MixedPrecision, ALaterOverflowIsRecomputedInFloat32) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto s16 = vulkan_session(up_and_down(kN), "fp16");
  s16->run({{"x", input(1.0f)}});
  EXPECT_THAT(note_of(*s16), ::testing::HasSubstr("2 of 2 GPU nodes in fp16")) << note_of(*s16);
  const Tensor x = input(500.0f);  // up reaches 1e5
  expect_close(s16->run({{"x", x}})[0], x, 1e-6);
  EXPECT_THAT(note_of(*s16), ::testing::HasSubstr("the fp32 answer was returned")) << note_of(*s16);
}

// The same over an output large enough (16 MB of float32) that the check for
// non-finite values splits it over threads, with the only overflow in its
// last element: no block of it goes unread.
TEST(MixedPrecision, AnOverflowInTheLastElementOfALargeOutputIsFound) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  constexpr int64_t kLarge = int64_t(4) << 20;
  auto s16 = vulkan_session(up_and_down(kLarge), "fp16", 2);
  Tensor x(DType::Float32, {1, kLarge});
  for (int64_t i = 0; i < kLarge; ++i) x.data<float>()[i] = float(i % 7) * 0.25f;
  s16->run({{"x", x}});
  EXPECT_THAT(note_of(*s16), ::testing::HasSubstr("2 of 2 GPU nodes in fp16")) << note_of(*s16);
  x.data<float>()[kLarge - 1] = 1000.0f;  // up reaches 1e5: infinite in float16
  const Tensor y = s16->run({{"x", x}})[0];
  EXPECT_FLOAT_EQ(y.data<float>()[kLarge - 1], 1000.0f);
  EXPECT_THAT(note_of(*s16), ::testing::HasSubstr("the fp32 answer was returned")) << note_of(*s16);
}

// Integer-quantized graphs (MatMulInteger's int32 sums, scaled back to float
// past float16's range) keep float32 storage in a float16 session, and say so.
TEST(MixedPrecision, IntegerQuantizedGraphsKeepFloat32Storage) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  g->set_name("quantized");
  add_input(g, "a", {2, 3}, onnx::TensorProto::UINT8);
  add_input(g, "b", {3, 2}, onnx::TensorProto::UINT8);
  node(g, "MatMulInteger", {"a", "b"}, "y");
  add_output(g, "y");
  auto s16 = vulkan_session(bytes_of(m), "fp16");
  Tensor a(DType::UInt8, {2, 3}), b(DType::UInt8, {3, 2});
  for (int i = 0; i < 6; ++i) a.data<uint8_t>()[i] = uint8_t(200 + i), b.data<uint8_t>()[i] = uint8_t(250 - i);
  const Tensor y = s16->run({{"a", a}, {"b", b}})[0];
  EXPECT_EQ(y.data<int32_t>()[0], 200 * 250 + 201 * 248 + 202 * 246);
  EXPECT_THAT(s16->placement()->device, ::testing::HasSubstr("float16 is not used for integer-quantized graphs"));
}

}  // namespace kestrel::test

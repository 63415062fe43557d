// The CPU kernels compiled per instruction-set level (core/cpu_isa.h) give
// the same answers at every level this CPU has: the level is capped for the
// process as KESTREL_CPU_ISA caps it, each kernel is run, and the results are
// held against a plain loop (or, for conversions, bit for bit against the
// baseline). Levels the CPU lacks are skipped by name. Loading a session sets
// the cap from its options, so the tests that load one run it through
// run_at_level, which caps again after.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "backends/cpu/conv_depthwise.h"
#include "backends/cpu/narrow_gemm.h"
#include "backends/cpu/nbits_panel.h"
#include "backends/cpu/nbits_rows.h"
#include "core/cpu_isa.h"
#include "core/tensor.h"
#include "ops/activation.h"
#include "ops/logistic.h"
#include "ops/matmul_nbits.h"
#include "onnx_builders.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

// Caps the level for one test and lifts the cap after it.
class AtEachLevel : public ::testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (GetParam() > cpu_isa_detected()) GTEST_SKIP() << "this CPU has no " << cpu_isa_name(GetParam());
    cap_cpu_isa(GetParam());
    ASSERT_EQ(cpu_isa(), GetParam());
  }
  void TearDown() override { cap_cpu_isa(CpuIsa::Avx512); }
  // The model's outputs on the CPU backend at this test's level: loading a
  // session sets the process's cap from its options, so the cap is set again
  // after.
  std::vector<Tensor> run_at_level(const std::string& model, const std::map<std::string, Tensor>& feeds,
                                   CpuKernels kernels = CpuKernels::Fast) {
    SessionOptions o;
    o.backend = BackendChoice::Cpu;
    o.cpu_kernels = kernels;
    auto session = Session::load_bytes(model.data(), model.size(), o);
    cap_cpu_isa(GetParam());
    return session->run(feeds);
  }
};

// An 8-bit initializer (type UINT8 or INT8) of values drawn from [lo, hi].
void add_random_bytes(onnx::GraphProto* g, std::mt19937& rng, const std::string& name, const std::vector<int64_t>& dims,
                      int lo, int hi, int type) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  int64_t n = 1;
  for (int64_t d : dims) t->add_dims(d), n *= d;
  std::uniform_int_distribution<int> u(lo, hi);
  for (int64_t i = 0; i < n; ++i) t->add_int32_data(u(rng));
}

ops::WindowGeom geom(int64_t H, int64_t W, int64_t K, int64_t stride, int64_t dil, int64_t pad) {
  ops::WindowGeom g;
  g.nd = 2;
  g.in = {H, W};
  g.kernel = {K, K};
  g.stride = {stride, stride};
  g.dil = {dil, dil};
  g.pad_begin = {pad, pad};
  g.pad_end = {pad, pad};
  for (int64_t n : {H, W}) g.out.push_back((n + 2 * pad - dil * (K - 1) - 1) / stride + 1);
  return g;
}

// Every path of the depthwise kernel: the unrolled 3x3 and 5x5 blocks and
// the general one (7x7) at stride 1 and 2, rows narrower than a block (13),
// fewer output rows than a block (3) and counts that leave an overlapping
// last block, odd widths at stride 2 (its even/odd split), dilation (the
// generic loop), with and without padding; the first geometry again at the
// end, after the padded buffer has held others.
TEST_P(AtEachLevel, DepthwiseConvolutionMatchesAPlainLoop) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const auto& g : {geom(16, 16, 3, 1, 1, 1), geom(16, 16, 3, 2, 1, 1), geom(64, 128, 3, 1, 1, 1),
                        geom(64, 128, 5, 2, 1, 2), geom(33, 97, 3, 1, 2, 2), geom(20, 20, 3, 1, 1, 0),
                        geom(13, 13, 3, 1, 1, 1), geom(3, 40, 3, 1, 1, 1), geom(30, 41, 5, 1, 1, 2),
                        geom(23, 37, 7, 1, 1, 3), geom(9, 21, 3, 2, 1, 1), geom(27, 53, 7, 2, 1, 3),
                        geom(16, 16, 3, 1, 1, 1)}) {
    std::vector<float> x(size_t(g.in_size())), w(size_t(g.kernel_size())), y(size_t(g.out_size()));
    for (float& v : x) v = u(rng);
    for (float& v : w) v = u(rng);
    const float bias = 0.25f;
    // Finished with a residual and a Relu half the time (each block of
    // rows as it is computed, the overlapping last one too).
    const bool finished = g.in[1] % 2 == 1;
    std::vector<float> res(y.size());
    for (float& v : res) v = u(rng);
    const ops::Epilogue relu{ops::Activation::Relu};
    backends::cpu::depthwise_plane(g, x.data(), w.data(), bias, y.data(),
                                   finished ? backends::cpu::DepthwiseFinish{res.data(), &relu}
                                            : backends::cpu::DepthwiseFinish{});
    for (int64_t oy = 0; oy < g.out[0]; ++oy)
      for (int64_t ox = 0; ox < g.out[1]; ++ox) {
        double want = bias;
        for (int64_t ky = 0; ky < g.kernel[0]; ++ky)
          for (int64_t kx = 0; kx < g.kernel[1]; ++kx) {
            int64_t iy = oy * g.stride[0] - g.pad_begin[0] + ky * g.dil[0];
            int64_t ix = ox * g.stride[1] - g.pad_begin[1] + kx * g.dil[1];
            if (iy < 0 || ix < 0 || iy >= g.in[0] || ix >= g.in[1]) continue;
            want += double(x[size_t(iy * g.in[1] + ix)]) * w[size_t(ky * g.kernel[1] + kx)];
          }
        if (finished) want = std::max(0.0, want + res[size_t(oy * g.out[1] + ox)]);
        // Up to 49 products of values in [-1, 1], summed in float32 in another order.
        ASSERT_NEAR(y[size_t(oy * g.out[1] + ox)], want, 2e-5)
            << "at " << oy << "," << ox << " of " << g.out[0] << "x" << g.out[1] << ", stride " << g.stride[0]
            << ", dilation " << g.dil[0];
      }
  }
}

// MaxPool's kernels (backends/cpu/pool.cpp), planar and channels-last
// (MaxPoolChannelsLast): the reference's bits, windows of 2 (stride 2), 3
// (direct) and 13 (stride 1, padded: separable) over odd widths.
TEST_P(AtEachLevel, MaxPoolGivesTheReferencesBits) {
  for (bool channels_last : {false, true})
    for (auto [k, stride] : {std::pair<int64_t, int64_t>{2, 2}, {3, 1}, {13, 1}}) {
      auto m = test::make_model(12);
      if (channels_last) {
        auto* os = m.add_opset_import();
        os->set_domain("com.kestrel");
        os->set_version(1);
      }
      auto* g = m.mutable_graph();
      const Shape shape = channels_last ? Shape{1, 21, 37, 3} : Shape{1, 3, 21, 37};
      test::add_input(g, "x", {shape[0], shape[1], shape[2], shape[3]});
      auto* n = test::add_node(g, channels_last ? "MaxPoolChannelsLast" : "MaxPool", {"x"}, {"y"}, "pool");
      if (channels_last) n->set_domain("com.kestrel");
      test::set_ints(n, "kernel_shape", {k, k});
      test::set_ints(n, "strides", {stride, stride});
      if (stride == 1) test::set_ints(n, "pads", {k / 2, k / 2, k / 2, k / 2});
      test::add_output(g, "y");
      const std::string bytes = test::bytes_of(m);
      Tensor x(DType::Float32, shape);
      std::mt19937 rng(7);
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
      const Tensor got = run_at_level(bytes, {{"x", x}})[0];
      const Tensor want = run_at_level(bytes, {{"x", x}}, CpuKernels::Reference)[0];
      ASSERT_EQ(got.shape(), want.shape());
      EXPECT_TRUE(got.same_as(want)) << "window " << k << ", stride " << stride << ", channels-last " << channels_last;
    }
}

// float32 <-> float16 (F16C from AVX2 on): the same bits as the baseline's
// rounding, over normal, subnormal, overflowing and special values.
TEST_P(AtEachLevel, HalfConversionsGiveTheBaselinesBits) {
  std::vector<float> v = {0.f, -0.f, 1.f, -2.5f, 65504.f, 65520.f, 1e6f, 6e-8f, 3e-5f, 1.0009765625f,
                          INFINITY, -INFINITY, NAN};
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.f, 300.f);
  for (int i = 0; i < 1000; ++i) v.push_back(n(rng));
  Tensor f = Tensor::from_f32({int64_t(v.size())}, v);
  Tensor h = f.cast(DType::Float16);
  Tensor back = h.cast(DType::Float32);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t want = float_to_half(v[i]);
    ASSERT_EQ(h.data<uint16_t>()[i], want) << "float " << v[i];
    const float r = back.data<float>()[i], r_want = half_to_float(want);
    if (std::isnan(r_want)) ASSERT_TRUE(std::isnan(r));
    else ASSERT_EQ(r, r_want) << "half " << want;
  }
}

// The narrow products run on AVX2 and AVX-512 only; at the baseline they
// decline and oneDNN (with its own dispatch) takes the product.
// The fused activations' block loops (ops/activation_apply.cpp) give the
// scalar reference's bits at every level, NaN and infinities included;
// Sigmoid and Silu those of the Sigmoid op's logistic (ops/logistic.h).
TEST_P(AtEachLevel, ActivationBlocksGiveTheScalarBits) {
  std::vector<float> x;
  for (int i = -400; i <= 400; ++i) x.push_back(float(i) / 37.f);
  x.insert(x.end(), {std::nanf(""), INFINITY, -INFINITY, -0.f, 1e-40f});
  std::vector<float> sig(x.size());
  ops::logistic(x.data(), sig.data(), int64_t(x.size()));
  for (int k = 1; k < ops::kActivationCount; ++k) {
    const auto kind = ops::Activation(k);
    const float a = 0.2f, b = kind == ops::Activation::Clip ? 6.f : 0.5f;
    std::vector<float> y = x;
    ops::apply_activation(kind, a, b, y.data(), int64_t(y.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      float want = ops::activate(kind, a, b, x[i]);
      if (kind == ops::Activation::Sigmoid) want = sig[i];
      if (kind == ops::Activation::Silu) want = x[i] * sig[i];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[i])) << ops::activation_name(kind) << " of " << x[i];
        continue;
      }
      EXPECT_EQ(y[i], want) << ops::activation_name(kind) << " of " << x[i];
    }
  }
}

// QuantizeLinear and DequantizeLinear per tensor on 8 bits (ops/quantize.cpp's
// vectorized loops, one build per level) give the general per-axis path's
// bits: the same scale and zero point repeated along an axis of 3 take that
// path. Ties at half a step (half to even) and the floats either side of
// each, saturation both ways, NaN, infinities, values past 2^22 steps and
// near the largest float among the inputs, over scales of several binades
// (AVX2's loop divides through the scale's reciprocal and a correction).
TEST_P(AtEachLevel, PerTensorQuantizationGivesThePerAxisBits) {
  for (const float scale : {0.0375f, 0.003921569f, 1.7f, 3e-9f})
  for (const auto qtype : {onnx::TensorProto::UINT8, onnx::TensorProto::INT8}) {
    std::vector<float> x;
    for (int i = -700; i <= 700; ++i) {
      const float tie = float(i) * scale * 0.5f;  // every half step: ties
      x.insert(x.end(), {tie, std::nextafter(tie, -INFINITY), std::nextafter(tie, INFINITY)});
    }
    for (int i = 0; i < 997; ++i) x.push_back(std::sin(float(i)) * 9.f);
    x.insert(x.end(), {std::nanf(""), INFINITY, -INFINITY, -0.f, 1e-40f, 3e8f, -3e8f, 3e38f, -3.4e38f});
    while (x.size() % 3) x.push_back(0.25f);
    const int64_t n = int64_t(x.size());
    const int32_t zp = qtype == onnx::TensorProto::UINT8 ? 131 : -7;
    auto run = [&](bool per_axis) {
      auto m = test::make_model(13);
      auto* g = m.mutable_graph();
      test::add_input(g, "x", {3, n / 3});
      const std::vector<int64_t> dims = per_axis ? std::vector<int64_t>{3} : std::vector<int64_t>{};
      test::add_float_initializer(g, "s", dims, scale);
      auto* z = g->add_initializer();
      z->set_name("z");
      z->set_data_type(qtype);
      for (int64_t d : dims) z->add_dims(d);
      for (int i = 0; i < (per_axis ? 3 : 1); ++i) z->add_int32_data(zp);
      auto* q = test::add_node(g, "QuantizeLinear", {"x", "s", "z"}, {"q"}, "quantize");
      test::add_node(g, "DequantizeLinear", {"q", "s", "z"}, {"y"}, "dequantize");
      if (per_axis) test::set_int(q, "axis", 0), test::set_int(&*g->mutable_node()->rbegin(), "axis", 0);
      test::add_output(g, "q");
      test::add_output(g, "y");
      const std::string bytes = test::bytes_of(m);
      Tensor t(DType::Float32, {3, n / 3});
      std::copy(x.begin(), x.end(), t.data<float>());
      return run_at_level(bytes, {{"x", t}});
    };
    const auto tensor = run(false), axis = run(true);
    EXPECT_TRUE(tensor[0].same_as(axis[0])) << "QuantizeLinear to type " << qtype << ", scale " << scale;
    EXPECT_TRUE(tensor[1].same_as(axis[1])) << "DequantizeLinear from type " << qtype << ", scale " << scale;
  }
}

// The quantized MatMuls' integer product (backends/cpu/qgemm_kernels.h: on
// AVX-512 VNNI, on AVX2 with int16 pairs, on arm64's SDOT where the CPU has
// it, as under scripts/test_arm64.sh's emulation; the reference below) gives the
// reference kernels' bits at each level: requantized (QLinearMatMul), as
// int32 (MatMulInteger) and scaled to float with a bias
// (MatMulIntegerToFloat); uint8 weights whose zero points are not 128 (each
// row's sum joins), K not a multiple of 4, rows and columns past the blocks.
TEST_P(AtEachLevel, QuantizedMatMulsGiveTheReferencesBits) {
  std::mt19937 rng(11);
  auto bytes = [&](onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, int lo, int hi) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::UINT8);
    int64_t n = 1;
    for (int64_t d : dims) t->add_dims(d), n *= d;
    std::uniform_int_distribution<int> u(lo, hi);
    for (int64_t i = 0; i < n; ++i) t->add_int32_data(u(rng));
  };
  const int64_t K = 45, N = 70;
  auto m = test::make_model(13);
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  auto* g = m.mutable_graph();
  test::add_input(g, "a", {2, 13, K}, onnx::TensorProto::UINT8);
  bytes(g, "w", {K, N}, 0, 255);
  bytes(g, "wz", {N}, 100, 156);
  bytes(g, "az", {}, 0, 255);
  bytes(g, "yz", {}, 100, 140);
  test::add_float_initializer(g, "as", {}, 0.021f);
  test::add_float_initializer(g, "bs", {N}, 0.0037f);
  test::add_float_initializer(g, "ys", {}, 0.61f);
  test::add_float_initializer(g, "bias", {N}, -0.3f);
  test::add_node(g, "QLinearMatMul", {"a", "as", "az", "w", "bs", "wz", "ys", "yz"}, {"y8"}, "qlinear");
  test::add_node(g, "MatMulInteger", {"a", "w", "az", "wz"}, {"y32"}, "integer");
  test::add_node(g, "MatMulIntegerToFloat", {"a", "w", "as", "bs", "az", "wz", "bias"}, {"yf"}, "to_float")
      ->set_domain("com.microsoft");
  for (const char* y : {"y8", "y32", "yf"}) test::add_output(g, y);
  const std::string model = test::bytes_of(m);
  Tensor a(DType::UInt8, {2, 13, K});
  std::uniform_int_distribution<int> u(0, 255);
  for (int64_t i = 0; i < a.numel(); ++i) a.data<uint8_t>()[i] = uint8_t(u(rng));
  const auto fast = run_at_level(model, {{"a", a}}), reference = run_at_level(model, {{"a", a}}, CpuKernels::Reference);
  for (size_t i = 0; i < fast.size(); ++i) EXPECT_TRUE(fast[i].same_as(reference[i])) << "output " << i;
}

// The quantized convolutions' packed product (backends/cpu/qlinear_conv.cpp:
// vpdpbusd on AVX-512 VNNI, int16 pairs on AVX2 alone, SDOT on arm64, the
// exact general convolution at the baseline) gives the reference kernels'
// bits at each level: QLinearConv requantized, ConvInteger as int32. Two groups of 10
// output channels (rows past a block of 4 and of 8), uint8 weights whose
// zero points are not 128 (each position's sum joins), int8 data, a 3x3
// window with padding and stride 2 (gathered columns) and a 1x1 one at
// stride 1 (read in place), 9 x 13 maps (columns past a block of 16).
TEST_P(AtEachLevel, QuantizedConvolutionsGiveTheReferencesBits) {
  std::mt19937 rng(12);
  auto bytes = [&](onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, int lo, int hi,
                   int type) { add_random_bytes(g, rng, name, dims, lo, hi, type); };
  const int u8 = onnx::TensorProto::UINT8, s8 = onnx::TensorProto::INT8;
  auto m = test::make_model(13);
  auto* g = m.mutable_graph();
  test::add_input(g, "x", {1, 14, 9, 13}, onnx::TensorProto::INT8);
  bytes(g, "w3", {20, 7, 3, 3}, 0, 255, u8);
  bytes(g, "w1", {20, 7, 1, 1}, 0, 255, u8);
  bytes(g, "wz", {20}, 90, 170, u8);
  bytes(g, "xz", {}, -20, 20, s8);
  bytes(g, "yz", {}, 100, 140, u8);
  test::add_float_initializer(g, "xs", {}, 0.021f);
  test::add_float_initializer(g, "ws", {20}, 0.0037f);
  test::add_float_initializer(g, "ys", {}, 0.61f);
  auto* c3 = test::add_node(g, "QLinearConv", {"x", "xs", "xz", "w3", "ws", "wz", "ys", "yz"}, {"y3"}, "q3");
  test::set_int(c3, "group", 2);
  test::set_ints(c3, "pads", {1, 1, 1, 1});
  test::set_ints(c3, "strides", {2, 2});
  auto* c1 = test::add_node(g, "QLinearConv", {"x", "xs", "xz", "w1", "ws", "wz", "ys", "yz"}, {"y1"}, "q1");
  test::set_int(c1, "group", 2);
  auto* ci = test::add_node(g, "ConvInteger", {"x", "w3", "xz", "wz"}, {"yi"}, "integer");
  test::set_int(ci, "group", 2);
  test::set_ints(ci, "pads", {1, 0, 1, 2});
  // int8 weights about 0: no position sums, so on VNNI the product writes
  // the requantized bytes itself.
  bytes(g, "w8", {20, 7, 3, 3}, -128, 127, s8);
  bytes(g, "wz0", {20}, 0, 0, s8);
  auto* c8 = test::add_node(g, "QLinearConv", {"x", "xs", "xz", "w8", "ws", "wz0", "ys", "yz"}, {"y8"}, "q8");
  test::set_int(c8, "group", 2);
  test::set_ints(c8, "pads", {1, 1, 1, 1});
  // Depthwise at stride 2 and 1: the float kernel on the bytes less their
  // zero point, converted a row at a time (conv_depthwise.h).
  bytes(g, "wd", {14, 1, 3, 3}, -128, 127, s8);
  bytes(g, "wdz", {14}, 0, 0, s8);
  test::add_float_initializer(g, "wds", {14}, 0.0041f);
  for (int64_t stride : {2, 1}) {
    const std::string y = "yd" + std::to_string(stride);
    auto* d = test::add_node(g, "QLinearConv", {"x", "xs", "xz", "wd", "wds", "wdz", "ys", "yz"}, {y}, y);
    test::set_int(d, "group", 14);
    test::set_ints(d, "pads", {1, 1, 1, 1});
    test::set_ints(d, "strides", {stride, stride});
  }
  for (const char* y : {"y3", "y1", "yi", "y8", "yd2", "yd1"}) test::add_output(g, y);
  const std::string model = test::bytes_of(m);
  Tensor x(DType::Int8, {1, 14, 9, 13});
  std::uniform_int_distribution<int> u(-128, 127);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<int8_t>()[i] = int8_t(u(rng));
  const auto fast = run_at_level(model, {{"x", x}}), reference = run_at_level(model, {{"x", x}}, CpuKernels::Reference);
  ASSERT_EQ(fast.size(), 6u);
  for (size_t i = 0; i < fast.size(); ++i) EXPECT_TRUE(fast[i].same_as(reference[i])) << "output " << i;
}

// A quantized convolution with an activation between it and its quantizer
// (QDQ form: DequantizeLinear -> Conv -> activation -> QuantizeLinear) runs
// as one QLinearConv carrying the activation (passes/fuse_qdq_conv.cpp),
// whose rows finish in one pass of registers from AVX2 on
// (backends/cpu/qconv_activation_kernel.inc: 8 values a step on AVX2, 16 on
// AVX-512): the reference kernels' bits for each activation that pass takes,
// on the product's int32 rows (3x3 and 1x1) and the depthwise layers' float
// ones, into uint8 and int8, over 9 x 13 maps (117 positions: tails past 16
// and past 8). The scales spread the outputs over the 8-bit range, so both
// rounding and saturation happen.
TEST_P(AtEachLevel, QuantizedConvolutionsWithAnActivationGiveTheReferencesBits) {
  std::mt19937 rng(31);
  auto bytes = [&](onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, int lo, int hi,
                   int type) { add_random_bytes(g, rng, name, dims, lo, hi, type); };
  const int u8 = onnx::TensorProto::UINT8, s8 = onnx::TensorProto::INT8;
  auto m = test::make_model(13);
  auto* g = m.mutable_graph();
  test::add_input(g, "x", {1, 14, 9, 13}, onnx::TensorProto::UINT8);
  bytes(g, "xz", {}, 120, 136, u8);
  bytes(g, "w3", {20, 14, 3, 3}, -128, 127, s8);
  bytes(g, "w1", {20, 14, 1, 1}, -128, 127, s8);
  bytes(g, "wd", {14, 1, 3, 3}, -128, 127, s8);
  bytes(g, "wz", {20}, 0, 0, s8);
  bytes(g, "wdz", {14}, 0, 0, s8);
  bytes(g, "yzu", {}, 60, 80, u8);
  bytes(g, "yzs", {}, -10, 10, s8);
  test::add_float_initializer(g, "xs", {}, 0.021f);
  test::add_float_initializer(g, "ws", {20}, 0.0037f);
  test::add_float_initializer(g, "wds", {14}, 0.0041f);
  test::add_float_initializer(g, "ys", {}, 0.05f);     // convolutions of a few units: across the range
  test::add_float_initializer(g, "ysig", {}, 0.004f);  // a logistic's 0 to 1
  test::add_float_initializer(g, "lo", {}, -1.f);
  test::add_float_initializer(g, "lo0", {}, 0.f);
  test::add_float_initializer(g, "hi", {}, 6.f);
  test::add_node(g, "DequantizeLinear", {"x", "xs", "xz"}, {"xf"}, "dx");
  for (const char* w : {"w3", "w1", "wd"}) {
    const bool dw = std::string(w) == "wd";
    auto* d = test::add_node(g, "DequantizeLinear", {w, dw ? "wds" : "ws", dw ? "wdz" : "wz"}, {std::string(w) + "f"},
                             std::string("d") + w);
    test::set_int(d, "axis", 0);
  }
  struct Layer {
    const char* y;
    const char* w;
    const char* act;  // Silu: Sigmoid and Mul
    bool int8_out;
  };
  const std::vector<Layer> layers = {
      {"silu3", "w3", "Silu", false},  {"sigmoid1", "w1", "Sigmoid", true}, {"relu3", "w3", "Relu", true},
      {"leaky1", "w1", "LeakyRelu", false}, {"clip3", "w3", "Clip", false},    {"silu_dw", "wd", "Silu", true},
      {"clip_dw", "wd", "Clip0", false}, {"sigmoid_dw", "wd", "Sigmoid", false},
  };
  for (const Layer& l : layers) {
    const std::string y = l.y, act = l.act;
    const bool dw = std::string(l.w) == "wd";
    auto* c = test::add_node(g, "Conv", {"xf", std::string(l.w) + "f"}, {y + "_conv"}, y + "_conv");
    if (std::string(l.w) != "w1") test::set_ints(c, "pads", {1, 1, 1, 1});
    if (dw) test::set_int(c, "group", 14);
    const std::string a = y + "_act";
    if (act == "Silu") {
      test::add_node(g, "Sigmoid", {y + "_conv"}, {y + "_sig"}, y + "_sig");
      test::add_node(g, "Mul", {y + "_conv", y + "_sig"}, {a}, y + "_mul");
    } else if (act == "Clip" || act == "Clip0") {
      test::add_node(g, "Clip", {y + "_conv", act == "Clip" ? "lo" : "lo0", "hi"}, {a}, y + "_clip");
    } else {
      auto* n = test::add_node(g, act, {y + "_conv"}, {a}, y + "_" + act);
      if (act == "LeakyRelu") test::set_float(n, "alpha", 0.1f);
    }
    test::add_node(g, "QuantizeLinear", {a, act == "Sigmoid" ? "ysig" : "ys", l.int8_out ? "yzs" : "yzu"}, {y},
                   y + "_q");
    test::add_output(g, y);
  }
  const std::string model = test::bytes_of(m);
  Tensor x(DType::UInt8, {1, 14, 9, 13});
  std::uniform_int_distribution<int> u(0, 255);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<uint8_t>()[i] = uint8_t(u(rng));
  const auto reference = run_at_level(model, {{"x", x}}, CpuKernels::Reference);
  // The fast run, counting the ops that ran: every layer one QLinearConv.
  SessionOptions o;
  o.backend = BackendChoice::Cpu;
  auto session = Session::load_bytes(model.data(), model.size(), o);
  cap_cpu_isa(GetParam());
  std::map<std::string, int> ran;
  const auto fast = session->run_traced(
      {{"x", x}}, [](void* user, const backends::NodeTiming& t) { ++(*static_cast<std::map<std::string, int>*>(user))[t.node->op_type]; },
      &ran);
  EXPECT_EQ(ran["QLinearConv"], int(layers.size()));
  EXPECT_EQ(ran.size(), 1u) << "only QLinearConv runs";
  ASSERT_EQ(fast.size(), layers.size());
  for (size_t i = 0; i < fast.size(); ++i) {
    EXPECT_TRUE(fast[i].same_as(reference[i])) << layers[i].y;
    // Not a constant output: the activation and the scales leave many levels.
    const Tensor& t = reference[i];
    std::map<int, int> levels;
    for (int64_t j = 0; j < t.numel(); ++j)
      ++levels[t.dtype() == DType::UInt8 ? int(t.data<uint8_t>()[j]) : int(t.data<int8_t>()[j])];
    EXPECT_GT(levels.size(), 20u) << layers[i].y;
  }
}

// (On arm64, whose only level is the baseline, the NEON kernel runs.)
TEST_P(AtEachLevel, NarrowProductsRunFromAvx2On) {
  std::vector<float> a(16 * 32, 1.f), b(32 * 4, 1.f), c(16 * 4, 0.f);
  const bool ran = backends::cpu::narrow_gemm(false, 16, 4, 32, a.data(), 32, b.data(), 4, c.data(), 4);
  EXPECT_EQ(ran, !KESTREL_X86 || GetParam() != CpuIsa::Baseline);
  if (ran) EXPECT_EQ(c[0], 32.f);
}

// MatMulNBits' few-row product on the 4-bit blocks (nbits_rows.h) against
// the reference's dequantized weights and a float64 sum: K past a whole
// number of groups of 16 and of blocks (the tails), zero points and without.
TEST_P(AtEachLevel, FourBitRowsMatchTheDequantizedWeights) {
  const int64_t K = 84, N = 7, block = 16, blocks = (K + block - 1) / block;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<uint8_t> b(size_t(N * blocks * block / 2)), zp(size_t(N * ((blocks + 1) / 2)));
  for (auto& v : b) v = uint8_t(byte(rng));
  for (auto& v : zp) v = uint8_t(byte(rng));
  std::vector<float> scales(size_t(N * blocks)), a(size_t(3 * K)), w(size_t(N * K));
  for (auto& v : scales) v = 0.01f + 0.1f * std::abs(u(rng));
  for (auto& v : a) v = u(rng);
  for (const uint8_t* z : std::vector<const uint8_t*>{zp.data(), nullptr}) {
    ops::nbits_to_float(K, 4, block, b.data(), scales.data(), z, 0, N, w.data());
    std::vector<float> y(size_t(3 * N), -1.f);
    backends::cpu::NbitsRows r;
    r.M = 3, r.K = K, r.block = block, r.a = a.data(), r.b = b.data(), r.scales = scales.data(), r.zp = z;
    r.prepare();
    backends::cpu::nbits4_rows(r, 0, N, y.data(), N);
    for (int64_t m = 0; m < 3; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double ref = 0;
        for (int64_t k = 0; k < K; ++k) ref += double(a[size_t(m * K + k)]) * w[size_t(n * K + k)];
        EXPECT_NEAR(y[size_t(m * N + n)], ref, 1e-5) << "row " << m << " column " << n << (z ? "" : ", no zero points");
      }
  }
}

// The panels of dequantized columns MatMulNBits multiplies for more rows
// (nbits_panel.h): the same floats as the reference's dequantization, at
// each level, on columns 2 to 18 (two groups of 8 on AVX2 and one left to
// the portable loop) and a K whose last block is cut short (whole groups of
// 16 and a tail of 4), with and without zero points, into a wider panel.
TEST_P(AtEachLevel, FourBitPanelsHoldTheReferencesWeights) {
  const int64_t K = 84, N = 19, block = 32, blocks = (K + block - 1) / block, ldp = 23;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> u(0.01f, 0.1f);
  std::vector<uint8_t> b(size_t(N * blocks * block / 2)), zp(size_t(N * ((blocks + 1) / 2)));
  for (auto& v : b) v = uint8_t(byte(rng));
  for (auto& v : zp) v = uint8_t(byte(rng));
  std::vector<float> scales(size_t(N * blocks)), w(size_t(N * K));
  for (auto& v : scales) v = u(rng);
  for (const uint8_t* z : std::vector<const uint8_t*>{zp.data(), nullptr}) {
    ops::nbits_to_float(K, 4, block, b.data(), scales.data(), z, 0, N, w.data());
    std::vector<float> panel(size_t(K * ldp), -7.f);
    const backends::cpu::Nbits4Weights w4{K, block, b.data(), scales.data(), z};
    backends::cpu::nbits4_panel(w4, 2, N, panel.data(), ldp);  // columns 2 .. 18 at panel columns 0 .. 16
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t n = 2; n < N; ++n)
        ASSERT_EQ(panel[size_t(k * ldp + n - 2)], w[size_t(n * K + k)]) << "k " << k << " column " << n << (z ? "" : ", no zero points");
      for (int64_t j = N - 2; j < ldp; ++j) ASSERT_EQ(panel[size_t(k * ldp + j)], -7.f) << "past the columns, k " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CpuIsa, AtEachLevel, ::testing::Values(CpuIsa::Baseline, CpuIsa::Avx2, CpuIsa::Avx512),
                         [](const auto& info) { return std::string(cpu_isa_name(info.param)); });

TEST(CpuIsa, TheCapNeverRaisesTheLevelPastTheCpus) {
  cap_cpu_isa(CpuIsa::Baseline);
  EXPECT_EQ(cpu_isa(), CpuIsa::Baseline);
  cap_cpu_isa(CpuIsa::Avx512);
  EXPECT_EQ(cpu_isa(), cpu_isa_detected());
}

}  // namespace
}  // namespace kestrel

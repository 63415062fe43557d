// Checks of the normalization, softmax, reduction, resize and quantization
// kernels that ONNX's backend suite does not make.
#include <gtest/gtest.h>

#include <limits>

#include <cmath>
#include <random>

#include "backends/cpu/executor.h"
#include "core/cpu_isa.h"

using namespace kestrel;

namespace {

// Runs a single-node graph: inputs are bound in order, unnamed outputs come back in order.
struct OneNode {
  ir::Graph g;
  ir::Node node;
  OneNode(const std::string& op, int opset) {
    node.name = "n0";
    node.op_type = op;
    node.opset = opset;
  }
  OneNode& attr_i(const std::string& k, int64_t v) {
    node.attrs[k].kind = ir::Attribute::Kind::Int;
    node.attrs[k].i = v;
    return *this;
  }
  OneNode& attr_f(const std::string& k, float v) {
    node.attrs[k].kind = ir::Attribute::Kind::Float;
    node.attrs[k].f = v;
    return *this;
  }
  OneNode& attr_s(const std::string& k, const std::string& v) {
    node.attrs[k].kind = ir::Attribute::Kind::String;
    node.attrs[k].s = v;
    return *this;
  }
  // An empty tensor stands for an omitted optional input.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, int outputs = 1) {
    std::vector<Tensor> bound;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined()) {
        node.inputs.push_back(-1);
        continue;
      }
      int v = g.add_value("in" + std::to_string(i));
      node.inputs.push_back(v);
      g.inputs.push_back(v);
      bound.push_back(inputs[i]);
    }
    for (int i = 0; i < outputs; ++i) {
      int v = g.add_value("out" + std::to_string(i));
      node.outputs.push_back(v);
      g.outputs.push_back(v);
    }
    g.nodes.push_back(node);
    backends::cpu::Plan plan = backends::cpu::Plan::build(g);
    backends::RunOptions opts;
    opts.threads = 2;
    return backends::cpu::execute(plan, bound, nullptr, opts);
  }
};

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace

TEST(Softmax, RowWithMinusInfAndHugeValuesStaysFinite) {
  Tensor x = Tensor::from_f32({2, 4}, {-INFINITY, 1e30f, 1e30f, -INFINITY, 3e38f, -3e38f, 0.0f, -INFINITY});
  std::vector<float> y = OneNode("Softmax", 13).run({x})[0].to_f32();
  std::vector<float> want = {0, 0.5f, 0.5f, 0, 1, 0, 0, 0};
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-6) << "element " << i;

  std::vector<float> ls = OneNode("LogSoftmax", 13).run({x})[0].to_f32();
  EXPECT_NEAR(ls[1], -std::log(2.0f), 1e-6);
  EXPECT_EQ(ls[0], -INFINITY);
  EXPECT_NEAR(ls[4], 0.0f, 1e-6);
  EXPECT_NEAR(ls[6], -3e38f, 1e32f);
}

TEST(Softmax, Opset11FlattensFromAxisOpset13DoesNot) {
  Tensor x = Tensor::from_f32({1, 2, 2}, {0, 0, 0, 0});
  // Opset 11, axis 1: one row of 4 elements. Opset 13, axis 1: columns of 2.
  for (float v : OneNode("Softmax", 11).attr_i("axis", 1).run({x})[0].to_f32()) EXPECT_NEAR(v, 0.25f, 1e-7);
  for (float v : OneNode("Softmax", 13).attr_i("axis", 1).run({x})[0].to_f32()) EXPECT_NEAR(v, 0.5f, 1e-7);
}

TEST(LayerNormalization, OddWidthsMatchDoublePrecision) {
  for (int64_t width : {1, 3, 7, 33, 129}) {
    const int64_t rows = 5;
    std::vector<float> xs = random_floats(size_t(rows * width), unsigned(width));
    for (float& v : xs) v += 1000.0f;  // a large mean exposes one-pass variance
    std::vector<float> sc = random_floats(size_t(width), 7), bs = random_floats(size_t(width), 8);
    std::vector<Tensor> out = OneNode("LayerNormalization", 17)
                                  .attr_f("epsilon", 1e-5f)
                                  .run({Tensor::from_f32({rows, width}, xs), Tensor::from_f32({width}, sc),
                                        Tensor::from_f32({width}, bs)},
                                       3);
    ASSERT_EQ(out[1].shape(), (Shape{rows, 1}));
    std::vector<float> y = out[0].to_f32();
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < width; ++i) mean += xs[size_t(r * width + i)];
      mean /= double(width);
      for (int64_t i = 0; i < width; ++i) var += std::pow(xs[size_t(r * width + i)] - mean, 2);
      double inv = 1 / std::sqrt(var / double(width) + 1e-5);
      EXPECT_NEAR(out[1].to_f32()[size_t(r)], mean, 1e-3);
      EXPECT_NEAR(out[2].to_f32()[size_t(r)], inv, 1e-3 * inv);
      for (int64_t i = 0; i < width; ++i) {
        double want = (xs[size_t(r * width + i)] - mean) * inv * sc[size_t(i)] + bs[size_t(i)];
        EXPECT_NEAR(y[size_t(r * width + i)], want, 2e-3) << "width " << width << " row " << r << " col " << i;
      }
    }
  }
}

TEST(ReduceSum, FloatAccumulatesWithoutLosingSmallTerms) {
  // 1e8 + 1000 ones - 1e8: a float32 running sum gives 0.
  std::vector<float> v(1002, 1.0f);
  v.front() = 1e8f;
  v.back() = -1e8f;
  Tensor y = OneNode("ReduceSum", 13).attr_i("keepdims", 0).run({Tensor::from_f32({1002}, v)})[0];
  EXPECT_EQ(y.shape(), Shape{});
  EXPECT_EQ(y.to_f32()[0], 1000.0f);
}

TEST(Reduce, Int64SumsWrapAroundInsteadOfOverflowing) {
  // 2^32 squared is 2^64: zero in 64-bit two's complement (a fuzzed model
  // folded this at load, a signed overflow before). The sum and product of
  // the largest int64 wrap the same way.
  const int64_t big = int64_t(1) << 32, top = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(OneNode("ReduceSumSquare", 13).attr_i("keepdims", 0).run({Tensor::from_i64({big, 3})})[0].data<int64_t>()[0], 9);
  EXPECT_EQ(OneNode("ReduceSum", 13).attr_i("keepdims", 0).run({Tensor::from_i64({top, 1})})[0].data<int64_t>()[0],
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(OneNode("ReduceProd", 13).attr_i("keepdims", 0).run({Tensor::from_i64({big, big, 5})})[0].data<int64_t>()[0], 0);
  EXPECT_EQ(OneNode("ReduceL1", 13).attr_i("keepdims", 0).run({Tensor::from_i64({std::numeric_limits<int64_t>::min(), 1})})[0].data<int64_t>()[0],
            std::numeric_limits<int64_t>::min() + 1);
}

TEST(Reduce, MiddleAxisAndAxesAttributeBeforeOpset18) {
  std::vector<float> v = random_floats(2 * 3 * 4, 3);
  Tensor x = Tensor::from_f32({2, 3, 4}, v);
  OneNode op("ReduceMax", 13);
  op.node.attrs["axes"].kind = ir::Attribute::Kind::Ints;
  op.node.attrs["axes"].ints = {1};
  Tensor y = op.run({x})[0];
  ASSERT_EQ(y.shape(), (Shape{2, 1, 4}));
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 4; ++c) {
      float m = -INFINITY;
      for (int b = 0; b < 3; ++b) m = std::max(m, v[size_t((a * 3 + b) * 4 + c)]);
      EXPECT_EQ(y.to_f32()[size_t(a * 4 + c)], m);
    }
}

namespace {

// ONNX Runtime's bilinear resize, written out here as the oracle: the
// coordinate in float (scale 1 keeps it), clamped into the axis, weights
// |x - x2| and |x - x1| (0.5 each at the last index), and per output the
// four corner terms (weight products) summed in order, nothing fused.
struct OrtAxis {
  std::vector<int64_t> i1, i2;
  std::vector<float> d1, d2;
};
OrtAxis ort_axis(const std::string& ctm, int64_t in, int64_t out, float scale) {
  OrtAxis a;
  for (int64_t o = 0; o < out; ++o) {
    float x = float(o), fin = float(in), fout = float(out);
    if (scale != 1) {
      if (ctm == "asymmetric") x = x / scale;
      else if (ctm == "align_corners") x = fout == 1 ? 0 : x * (fin - 1) / (fout - 1);
      else if (ctm == "pytorch_half_pixel") x = fout > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
      else x = (x + 0.5f) / scale - 0.5f;
    }
    x = std::max(0.0f, std::min(x, fin - 1));
    int64_t i1 = std::min(int64_t(x), in - 1), i2 = std::min(i1 + 1, in - 1);
    volatile float d1 = std::fabs(x - float(i1)), d2 = std::fabs(x - float(i2));
    a.i1.push_back(i1);
    a.i2.push_back(i2);
    a.d1.push_back(i1 == i2 ? 0.5f : d1);
    a.d2.push_back(i1 == i2 ? 0.5f : d2);
  }
  return a;
}

}  // namespace

TEST(Resize, BilinearRoundsAsOnnxRuntimeDoes) {
  // The 4-D path must give ONNX Runtime's bits (a quantized model turns an
  // ulp into a quantization step); the 5-D input takes the separable generic
  // path, which holds the same values to within float rounding.
  for (std::string ctm : {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"}) {
    for (int64_t oh : {10, 3, 8}) {
      const int64_t N = 2, C = 3, H = 5, W = 6, ow = oh + 2;
      std::vector<float> v = random_floats(size_t(N * C * H * W), 11);
      Tensor x4 = Tensor::from_f32({N, C, H, W}, v), x5 = Tensor::from_f32({1, N, C, H, W}, v);
      auto run = [&](const Tensor& x, std::vector<int64_t> sizes) {
        return OneNode("Resize", 13)
            .attr_s("mode", "linear")
            .attr_s("coordinate_transformation_mode", ctm)
            .run({x, Tensor(), Tensor(), Tensor::from_i64(sizes)})[0]
            .to_f32();
      };
      std::vector<float> got = run(x4, {N, C, oh, ow}), sep = run(x5, {1, N, C, oh, ow});
      OrtAxis ay = ort_axis(ctm, H, oh, float(oh) / float(H)), ax = ort_axis(ctm, W, ow, float(ow) / float(W));
      ASSERT_EQ(got.size(), size_t(N * C * oh * ow));
      for (int64_t pl = 0; pl < N * C; ++pl)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t x = 0; x < ow; ++x) {
            const float* s = v.data() + pl * H * W;
            auto at = [&](int64_t r, int64_t c) { return s[r * W + c]; };
            volatile float w11 = ax.d2[size_t(x)] * ay.d2[size_t(y)], w21 = ax.d1[size_t(x)] * ay.d2[size_t(y)];
            volatile float w12 = ax.d2[size_t(x)] * ay.d1[size_t(y)], w22 = ax.d1[size_t(x)] * ay.d1[size_t(y)];
            volatile float t11 = w11 * at(ay.i1[size_t(y)], ax.i1[size_t(x)]);
            volatile float t21 = w21 * at(ay.i1[size_t(y)], ax.i2[size_t(x)]);
            volatile float t12 = w12 * at(ay.i2[size_t(y)], ax.i1[size_t(x)]);
            volatile float t22 = w22 * at(ay.i2[size_t(y)], ax.i2[size_t(x)]);
            volatile float sum = t11 + t21;
            sum = sum + t12;
            sum = sum + t22;
            const size_t k = size_t((pl * oh + y) * ow + x);
            ASSERT_EQ(got[k], float(sum)) << ctm << " to " << oh << "x" << ow << " element " << k;
            ASSERT_NEAR(sep[k], got[k], 1e-6f * std::max(1.0f, std::fabs(got[k]))) << ctm << " element " << k;
          }
    }
  }
}

// Resize's loops are compiled per CPU level (ops/resize_kernels.inc): each
// level this CPU has gives the baseline's bits on the one-pass bilinear path,
// the separable linear path (5-D) and cubic (four taps), upsampling and
// shrinking. Levels the CPU lacks are left out (the baseline always runs).
TEST(Resize, GivesTheSameBitsAtEveryCpuLevel) {
  struct Run {
    Shape shape;
    std::string mode;
    std::vector<float> scales;
  };
  const std::vector<Run> runs = {{{1, 16, 20, 20}, "linear", {1, 1, 2, 2}},
                                 {{1, 2, 3, 9, 11}, "linear", {1, 1, 1, 1.7f, 0.6f}},
                                 {{2, 3, 10, 14}, "cubic", {1, 1, 1.5f, 2}}};
  std::vector<std::vector<float>> baseline;
  int levels = 0;
  for (CpuIsa isa : {CpuIsa::Baseline, CpuIsa::Avx2, CpuIsa::Avx512}) {
    if (isa > cpu_isa_detected()) continue;
    cap_cpu_isa(isa);
    ++levels;
    for (size_t r = 0; r < runs.size(); ++r) {
      const Run& run = runs[r];
      Tensor x = Tensor::from_f32(run.shape, random_floats(size_t(shape_numel(run.shape)), unsigned(31 + r)));
      std::vector<float> y = OneNode("Resize", 13)
                                 .attr_s("mode", run.mode)
                                 .run({x, Tensor(), Tensor::from_f32({int64_t(run.scales.size())}, run.scales)})[0]
                                 .to_f32();
      if (isa == CpuIsa::Baseline) {
        baseline.push_back(y);
        continue;
      }
      ASSERT_EQ(y.size(), baseline[r].size());
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(y[i], baseline[r][i]) << cpu_isa_name(isa) << ", " << run.mode << " run " << r << ", element " << i;
    }
  }
  cap_cpu_isa(CpuIsa::Avx512);
  EXPECT_GE(levels, 1);
}

// A channels-last image resized over its middle axes (the CPU's layout pass
// hands Resize one, with its scales permuted) gives the planar resize's bits
// in the other layout, at every level: bilinear (up and down) and nearest.
TEST(Resize, ChannelsLastGivesThePlanarBits) {
  const int64_t N = 2, C = 19, H = 7, W = 9;
  std::vector<float> v = random_floats(size_t(N * C * H * W), 5);
  Tensor planar = Tensor::from_f32({N, C, H, W}, v), last(DType::Float32, {N, H, W, C});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < H * W; ++i) last.data<float>()[(n * H * W + i) * C + c] = v[size_t((n * C + c) * H * W + i)];
  for (CpuIsa isa : {CpuIsa::Baseline, CpuIsa::Avx2, CpuIsa::Avx512}) {
    if (isa > cpu_isa_detected()) continue;
    cap_cpu_isa(isa);
    for (const char* mode : {"linear", "nearest"})
      for (int64_t oh : {16, 4}) {
        const int64_t ow = oh + 3;
        auto run = [&](const Tensor& x, std::vector<int64_t> sizes) {
          return OneNode("Resize", 13)
              .attr_s("mode", mode)
              .run({x, Tensor(), Tensor(), Tensor::from_i64(sizes)})[0]
              .to_f32();
        };
        const std::vector<float> want = run(planar, {N, C, oh, ow}), got = run(last, {N, oh, ow, C});
        ASSERT_EQ(got.size(), want.size());
        for (int64_t n = 0; n < N; ++n)
          for (int64_t c = 0; c < C; ++c)
            for (int64_t i = 0; i < oh * ow; ++i)
              ASSERT_EQ(got[size_t((n * oh * ow + i) * C + c)], want[size_t((n * C + c) * oh * ow + i)])
                  << cpu_isa_name(isa) << ", " << mode << " to " << oh << "x" << ow;
      }
  }
  cap_cpu_isa(CpuIsa::Avx512);
}

TEST(Resize, NearestTwoXOfNchw) {
  Tensor x = Tensor::from_f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor y = OneNode("Resize", 13)
                 .attr_s("mode", "nearest")
                 .run({x, Tensor(), Tensor::from_f32({4}, {1, 1, 2, 2})})[0];
  EXPECT_EQ(y.to_f32(), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST(DequantizeLinear, PerAxisScaleOfWrongLengthNamesTheNode) {
  Tensor x(DType::UInt8, {2, 3});
  Tensor scale = Tensor::from_f32({2}, {0.5f, 0.25f});  // axis 1 has 3 entries
  try {
    OneNode("DequantizeLinear", 13).attr_i("axis", 1).run({x, scale});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'n0'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2]"), std::string::npos) << msg;
  }
}

TEST(DynamicQuantizeLinear, RoundsHalfToEven) {
  // Range [0, 255] gives scale 1 and zero point 0; 2.5 -> 2, 3.5 -> 4.
  Tensor x = Tensor::from_f32({4}, {0.0f, 2.5f, 3.5f, 255.0f});
  std::vector<Tensor> out = OneNode("DynamicQuantizeLinear", 11).run({x}, 3);
  EXPECT_EQ(out[0].to_i64(), (std::vector<int64_t>{0, 2, 4, 255}));
  EXPECT_EQ(out[1].to_f32()[0], 1.0f);
  EXPECT_EQ(out[2].to_i64()[0], 0);
}

TEST(DynamicQuantizeLinear, RangeOverManyBlocksIsWhatOnePassGives) {
  // 200,003 values (several of the range's 65,536-value blocks and a tail
  // past its 16 lanes): the extremes sit in a middle block and in the tail,
  // and NaNs are skipped.
  std::vector<float> v = random_floats(200003, 31);
  v[70000] = -1000.25f;
  v[200002] = 1500.5f;
  v[5] = std::nanf("");
  v[131072] = std::nanf("");
  std::vector<float> positive(v.size());
  for (size_t i = 0; i < v.size(); ++i) positive[i] = std::fabs(v[i]);
  positive[70000] = 0.0f;
  for (const std::vector<float>* in : {&v, &positive}) {
    float lo = 0, hi = 0;  // one pass in order, as ONNX defines the range
    for (float f : *in) lo = std::min(lo, f), hi = std::max(hi, f);
    ASSERT_EQ(hi, 1500.5f);
    std::vector<Tensor> out = OneNode("DynamicQuantizeLinear", 11).run({Tensor::from_f32({int64_t(in->size())}, *in)}, 3);
    const float scale = (hi - lo) / 255.0f;
    EXPECT_EQ(out[1].to_f32()[0], scale);
    EXPECT_EQ(out[2].to_i64()[0], int64_t(std::nearbyint(-lo / scale)));
    EXPECT_EQ(out[0].to_i64()[200002], 255);
    EXPECT_EQ(out[0].to_i64()[70000], in == &v ? 0 : out[2].to_i64()[0]);
  }
}

TEST(BatchNormalization, TrainingModeIsRefused) {
  Tensor x = Tensor::from_f32({1, 2}, {1, 2});
  Tensor p = Tensor::from_f32({2}, {1, 1});
  EXPECT_THROW(OneNode("BatchNormalization", 15).attr_i("training_mode", 1).run({x, p, p, p, p}), Error);
}

TEST(LSTM, ReverseEqualsForwardOnReversedSequenceAndHonoursLengths) {
  const int64_t seq = 3, batch = 2, in = 3, hs = 4;
  std::vector<float> xv = random_floats(size_t(seq * batch * in), 21);
  Tensor w = Tensor::from_f32({1, 4 * hs, in}, random_floats(size_t(4 * hs * in), 22));
  Tensor r = Tensor::from_f32({1, 4 * hs, hs}, random_floats(size_t(4 * hs * hs), 23));
  Tensor b = Tensor::from_f32({1, 8 * hs}, random_floats(size_t(8 * hs), 24));
  Tensor lens(DType::Int32, {batch});
  lens.data<int32_t>()[0] = 3;
  lens.data<int32_t>()[1] = 2;
  // Sequence 1 has length 2: reversed, it reads steps 1 then 0.
  std::vector<float> rev(xv.size());
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t bb = 0; bb < batch; ++bb) {
      int64_t len = bb == 0 ? 3 : 2;
      int64_t src = t < len ? len - 1 - t : t;
      for (int64_t i = 0; i < in; ++i) rev[size_t((t * batch + bb) * in + i)] = xv[size_t((src * batch + bb) * in + i)];
    }
  auto run = [&](const std::string& dir, const std::vector<float>& x) {
    return OneNode("LSTM", 14)
        .attr_i("hidden_size", hs)
        .attr_s("direction", dir)
        .run({Tensor::from_f32({seq, batch, in}, x), w, r, b, lens}, 3);
  };
  std::vector<Tensor> fwd = run("forward", rev), bwd = run("reverse", xv);
  std::vector<float> hf = fwd[1].to_f32(), hb = bwd[1].to_f32();
  for (size_t i = 0; i < hf.size(); ++i) EXPECT_NEAR(hf[i], hb[i], 1e-5) << "Y_h element " << i;
  // Past its length a sequence's Y is zero.
  std::vector<float> y = fwd[0].to_f32();
  for (int64_t j = 0; j < hs; ++j) EXPECT_EQ(y[size_t(((2 * 1 + 0) * batch + 1) * hs + j)], 0.0f);
}

// Conv/ConvTranspose/MatMul/Einsum kernels against naive loops written here,
// across the optimized paths (1x1 GEMM, tiled im2col, depthwise, grouped,
// dilated, strided, odd sizes) and thread counts.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "backends/cpu/executor.h"
#include "core/tensor.h"

using namespace kestrel;

namespace {

ir::Attribute ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
ir::Attribute integer(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Int;
  a.i = v;
  return a;
}
ir::Attribute str(std::string s) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::String;
  a.s = std::move(s);
  return a;
}

// Runs one node of `op` on the CPU executor.
Tensor run_node(const std::string& op, const std::vector<Tensor>& inputs, std::map<std::string, ir::Attribute> attrs = {},
                int threads = 2) {
  ir::Graph g;
  g.name = "test";
  ir::Node n;
  n.name = "n";
  n.op_type = op;
  n.opset = 17;
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    int v = g.add_value("in" + std::to_string(i));
    g.inputs.push_back(v);
    n.inputs.push_back(v);
  }
  int out = g.add_value("out");
  n.outputs.push_back(out);
  g.outputs.push_back(out);
  g.nodes.push_back(n);
  backends::cpu::Plan plan = backends::cpu::Plan::build(g);
  backends::RunOptions opts;
  opts.threads = threads;
  return backends::cpu::execute(plan, inputs, nullptr, opts).at(0);
}

Tensor random(const Shape& s, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(size_t(shape_numel(s)));
  for (float& x : v) x = u(rng);
  return Tensor::from_f32(s, v);
}

std::vector<int64_t> spatial(const Shape& s) { return {s.begin() + 2, s.end()}; }

float max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(shape_str(a.shape()), shape_str(b.shape()));
  if (a.shape() != b.shape()) return INFINITY;
  float m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  return m;
}

// Convolution parameters, spatial dims padded to 3 with leading units.
struct ConvCase {
  int64_t N, C, M, group;
  std::vector<int64_t> in, k, stride, dil, pads;  // pads: begins then ends, as in ONNX
};

int64_t at3(const std::vector<int64_t>& v, int i, int nd, int64_t unit) { return i < 3 - nd ? unit : v[size_t(i - (3 - nd))]; }

// Direct convolution: every output sums its window, reading zero outside.
Tensor naive_conv(const ConvCase& c, const Tensor& X, const Tensor& W, const Tensor* B) {
  int nd = int(c.in.size());
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
  for (int i = 0; i < 3; ++i) {
    in[i] = at3(c.in, i, nd, 1), k[i] = at3(c.k, i, nd, 1), s[i] = at3(c.stride, i, nd, 1), d[i] = at3(c.dil, i, nd, 1);
    bool real = i >= 3 - nd;
    pb[i] = real ? c.pads[size_t(i - (3 - nd))] : 0;
    pe[i] = real ? c.pads[size_t(nd + i - (3 - nd))] : 0;
    out[i] = (in[i] + pb[i] + pe[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
  }
  Shape ys{c.N, c.M};
  for (int i = 3 - nd; i < 3; ++i) ys.push_back(out[i]);
  std::vector<float> y(size_t(shape_numel(ys)));
  const float* x = X.data<float>();
  const float* w = W.data<float>();
  int64_t Cg = c.C / c.group, Mg = c.M / c.group;
  size_t o = 0;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t z = 0; z < out[0]; ++z)
        for (int64_t yy = 0; yy < out[1]; ++yy)
          for (int64_t xx = 0; xx < out[2]; ++xx) {
            double acc = B ? B->data<float>()[m] : 0;
            for (int64_t ci = 0; ci < Cg; ++ci)
              for (int64_t a = 0; a < k[0]; ++a)
                for (int64_t b = 0; b < k[1]; ++b)
                  for (int64_t e = 0; e < k[2]; ++e) {
                    int64_t iz = z * s[0] - pb[0] + a * d[0], iy = yy * s[1] - pb[1] + b * d[1],
                            ix = xx * s[2] - pb[2] + e * d[2];
                    if (iz < 0 || iz >= in[0] || iy < 0 || iy >= in[1] || ix < 0 || ix >= in[2]) continue;
                    int64_t cin = (m / Mg) * Cg + ci;
                    acc += double(x[(((n * c.C + cin) * in[0] + iz) * in[1] + iy) * in[2] + ix]) *
                           w[(((m * Cg + ci) * k[0] + a) * k[1] + b) * k[2] + e];
                  }
            y[o++] = float(acc);
          }
  return Tensor::from_f32(ys, y);
}

void check_conv(const ConvCase& c, bool bias = true) {
  Shape xs{c.N, c.C}, ws{c.M, c.C / c.group};
  xs.insert(xs.end(), c.in.begin(), c.in.end());
  ws.insert(ws.end(), c.k.begin(), c.k.end());
  Tensor X = random(xs, 1), W = random(ws, 2), B = random({c.M}, 3);
  Tensor want = naive_conv(c, X, W, bias ? &B : nullptr);
  std::vector<Tensor> in{X, W};
  if (bias) in.push_back(B);
  for (int threads : {1, 2}) {
    Tensor got = run_node("Conv", in,
                          {{"group", integer(c.group)}, {"strides", ints(c.stride)}, {"dilations", ints(c.dil)},
                           {"pads", ints(c.pads)}},
                          threads);
    EXPECT_LT(max_abs_diff(got, want), 1e-4f) << "threads " << threads;
  }
}

TEST(Conv, Pointwise1x1) { check_conv({2, 16, 24, 1, {9, 11}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}); }
TEST(Conv, Pointwise1x1Strided) { check_conv({1, 6, 5, 1, {9, 11}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}}); }
TEST(Conv, General3x3) { check_conv({2, 5, 7, 1, {13, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}); }
TEST(Conv, Im2colSpansSeveralChunks) { check_conv({1, 64, 8, 1, {40, 41}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}, false); }
TEST(Conv, Depthwise3x3Stride2) { check_conv({2, 8, 8, 8, {15, 13}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}}); }
// Rows wide enough for the 16-column vector blocks, their overlapping tail
// block and the scalar border columns, at strides 1 and 2, odd widths and pads.
TEST(Conv, DepthwiseVectorBlocksStride1) { check_conv({1, 3, 3, 3, {7, 53}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}); }
TEST(Conv, DepthwiseVectorBlocksStride2) { check_conv({1, 3, 3, 3, {9, 67}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}}); }
TEST(Conv, DepthwiseVectorBlocks5x5AsymmetricPads) {
  check_conv({2, 2, 2, 2, {6, 40}, {5, 5}, {2, 2}, {1, 1}, {2, 1, 1, 2}});
  check_conv({1, 2, 2, 2, {6, 37}, {5, 5}, {1, 1}, {1, 1}, {0, 3, 2, 0}});
}
TEST(Conv, Depthwise5x5Dilated) { check_conv({1, 6, 6, 6, {19, 16}, {5, 5}, {1, 1}, {2, 2}, {4, 3, 4, 5}}); }
TEST(Conv, DepthwiseMultiplier) { check_conv({1, 4, 8, 4, {7, 9}, {3, 3}, {1, 2}, {1, 1}, {0, 1, 2, 1}}); }
TEST(Conv, Grouped) { check_conv({2, 8, 12, 4, {10, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}); }
TEST(Conv, DilatedAsymmetricPads) { check_conv({1, 3, 4, 1, {17, 14}, {3, 2}, {1, 3}, {2, 3}, {2, 0, 1, 3}}); }
TEST(Conv, OneD) { check_conv({2, 3, 5, 1, {23}, {4}, {2}, {1}, {1, 2}}); }
TEST(Conv, DepthwiseOneD) { check_conv({1, 5, 5, 5, {31}, {3}, {1}, {3}, {3, 3}}); }
TEST(Conv, ThreeD) { check_conv({1, 3, 4, 1, {5, 6, 7}, {3, 2, 3}, {1, 2, 1}, {1, 1, 2}, {1, 0, 2, 1, 1, 0}}); }

TEST(Conv, AutoPadSameMatchesExplicitPads) {
  Tensor X = random({1, 3, 10, 9}, 4), W = random({4, 3, 4, 3}, 5);
  // out = ceil(in / stride); total pad = (out-1)*s + k - in: H: 4*2+4-10 = 2, W: 4*2+3-9 = 2.
  for (auto [mode, pads] : {std::pair{"SAME_UPPER", std::vector<int64_t>{1, 1, 1, 1}},
                            std::pair{"SAME_LOWER", std::vector<int64_t>{1, 1, 1, 1}}}) {
    Tensor got = run_node("Conv", {X, W}, {{"auto_pad", str(mode)}, {"strides", ints({2, 2})}});
    Tensor want = naive_conv({1, 3, 4, 1, {10, 9}, {4, 3}, {2, 2}, {1, 1}, pads}, X, W, nullptr);
    EXPECT_LT(max_abs_diff(got, want), 1e-4f) << mode;
  }
  // Odd total padding goes to the end for SAME_UPPER, the beginning for SAME_LOWER.
  Tensor X2 = random({1, 2, 7, 7}, 6), W2 = random({2, 2, 2, 2}, 7);
  Tensor up = run_node("Conv", {X2, W2}, {{"auto_pad", str("SAME_UPPER")}});
  Tensor lo = run_node("Conv", {X2, W2}, {{"auto_pad", str("SAME_LOWER")}});
  EXPECT_LT(max_abs_diff(up, naive_conv({1, 2, 2, 1, {7, 7}, {2, 2}, {1, 1}, {1, 1}, {0, 0, 1, 1}}, X2, W2, nullptr)), 1e-4f);
  EXPECT_LT(max_abs_diff(lo, naive_conv({1, 2, 2, 1, {7, 7}, {2, 2}, {1, 1}, {1, 1}, {1, 1, 0, 0}}, X2, W2, nullptr)), 1e-4f);
}

TEST(Conv, MismatchedWeightChannelsNamesBothShapes) {
  Tensor X = random({1, 3, 8, 8}, 1), W = random({4, 5, 3, 3}, 2);
  try {
    run_node("Conv", {X, W}, {});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[1,3,8,8]"), std::string::npos) << m;
    EXPECT_NE(m.find("[4,5,3,3]"), std::string::npos) << m;
  }
}

// ConvTranspose is the adjoint of Conv: <ConvT(x), y> == <x, Conv(y)> for the same weight.
TEST(ConvTranspose, IsTheAdjointOfConv) {
  struct Case {
    int64_t C, M, group;
    std::vector<int64_t> in, k, s, d, pads;
  };
  for (const Case& c : {Case{4, 6, 1, {5, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
                        Case{4, 4, 2, {6, 5}, {2, 3}, {2, 1}, {1, 2}, {0, 1, 1, 0}},
                        Case{3, 2, 1, {9}, {4}, {3}, {1}, {1, 2}}}) {
    Shape xs{1, c.C}, ws{c.C, c.M / c.group};
    xs.insert(xs.end(), c.in.begin(), c.in.end());
    ws.insert(ws.end(), c.k.begin(), c.k.end());
    Tensor X = random(xs, 8), W = random(ws, 9);
    Tensor Y = run_node("ConvTranspose", {X, W},
                        {{"group", integer(c.group)}, {"strides", ints(c.s)}, {"dilations", ints(c.d)}, {"pads", ints(c.pads)}});
    Tensor V = random(Y.shape(), 10);
    // Conv with the same weight maps Y's space back to X's space (M in, C out).
    ConvCase cc{1, c.M, c.C, c.group, spatial(Y.shape()), c.k, c.s, c.d, c.pads};
    Tensor CV = naive_conv(cc, V, W, nullptr);
    ASSERT_EQ(shape_str(CV.shape()), shape_str(X.shape()));
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < Y.numel(); ++i) lhs += double(Y.data<float>()[i]) * V.data<float>()[i];
    for (int64_t i = 0; i < X.numel(); ++i) rhs += double(X.data<float>()[i]) * CV.data<float>()[i];
    EXPECT_NEAR(lhs, rhs, 1e-3 * std::max(1.0, std::fabs(lhs)));
  }
}

Tensor naive_batched_matmul(const Tensor& A, const Tensor& B, int64_t batch, int64_t M, int64_t K, int64_t N,
                            bool b_batched) {
  std::vector<float> c(size_t(batch * M * N));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += double(A.data<float>()[(b * M + i) * K + k]) * B.data<float>()[((b_batched ? b : 0) * K + k) * N + j];
        c[size_t((b * M + i) * N + j)] = float(s);
      }
  return Tensor::from_f32({batch * M * N}, c);
}

TEST(MatMul, BroadcastBatchesAndVectors) {
  Tensor A = random({3, 5, 7}, 1), B = random({7, 4}, 2), Bb = random({3, 7, 4}, 3);
  EXPECT_LT(max_abs_diff(run_node("MatMul", {A, B}).reshaped({60}), naive_batched_matmul(A, B, 3, 5, 7, 4, false)), 1e-5f);
  EXPECT_LT(max_abs_diff(run_node("MatMul", {A, Bb}).reshaped({60}), naive_batched_matmul(A, Bb, 3, 5, 7, 4, true)), 1e-5f);
  Tensor v = random({7}, 4);
  EXPECT_EQ(shape_str(run_node("MatMul", {A, v}).shape()), "[3,5]");
  EXPECT_EQ(shape_str(run_node("MatMul", {v, Bb}).shape()), "[3,4]");
  EXPECT_THROW(run_node("MatMul", {A, random({6, 4}, 5)}), Error);
}

TEST(Einsum, AttentionAndWindowPatternsMatchLoops) {
  // bhqd,bhkd->bhqk
  Tensor Q = random({2, 3, 5, 4}, 1), Kt = random({2, 3, 6, 4}, 2);
  Tensor S = run_node("Einsum", {Q, Kt}, {{"equation", str("bhqd,bhkd->bhqk")}});
  ASSERT_EQ(shape_str(S.shape()), "[2,3,5,6]");
  float err = 0;
  for (int64_t b = 0; b < 6; ++b)
    for (int64_t q = 0; q < 5; ++q)
      for (int64_t k = 0; k < 6; ++k) {
        double s = 0;
        for (int64_t d = 0; d < 4; ++d) s += double(Q.data<float>()[(b * 5 + q) * 4 + d]) * Kt.data<float>()[(b * 6 + k) * 4 + d];
        err = std::max(err, std::fabs(float(s) - S.data<float>()[(b * 5 + q) * 6 + k]));
      }
  EXPECT_LT(err, 1e-5f);
  // bhwc,hkc->bhwk
  Tensor X = random({2, 3, 4, 5}, 3), R = random({3, 6, 5}, 4);
  Tensor Y = run_node("Einsum", {X, R}, {{"equation", str("bhwc,hkc->bhwk")}});
  ASSERT_EQ(shape_str(Y.shape()), "[2,3,4,6]");
  err = 0;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t w = 0; w < 4; ++w)
        for (int64_t k = 0; k < 6; ++k) {
          double s = 0;
          for (int64_t c = 0; c < 5; ++c)
            s += double(X.data<float>()[((b * 3 + h) * 4 + w) * 5 + c]) * R.data<float>()[(h * 6 + k) * 5 + c];
          err = std::max(err, std::fabs(float(s) - Y.data<float>()[((b * 3 + h) * 4 + w) * 6 + k]));
        }
  EXPECT_LT(err, 1e-5f);
}

TEST(Einsum, TraceDiagonalImplicitAndEllipsis) {
  Tensor M = Tensor::from_f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(run_node("Einsum", {M}, {{"equation", str("ii")}}).to_f32(), std::vector<float>{15});
  EXPECT_EQ(run_node("Einsum", {M}, {{"equation", str("ii->i")}}).to_f32(), (std::vector<float>{1, 5, 9}));
  // Implicit output: letters used once, alphabetically: "ji" -> "ij" is a transpose.
  EXPECT_EQ(run_node("Einsum", {M}, {{"equation", str("ji")}}).to_f32(), (std::vector<float>{1, 4, 7, 2, 5, 8, 3, 6, 9}));
  Tensor A = random({2, 3, 4}, 5), B = random({4, 5}, 6);
  Tensor Y = run_node("Einsum", {A, B}, {{"equation", str("...ij,jk")}});
  EXPECT_EQ(shape_str(Y.shape()), "[2,3,5]");
  EXPECT_LT(max_abs_diff(Y, run_node("MatMul", {A, B})), 1e-5f);
  EXPECT_THROW(run_node("Einsum", {A, B}, {{"equation", str("ij,jk")}}), Error);
}

}  // namespace

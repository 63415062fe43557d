// The CPU backend's layout pass (backends/cpu/channels_last.h): a chain of
// convolutions runs channels-last on oneDNN (ConvChannelsLast), entering
// and leaving through one Transpose each, with the reference kernels'
// answer (they run the graph as given); a chain of too few layers for its
// reorders, and a CPU below AVX2, keep the planar kernels.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <thread>

#include "core/compare.h"
#include "core/cpu_isa.h"
#include "runtime/session_options.h"
#include "onnx_builders.h"
#include "runtime/session.h"

using namespace kestrel;
using namespace kestrel::test;

namespace {

void fill(onnx::TensorProto* t, int n, int seed) {
  for (int i = 0; i < n; ++i) t->set_float_data(i, float((i * 37 + seed * 11) % 29) / 29.0f - 0.5f);
}

onnx::NodeProto* conv(onnx::GraphProto* g, const std::string& x, int cin, int cout, int k, const std::string& y,
                      int seed, int group = 1, int stride = 1) {
  const std::string w = y + "_w", b = y + "_b";
  fill(add_float_initializer(g, w, {cout, cin / group, k, k}), cout * (cin / group) * k * k, seed);
  fill(add_float_initializer(g, b, {cout}), cout, seed + 1);
  auto* n = add_node(g, "Conv", {x, w, b}, {y}, y);
  set_ints(n, "pads", std::vector<int64_t>(4, k / 2));
  if (group > 1) set_int(n, "group", group);
  if (stride > 1) set_ints(n, "strides", {stride, stride});
  return n;
}

// x [1,8,20,20]:
//   a = Relu(Conv3x3 8->16 (x))
//   d = Relu(Conv1x1(Relu(DepthwiseConv3x3(a))) + a)   (a residual the CPU fuses)
//   e = Sigmoid(Conv3x3 stride 2 (d)) * 0.5            (elementwise, a scalar)
//   f = Concat(e, Conv1x1(Conv1x1(Conv1x1(e))), axis 1)
//   heads = Conv1x1 48->6 (f)                          (planar output, no reorder)
// outputs: heads, and f (one reorder out). Eight Convs, two reorders.
std::string chain_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 8, 20, 20});
  conv(g, "x", 8, 16, 3, "ca", 1);
  add_node(g, "Relu", {"ca"}, {"a"}, "relu_a");
  conv(g, "a", 16, 16, 3, "cdw", 3, 16);
  add_node(g, "Relu", {"cdw"}, {"dw"}, "relu_dw");
  conv(g, "dw", 16, 16, 1, "cpw", 5);
  add_node(g, "Add", {"cpw", "a"}, {"s"}, "add");
  add_node(g, "Relu", {"s"}, {"d"}, "relu_d");
  conv(g, "d", 16, 24, 3, "cs2", 7, 1, 2);
  add_node(g, "Sigmoid", {"cs2"}, {"sg"}, "sigmoid");
  fill(add_float_initializer(g, "half", {}), 1, 9);
  add_node(g, "Mul", {"sg", "half"}, {"e"}, "mul");
  conv(g, "e", 24, 24, 1, "c1", 11);
  conv(g, "c1", 24, 24, 1, "c2", 13);
  conv(g, "c2", 24, 24, 1, "c3", 15);
  set_int(add_node(g, "Concat", {"e", "c3"}, {"f"}, "concat"), "axis", 1);
  conv(g, "f", 48, 6, 1, "heads", 17);
  add_output(g, "heads");
  add_output(g, "f");
  return bytes_of(m);
}

// x -> Conv3x3 -> Conv1x1 -> output: two Convs for two reorders.
std::string short_chain_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 8, 20, 20});
  conv(g, "x", 8, 16, 3, "c1", 1);
  conv(g, "c1", 16, 16, 1, "c2", 3);
  add_output(g, "c2");
  return bytes_of(m);
}

// Resize `x` (nearest) to sizes computed at run time: the first `kept` dims
// of Shape(of), then `rest` (Slice and Concat, as exporters write them).
void resize_to_shape_of(onnx::GraphProto* g, const std::string& x, const std::string& of, int64_t kept,
                        const std::vector<int64_t>& rest, const std::string& y) {
  add_node(g, "Shape", {of}, {y + "_shape"}, y + "_shape");
  add_int64_initializer(g, y + "_from", {0});
  add_int64_initializer(g, y + "_to", {kept});
  add_node(g, "Slice", {y + "_shape", y + "_from", y + "_to"}, {y + "_kept"}, y + "_slice");
  add_int64_initializer(g, y + "_rest", rest);
  set_int(add_node(g, "Concat", {y + "_kept", y + "_rest"}, {y + "_sizes"}, y + "_sizes"), "axis", 0);
  add_float_initializer(g, y + "_none", {0});
  set_string(add_node(g, "Resize", {x, "", y + "_none", y + "_sizes"}, {y}, y), "mode", "nearest");
}

// Convs 16 -> 16 from `x`, 3x3 and 1x1 alternating, the last one `y`.
void convs(onnx::GraphProto* g, std::string x, int count, int seed, const std::string& y) {
  for (int i = 0; i < count; ++i) {
    const std::string out = i + 1 == count ? y : y + "_" + std::to_string(i);
    conv(g, x, 16, 16, i % 2 ? 1 : 3, out, seed + 2 * i);
    x = out;
  }
}

// x [1,8,20,20] -> Conv 8->16 -> Resize linear (scales [1,1,2,2], a
// constant) -> Conv, Conv -> Resize nearest (sizes computed at run time:
// Concat(Slice(Shape(x)), [16, 60, 60])) -> five Convs -> output. Both
// Resizes join the chain: eight Convs for two reorders.
std::string resize_chain_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {"batch", 8, 20, 20});  // (an open batch: the sizes are computed at run time)
  conv(g, "x", 8, 16, 3, "c1", 1);
  auto* scales = add_float_initializer(g, "scales", {4}, 1.f);
  scales->set_float_data(2, 2.f);
  scales->set_float_data(3, 2.f);
  set_string(add_node(g, "Resize", {"c1", "", "scales"}, {"r1"}, "up_linear"), "mode", "linear");
  convs(g, "r1", 2, 3, "c3");
  resize_to_shape_of(g, "c3", "x", 1, {16, 60, 60}, "r2");
  convs(g, "r2", 5, 7, "c8");
  add_output(g, "c8");
  return bytes_of(m);
}

// An NHWC model, as TensorFlow exports them: x [1,20,20,8] -> Transpose to
// NCHW -> Conv, Conv -> Resize nearest with sizes from the Shape of the
// chain's value (Concat(Slice(Shape(c2), 0, 2), [40, 40])) -> six Convs ->
// output. The chain reads x itself (the model's Transpose goes), and the
// Shape reads the channels-last value through a Gather: one reorder, out.
std::string nhwc_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 20, 20, 8});
  set_ints(add_node(g, "Transpose", {"x"}, {"xt"}, "to_nchw"), "perm", {0, 3, 1, 2});
  conv(g, "xt", 8, 16, 3, "c1", 1);
  conv(g, "c1", 16, 16, 1, "c2", 3);
  resize_to_shape_of(g, "c2", "c2", 2, {40, 40}, "r");
  convs(g, "r", 6, 5, "c8");
  add_output(g, "c8");
  return bytes_of(m);
}

void max_pool(onnx::GraphProto* g, const std::string& x, int64_t k, int64_t stride, const std::string& y) {
  auto* n = add_node(g, "MaxPool", {x}, {y}, y);
  set_ints(n, "kernel_shape", {k, k});
  set_ints(n, "strides", {stride, stride});
  const int64_t pad = stride == 1 ? k / 2 : 0;
  set_ints(n, "pads", {pad, pad, pad, pad});
}

// YOLO's SPP inside a chain: x [1,8,20,20] -> Conv 8->16 -> MaxPool 2x2
// stride 2 -> Conv, Conv -> MaxPool 5, 9 and 13 (stride 1, padded) ->
// Concat of the four along the channels -> Conv 64->16 -> four Convs ->
// output. Every pool joins the chain: eight Convs for two reorders.
std::string spp_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 8, 20, 20});
  conv(g, "x", 8, 16, 3, "c1", 1);
  max_pool(g, "c1", 2, 2, "p1");
  convs(g, "p1", 2, 3, "c3");
  for (int64_t k : {5, 9, 13}) max_pool(g, "c3", k, 1, "spp" + std::to_string(k));
  set_int(add_node(g, "Concat", {"c3", "spp5", "spp9", "spp13"}, {"cat"}, "cat"), "axis", 1);
  conv(g, "cat", 64, 16, 1, "c4", 9);
  convs(g, "c4", 4, 11, "c8");
  add_output(g, "c8");
  return bytes_of(m);
}

// x [1,24,12,12] -> Conv3x3 -> a0; six blocks a(i+1) = Relu(Conv1x1(a(i))
// + a(i)), each a 1x1 layer adding a residual of 24 channels; Conv3x3 ->
// out. Eight Convs for two reorders, if the blocks join.
std::string residual_24_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 24, 12, 12});
  conv(g, "x", 24, 24, 3, "a0", 1);
  for (int i = 0; i < 6; ++i) {
    const std::string a = "a" + std::to_string(i), p = "p" + std::to_string(i), s = "s" + std::to_string(i);
    conv(g, a, 24, 24, 1, p, 3 + 2 * i);
    add_node(g, "Add", {p, a}, {s}, "add" + std::to_string(i));
    add_node(g, "Relu", {s}, {"a" + std::to_string(i + 1)}, "relu" + std::to_string(i));
  }
  conv(g, "a6", 24, 24, 3, "out", 17);
  add_output(g, "out");
  return bytes_of(m);
}

// BlazeFace's blocks, which widen their residual by concatenating zero
// channels: x [1,24,12,12] -> Conv3x3 -> a0; six blocks a(i+1) =
// Relu(Conv1x1 (c -> c + 4)(Relu(DepthwiseConv3x3(a(i)))) + Concat(a(i),
// ConstantOfShape([1,4,12,12]))), c = 24, 28, ... 44; Conv3x3 -> out. The
// 1x1 layers of 28, 36 and 44 channels (no whole number of AVX2's vectors)
// run on Kestrel's kernel; the zeros, a constant once folded, enter the
// chain transposed at load. Fourteen Convs for two reorders, if all join.
std::string widening_residual_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 24, 12, 12});
  conv(g, "x", 24, 24, 3, "a0", 1);
  add_int64_initializer(g, "zeros_shape", {1, 4, 12, 12});
  add_node(g, "ConstantOfShape", {"zeros_shape"}, {"zeros"}, "zeros");
  for (int i = 0; i < 6; ++i) {
    const std::string a = "a" + std::to_string(i), n = std::to_string(i);
    const int c = 24 + 4 * i;
    conv(g, a, c, c, 3, "dw" + n, 2 + 3 * i, c);
    add_node(g, "Relu", {"dw" + n}, {"dwr" + n}, "dwr" + n);
    conv(g, "dwr" + n, c, c + 4, 1, "p" + n, 3 + 3 * i);
    set_int(add_node(g, "Concat", {a, "zeros"}, {"wide" + n}, "wide" + n), "axis", 1);
    add_node(g, "Add", {"p" + n, "wide" + n}, {"s" + n}, "add" + n);
    add_node(g, "Relu", {"s" + n}, {"a" + std::to_string(i + 1)}, "relu" + n);
  }
  conv(g, "a6", 48, 24, 3, "out", 40);
  add_output(g, "out");
  return bytes_of(m);
}

void count_op(void* user, const backends::NodeTiming& t) { (*static_cast<std::map<std::string, int>*>(user))[t.node->op_type]++; }

struct Traced {
  std::vector<Tensor> outputs;
  std::map<std::string, int> ops;
};

Traced run(const std::string& bytes, CpuKernels kernels, CpuIsa isa = CpuIsa::Avx512, Shape x_shape = {1, 8, 20, 20}) {
  ProcessOptions process = process_options();
  const ProcessOptions before = process;
  process.cpu_isa = isa;  // (applied as the session is made)
  set_process_options(process);
  SessionOptions o;
  o.backend = BackendChoice::Cpu;
  o.cpu_kernels = kernels;
  o.threads = 2;
  auto s = Session::load_bytes(bytes.data(), bytes.size(), o);
  set_process_options(before);
  Tensor x(DType::Float32, x_shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float((i * 13) % 31) / 31.0f - 0.5f;
  Traced t;
  t.outputs = s->run_traced({{"x", x}}, count_op, &t.ops);
  return t;
}

void expect_reference_answer(const Traced& got, const Traced& want) {
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  for (size_t i = 0; i < got.outputs.size(); ++i) {
    ASSERT_EQ(got.outputs[i].shape(), want.outputs[i].shape()) << "output " << i;
    const Agreement a = agreement(got.outputs[i], want.outputs[i]);
    EXPECT_GE(a.cosine, 0.9999999) << "output " << i;
    EXPECT_LE(a.max_rel, 1e-5) << "output " << i;  // float32 sums in another order
  }
}

bool avx2_cpu() { return KESTREL_X86 && cpu_isa_detected() >= CpuIsa::Avx2; }

}  // namespace

TEST(CpuChannelsLast, AChainRunsChannelsLastWithTheReferencesAnswer) {
  if (!avx2_cpu()) GTEST_SKIP() << "the pass takes x86-64 with AVX2 (this CPU keeps the planar kernels)";
  const Traced got = run(chain_model(), CpuKernels::Fast), want = run(chain_model(), CpuKernels::Reference);
  EXPECT_EQ(want.ops.at("Conv"), 8);
  // Every Conv channels-last; x enters and f leaves through a Transpose
  // each; the heads write their planar output themselves; the Relus, the
  // Sigmoid and the residual Add are inside their Convs.
  EXPECT_EQ(got.ops, (std::map<std::string, int>{{"ConvChannelsLast", 8}, {"Transpose", 2}, {"Mul", 1}, {"Concat", 1}}));
  expect_reference_answer(got, want);
}

TEST(CpuChannelsLast, ResizesJoinTheChain) {
  if (!avx2_cpu()) GTEST_SKIP() << "the pass takes x86-64 with AVX2 (this CPU keeps the planar kernels)";
  const Traced got = run(resize_chain_model(), CpuKernels::Fast), want = run(resize_chain_model(), CpuKernels::Reference);
  // Both Resizes take the channels-last image (the second's sizes permuted
  // by a Gather at run time); x enters and c8 leaves through a Transpose.
  EXPECT_EQ(got.ops.at("ConvChannelsLast"), 8);
  EXPECT_EQ(got.ops.at("Transpose"), 2);
  EXPECT_EQ(got.ops.at("Resize"), 2);
  EXPECT_EQ(got.ops.at("Gather"), 1);
  expect_reference_answer(got, want);
}

TEST(CpuChannelsLast, MaxPoolsJoinTheChain) {
  if (!avx2_cpu()) GTEST_SKIP() << "the pass takes x86-64 with AVX2 (this CPU keeps the planar kernels)";
  const Traced got = run(spp_model(), CpuKernels::Fast), want = run(spp_model(), CpuKernels::Reference);
  EXPECT_EQ(got.ops, (std::map<std::string, int>{
                         {"ConvChannelsLast", 8}, {"MaxPoolChannelsLast", 4}, {"Concat", 1}, {"Transpose", 2}}));
  expect_reference_answer(got, want);
}

TEST(CpuChannelsLast, AnNhwcModelsTransposeAndShapeStayInTheLayout) {
  if (!avx2_cpu()) GTEST_SKIP() << "the pass takes x86-64 with AVX2 (this CPU keeps the planar kernels)";
  const Shape nhwc{1, 20, 20, 8};
  const Traced got = run(nhwc_model(), CpuKernels::Fast, CpuIsa::Avx512, nhwc);
  const Traced want = run(nhwc_model(), CpuKernels::Reference, CpuIsa::Avx512, nhwc);
  EXPECT_EQ(got.ops.at("ConvChannelsLast"), 8);
  EXPECT_EQ(got.ops.at("Transpose"), 1);  // c8 leaving; the model's own Transpose is gone
  EXPECT_EQ(got.ops.at("Shape"), 1);
  EXPECT_EQ(got.ops.at("Gather"), 2);  // the shape back in NCHW order, the sizes into NHWC
  expect_reference_answer(got, want);
}

// 24 channels are three of AVX2's 8-float vectors, and one and a half of
// AVX-512's: there oneDNN's kernel on the ragged tail lost to the planar
// one (channels_last.cpp), here the layer joins the chain.
TEST(CpuChannelsLast, OneByOneResidualsJoinWhereTheyFillWholeVectors) {
  if (!avx2_cpu()) GTEST_SKIP() << "the pass takes x86-64 with AVX2 (this CPU keeps the planar kernels)";
  const Shape x{1, 24, 12, 12};
  const Traced want = run(residual_24_model(), CpuKernels::Reference, CpuIsa::Avx512, x);
  const Traced avx2 = run(residual_24_model(), CpuKernels::Fast, CpuIsa::Avx2, x);
  EXPECT_EQ(avx2.ops, (std::map<std::string, int>{{"ConvChannelsLast", 8}, {"Transpose", 2}}));
  expect_reference_answer(avx2, want);
  if (cpu_isa_detected() < CpuIsa::Avx512) return;  // (an AVX-512 CPU checks the other half)
  const Traced avx512 = run(residual_24_model(), CpuKernels::Fast, CpuIsa::Avx512, x);
  EXPECT_EQ(avx512.ops, (std::map<std::string, int>{{"Conv", 8}}));  // 3x3 layers with no chain of two left
  expect_reference_answer(avx512, want);
}

TEST(CpuChannelsLast, TooFewLayersForTheirReordersStayPlanar) {
  const Traced got = run(short_chain_model(), CpuKernels::Fast), want = run(short_chain_model(), CpuKernels::Reference);
  EXPECT_EQ(got.ops, (std::map<std::string, int>{{"Conv", 2}}));
  expect_reference_answer(got, want);
}

TEST(CpuChannelsLast, BelowAvx2TheChainStaysPlanar) {
  const Traced got = run(chain_model(), CpuKernels::Fast, CpuIsa::Baseline);
  EXPECT_EQ(got.ops.count("ConvChannelsLast"), 0u);
  EXPECT_EQ(got.ops.count("Conv") ? got.ops.at("Conv") : 0, 8);
  expect_reference_answer(got, run(chain_model(), CpuKernels::Reference));
}

// On AVX2 the 1x1 layers adding a residual of 28, 36 and 44 channels join
// on Kestrel's channels-last kernel, and the concatenated zeros enter
// without a Transpose: the whole model is one chain (BlazeFace front ran
// planar for want of both).
TEST(CpuChannelsLast, ResidualsWidenedByZeroChannelsStayInTheChain) {
  if (!avx2_cpu()) GTEST_SKIP() << "the pass takes x86-64 with AVX2 (this CPU keeps the planar kernels)";
  const Shape x{1, 24, 12, 12};
  const Traced want = run(widening_residual_model(), CpuKernels::Reference, CpuIsa::Avx512, x);
  const Traced avx2 = run(widening_residual_model(), CpuKernels::Fast, CpuIsa::Avx2, x);
  EXPECT_EQ(avx2.ops, (std::map<std::string, int>{{"ConvChannelsLast", 14}, {"Concat", 6}, {"Transpose", 2}}));
  expect_reference_answer(avx2, want);
  if (cpu_isa_detected() < CpuIsa::Avx512) return;  // (an AVX-512 CPU checks its answer too)
  expect_reference_answer(run(widening_residual_model(), CpuKernels::Fast, CpuIsa::Avx512, x), want);
}

// Runs on several threads share one session's prepared primitives, each
// execution with its own oneDNN memory objects (conv_channels_last.cpp's
// Bound): every thread's every run must give the single run's bits.
TEST(CpuChannelsLast, ConcurrentRunsShareThePreparedPrimitives) {
  if (!avx2_cpu()) GTEST_SKIP() << "the pass takes x86-64 with AVX2 (this CPU keeps the planar kernels)";
  const std::string bytes = chain_model();
  SessionOptions o;
  o.backend = BackendChoice::Cpu;
  o.threads = 1;
  auto s = Session::load_bytes(bytes.data(), bytes.size(), o);
  Tensor x(DType::Float32, {1, 8, 20, 20});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float((i * 13) % 31) / 31.0f - 0.5f;
  std::map<std::string, int> ops;
  const std::vector<Tensor> want = s->run_traced({{"x", x}}, count_op, &ops);
  ASSERT_EQ(ops["ConvChannelsLast"], 8);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < mismatches.size(); ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 50; ++r) {
        const std::vector<Tensor> got = s->run({{"x", x}});
        for (size_t i = 0; i < got.size(); ++i)
          if (got[i].nbytes() != want[i].nbytes() || std::memcmp(got[i].raw(), want[i].raw(), got[i].nbytes()) != 0)
            ++mismatches[t];
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

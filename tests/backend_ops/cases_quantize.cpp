// Quantization ops: DynamicQuantizeLinear's range, scale, zero point and
// packed uint8 output (sizes that are not multiples of 4 leave a partial word).
#include <cmath>

#include "harness.h"
#include "ops/activation.h"

namespace kestrel::backend_ops {
namespace {

std::vector<OpCase> cases() {
  std::vector<OpCase> v;
  // Exact: the GPU's division by the scale is corrected to IEEE's
  // (shaders/div_rn.glsl), as the CPU divides.
  v.push_back({.label = "DynamicQuantizeLinear mixed signs [3,37,41]", .op = "DynamicQuantizeLinear", .opset = 11,
               .inputs = {rnd("x", {3, 37, 41}, -2, 5)}, .outputs = 3, .fp16_abs = 1e-2});
  v.push_back({.label = "DynamicQuantizeLinear all positive [1,1000003]", .op = "DynamicQuantizeLinear", .opset = 11,
               .inputs = {rnd("x", {1, 1000003}, 0.5f, 3)}, .outputs = 3});
  v.push_back({.label = "DynamicQuantizeLinear 5 elements", .op = "DynamicQuantizeLinear", .opset = 11,
               .inputs = {rnd("x", {5}, -1, 0)}, .outputs = 3});
  // QuantizeLinear and DequantizeLinear, per tensor and per axis, uint8 and
  // int8, with and without a zero point, saturating at both ends, sizes that
  // end inside a packed word. Exact both ways: quantized values for the
  // reason above, dequantized ones an integer times the scale, rounded once
  // on both sides.
  auto as = [](DType t, InputSpec s) { s.dtype = t; return s; };
  v.push_back({.label = "QuantizeLinear uint8 per tensor, saturating [2,3,7,5]", .op = "QuantizeLinear", .opset = 13,
               .inputs = {rnd("x", {2, 3, 7, 5}, -3, 3), floats("s", {0.02f}),
                          as(DType::UInt8, weight("z", {1}, 120, 136))}});
  v.push_back({.label = "QuantizeLinear int8 per axis 1 [2,4,5,3]", .op = "QuantizeLinear", .opset = 13,
               .inputs = {rnd("x", {2, 4, 5, 3}, -2, 2), floats("s", {0.01f, 0.02f, 0.05f, 0.004f}),
                          as(DType::Int8, weight("z", {4}, -10, 10))},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "axis", 1); }});
  // Quotients at .5 and a float either side (x = (k + 0.5) * s rounded, and
  // its neighbours), where a division a bit off moves the result a step: the
  // GPU's quotient must be IEEE's for these to match.
  {
    const float s = 0.1f;
    std::vector<float> xs;
    for (int k = -40; k < 40; ++k) {
      const float x = (float(k) + 0.5f) * s;
      xs.insert(xs.end(), {std::nextafter(x, -1e9f), x, std::nextafter(x, 1e9f)});
    }
    InputSpec x{.name = "x", .shape = {int64_t(xs.size())}};
    x.value = Tensor::from_f32(x.shape, xs);
    v.push_back({.label = "QuantizeLinear int8 at .5 quotients, scale 0.1", .op = "QuantizeLinear", .opset = 13,
                 .inputs = {x, floats("s", {s}), as(DType::Int8, weight("z", {1}, -3, 3))}});
  }
  v.push_back({.label = "QuantizeLinear no zero point, 7 elements", .op = "QuantizeLinear", .opset = 10,
               .inputs = {rnd("x", {7}, -0.5f, 3), floats("s", {0.01f})}});
  v.push_back({.label = "DequantizeLinear uint8 per tensor [3,37,41]", .op = "DequantizeLinear", .opset = 13,
               .inputs = {as(DType::UInt8, rnd("q", {3, 37, 41}, 0, 256)), floats("s", {0.037f}),
                          as(DType::UInt8, weight("z", {1}, 100, 150))}});
  v.push_back({.label = "DequantizeLinear int8 per axis -1 [2,5,6]", .op = "DequantizeLinear", .opset = 13,
               .inputs = {as(DType::Int8, rnd("q", {2, 5, 6}, -128, 128)),
                          floats("s", {0.5f, 0.25f, 0.01f, 3.0f, 0.125f, 0.07f}),
                          as(DType::Int8, weight("z", {6}, -20, 20))},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "axis", -1); }});
  v.push_back({.label = "DequantizeLinear int8 no zero point, 5 elements", .op = "DequantizeLinear", .opset = 10,
               .inputs = {as(DType::Int8, rnd("q", {5}, -128, 128)), floats("s", {0.3f})}});
  // ConvInteger: uint8 activations with a zero point, int8 or uint8 weights
  // with a per-tensor or per-channel zero point; sums are exact int32.
  auto u8 = [](InputSpec s) { s.dtype = DType::UInt8; return s; };
  auto i8 = [](InputSpec s) { s.dtype = DType::Int8; return s; };
  v.push_back({.label = "ConvInteger 3x3 pad 1 uint8 x, int8 w", .op = "ConvInteger", .opset = 10,
               .inputs = {u8(rnd("x", {1, 5, 13, 11}, 0, 256)), i8(weight("w", {7, 5, 3, 3}, -128, 128)),
                          u8(rnd("xz", {}, 0, 256))},
               .attrs = [](onnx::NodeProto& n) { attr_ints(n, "pads", {1, 1, 1, 1}); }});
  v.push_back({.label = "ConvInteger stride 2, uint8 w per-channel zp", .op = "ConvInteger", .opset = 10,
               .inputs = {u8(rnd("x", {2, 6, 17, 16}, 0, 256)), u8(weight("w", {40, 6, 3, 3}, 0, 256)),
                          u8(rnd("xz", {}, 0, 256)), u8(weight("wz", {40}, 0, 256))},
               .attrs = [](onnx::NodeProto& n) { attr_ints(n, "strides", {2, 2}); }});
  v.push_back({.label = "ConvInteger 1x1 groups 2, no zero points", .op = "ConvInteger", .opset = 10,
               .inputs = {u8(rnd("x", {1, 8, 9, 9}, 0, 256)), i8(weight("w", {6, 4, 1, 1}, -128, 128))},
               .attrs = [](onnx::NodeProto& n) { attr_i(n, "group", 2); }});
  // Depthwise (Vulkan: conv_integer_depthwise.comp): two outputs per input
  // channel, uint8 weights with a zero point per output channel, the input's
  // zero point, padding.
  v.push_back({.label = "ConvInteger depthwise 3x3 x2 channels, uint8 w per-channel zp", .op = "ConvInteger",
               .opset = 10,
               .inputs = {u8(rnd("x", {2, 5, 11, 9}, 0, 256)), u8(weight("w", {10, 1, 3, 3}, 0, 256)),
                          u8(rnd("xz", {}, 0, 256)), u8(weight("wz", {10}, 100, 156))},
               .attrs = [](onnx::NodeProto& n) {
                 attr_i(n, "group", 5);
                 attr_ints(n, "pads", {1, 1, 1, 1});
               }});
  // QLinearConv, MatMulInteger and QLinearMatMul: the CPU's fast products
  // (exact int32 on the float GEMM, igemm_exact.h, and the VNNI kernels) and
  // Vulkan's (conv_integer.comp, gemm_integer.comp, then requantize.comp)
  // against the reference's int32 loops. Accumulators are exact everywhere
  // and the requantization is the same float arithmetic, so the outputs
  // match exactly.
  v.push_back({.label = "QLinearConv 3x3 per-channel w scale, int32 bias", .op = "QLinearConv", .opset = 10,
               .inputs = {u8(rnd("x", {1, 5, 13, 11}, 0, 256)), floats("xs", {0.02f}), u8(weight("xz", {}, 0, 256)),
                          i8(weight("w", {7, 5, 3, 3}, -128, 128)),
                          floats("ws", {0.01f, 0.02f, 0.015f, 0.03f, 0.01f, 0.005f, 0.02f}), i8(weight("wz", {}, 0, 1)),
                          floats("ys", {0.5f}), u8(weight("yz", {}, 100, 140)),
                          [] { InputSpec b = weight("b", {7}, -3000, 3000); b.dtype = DType::Int32; return b; }()},
               .attrs = [](onnx::NodeProto& n) { attr_ints(n, "pads", {1, 1, 1, 1}); }});
  // The CPU's own QLinearConv kernels (backends/cpu/qlinear_conv.cpp): the
  // depthwise one in exact float (strides, dilations, int8 data), and the VNNI
  // product past its edges: K not a multiple of 4, rows not a multiple of 8,
  // columns not a multiple of 32, groups, chunks that end inside a row,
  // uint8 weights whose zero points are not 128 (a row of ones sums the
  // data); and a 1-D convolution, which takes the general exact one.
  auto bias32 = [](const char* name, int64_t n) {
    InputSpec b = weight(name, {n}, -3000, 3000);
    b.dtype = DType::Int32;
    return b;
  };
  v.push_back({.label = "QLinearConv depthwise 3x3 stride 2 pad 1, int8 out", .op = "QLinearConv", .opset = 10,
               .inputs = {u8(rnd("x", {2, 6, 15, 12}, 0, 256)), floats("xs", {0.02f}), u8(weight("xz", {}, 0, 256)),
                          i8(weight("w", {6, 1, 3, 3}, -128, 128)),
                          floats("ws", {0.01f, 0.02f, 0.015f, 0.03f, 0.01f, 0.005f}), i8(weight("wz", {6}, 0, 1)),
                          floats("ys", {0.3f}), i8(weight("yz", {}, -20, 20)), bias32("b", 6)},
               .attrs = [](onnx::NodeProto& n) {
                 attr_ints(n, "pads", {1, 1, 1, 1});
                 attr_ints(n, "strides", {2, 2});
                 attr_i(n, "group", 6);
               }});
  // Rows wide enough for the stride-2 copy's 16 bytes at a time (from an odd
  // padded column, then from an even one), uint8 and int8 data.
  v.push_back({.label = "QLinearConv depthwise 3x3 stride 2 pad 1 wide rows", .op = "QLinearConv", .opset = 10,
               .inputs = {u8(rnd("x", {1, 5, 9, 45}, 0, 256)), floats("xs", {0.02f}), u8(weight("xz", {}, 0, 256)),
                          i8(weight("w", {5, 1, 3, 3}, -128, 128)), floats("ws", {0.01f}), i8(weight("wz", {}, 0, 1)),
                          floats("ys", {0.3f}), u8(weight("yz", {}, 100, 140)), bias32("b", 5)},
               .attrs = [](onnx::NodeProto& n) {
                 attr_ints(n, "pads", {1, 1, 1, 1});
                 attr_ints(n, "strides", {2, 2});
                 attr_i(n, "group", 5);
               }});
  v.push_back({.label = "QLinearConv depthwise 3x3 stride 2 no pad wide rows, int8 x", .op = "QLinearConv",
               .opset = 10,
               .inputs = {i8(rnd("x", {1, 3, 8, 40}, -128, 128)), floats("xs", {0.05f}), i8(weight("xz", {}, -9, 9)),
                          i8(weight("w", {3, 1, 3, 3}, -128, 128)), floats("ws", {0.01f}), i8(weight("wz", {}, 0, 1)),
                          floats("ys", {0.9f}), i8(weight("yz", {}, -20, 20)), bias32("b", 3)},
               .attrs = [](onnx::NodeProto& n) {
                 attr_ints(n, "strides", {2, 2});
                 attr_i(n, "group", 3);
               }});
  v.push_back({.label = "QLinearConv depthwise 5x5 dilation 2, int8 x, no bias", .op = "QLinearConv", .opset = 10,
               .inputs = {i8(rnd("x", {1, 4, 19, 23}, -128, 128)), floats("xs", {0.05f}), i8(weight("xz", {}, -9, 9)),
                          i8(weight("w", {4, 1, 5, 5}, -128, 128)), floats("ws", {0.01f}), i8(weight("wz", {}, 0, 1)),
                          floats("ys", {0.9f}), u8(weight("yz", {}, 120, 136))},
               .attrs = [](onnx::NodeProto& n) {
                 attr_ints(n, "pads", {4, 3, 4, 3});
                 attr_ints(n, "dilations", {2, 2});
                 attr_i(n, "group", 4);
               }});
  // Past 256 taps a depthwise sum can leave float's exact integers: groups of one channel on the product.
  v.push_back({.label = "QLinearConv depthwise 17x17 (on the product)", .op = "QLinearConv", .opset = 10,
               .inputs = {u8(rnd("x", {1, 3, 21, 19}, 0, 256)), floats("xs", {0.02f}), u8(weight("xz", {}, 0, 256)),
                          u8(weight("w", {3, 1, 17, 17}, 0, 256)), floats("ws", {0.001f}), u8(weight("wz", {}, 0, 256)),
                          floats("ys", {2.5f}), u8(weight("yz", {}, 100, 140)), bias32("b", 3)},
               .attrs = [](onnx::NodeProto& n) {
                 attr_ints(n, "pads", {8, 8, 8, 8});
                 attr_i(n, "group", 3);
               }});
  v.push_back({.label = "QLinearConv 1x1 K 37 M 13 over 63 positions", .op = "QLinearConv", .opset = 10,
               .inputs = {u8(rnd("x", {1, 37, 9, 7}, 0, 256)), floats("xs", {0.02f}), u8(weight("xz", {}, 0, 256)),
                          i8(weight("w", {13, 37, 1, 1}, -128, 128)), floats("ws", {0.004f}),
                          i8(weight("wz", {}, -3, 3)), floats("ys", {0.4f}), u8(weight("yz", {}, 0, 256)),
                          bias32("b", 13)}});
  v.push_back({.label = "QLinearConv 3x3 groups 2 over 2x1500 positions, int8 x", .op = "QLinearConv", .opset = 10,
               .inputs = {i8(rnd("x", {2, 24, 30, 50}, -128, 128)), floats("xs", {0.02f}), i8(weight("xz", {}, -5, 5)),
                          u8(weight("w", {18, 12, 3, 3}, 0, 256)), floats("ws", {0.002f}),
                          u8(weight("wz", {18}, 120, 136)), floats("ys", {0.6f}), i8(weight("yz", {}, -10, 10)),
                          bias32("b", 18)},
               .attrs = [](onnx::NodeProto& n) {
                 attr_ints(n, "pads", {1, 1, 1, 1});
                 attr_i(n, "group", 2);
               }});
  // Weights given at run time (a graph input, not an initializer): the
  // product's packed weights are made on each run instead of at load.
  v.push_back({.label = "QLinearConv 3x3 weights as an input, packed each run", .op = "QLinearConv", .opset = 10,
               .inputs = {u8(rnd("x", {1, 9, 11, 13}, 0, 256)), floats("xs", {0.02f}), u8(weight("xz", {}, 0, 256)),
                          i8(rnd("w", {10, 9, 3, 3}, -128, 128)), floats("ws", {0.003f}), i8(weight("wz", {10}, -4, 4)),
                          floats("ys", {0.5f}), u8(weight("yz", {}, 0, 256)), bias32("b", 10)},
               .attrs = [](onnx::NodeProto& n) { attr_ints(n, "pads", {1, 1, 1, 1}); }});
  // A QLinearConv carrying a fused activation (the QDQ fusion of Conv ->
  // SiLU or Clip -> QuantizeLinear): the sums back to real values, through
  // the activation, quantized as QuantizeLinear does; on the VNNI product
  // and on the depthwise kernel, and on Vulkan's requantize.comp. One step
  // apart allowed for the SiLU: a GPU's exp may round the last bit otherwise
  // than the CPU's, which moves a value sitting at .5 (the division by y's
  // scale is IEEE's there too: shaders/div_rn.glsl).
  v.push_back({.label = "QLinearConv 3x3 with a fused SiLU", .op = "QLinearConv", .opset = 10,
               .inputs = {u8(rnd("x", {1, 12, 14, 10}, 0, 256)), floats("xs", {0.02f}), u8(weight("xz", {}, 0, 256)),
                          i8(weight("w", {16, 12, 3, 3}, -128, 128)), floats("ws", {0.004f}), i8(weight("wz", {}, 0, 1)),
                          floats("ys", {0.03f}), u8(weight("yz", {}, 5, 15)), bias32("b", 16)},
               .attrs = [](onnx::NodeProto& n) {
                 attr_ints(n, "pads", {1, 1, 1, 1});
                 attr_i(n, "kestrel.activation", int64_t(ops::Activation::Silu));
               },
               .int_tolerance = 1});
  v.push_back({.label = "QLinearConv depthwise with a fused Clip, int8 out", .op = "QLinearConv", .opset = 10,
               .inputs = {u8(rnd("x", {1, 8, 11, 9}, 0, 256)), floats("xs", {0.02f}), u8(weight("xz", {}, 0, 256)),
                          i8(weight("w", {8, 1, 3, 3}, -128, 128)), floats("ws", {0.01f}), i8(weight("wz", {}, 0, 1)),
                          floats("ys", {0.02f}), i8(weight("yz", {}, -5, 5)), bias32("b", 8)},
               .attrs = [](onnx::NodeProto& n) {
                 attr_ints(n, "pads", {1, 1, 1, 1});
                 attr_i(n, "group", 8);
                 attr_i(n, "kestrel.activation", int64_t(ops::Activation::Clip));
                 attr_floats(n, "kestrel.activation_params", {0.f, 2.f});
               }});
  v.push_back({.label = "QLinearConv uint8 w with no zero point, stride 2", .op = "QLinearConv", .opset = 10,
               .inputs = {u8(rnd("x", {1, 8, 10, 10}, 0, 256)), floats("xs", {0.02f}), u8(weight("xz", {}, 0, 256)),
                          u8(weight("w", {9, 8, 3, 3}, 0, 256)), floats("ws", {0.001f}), u8(weight("wz", {}, 0, 1)),
                          floats("ys", {0.8f}), u8(weight("yz", {}, 0, 256))},
               .attrs = [](onnx::NodeProto& n) { attr_ints(n, "strides", {2, 2}); }});
  v.push_back({.label = "QLinearConv 1-D, int8 x (general path)", .op = "QLinearConv", .opset = 10,
               .inputs = {i8(rnd("x", {2, 6, 40}, -128, 128)), floats("xs", {0.02f}), i8(weight("xz", {}, -5, 5)),
                          i8(weight("w", {5, 6, 3}, -128, 128)), floats("ws", {0.01f}), i8(weight("wz", {}, 0, 1)),
                          floats("ys", {0.2f}), u8(weight("yz", {}, 100, 140)), bias32("b", 5)},
               .attrs = [](onnx::NodeProto& n) { attr_ints(n, "pads", {1, 1}); }});
  v.push_back({.label = "MatMulInteger uint8 x int8 with zero points", .op = "MatMulInteger", .opset = 10,
               .inputs = {u8(rnd("a", {2, 17, 45}, 0, 256)), i8(weight("b", {45, 23}, -128, 128)),
                          u8(rnd("az", {}, 0, 256)), i8(weight("bz", {}, -5, 5))}});
  // K past the exact float GEMM's 4096-long blocks: the fast path adds two blocks.
  v.push_back({.label = "MatMulInteger K 5000 (two exact blocks)", .op = "MatMulInteger", .opset = 10,
               .inputs = {u8(rnd("a", {3, 5000}, 0, 256)), u8(weight("b", {5000, 70}, 0, 256)),
                          u8(rnd("az", {}, 0, 256)), u8(weight("bz", {}, 0, 256))}});
  v.push_back({.label = "QLinearMatMul uint8", .op = "QLinearMatMul", .opset = 10,
               .inputs = {u8(rnd("a", {19, 33}, 0, 256)), floats("as", {0.03f}), u8(weight("az", {}, 0, 256)),
                          u8(weight("b", {33, 12}, 0, 256)), floats("bs", {0.02f}), u8(weight("bz", {}, 0, 256)),
                          floats("ys", {0.7f}), u8(weight("yz", {}, 100, 140))}});
  // The CPU's own QLinearMatMul and MatMulInteger product (backends/cpu/
  // matmul.cpp, on AVX-512 VNNI) past its edges: K not a multiple of 4,
  // rows not a multiple of its 6, columns past a 16-column panel and a
  // 64-column block, int8 data (shifted by 128), uint8 weights whose zero
  // points are not 128 (each row's sum joins), B computed at run time
  // (packed on each run), a 1-D A. Integer sums exact on both sides: the
  // outputs match exactly.
  v.push_back({.label = "QLinearMatMul int8, K 45, 39 rows, 83 columns, scales per column", .op = "QLinearMatMul",
               .opset = 10,
               .inputs = {i8(rnd("a", {3, 13, 45}, -128, 128)), floats("as", {0.03f}), i8(weight("az", {}, -9, 9)),
                          i8(weight("b", {45, 83}, -128, 128)), weight("bs", {83}, 0.001f, 0.03f),
                          i8(weight("bz", {83}, 0, 1)), floats("ys", {0.4f}), i8(weight("yz", {}, -20, 20))}});
  v.push_back({.label = "QLinearMatMul uint8 weights, zero points per column", .op = "QLinearMatMul", .opset = 10,
               .inputs = {u8(rnd("a", {2, 17, 96}, 0, 256)), floats("as", {0.02f}), u8(weight("az", {}, 0, 256)),
                          u8(weight("b", {96, 40}, 0, 256)), floats("bs", {0.01f}), u8(weight("bz", {40}, 100, 156)),
                          floats("ys", {0.9f}), u8(weight("yz", {}, 100, 140))}});
  v.push_back({.label = "MatMulInteger int8 x int8, B at run time, zero points per column", .op = "MatMulInteger",
               .opset = 10,
               .inputs = {i8(rnd("a", {50, 130}, -128, 128)), i8(rnd("b", {130, 70}, -128, 128)),
                          i8(weight("az", {}, -5, 5)), i8(weight("bz", {70}, -5, 5))}});
  // Attention's products as quantize_dynamic writes them: batches of heads,
  // both operands computed (one product per batch, B packed on each run).
  v.push_back({.label = "MatMulInteger batched [2,3,19,40] x [2,3,40,23]", .op = "MatMulInteger", .opset = 10,
               .inputs = {u8(rnd("a", {2, 3, 19, 40}, 0, 256)), u8(rnd("b", {2, 3, 40, 23}, 0, 256)),
                          u8(weight("az", {}, 0, 256)), u8(weight("bz", {}, 0, 256))}});
  v.push_back({.label = "QLinearMatMul batched int8 [3,13,45] x [3,45,70]", .op = "QLinearMatMul", .opset = 10,
               .inputs = {i8(rnd("a", {3, 13, 45}, -128, 128)), floats("as", {0.03f}), i8(weight("az", {}, -9, 9)),
                          i8(rnd("b", {3, 45, 70}, -128, 128)), floats("bs", {0.01f}), i8(weight("bz", {}, -2, 2)),
                          floats("ys", {0.5f}), u8(weight("yz", {}, 100, 140))}});
  // Zero points per row of A (each batch's rows) and per column of B, int8
  // A past two 64-row tiles.
  v.push_back({.label = "MatMulInteger batched int8, zero points per row and per column", .op = "MatMulInteger",
               .opset = 10,
               .inputs = {i8(rnd("a", {2, 131, 20}, -128, 128)), u8(weight("b", {20, 9}, 0, 256)),
                          i8(weight("az", {131}, -9, 9)), u8(weight("bz", {9}, 100, 156))}});
  v.push_back({.label = "MatMulInteger 1-D A, uint8 x uint8", .op = "MatMulInteger", .opset = 10,
               .inputs = {u8(rnd("a", {37}, 0, 256)), u8(weight("b", {37, 21}, 0, 256)), u8(weight("az", {}, 0, 256)),
                          u8(weight("bz", {}, 0, 256))}});
  // Products past the int8 tensor cores' tiles (gemm_integer_coop.comp, where
  // the device has them; elsewhere gemm_integer.comp): rows, K and columns
  // multiples of 16 (16-byte loads) past two 128x128 tiles, then none of
  // them (byte by byte), uint8 x uint8 with zero points (both sums'
  // corrections), int8 x int8 without (none), and a ViT-sized projection.
  v.push_back({.label = "MatMulInteger uint8 x int8 [2,150,256] x [256,272], zero points per column",
               .op = "MatMulInteger", .opset = 10,
               .inputs = {u8(rnd("a", {2, 150, 256}, 0, 256)), i8(weight("b", {256, 272}, -128, 128)),
                          u8(rnd("az", {}, 0, 256)), i8(weight("bz", {272}, -3, 3))}});
  v.push_back({.label = "MatMulInteger uint8 x uint8 [131,100] x [100,139], zero points", .op = "MatMulInteger",
               .opset = 10,
               .inputs = {u8(rnd("a", {131, 100}, 0, 256)), u8(weight("b", {100, 139}, 0, 256)),
                          u8(weight("az", {}, 0, 256)), u8(weight("bz", {}, 0, 256))}});
  v.push_back({.label = "MatMulInteger int8 x int8 [300,64] x [64,160], no zero points", .op = "MatMulInteger",
               .opset = 10, .inputs = {i8(rnd("a", {300, 64}, -128, 128)), i8(weight("b", {64, 160}, -128, 128))}});
  v.push_back({.label = "QLinearMatMul uint8 x int8 [2,197,768] x [768,512] per column (a ViT projection)",
               .op = "QLinearMatMul", .opset = 10,
               .inputs = {u8(rnd("a", {2, 197, 768}, 0, 256)), floats("as", {0.02f}), u8(weight("az", {}, 100, 156)),
                          i8(weight("b", {768, 512}, -128, 128)), weight("bs", {512}, 0.0005f, 0.002f),
                          i8(weight("bz", {512}, 0, 1)), floats("ys", {0.9f}), u8(weight("yz", {}, 100, 140))}});
  // ONNX Runtime's contrib ops (com.microsoft): the CPU's fast products and
  // Vulkan's (gemm_integer.comp, then dequantize_product.comp) against the
  // reference's loops; integer sums exact on both sides, so the float
  // outputs match to their last rounding (float16 runs: DynamicQuantizeMatMul
  // quantizes its input as the run stores it).
  const char* ms_kernel = "ONNX Runtime's quantized contrib ops run on the CPU";
  auto ms = [](OpCase c) {
    c.domain = "com.microsoft";
    c.opset = 1;
    return c;
  };
  auto i32 = [](InputSpec s) { s.dtype = DType::Int32; return s; };
  v.push_back(ms({.label = "QGemm uint8 x int8 per column, int32 C, float out", .op = "QGemm",
                  .inputs = {u8(rnd("a", {13, 40}, 0, 256)), floats("as", {0.02f}), u8(weight("az", {}, 0, 256)),
                             i8(weight("b", {40, 9}, -128, 128)), weight("bs", {9}, 0.001f, 0.03f),
                             i8(weight("bz", {9}, 0, 1)), i32(weight("c", {9}, -3000, 3000))},
                  .attrs = [](onnx::NodeProto& n) { attr_f(n, "alpha", 0.5f); },
                  .no_vulkan_kernel = ms_kernel}));
  v.push_back(ms({.label = "QGemm transA transB, uint8 out", .op = "QGemm",
                  .inputs = {u8(rnd("a", {40, 13}, 0, 256)), floats("as", {0.02f}), u8(weight("az", {}, 0, 256)),
                             u8(weight("b", {11, 40}, 0, 256)), floats("bs", {0.01f}), u8(weight("bz", {}, 100, 140)),
                             absent(), floats("ys", {0.4f}), u8(weight("yz", {}, 100, 140))},
                  .attrs = [](onnx::NodeProto& n) {
                    attr_i(n, "transA", 1);
                    attr_i(n, "transB", 1);
                  },
                  .no_vulkan_kernel = ms_kernel}));
  v.push_back(ms({.label = "DynamicQuantizeMatMul [2,7,40] x int8 per column, bias", .op = "DynamicQuantizeMatMul",
                  .inputs = {rnd("a", {2, 7, 40}, -2, 3), i8(weight("b", {40, 10}, -128, 128)),
                             weight("bs", {10}, 0.001f, 0.03f), i8(weight("bz", {10}, -3, 3)), weight("bias", {10})}}));
  // The CPU's own kernel (backends/cpu/matmul_integer_to_float.cpp) past its
  // product's edges: uint8 weights whose zero points are not 128, K not a
  // multiple of 4, more than one block of rows and of columns, no bias.
  v.push_back(ms({.label = "DynamicQuantizeMatMul uint8 per-column zero points, K 45, 70 columns",
                  .op = "DynamicQuantizeMatMul",
                  .inputs = {rnd("a", {13, 45}, -3, 2), u8(weight("b", {45, 70}, 0, 256)), weight("bs", {}, 0.002f, 0.02f),
                             u8(weight("bz", {70}, 110, 150))}}));
  v.push_back(ms({.label = "MatMulIntegerToFloat uint8 x int8 per column, bias", .op = "MatMulIntegerToFloat",
                  .inputs = {u8(rnd("a", {2, 9, 40}, 0, 256)), i8(weight("b", {40, 70}, -128, 128)), floats("as", {0.021f}),
                             weight("bs", {70}, 0.001f, 0.03f), u8(weight("az", {}, 0, 256)), i8(weight("bz", {70}, 0, 1)),
                             weight("bias", {70})}}));
  v.push_back(ms({.label = "MatMulIntegerToFloat int8 x uint8, K 45, no zero point of A", .op = "MatMulIntegerToFloat",
                  .inputs = {i8(rnd("a", {13, 45}, -128, 128)), u8(weight("b", {45, 23}, 0, 256)), floats("as", {0.05f}),
                             floats("bs", {0.004f}), InputSpec{}, u8(weight("bz", {}, 100, 156))}}));
  // The int8 tensor cores' float epilogue past their tiles, Y's rows 16
  // bytes at a time (N a multiple of 4), with and without a bias.
  v.push_back(ms({.label = "MatMulIntegerToFloat uint8 x int8 [3,130,256] x [256,192] per column, bias",
                  .op = "MatMulIntegerToFloat",
                  .inputs = {u8(rnd("a", {3, 130, 256}, 0, 256)), i8(weight("b", {256, 192}, -128, 128)),
                             floats("as", {0.013f}), weight("bs", {192}, 0.001f, 0.03f), u8(weight("az", {}, 100, 156)),
                             i8(weight("bz", {192}, 0, 1)), weight("bias", {192})}}));
  v.push_back(ms({.label = "DynamicQuantizeMatMul [197,320] x int8 [320,136] per tensor", .op = "DynamicQuantizeMatMul",
                  .inputs = {rnd("a", {197, 320}, -4, 3), i8(weight("b", {320, 136}, -128, 128)),
                             floats("bs", {0.004f})}}));
  // MatMulNBits: 4 bits, K not a multiple of the block (its last block
  // half used), with and without packed zero points, on Vulkan's one-pass
  // kernel (gemv_nbits.comp, at most 4 rows) and on the GEMM's _nbits
  // variants (more rows; the forced-tile tests below run each tile); 8 bits
  // stay on the CPU.
  auto nbits = [](int64_t K, int64_t N, int64_t bits, int64_t block) {
    return [=](onnx::NodeProto& n) {
      attr_i(n, "K", K);
      attr_i(n, "N", N);
      attr_i(n, "bits", bits);
      attr_i(n, "block_size", block);
    };
  };
  v.push_back(ms({.label = "MatMulNBits 4 bits K 80 block 32, zero points", .op = "MatMulNBits",
                  .inputs = {rnd("a", {3, 5, 80}), u8(weight("b", {12, 3, 16}, 0, 256)), weight("s", {36}, 0.01f, 0.1f),
                             u8(weight("z", {12, 2}, 0, 256))},
                  .attrs = nbits(80, 12, 4, 32)}));
  v.push_back(ms({.label = "MatMulNBits 4 bits one row, K 256 block 64, zero points, bias", .op = "MatMulNBits",
                  .inputs = {rnd("a", {1, 256}), u8(weight("b", {40, 4, 32}, 0, 256)), weight("s", {40, 4}, 0.01f, 0.1f),
                             u8(weight("z", {40, 2}, 0, 256)), absent(), weight("bias", {40})},
                  .attrs = nbits(256, 40, 4, 64)}));
  v.push_back(ms({.label = "MatMulNBits 4 bits [2,2,84] (4 rows), K 84 block 16, zero points", .op = "MatMulNBits",
                  .inputs = {rnd("a", {2, 2, 84}), u8(weight("b", {5, 6, 8}, 0, 256)), weight("s", {30}, 0.01f, 0.1f),
                             u8(weight("z", {5, 3}, 0, 256))},
                  .attrs = nbits(84, 5, 4, 16)}));
  // The one-pass kernel's other paths: an odd count of 16-weight blocks (a
  // column's words not whole 32-weight chunks: word by word), K not a
  // multiple of 4 (A element by element), N not a multiple of its 4 columns;
  // and K past one sweep of its 64 threads x 32 weights, without zero points.
  v.push_back(ms({.label = "MatMulNBits 4 bits 3 rows, K 78 block 16 (5 blocks), N 7, zero points", .op = "MatMulNBits",
                  .inputs = {rnd("a", {3, 78}), u8(weight("b", {7, 5, 8}, 0, 256)), weight("s", {35}, 0.01f, 0.1f),
                             u8(weight("z", {7, 3}, 0, 256))},
                  .attrs = nbits(78, 7, 4, 16)}));
  v.push_back(ms({.label = "MatMulNBits 4 bits one row, K 2100 block 32, N 6", .op = "MatMulNBits",
                  .inputs = {rnd("a", {1, 2100}), u8(weight("b", {6, 66, 16}, 0, 256)),
                             weight("s", {396}, 0.002f, 0.02f)},
                  .attrs = nbits(2100, 6, 4, 32)}));
  // The CPU's product of more rows, a panel of 256 dequantized columns at a
  // time: 300 columns are a whole panel and a part one.
  v.push_back(ms({.label = "MatMulNBits 4 bits [5,64] x 300 (two column panels), block 32, zero points, bias",
                  .op = "MatMulNBits",
                  .inputs = {rnd("a", {5, 64}), u8(weight("b", {300, 2, 16}, 0, 256)), weight("s", {600}, 0.01f, 0.1f),
                             u8(weight("z", {300, 1}, 0, 256)), absent(), weight("bias", {300})},
                  .attrs = nbits(64, 300, 4, 32)}));
  v.push_back(ms({.label = "MatMulNBits 4 bits [70,128] x 72, block 32, bias", .op = "MatMulNBits",
                  .inputs = {rnd("a", {70, 128}), u8(weight("b", {72, 4, 16}, 0, 256)), weight("s", {288}, 0.01f, 0.1f),
                             absent(), absent(), weight("bias", {72})},
                  .attrs = nbits(128, 72, 4, 32)}));
  v.push_back(ms({.label = "MatMulNBits 4 bits [130,256] x 136, block 128, zero points", .op = "MatMulNBits",
                  .inputs = {rnd("a", {130, 256}), u8(weight("b", {136, 2, 64}, 0, 256)),
                             weight("s", {272}, 0.005f, 0.05f), u8(weight("z", {136, 1}, 0, 256))},
                  .attrs = nbits(256, 136, 4, 128)}));
  v.push_back(ms({.label = "MatMulNBits 8 bits block 16, bias", .op = "MatMulNBits",
                  .inputs = {rnd("a", {4, 48}), u8(weight("b", {6, 3, 16}, 0, 256)), weight("s", {18}, 0.001f, 0.01f),
                             absent(), absent(), weight("bias", {6})},
                  .attrs = nbits(48, 6, 8, 16),
                  .vulkan_unsupported = "the Vulkan kernel reads 4-bit weights"}));
  // The operator form's element-wise QLinearAdd and QLinearMul, broadcast;
  // Vulkan's shaders/qlinear_binary.comp, exact: its division by C's scale
  // is IEEE's (shaders/div_rn.glsl), as the CPU's.
  v.push_back(ms({.label = "QLinearAdd uint8, B broadcast", .op = "QLinearAdd",
                  .inputs = {u8(rnd("a", {2, 8, 5, 7}, 0, 256)), floats("as", {0.031f}), u8(weight("az", {}, 120, 130)),
                             u8(rnd("b", {8, 1, 7}, 0, 256)), floats("bs", {0.047f}), u8(weight("bz", {}, 120, 130)),
                             floats("cs", {0.05f}), u8(weight("cz", {}, 120, 136))}}));
  v.push_back(ms({.label = "QLinearAdd int8, A a scalar, no zero points", .op = "QLinearAdd",
                  .inputs = {i8(rnd("a", {1}, -128, 128)), floats("as", {0.02f}), absent(),
                             i8(rnd("b", {3, 37}, -128, 128)), floats("bs", {0.03f}), absent(), floats("cs", {0.04f})}}));
  // com.kestrel QdqAdd (the QDQ fusion's residual sum, passes/fuse_qdq_add.cpp):
  // Vulkan's qlinear_binary.comp with the folded activation, exact as for
  // QLinearAdd.
  auto kestrel_op = [](OpCase c) {
    c.domain = "com.kestrel";
    c.opset = 1;
    return c;
  };
  v.push_back(kestrel_op({.label = "QdqAdd uint8 with a Relu", .op = "QdqAdd",
                          .inputs = {u8(rnd("a", {2, 6, 9, 7}, 0, 256)), floats("as", {0.031f}), u8(weight("az", {}, 120, 130)),
                                     u8(rnd("b", {2, 6, 9, 7}, 0, 256)), floats("bs", {0.047f}), u8(weight("bz", {}, 120, 130)),
                                     floats("ys", {0.03f}), u8(weight("yz", {}, 0, 4))},
                          .attrs = [](onnx::NodeProto& n) { attr_i(n, "kestrel.activation", int64_t(ops::Activation::Relu)); }}));
  v.push_back(kestrel_op({.label = "QdqAdd int8", .op = "QdqAdd",
                          .inputs = {i8(rnd("a", {5, 33}, -128, 128)), floats("as", {0.02f}), i8(weight("az", {}, -4, 4)),
                                     i8(rnd("b", {5, 33}, -128, 128)), floats("bs", {0.03f}), i8(weight("bz", {}, -4, 4)),
                                     floats("ys", {0.05f}), i8(weight("yz", {}, -10, 10))}}));
  // (The CPU's one-pass kernel, backends/cpu/qdq_add.cpp: Clip, uint8 in and
  // int8 out, more values than one task's 16384, a tail past the last 8.)
  constexpr const char* kOneByteType = "Vulkan's kernel takes inputs and output of one 8-bit type";
  v.push_back(kestrel_op({.label = "QdqAdd uint8 to int8 with a Clip, three tasks", .op = "QdqAdd",
                          .inputs = {u8(rnd("a", {1, 24, 40, 41}, 0, 256)), floats("as", {0.031f}), u8(weight("az", {}, 120, 130)),
                                     u8(rnd("b", {1, 24, 40, 41}, 0, 256)), floats("bs", {0.047f}), u8(weight("bz", {}, 120, 130)),
                                     floats("ys", {0.021f}), i8(weight("yz", {}, -3, 3))},
                          .attrs = [](onnx::NodeProto& n) {
                            attr_i(n, "kestrel.activation", int64_t(ops::Activation::Clip));
                            attr_floats(n, "kestrel.activation_params", {-1.5f, 2.25f});
                          },
                          .vulkan_unsupported = kOneByteType}));
  v.push_back(kestrel_op({.label = "QdqAdd int8 to uint8, scales a binade apart", .op = "QdqAdd",
                          .inputs = {i8(rnd("a", {3, 7, 19}, -128, 128)), floats("as", {0.5f}), i8(weight("az", {}, -4, 4)),
                                     i8(rnd("b", {3, 7, 19}, -128, 128)), floats("bs", {0.0039f}), i8(weight("bz", {}, -4, 4)),
                                     floats("ys", {0.37f}), u8(weight("yz", {}, 120, 136))},
                          .vulkan_unsupported = kOneByteType}));
  // (y's scale so fine that sums reach past 2^21 steps: the kernel's
  // quantizer clamps, and most values saturate.)
  v.push_back(kestrel_op({.label = "QdqAdd uint8, sums saturating", .op = "QdqAdd",
                          .inputs = {u8(rnd("a", {4, 9, 23}, 0, 256)), floats("as", {0.5f}), u8(weight("az", {}, 120, 130)),
                                     u8(rnd("b", {4, 9, 23}, 0, 256)), floats("bs", {0.25f}), u8(weight("bz", {}, 120, 130)),
                                     floats("ys", {1e-5f}), u8(weight("yz", {}, 120, 136))}}));
  v.push_back(ms({.label = "QLinearMul int8, same shapes", .op = "QLinearMul",
                  .inputs = {i8(rnd("a", {3, 41}, -128, 128)), floats("as", {0.05f}), i8(weight("az", {}, -4, 4)),
                             i8(rnd("b", {3, 41}, -128, 128)), floats("bs", {0.04f}), i8(weight("bz", {}, -4, 4)),
                             floats("cs", {0.3f}), i8(weight("cz", {}, -10, 10))}}));
  // The table ops (Vulkan: shaders/qlinear_table.comp, the host's table):
  // exact everywhere.
  v.push_back(ms({.label = "QLinearSigmoid uint8", .op = "QLinearSigmoid",
                  .inputs = {u8(rnd("x", {3, 5, 43}, 0, 256)), floats("xs", {0.05f}), u8(weight("xz", {}, 120, 136)),
                             floats("ys", {0.004f}), u8(weight("yz", {}, 0, 10))}}));
  v.push_back(ms({.label = "QLinearLeakyRelu int8, alpha 0.13", .op = "QLinearLeakyRelu",
                  .inputs = {i8(rnd("x", {2, 77}, -128, 128)), floats("xs", {0.05f}), i8(weight("xz", {}, -8, 8)),
                             floats("ys", {0.03f}), i8(weight("yz", {}, -8, 8))},
                  .attrs = [](onnx::NodeProto& n) { attr_f(n, "alpha", 0.13f); }}));
  // The global pool (Vulkan: shaders/qlinear_global_average_pool.comp, the
  // CPU's multiplier): exact int32 sums, the same float product: exact.
  v.push_back(ms({.label = "QLinearGlobalAveragePool uint8 7x7", .op = "QLinearGlobalAveragePool",
                  .inputs = {u8(rnd("x", {2, 13, 7, 7}, 0, 256)), floats("xs", {0.02f}), u8(weight("xz", {}, 120, 136)),
                             floats("ys", {0.015f}), u8(weight("yz", {}, 120, 136))}}));
  v.push_back(ms({.label = "QLinearGlobalAveragePool int8 channels last", .op = "QLinearGlobalAveragePool",
                  .inputs = {i8(rnd("x", {1, 5, 6, 10}, -128, 128)), floats("xs", {0.05f}), i8(weight("xz", {}, -8, 8)),
                             floats("ys", {0.01f}), i8(weight("yz", {}, -8, 8))},
                  .attrs = [](onnx::NodeProto& n) { attr_i(n, "channels_last", 1); }}));
  // The windowed pool (Vulkan: shaders/qlinear_average_pool.comp): float
  // sums of the dequantized taps in the CPU's order, one division by the
  // count, one by y's scale, both IEEE's (div_rn.glsl): exact.
  v.push_back(ms({.label = "QLinearAveragePool uint8 3x3 stride 2 pad 1", .op = "QLinearAveragePool",
                  .inputs = {u8(rnd("x", {2, 5, 11, 13}, 0, 256)), floats("xs", {0.02f}), u8(weight("xz", {}, 120, 136)),
                             floats("ys", {0.015f}), u8(weight("yz", {}, 120, 136))},
                  .attrs = [](onnx::NodeProto& n) {
                    attr_ints(n, "kernel_shape", {3, 3});
                    attr_ints(n, "strides", {2, 2});
                    attr_ints(n, "pads", {1, 1, 1, 1});
                  }}));
  v.push_back(ms({.label = "QLinearAveragePool int8 2x2 count_include_pad ceil_mode", .op = "QLinearAveragePool",
                  .inputs = {i8(rnd("x", {1, 3, 9, 7}, -128, 128)), floats("xs", {0.05f}), i8(weight("xz", {}, -8, 8)),
                             floats("ys", {0.04f}), i8(weight("yz", {}, -8, 8))},
                  .attrs = [](onnx::NodeProto& n) {
                    attr_ints(n, "kernel_shape", {2, 2});
                    attr_ints(n, "strides", {2, 2});
                    attr_ints(n, "pads", {1, 0, 0, 1});
                    attr_i(n, "count_include_pad", 1);
                    attr_i(n, "ceil_mode", 1);
                  }}));
  v.push_back(ms({.label = "QLinearAveragePool uint8 1-D window 4", .op = "QLinearAveragePool",
                  .inputs = {u8(rnd("x", {2, 3, 17}, 0, 256)), floats("xs", {0.03f}), u8(weight("xz", {}, 120, 136)),
                             floats("ys", {0.02f}), u8(weight("yz", {}, 120, 136))},
                  .attrs = [](onnx::NodeProto& n) { attr_ints(n, "kernel_shape", {4}); }}));
  // QLinearConcat (Vulkan: shaders/qlinear_concat.comp, the CPU's tables):
  // exact. The second input has the output's parameters (copied); along the
  // last axis with odd widths, inputs and rows share the output's words.
  v.push_back(ms({.label = "QLinearConcat uint8 axis 1, one input copied", .op = "QLinearConcat",
                  .inputs = {floats("ys", {0.05f}), u8(weight("yz", {}, 128, 129)), u8(rnd("a", {2, 3, 5}, 0, 256)),
                             floats("as", {0.02f}), u8(weight("az", {}, 120, 136)), u8(rnd("b", {2, 4, 5}, 0, 256)),
                             floats("bs", {0.05f}), u8(weight("bz", {}, 128, 129)), u8(rnd("c", {2, 1, 5}, 0, 256)),
                             floats("cs", {0.11f}), u8(weight("cz", {}, 120, 136))},
                  .attrs = [](onnx::NodeProto& n) { attr_i(n, "axis", 1); }}));
  v.push_back(ms({.label = "QLinearConcat int8 last axis, odd widths", .op = "QLinearConcat",
                  .inputs = {floats("ys", {0.04f}), i8(weight("yz", {}, -3, 3)), i8(rnd("a", {3, 7, 3}, -128, 128)),
                             floats("as", {0.03f}), i8(weight("az", {}, -9, 9)), i8(rnd("b", {3, 7, 5}, -128, 128)),
                             floats("bs", {0.06f}), i8(weight("bz", {}, -9, 9))},
                  .attrs = [](onnx::NodeProto& n) { attr_i(n, "axis", -1); }}));
  return v;
}

const bool registered = add_cases(cases());

}  // namespace
}  // namespace kestrel::backend_ops

"""Quantized convolutions in ONNX's QDQ form (DequantizeLinear -> Conv [-> Relu] -> QuantizeLinear) run on
the CPU as one QLinearConv with integer products, as ONNX Runtime's CPU EP runs them: the quantized outputs
are equal to ONNX Runtime's, byte for byte, for each form the rewrite takes (uint8 and int8 data, weights per
tensor and per channel, float32 and int32 biases, Relu, depthwise, groups, strides, dilations, padding).
Kestrel also fuses what ONNX Runtime runs in float between the quantizers (a SiLU, a Relu before a quantizer
whose zero point is not its lowest value): the QLinearConv keeps the activation, and its outputs stay within
one quantization step of ONNX Runtime's."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import INT8_WEIGHTS, assert_every_node_on_the_gpu, profiled_ops

ELEM = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}


def qdq_conv_model(path, *, x_type, w_per_channel, bias, relu, y_type, y_zp, group=1, C=8, M=12, k=3,
                   strides=(1, 1), pads=(1, 1, 1, 1), dilations=(1, 1), hw=(13, 11), seed=0, silu=False):
    rng = np.random.default_rng(seed)
    xs, xzp = np.float32(0.031), x_type(3 if x_type is np.uint8 else -7)
    w = rng.integers(-127, 128, (M, C // group, k, k)).astype(np.int8)
    ws = (rng.uniform(0.002, 0.02, M) if w_per_channel else np.array(0.01)).astype(np.float32)
    inits = [numpy_helper.from_array(np.array(xs), "xs"), numpy_helper.from_array(np.array(xzp), "xzp"),
             numpy_helper.from_array(w, "wq"), numpy_helper.from_array(ws, "ws"),
             numpy_helper.from_array(np.zeros(ws.shape, np.int8), "wzp"),
             numpy_helper.from_array(np.array(np.float32(0.05)), "ys"),
             numpy_helper.from_array(np.array(y_zp, y_type), "yzp")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xzp"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xzp"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wzp"], ["wd"], axis=0)]
    conv_in = ["xd", "wd"]
    if bias == "float":
        inits.append(numpy_helper.from_array(rng.uniform(-2, 2, M).astype(np.float32), "b"))
        conv_in.append("b")
    elif bias == "int32":
        inits += [numpy_helper.from_array(rng.integers(-5000, 5000, M).astype(np.int32), "bq"),
                  numpy_helper.from_array((xs * ws).astype(np.float32), "bs")]
        nodes.append(helper.make_node("DequantizeLinear", ["bq", "bs"], ["b"], axis=0))
        conv_in.append("b")
    nodes.append(helper.make_node("Conv", conv_in, ["c"], group=group, strides=list(strides), pads=list(pads),
                                  dilations=list(dilations), kernel_shape=[k, k]))
    last = "c"
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["r"]))
        last = "r"
    if silu:
        nodes += [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["r"])]
        last = "r"
    nodes.append(helper.make_node("QuantizeLinear", [last, "ys", "yzp"], ["y"]))
    g = helper.make_graph(nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, *hw])],
                          [helper.make_tensor_value_info("y", ELEM[y_type], None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return rng.uniform(-4, 4, (1, C, *hw)).astype(np.float32)


FUSED = {
    "uint8, weights per channel, float bias, Relu": dict(x_type=np.uint8, w_per_channel=True, bias="float",
                                                         relu=True, y_type=np.uint8, y_zp=0),
    "int8 data, 1x1 weights per tensor, no bias": dict(x_type=np.int8, w_per_channel=False, bias=None, relu=False,
                                                       y_type=np.int8, y_zp=5, k=1, pads=(0, 0, 0, 0), C=37,
                                                       M=13, hw=(9, 7)),
    "depthwise stride 2, uint8 out at 128": dict(x_type=np.uint8, w_per_channel=True, bias="float", relu=False,
                                                 y_type=np.uint8, y_zp=128, group=16, C=16, M=16,
                                                 strides=(2, 2), hw=(17, 20)),
    "int32 bias through DequantizeLinear": dict(x_type=np.uint8, w_per_channel=True, bias="int32", relu=False,
                                                y_type=np.uint8, y_zp=100),
    "groups of 4 channels, dilation 2, Relu at int8's lowest": dict(x_type=np.int8, w_per_channel=True,
                                                                    bias="float", relu=True, y_type=np.int8,
                                                                    y_zp=-128, group=2, C=8, M=6,
                                                                    dilations=(2, 2), pads=(2, 2, 2, 2)),
    "64 channels over 40x40 (many chunks), stride 2": dict(x_type=np.uint8, w_per_channel=True, bias="float",
                                                           relu=True, y_type=np.uint8, y_zp=0, C=64, M=40,
                                                           hw=(40, 40), strides=(2, 2)),
}


def ort_run(path, x):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def kestrel_run(path, x):
    import kestrel
    return np.asarray(kestrel.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0])


@pytest.mark.parametrize("label", FUSED)
def test_fused_qdq_convolutions_equal_onnx_runtime_byte_for_byte(tmp_path, label):
    path = tmp_path / "m.onnx"
    x = qdq_conv_model(path, **FUSED[label])
    ops = profiled_ops(path)
    assert "QLinearConv" in ops and "Conv" not in ops, ops
    ours, ref = kestrel_run(path, x), ort_run(path, x)
    assert ours.dtype == ref.dtype and ours.shape == ref.shape
    assert np.array_equal(ours, ref), (label, int(np.abs(ours.astype(int) - ref.astype(int)).max()),
                                       int((ours != ref).sum()), ref.size)


def test_relu_before_a_quantizer_whose_zero_point_is_not_its_lowest_is_kept_by_the_qlinearconv(tmp_path):
    """Clamping at zero is not a no-op after such a quantizer: the fused node keeps the Relu, within one step
    of ORT (which runs this Conv and Relu in float)."""
    path = tmp_path / "m.onnx"
    x = qdq_conv_model(path, x_type=np.uint8, w_per_channel=True, bias="float", relu=True, y_type=np.uint8,
                       y_zp=10)
    ops = profiled_ops(path)
    assert "QLinearConv" in ops and "Conv" not in ops and "Relu" not in ops, ops
    ours, ref = kestrel_run(path, x), ort_run(path, x)
    assert np.abs(ours.astype(int) - ref.astype(int)).max() <= 1
    assert ours.min() >= 10 and (ours == 10).mean() > 0.2  # the Relu held, and clamped a good share


@pytest.mark.parametrize("x_type", [np.uint8, np.int8])
def test_silu_between_conv_and_quantizer_fuses_within_one_step(tmp_path, x_type):
    """YOLOX's Conv -> Sigmoid -> Mul -> QuantizeLinear: one QLinearConv that applies the SiLU to each real
    sum before quantizing; ORT runs the chain in float, and the two agree to within one step."""
    path = tmp_path / "m.onnx"
    x = qdq_conv_model(path, x_type=x_type, w_per_channel=True, bias="float", relu=False, silu=True,
                       y_type=np.uint8, y_zp=12, C=16, M=24, hw=(20, 17))
    ops = profiled_ops(path)
    assert "QLinearConv" in ops and not ops & {"Conv", "Sigmoid", "Mul"}, ops
    ours, ref = kestrel_run(path, x), ort_run(path, x)
    diff = np.abs(ours.astype(int) - ref.astype(int))
    assert diff.max() <= 1 and (diff == 0).mean() > 0.99, (int(diff.max()), float((diff == 0).mean()))
    assert len(np.unique(ours)) > 20  # a spread of codes, not a saturated output


def qdq_matmul_model(path, *, x_type, w_type, w_per_column, y_type, y_zp, rows=(2, 17), K=96, N=40, seed=3,
                     float_out=False, bias=False):
    """DequantizeLinear(QuantizeLinear(x)), DequantizeLinear(wq) -> MatMul -> QuantizeLinear: a transformer
    projection as `kestrel quantize` and quantize_static write it; with float_out, the MatMul's output stays
    float (a bias added next with `bias`), as `kestrel quantize` leaves a Linear before a residual sum."""
    rng = np.random.default_rng(seed)
    xs, xzp = np.float32(0.027), x_type(7 if x_type is np.uint8 else -3)
    lo, hi = (max(-127, INT8_WEIGHTS[0]), INT8_WEIGHTS[1]) if w_type is np.int8 else (0, 256)
    w = rng.integers(lo, hi, (K, N)).astype(w_type)
    ws = (rng.uniform(0.001, 0.01, N) if w_per_column else np.array(0.004)).astype(np.float32)
    wzp = (np.zeros(ws.shape) if w_type is np.int8 else rng.integers(120, 136, ws.shape)).astype(w_type)
    inits = [numpy_helper.from_array(np.array(xs), "xs"), numpy_helper.from_array(np.array(xzp), "xzp"),
             numpy_helper.from_array(w, "wq"), numpy_helper.from_array(ws, "ws"),
             numpy_helper.from_array(wzp, "wzp"), numpy_helper.from_array(np.array(np.float32(0.06)), "ys"),
             numpy_helper.from_array(np.array(y_zp, y_type), "yzp")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xzp"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xzp"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wzp"], ["wd"], axis=1),
             helper.make_node("MatMul", ["xd", "wd"], ["m"]),
             helper.make_node("QuantizeLinear", ["m", "ys", "yzp"], ["y"])]
    out_type = ELEM[y_type]
    if float_out:
        nodes[-1] = helper.make_node("Add", ["m", "b"], ["y"]) if bias else helper.make_node("Identity", ["m"], ["y"])
        inits.append(numpy_helper.from_array(rng.normal(0, 1, N).astype(np.float32), "b"))
        out_type = TensorProto.FLOAT
    g = helper.make_graph(nodes, "qdq_matmul", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [*rows, K])],
                          [helper.make_tensor_value_info("y", out_type, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return rng.uniform(-3, 3, (*rows, K)).astype(np.float32)


@pytest.mark.parametrize("x_type,w_type,w_per_column,y_type,y_zp", [
    (np.uint8, np.int8, True, np.uint8, 128), (np.int8, np.int8, False, np.int8, 0),
    (np.uint8, np.uint8, True, np.uint8, 60)])
def test_fused_qdq_matmuls_equal_onnx_runtime_byte_for_byte(tmp_path, x_type, w_type, w_per_column, y_type, y_zp):
    """The MatMul between quantizers runs as one QLinearMatMul on integer products, as ONNX Runtime's CPU EP
    runs it: its quantized output byte for byte."""
    path = tmp_path / "m.onnx"
    x = qdq_matmul_model(path, x_type=x_type, w_type=w_type, w_per_column=w_per_column, y_type=y_type, y_zp=y_zp)
    ops = profiled_ops(path)
    assert "QLinearMatMul" in ops and "MatMul" not in ops, ops
    ours, ref = kestrel_run(path, x), ort_run(path, x)
    assert ours.dtype == ref.dtype and ours.shape == ref.shape
    assert np.array_equal(ours, ref), (int(np.abs(ours.astype(int) - ref.astype(int)).max()), int((ours != ref).sum()))


@pytest.mark.parametrize("x_type,w_type,w_per_column,bias", [
    (np.uint8, np.int8, True, True), (np.int8, np.int8, False, False), (np.uint8, np.uint8, True, True),
    (np.uint8, np.int8, True, False)])
def test_qdq_matmuls_with_float_outputs_run_on_integer_products(tmp_path, x_type, w_type, w_per_column, bias):
    """A QDQ MatMul whose output stays float (and the bias added next) runs as one com.microsoft
    MatMulIntegerToFloat: exact integer sums scaled once. Without a bias ONNX Runtime's CPU EP makes the same op
    of it, and the outputs are its bits; with one it runs a float Gemm on the dequantized weights, which rounds
    each product and partial sum, as does the unfused graph (ONNX Runtime without graph optimizations): those
    agree to float32's rounding of sums of 96 terms, 1e-5 of the output's range."""
    path = tmp_path / "m.onnx"
    x = qdq_matmul_model(path, x_type=x_type, w_type=w_type, w_per_column=w_per_column, y_type=np.uint8, y_zp=0,
                         float_out=True, bias=bias)
    ops = profiled_ops(path)
    assert "MatMulIntegerToFloat" in ops and "MatMul" not in ops and "Add" not in ops, ops
    ours = kestrel_run(path, x)
    optimized = ort_run(path, x)
    assert ours.dtype == optimized.dtype and ours.shape == optimized.shape
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    unfused = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    if not bias:
        assert np.array_equal(ours, optimized), float(np.abs(ours - optimized).max())
    for ref in (optimized, unfused):
        assert np.abs(ours - ref).max() <= 1e-5 * np.ptp(ref), float(np.abs(ours - ref).max())


@pytest.mark.parametrize("op", ["MatMul", "Conv"])
def test_int8_data_whose_dequantizer_has_no_zero_point_fuses_with_an_int8_zero(tmp_path, op):
    """DequantizeLinear of int8 data without a zero point (its zero is an int8 0): the fused node gets an int8
    zero point, not a quantizer's default uint8 one (which it refused, naming the mismatch). ONNX Runtime keeps
    this form in float, rounding each product and partial sum: the float output agrees to 1e-5 of its range, the
    quantized one within one quantization step."""
    rng = np.random.default_rng(9)
    if op == "MatMul":
        x = rng.integers(-128, 128, (3, 24)).astype(np.int8)
        w = rng.integers(-127, 128, (24, 10)).astype(np.int8)
        node = helper.make_node("MatMul", ["xd", "wd"], ["y"])
    else:
        x = rng.integers(-128, 128, (1, 4, 9, 9)).astype(np.int8)
        w = rng.integers(-127, 128, (6, 4, 3, 3)).astype(np.int8)
        node = helper.make_node("Conv", ["xd", "wd"], ["m"], pads=[1, 1, 1, 1])
    inits = [numpy_helper.from_array(np.array(np.float32(0.05)), "xs"), numpy_helper.from_array(w, "wq"),
             numpy_helper.from_array(np.array(np.float32(0.01)), "ws")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "xs"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws"], ["wd"]), node]
    out_type = TensorProto.FLOAT
    if op == "Conv":  # (the Conv fusion takes a quantized output)
        inits += [numpy_helper.from_array(np.array(np.float32(0.2)), "ys"),
                  numpy_helper.from_array(np.array(np.int8(3)), "yzp")]
        nodes.append(helper.make_node("QuantizeLinear", ["m", "ys", "yzp"], ["y"]))
        out_type = TensorProto.INT8
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT8, list(x.shape))],
                          [helper.make_tensor_value_info("y", out_type, None)], inits)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    ops = profiled_ops(path)
    assert ("MatMulIntegerToFloat" if op == "MatMul" else "QLinearConv") in ops, ops
    ours, ref = kestrel_run(path, x), ort_run(path, x)
    assert ours.dtype == ref.dtype and ours.shape == ref.shape
    if op == "MatMul":
        assert np.abs(ours - ref).max() <= 1e-5 * np.ptp(ref)
    else:
        assert np.abs(ours.astype(int) - ref.astype(int)).max() <= 1


@pytest.mark.parametrize("label", FUSED)
def test_qdq_convolutions_in_vulkan_sessions_run_fused_on_the_gpu(tmp_path, label):
    """A Vulkan session fuses a QDQ graph as the CPU backend does (a QLinearConv carrying its activation, on exact
    integer sums: shaders/conv_integer.comp, then shaders/requantize.comp) and runs every node on the device: the
    CPU backend's output and ONNX Runtime's (graph optimizations on, fused the same way) within one quantization
    step (a GPU's exp and division may round the last bit otherwise than the CPU's, moving a value sitting at
    .5) and equal for nearly every value."""
    import kestrel
    path = tmp_path / "m.onnx"
    x = qdq_conv_model(path, **dict(FUSED[label], hw=(32, 32)))  # past the small tensors kept on the host
    assert_every_node_on_the_gpu(path, x, tmp_path)
    ours = np.asarray(kestrel.InferenceSession(str(path), providers=["VulkanExecutionProvider"]).run(None, {"x": x})[0])
    for ref in (kestrel_run(path, x), ort_run(path, x)):
        assert ours.dtype == ref.dtype and ours.shape == ref.shape
        diff = np.abs(ours.astype(int) - ref.astype(int))
        assert diff.max() <= 1 and (diff == 0).mean() > 0.99, (label, int(diff.max()), float((diff == 0).mean()))

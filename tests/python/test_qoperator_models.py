"""Models quantized by ONNX Runtime's quantize_static in its operator form (QuantFormat.QOperator: QLinearConv and
QLinearMatMul nodes between a QuantizeLinear and a DequantizeLinear) run every node on the GPU in a Vulkan session
(shaders/conv_integer.comp and gemm_integer.comp for the exact int32 sums, requantize.comp for the rest), with the
CPU backend's bits, which are the reference's; against ONNX Runtime's CPU EP, within one quantization step."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

import kestrel
from conftest import assert_every_node_on_the_gpu, ort_u8s8_saturates


def float_model(path):
    """x [1, 3, 48, 64] -> Conv 3x3 (8) -> Relu -> Conv 3x3 stride 2 (12) -> Flatten -> MatMul (9216 -> 10), past the
    small tensors Kestrel keeps on the host."""
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array(rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.normal(0, 0.2, 8).astype(np.float32), "b1"),
             numpy_helper.from_array(rng.normal(0, 0.15, (12, 8, 3, 3)).astype(np.float32), "w2"),
             numpy_helper.from_array(rng.normal(0, 0.2, 12).astype(np.float32), "b2"),
             numpy_helper.from_array(rng.normal(0, 0.02, (12 * 24 * 32, 10)).astype(np.float32), "w3")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Flatten", ["c2"], ["f"]),
             helper.make_node("MatMul", ["f", "w3"], ["y"])]
    g = helper.make_graph(nodes, "qop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 48, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return [rng.normal(0, 1, (1, 3, 48, 64)).astype(np.float32) for _ in range(4)]


class Samples(CalibrationDataReader):
    def __init__(self, xs):
        self.it = iter([{"x": x} for x in xs])

    def get_next(self):
        return next(self.it, None)


@pytest.mark.parametrize("per_channel,activation", [(True, QuantType.QUInt8), (False, QuantType.QInt8)])
def test_qoperator_models_run_on_the_gpu_with_the_cpus_bits(tmp_path, per_channel, activation):
    fp, q = tmp_path / "fp.onnx", tmp_path / "q.onnx"
    xs = float_model(fp)
    quantize_static(str(fp), str(q), Samples(xs[:3]), quant_format=QuantFormat.QOperator, per_channel=per_channel,
                    activation_type=activation, weight_type=QuantType.QInt8, reduce_range=ort_u8s8_saturates())
    written = {n.op_type for n in onnx.load(str(q)).graph.node}
    assert {"QLinearConv", "QLinearMatMul"} <= written, written
    x = xs[3]
    assert_every_node_on_the_gpu(q, x, tmp_path)
    gpu = np.asarray(kestrel.InferenceSession(str(q), providers=["VulkanExecutionProvider"]).run(None, {"x": x})[0])
    cpu = np.asarray(kestrel.InferenceSession(str(q), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0])
    assert gpu.dtype == cpu.dtype and gpu.shape == cpu.shape
    assert np.array_equal(gpu, cpu), np.abs(gpu - cpu).max()
    so = ort.SessionOptions()
    so.log_severity_level = 3
    ref = ort.InferenceSession(str(q), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    step = float(np.abs(np.diff(np.unique(ref))).min())  # the output's dequantization scale
    assert np.abs(gpu - ref).max() <= step * 1.001, (np.abs(gpu - ref).max(), step)


def contrib_op_model(path, rng):
    """Conv -> Relu -> Conv, + the Relu (residual), SiLU as Sigmoid and Mul, AveragePool and Concat on one branch
    (then LeakyRelu), GlobalAveragePool -> Flatten -> MatMul on the other: quantize_static's operator form writes
    each as its com.microsoft QLinear op."""
    inits = [numpy_helper.from_array(rng.normal(0, .3, (8, 3, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.normal(0, .3, (8, 8, 3, 3)).astype(np.float32), "w2"),
             numpy_helper.from_array(rng.normal(0, .1, (8, 5)).astype(np.float32), "w3")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]), helper.make_node("Add", ["c2", "r1"], ["a"]),
             helper.make_node("Sigmoid", ["a"], ["s"]), helper.make_node("Mul", ["a", "s"], ["m"]),
             helper.make_node("AveragePool", ["m"], ["ap"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Concat", ["ap", "ap"], ["cc"], axis=1),
             helper.make_node("GlobalAveragePool", ["m"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("MatMul", ["f", "w3"], ["y"]), helper.make_node("LeakyRelu", ["cc"], ["lr"], alpha=0.1)]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("lr", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return [rng.normal(0, 1, (1, 3, 32, 32)).astype(np.float32) for _ in range(4)]


def test_a_qoperator_model_with_every_contrib_op_matches_onnx_runtime(tmp_path):
    """Before Kestrel had these ops, such a file did not load (no kernel for QLinearAdd and six more)."""
    fp, q = tmp_path / "fp.onnx", tmp_path / "q.onnx"
    xs = contrib_op_model(fp, np.random.default_rng(1))
    quantize_static(str(fp), str(q), Samples(xs[:3]), quant_format=QuantFormat.QOperator)
    written = {n.op_type for n in onnx.load(str(q)).graph.node}
    assert {"QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearAveragePool", "QLinearGlobalAveragePool",
            "QLinearConcat", "QLinearLeakyRelu"} <= written, written
    so = ort.SessionOptions()
    so.log_severity_level = 3
    refs = ort.InferenceSession(str(q), so, providers=["CPUExecutionProvider"]).run(None, {"x": xs[3]})
    for provider in ["CPUExecutionProvider", "VulkanExecutionProvider"]:
        ours = kestrel.InferenceSession(str(q), providers=[provider]).run(None, {"x": xs[3]})
        for got, ref in zip(ours, refs):
            got = np.asarray(got)
            step = float(np.abs(np.diff(np.unique(ref))).min())
            assert got.shape == ref.shape and np.abs(got - ref).max() <= step * 1.001, (provider, np.abs(got - ref).max())

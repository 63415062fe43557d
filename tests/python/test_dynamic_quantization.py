"""Models quantized by ONNX Runtime's quantize_dynamic (DynamicQuantizeLinear, MatMulInteger, Cast, the scales'
Muls, a Linear's Add) run on the CPU as one com.microsoft DynamicQuantizeMatMul per projection, as ONNX Runtime's
CPU EP fuses them (passes/fuse_dynamic_quantize_matmul.cpp). The integer sums are exact and scaled in the
unfused graph's order, so the outputs equal ONNX Runtime's bit for bit, fused or not: weights int8 and uint8, per
tensor and per channel, three projections sharing one quantized input, with and without a bias."""
import os
import re
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

import kestrel
from conftest import ROOT, assert_every_node_on_the_gpu, ort_u8s8_saturates

KESTREL = os.path.join(ROOT, "build", "kestrel")


def float_model(path, K=96, N=72, rows=(1, 50)):
    """x -> three projections (q with a bias, k and v without), q * k + v -> a last projection with a bias."""
    rng = np.random.default_rng(5)
    inits, nodes = [], []
    for name, n_out, bias in [("q", N, True), ("k", N, False), ("v", N, False), ("o", 40, True)]:
        k_in = N if name == "o" else K
        inits.append(numpy_helper.from_array((rng.normal(0, 0.08, (k_in, n_out))).astype(np.float32), f"w{name}"))
        src = "h" if name == "o" else "x"
        nodes.append(helper.make_node("MatMul", [src, f"w{name}"], [f"m{name}" if bias else name]))
        if bias:
            inits.append(numpy_helper.from_array(rng.normal(0, 0.5, n_out).astype(np.float32), f"b{name}"))
            nodes.append(helper.make_node("Add", [f"m{name}", f"b{name}"], [name if name != "o" else "y"]))
    nodes[5:5] = [helper.make_node("Mul", ["q", "k"], ["qk"]), helper.make_node("Add", ["qk", "v"], ["h"])]
    g = helper.make_graph(nodes, "proj", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [*rows, K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return rng.normal(0, 1.5, (*rows, K)).astype(np.float32)


def ort_run(path, x, level):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = level
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def profiled_ops(path):
    run = subprocess.run([KESTREL, "bench", str(path), "--backend", "cpu", "--runs", "1", "--profile"],
                         capture_output=True, text=True, check=True)
    return {op: int(n) for op, n in re.findall(r"^(\w+)\s+[0-9.]+\s+[0-9.]+%\s+(\d+)", run.stdout, re.M)}


@pytest.mark.parametrize("weight_type,per_channel", [(QuantType.QInt8, False), (QuantType.QInt8, True),
                                                     (QuantType.QUInt8, False), (QuantType.QUInt8, True)])
def test_dynamically_quantized_projections_are_onnx_runtimes_bit_for_bit(tmp_path, weight_type, per_channel):
    fp, q = tmp_path / "fp.onnx", tmp_path / "q.onnx"
    x = float_model(fp)
    quantize_dynamic(str(fp), str(q), weight_type=weight_type, per_channel=per_channel,
                     reduce_range=weight_type == QuantType.QInt8 and ort_u8s8_saturates())
    written = {n.op_type for n in onnx.load(str(q)).graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= written, written
    ops = profiled_ops(q)
    assert "DynamicQuantizeMatMul" in ops and "MatMulInteger" not in ops and "Cast" not in ops, ops
    assert ops["DynamicQuantizeMatMul"] == 4 and ops["Add"] == 1, ops  # the two biases taken in; q * k + v's Add left
    ours = np.asarray(kestrel.InferenceSession(str(q), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0])
    unfused = ort_run(q, x, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    fused = ort_run(q, x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    assert ours.shape == unfused.shape and ours.dtype == unfused.dtype
    assert np.array_equal(ours, unfused), np.abs(ours - unfused).max()
    assert np.array_equal(ours, fused), np.abs(ours - fused).max()


def test_a_quantized_projection_whose_scale_is_also_read_elsewhere_keeps_its_form(tmp_path):
    """The scales' product read by a second node: the chain is not fused, and the outputs are still ONNX
    Runtime's."""
    fp, q = tmp_path / "fp.onnx", tmp_path / "q.onnx"
    x = float_model(fp)
    quantize_dynamic(str(fp), str(q), weight_type=QuantType.QInt8, reduce_range=ort_u8s8_saturates())
    m = onnx.load(str(q))
    scale_mul = next(n for n in m.graph.node if n.op_type == "Mul" and "scale" in n.output[0])
    m.graph.node.append(helper.make_node("Identity", [scale_mul.output[0]], ["s_out"]))
    m.graph.output.append(helper.make_tensor_value_info("s_out", TensorProto.FLOAT, None))
    onnx.save(m, str(q))
    assert {"MatMulInteger", "DynamicQuantizeMatMul"} <= profiled_ops(q).keys()  # that projection alone kept
    ours = kestrel.InferenceSession(str(q), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(str(q), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for a, b in zip(ours, ref):
        assert np.array_equal(np.asarray(a), b)


@pytest.mark.parametrize("weight_type,per_channel", [(QuantType.QInt8, True), (QuantType.QUInt8, False)])
def test_dynamically_quantized_projections_run_on_the_gpu_in_vulkan_sessions(tmp_path, weight_type, per_channel):
    """A Vulkan session fuses quantize_dynamic's projections as the CPU backend and ONNX Runtime do (one
    DynamicQuantizeMatMul each) and runs them on the device: DynamicQuantizeLinear's passes, the exact int32 sums
    (shaders/gemm_integer.comp) and their scaling in ONNX Runtime's order (shaders/dequantize_product.comp), each a
    correctly rounded float32 operation as on the CPU. So the outputs are ONNX Runtime's bit for bit. Rows past
    the 64-row tile, a batch of 2."""
    fp, q = tmp_path / "fp.onnx", tmp_path / "q.onnx"
    x = float_model(fp, rows=(2, 70))
    quantize_dynamic(str(fp), str(q), weight_type=weight_type, per_channel=per_channel,
                     reduce_range=weight_type == QuantType.QInt8 and ort_u8s8_saturates())
    assert_every_node_on_the_gpu(q, x, tmp_path)
    ours = np.asarray(kestrel.InferenceSession(str(q), providers=["VulkanExecutionProvider"]).run(None, {"x": x})[0])
    ref = ort_run(q, x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    assert np.array_equal(ours, ref), np.abs(ours - ref).max()

"""4-bit weights and activations (ONNX opset 21): int4 and uint4 tensors, packed two a byte in the file,
dequantized per tensor, per channel and in blocks along an axis, and quantized with 4-bit saturation, against
ONNX Runtime on the same models. Dequantization and quantization are exact arithmetic (the products of a 4-bit
value and a float32 scale; QuantizeLinear's rounding), so the outputs match bit for bit."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import kestrel

FOUR = {"int4": (TensorProto.INT4, -8, 8), "uint4": (TensorProto.UINT4, 0, 16)}


def four_bit(name, values, kind):
    code, _, _ = FOUR[kind]
    return helper.make_tensor(name, code, values.shape, values.flatten().tolist())


def run_both(model_bytes, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    ours = kestrel.InferenceSession(model_bytes, providers=["CPUExecutionProvider"]).run(None, feeds)
    return ours, ref


@pytest.mark.parametrize("kind,layout", [("int4", "block"), ("uint4", "block"), ("int4", "channel"),
                                         ("uint4", "tensor")])
def test_four_bit_weights_dequantize_as_onnx_runtime_does(kind, layout):
    """A 4-bit weight [K, N] dequantized (blocks of 16 along K, per column, or one scale) then a MatMul."""
    _, lo, hi = FOUR[kind]
    rng = np.random.default_rng(len(kind) + len(layout))
    K, N, block = 40, 6, 16
    w = rng.integers(lo, hi, (K, N))
    if layout == "block":
        s_shape, attrs = (-(-K // block), N), {"axis": 0, "block_size": block}
    elif layout == "channel":
        s_shape, attrs = (N,), {"axis": 1}
    else:
        s_shape, attrs = (), {}
    scale = rng.uniform(0.01, 0.1, s_shape).astype(np.float32)
    inits = [four_bit("w", w, kind), numpy_helper.from_array(scale, "s")]
    dq_in = ["w", "s"]
    if kind == "uint4":
        inits.append(four_bit("z", rng.integers(lo, hi, s_shape), kind))
        dq_in.append("z")
    nodes = [helper.make_node("DequantizeLinear", dq_in, ["wd"], **attrs), helper.make_node("MatMul", ["x", "wd"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, N]),
                               helper.make_tensor_value_info("wd", TensorProto.FLOAT, [K, N])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    x = rng.normal(0, 1, (3, K)).astype(np.float32)
    (y, wd), (ry, rwd) = run_both(m.SerializeToString(), {"x": x})
    assert np.array_equal(wd, rwd), "the dequantized weights differ"
    assert np.abs(y - ry).max() <= 1e-5 * np.abs(ry).max()


@pytest.mark.parametrize("kind", ["int4", "uint4"])
def test_four_bit_quantization_saturates_as_onnx_runtime_does(kind):
    """QuantizeLinear to 4 bits (values far past the range saturate to -8..7 or 0..15), then back."""
    _, lo, hi = FOUR[kind]
    rng = np.random.default_rng(7)
    zp = four_bit("z", np.array(3 if kind == "uint4" else -1), kind)
    inits = [numpy_helper.from_array(np.array(np.float32(0.25)), "s"), zp]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    x = rng.uniform(-5, 5, 64).astype(np.float32)
    x[:4] = [0.125, 0.375, -0.125, 100.0]  # ties to even, and one far past the range
    (y,), (ry,) = run_both(m.SerializeToString(), {"x": x})
    assert np.array_equal(y, ry), np.stack([x, y, ry])[:, y != ry]
    assert y.min() >= (lo - (3 if kind == "uint4" else -1)) * 0.25 and y.max() <= (hi - 1 - (3 if kind == "uint4" else -1)) * 0.25


@pytest.mark.parametrize("kind,zero_points,block,provider", [
    ("int4", False, 16, "CPUExecutionProvider"), ("uint4", True, 32, "CPUExecutionProvider"),
    ("int4", True, 16, "VulkanExecutionProvider"), ("uint4", False, 32, "VulkanExecutionProvider")])
def test_blockwise_four_bit_matmuls_run_as_matmul_nbits(tmp_path, kind, zero_points, block, provider):
    """A MatMul of a weight dequantized from 4-bit blocks along K becomes one com.microsoft MatMulNBits, as ONNX
    Runtime rewrites it, with the weights kept in 4 bits (on Vulkan, packed on the device): the dequantized weights
    are the same float32 values, so the outputs are the float form's (ONNX Runtime without graph optimizations)
    to float32's rounding of the sums, on the CPU and on the device."""
    from conftest import assert_every_node_on_the_gpu, profiled_ops
    _, lo, hi = FOUR[kind]
    rng = np.random.default_rng(block + len(kind) + zero_points)
    K, N = 72, 24  # the last block partly used; 80 rows of x (past what stays on the host as shape arithmetic)
    blocks = -(-K // block)
    inits = [four_bit("w", rng.integers(lo, hi, (K, N)), kind),
             numpy_helper.from_array(rng.uniform(0.01, 0.1, (blocks, N)).astype(np.float32), "s")]
    dq_in = ["w", "s"]
    if zero_points:
        inits.append(four_bit("z", rng.integers(lo, hi, (blocks, N)), kind))
        dq_in.append("z")
    nodes = [helper.make_node("DequantizeLinear", dq_in, ["wd"], axis=0, block_size=block),
             helper.make_node("MatMul", ["x", "wd"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 40, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 40, N])], inits)
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)],
                                       ir_version=10).SerializeToString())
    x = rng.normal(0, 1, (2, 40, K)).astype(np.float32)
    backend = "vulkan" if provider.startswith("Vulkan") else "cpu"
    ops = profiled_ops(path, backend)  # (on Vulkan also the kernels)
    assert "MatMulNBits" in ops and "MatMul" not in ops and "DequantizeLinear" not in ops, ops
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    ours = kestrel.InferenceSession(str(path), providers=[provider]).run(None, {"x": x})[0]
    assert ours.shape == ref.shape
    assert np.abs(ours - ref).max() <= 1e-5 * np.abs(ref).max(), np.abs(ours - ref).max()
    if backend == "vulkan":
        assert_every_node_on_the_gpu(path, x, tmp_path)


def test_blockwise_four_bit_weights_a_matmul_nbits_cannot_take_keep_their_float_form(tmp_path):
    """Blocks of 24 (MatMulNBits takes powers of 2 from 16): the weights are dequantized once, as before."""
    from conftest import profiled_ops
    rng = np.random.default_rng(24)
    K, N, block = 48, 8, 24
    inits = [four_bit("w", rng.integers(-8, 8, (K, N)), "int4"),
             numpy_helper.from_array(rng.uniform(0.01, 0.1, (K // block, N)).astype(np.float32), "s")]
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["wd"], axis=0, block_size=block),
             helper.make_node("MatMul", ["x", "wd"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, N])], inits)
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)],
                                       ir_version=10).SerializeToString())
    assert profiled_ops(path) == {"MatMul"}
    x = rng.normal(0, 1, (3, K)).astype(np.float32)
    (y,), (ry,) = run_both(path.read_bytes(), {"x": x})
    assert np.abs(y - ry).max() <= 1e-5 * np.abs(ry).max()

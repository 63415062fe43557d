"""ONNX Runtime's quantized contrib ops (domain com.microsoft), which its quantization tools write: Kestrel's
outputs against ONNX Runtime's on the same model. QGemm, DynamicQuantizeMatMul and MatMulIntegerToFloat sum exactly
in int32 and scale in ONNX Runtime's order, so they match bit for bit; MatMulNBits dequantizes its blocks and
multiplies in float32 (ONNX Runtime at accuracy_level 0), so it matches to float32's rounding of the sums (1e-5
of the output's range). Unsupported forms are refused naming what is missing."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import kestrel
from conftest import INT8_WEIGHTS, assert_every_node_on_the_gpu

ELEM = {np.float32: TensorProto.FLOAT, np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}


def model(node, inits, inputs, out_type=np.float32):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, ELEM[v.dtype.type], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(node.output[0], ELEM[out_type], None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                             ir_version=8).SerializeToString()


def both(m, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(m, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    ours = kestrel.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    return ours, ref


@pytest.mark.parametrize("trans_b,b_type,y_quantized", [(0, np.int8, False), (1, np.uint8, False), (1, np.int8, True)])
def test_qgemm_is_onnx_runtimes_bit_for_bit(trans_b, b_type, y_quantized):
    rng = np.random.default_rng(trans_b)
    M, K, N = 9, 70, 11
    a = rng.integers(0, 256, (M, K)).astype(np.uint8)
    lo, hi = INT8_WEIGHTS if b_type is np.int8 else (0, 256)
    b = rng.integers(lo, hi, (N, K) if trans_b else (K, N)).astype(b_type)
    inits = {"as": np.array(np.float32(0.021)), "az": np.array(np.uint8(117)), "b": b,
             "bs": rng.uniform(0.002, 0.03, N).astype(np.float32),
             "bz": (np.zeros(N) if b_type is np.int8 else rng.integers(100, 140, N)).astype(b_type),
             "c": rng.integers(-4000, 4000, N).astype(np.int32)}
    ins = ["a", "as", "az", "b", "bs", "bz", "c"]
    if y_quantized:
        inits.update({"ys": np.array(np.float32(0.37)), "yz": np.array(np.uint8(121))})
        ins += ["ys", "yz"]
    node = helper.make_node("QGemm", ins, ["y"], domain="com.microsoft", alpha=0.75, transB=trans_b)
    ours, ref = both(model(node, inits, {"a": a}, np.uint8 if y_quantized else np.float32), {"a": a})
    assert np.array_equal(ours, ref), np.abs(ours.astype(np.float64) - ref).max()


@pytest.mark.parametrize("per_column", [False, True])
def test_dynamic_quantize_matmul_is_onnx_runtimes_bit_for_bit(per_column):
    rng = np.random.default_rng(3)
    K, N = 96, 17
    a = rng.normal(0, 2, (2, 13, K)).astype(np.float32)
    inits = {"b": rng.integers(*INT8_WEIGHTS, (K, N)).astype(np.int8),
             "bs": (rng.uniform(0.002, 0.03, N) if per_column else np.array(0.01)).astype(np.float32),
             "bz": (rng.integers(-3, 4, N) if per_column else np.array(0)).astype(np.int8),
             "bias": rng.normal(0, 1, N).astype(np.float32)}
    node = helper.make_node("DynamicQuantizeMatMul", ["a", "b", "bs", "bz", "bias"], ["y"], domain="com.microsoft")
    ours, ref = both(model(node, inits, {"a": a}), {"a": a})
    assert np.array_equal(ours, ref), np.abs(ours - ref).max()


# (ONNX Runtime has no int8 x uint8 kernel of the op.)
@pytest.mark.parametrize("a_type,b_type,bias", [(np.uint8, np.int8, True), (np.int8, np.int8, False),
                                                (np.uint8, np.uint8, True)])
def test_matmul_integer_to_float_is_onnx_runtimes_bit_for_bit(a_type, b_type, bias):
    rng = np.random.default_rng(7)
    K, N = 75, 70
    lo, hi = (-128, 128) if a_type is np.int8 else (0, 256)
    a = rng.integers(lo, hi, (3, 11, K)).astype(a_type)
    lo, hi = INT8_WEIGHTS if b_type is np.int8 else (0, 256)
    inits = {"b": rng.integers(lo, hi, (K, N)).astype(b_type), "as": np.array(np.float32(0.013)),
             "bs": rng.uniform(0.002, 0.03, N).astype(np.float32),
             "az": np.array(a_type(-5 if a_type is np.int8 else 131)),
             "bz": rng.integers(-3, 4, N).astype(b_type) if b_type is np.int8 else rng.integers(100, 150, N).astype(b_type)}
    ins = ["a", "b", "as", "bs", "az", "bz"]
    if bias:
        inits["bias"] = rng.normal(0, 1, N).astype(np.float32)
        ins.append("bias")
    node = helper.make_node("MatMulIntegerToFloat", ins, ["y"], domain="com.microsoft")
    ours, ref = both(model(node, inits, {"a": a}), {"a": a})
    assert np.array_equal(ours, ref), np.abs(ours - ref).max()


@pytest.mark.parametrize("bits,block,zero_points", [(4, 32, True), (4, 128, False), (8, 16, True), (2, 64, True)])
def test_matmul_nbits_matches_onnx_runtime(bits, block, zero_points):
    rng = np.random.default_rng(bits * block)
    K, N = 200, 24  # K not a multiple of the block: the last one partly used
    blocks = -(-K // block)
    per_byte = 8 // bits
    q = rng.integers(0, 2 ** bits, (N, blocks * block)).astype(np.uint8)

    def pack(v):  # values along the last axis, lowest bits first
        v = v.reshape(v.shape[0], -1, per_byte)
        return sum((v[..., i].astype(np.uint8) << (bits * i)) for i in range(per_byte)).astype(np.uint8)

    inits = {"b": pack(q).reshape(N, blocks, block * bits // 8),
             "s": rng.uniform(0.005, 0.05, N * blocks).astype(np.float32)}
    ins = ["a", "b", "s"]
    if zero_points:
        zp_count = -(-blocks // per_byte) * per_byte
        inits["z"] = pack(rng.integers(0, 2 ** bits, (N, zp_count)))
        ins.append("z")
    a = rng.normal(0, 1, (3, 5, K)).astype(np.float32)
    node = helper.make_node("MatMulNBits", ins, ["y"], domain="com.microsoft", K=K, N=N, bits=bits, block_size=block)
    ours, ref = both(model(node, inits, {"a": a}), {"a": a})
    assert np.abs(ours - ref).max() <= 1e-5 * np.abs(ref).max(), np.abs(ours - ref).max()


@pytest.mark.parametrize("rows,block,zero_points", [(1, 32, True), (15, 128, False), (15, 32, True)])
def test_matmul_nbits_on_vulkan_matches_onnx_runtime(rows, block, zero_points, tmp_path):
    """4-bit weights on the device, left packed (the one-pass kernel for one row, the GEMM's tiles for 15): the
    node runs there, and its float32 sums are ONNX Runtime's to their rounding, as on the CPU."""
    rng = np.random.default_rng(rows * block)
    K, N = 200, 40
    blocks = -(-K // block)
    q = rng.integers(0, 16, (N, blocks * block)).astype(np.uint8)
    inits = {"b": (q[:, 0::2] | (q[:, 1::2] << 4)).reshape(N, blocks, block // 2),
             "s": rng.uniform(0.005, 0.05, N * blocks).astype(np.float32)}
    ins = ["x", "b", "s"]
    if zero_points:
        z = rng.integers(0, 16, (N, blocks + blocks % 2)).astype(np.uint8)
        inits["z"] = z[:, 0::2] | (z[:, 1::2] << 4)
        ins.append("z")
    x = rng.normal(0, 1, (rows, K)).astype(np.float32)
    node = helper.make_node("MatMulNBits", ins, ["y"], domain="com.microsoft", K=K, N=N, bits=4, block_size=block)
    m = model(node, inits, {"x": x})
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(m, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    ours = kestrel.InferenceSession(m, providers=["VulkanExecutionProvider"]).run(None, {"x": x})[0]
    assert ours.shape == ref.shape
    assert np.abs(ours - ref).max() <= 1e-5 * np.abs(ref).max(), np.abs(ours - ref).max()
    (tmp_path / "m.onnx").write_bytes(m)
    assert_every_node_on_the_gpu(tmp_path / "m.onnx", x, tmp_path)


def test_matmul_nbits_refuses_what_it_does_not_support():
    K, N = 32, 4
    inits = {"b": np.zeros((N, 1, 16), np.uint8), "s": np.ones(N, np.float32), "g": np.zeros(K, np.int32)}
    node = helper.make_node("MatMulNBits", ["a", "b", "s", "", "g"], ["y"], domain="com.microsoft", K=K, N=N, bits=4,
                            block_size=32)
    a = np.ones((1, K), np.float32)
    with pytest.raises(Exception, match="g_idx .* is not supported"):
        kestrel.InferenceSession(model(node, inits, {"a": a}), providers=["CPUExecutionProvider"]).run(None, {"a": a})

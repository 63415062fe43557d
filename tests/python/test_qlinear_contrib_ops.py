"""ONNX Runtime's quantized contrib ops of the operator form (QuantFormat.QOperator: QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearLeakyRelu, QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat), one node each on
random bytes, against ONNX Runtime's CPU EP. The table ops (Sigmoid with ONNX Runtime's logistic, LeakyRelu, Concat)
and the global pool requantize as ONNX Runtime does: bit for bit. Add, Mul and the windowed pool follow ONNX
Runtime's float reference; its x86 kernels compute Add in fixed point, so those may land one step away."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

import kestrel
from test_microsoft_ops import model  # one contrib-op node in a model


def run_both(node, inits, feeds, out_type):
    m = model(node, inits, feeds, out_type)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    ref = ort.InferenceSession(m, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    ours = np.asarray(kestrel.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, feeds)[0])
    assert ours.shape == ref.shape and ours.dtype == ref.dtype, (ours.shape, ref.shape, ours.dtype, ref.dtype)
    return ours.astype(np.int32), ref.astype(np.int32)


def q(rng, shape, t):
    return rng.integers(-128, 128, shape).astype(t) if t is np.int8 else rng.integers(0, 256, shape).astype(t)


def qp(name, scale, zp, t):
    return {f"{name}s": np.array(np.float32(scale)), f"{name}z": np.array(zp).astype(t)}


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("t", [np.uint8, np.int8])
def test_binary_ops_within_one_step(op, t):
    rng = np.random.default_rng(1)
    a, b = q(rng, (2, 8, 5, 7), t), q(rng, (8, 1, 7), t)  # broadcast B
    z = 0 if t is np.int8 else 128
    inits = {**qp("a", 0.031, z - 3, t), **qp("b", 0.047, z + 5, t), **qp("c", 0.05 if op == "QLinearAdd" else 0.4, z, t)}
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"], domain="com.microsoft")
    ours, ref = run_both(node, inits, {"a": a, "b": b}, t)
    assert np.abs(ours - ref).max() <= 1 and (ours == ref).mean() > 0.99, (np.abs(ours - ref).max(), (ours == ref).mean())


@pytest.mark.parametrize("op,attrs", [("QLinearSigmoid", {}), ("QLinearLeakyRelu", {"alpha": 0.13})])
@pytest.mark.parametrize("t", [np.uint8, np.int8])
def test_table_ops_bit_for_bit(op, attrs, t):
    rng = np.random.default_rng(2)
    x = np.arange(256).astype(np.uint8).view(t).reshape(4, 64)  # every byte value
    z = 0 if t is np.int8 else 128
    inits = {**qp("x", 0.05, z + 7, t), **qp("y", 0.004 if op == "QLinearSigmoid" else 0.03, z - 100 if op ==
                                                "QLinearSigmoid" else z, t)}
    node = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft", **attrs)
    ours, ref = run_both(node, inits, {"x": x}, t)
    assert np.array_equal(ours, ref), np.abs(ours - ref).max()
    assert len(np.unique(ref)) > 20  # the table is not a constant


@pytest.mark.parametrize("t", [np.uint8, np.int8])
def test_pools(t):
    rng = np.random.default_rng(3)
    x = q(rng, (2, 6, 11, 13), t)
    z = 0 if t is np.int8 else 128
    inits = {**qp("x", 0.02, z + 4, t), **qp("y", 0.015, z - 2, t)}
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft")
    ours, ref = run_both(node, inits, {"x": x}, t)
    assert np.array_equal(ours, ref), np.abs(ours - ref).max()
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft",
                            channels_last=1)
    ours, ref = run_both(node, inits, {"x": x}, t)  # [2, 6, 11, 13] read as N, H, W, C
    assert ours.shape == (2, 1, 1, 13) and np.array_equal(ours, ref), np.abs(ours - ref).max()
    node = helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft",
                            kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    ours, ref = run_both(node, inits, {"x": x}, t)
    assert np.abs(ours - ref).max() <= 1 and (ours == ref).mean() > 0.99, (np.abs(ours - ref).max(), (ours == ref).mean())


@pytest.mark.parametrize("t", [np.uint8, np.int8])
def test_concat_bit_for_bit(t):
    rng = np.random.default_rng(4)
    a, b, c = q(rng, (2, 3, 5), t), q(rng, (2, 4, 5), t), q(rng, (2, 1, 5), t)
    z = 0 if t is np.int8 else 128
    # b shares the output's scale and zero point (copied); a and c are requantized.
    inits = {**qp("y", 0.05, z, t), **qp("a", 0.02, z + 9, t), **qp("b", 0.05, z, t), **qp("c", 0.11, z - 6, t)}
    node = helper.make_node("QLinearConcat", ["ys", "yz", "a", "as", "az", "b", "bs", "bz", "c", "cs", "cz"], ["y"],
                            domain="com.microsoft", axis=1)
    ours, ref = run_both(node, inits, {"a": a, "b": b, "c": c}, t)
    assert np.array_equal(ours, ref), np.abs(ours - ref).max()


def run_ours(node, inits, feeds, out_type):
    m = model(node, inits, feeds, out_type)
    return kestrel.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, feeds)


def test_bad_inputs_are_refused_naming_the_tensor():
    rng = np.random.default_rng(5)
    a, b = q(rng, (2, 3), np.uint8), q(rng, (2, 3), np.uint8)
    # A zero point of another type than its tensor.
    inits = {**qp("a", 0.1, 3, np.int8), **qp("b", 0.1, 3, np.uint8), **qp("c", 0.1, 3, np.uint8)}
    node = helper.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"], domain="com.microsoft")
    with pytest.raises(Exception, match="QLinearAdd.*A zero point must be one uint8, got int8"):
        run_ours(node, inits, {"a": a, "b": b}, np.uint8)
    # A scale per channel where the op takes one value.
    inits = {"xs": np.array([0.1, 0.2], np.float32), "xz": np.array(3, np.uint8), **qp("y", 0.1, 3, np.uint8)}
    node = helper.make_node("QLinearSigmoid", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft")
    with pytest.raises(Exception, match="X scale has shape \\[2\\] but must be a scalar"):
        run_ours(node, inits, {"x": a}, np.uint8)
    # Inputs to concatenate that differ off the axis.
    inits = {**qp("y", 0.1, 3, np.uint8), **qp("a", 0.1, 3, np.uint8), **qp("b", 0.1, 3, np.uint8)}
    node = helper.make_node("QLinearConcat", ["ys", "yz", "a", "as", "az", "b", "bs", "bz"], ["y"],
                            domain="com.microsoft", axis=0)
    with pytest.raises(Exception, match="input 1 \\[2,4\\] does not match \\[2,3\\] off axis 0"):
        run_ours(node, inits, {"a": a, "b": q(rng, (2, 4), np.uint8)}, np.uint8)
    # A global pool over a tensor without spatial dims.
    inits = {**qp("x", 0.1, 3, np.uint8), **qp("y", 0.1, 3, np.uint8)}
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft")
    with pytest.raises(Exception, match="X must have rank 3 or more, got \\[2,3\\]"):
        run_ours(node, inits, {"x": a}, np.uint8)

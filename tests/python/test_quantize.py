"""kestrel quantize: static int8 QDQ models from calibration samples. The
written model must load in ONNX Runtime, stay within the cosine the command
reports of the float model there too, and run alike in Kestrel and ONNX
Runtime; the QDQ structure is checked node by node on a small graph; bad
calibration folders and flags get errors naming them."""
import os
import re
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

from conftest import ROOT, model_path, ort_u8s8_saturates

KESTREL = os.path.join(ROOT, "build", "kestrel")
PHOTOS = os.path.join(ROOT, "models", "photos")


def quantize(model, calib, out, *flags, check=True):
    run = subprocess.run([KESTREL, "quantize", model, "--calib", str(calib), "--out", str(out), "--threads", "2"] +
                         list(flags), capture_output=True, text=True, check=False)
    if check:
        assert run.returncode == 0, run.stderr
    return run


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def ort_session(path):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 2
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def reported_cosines(stdout):
    return [float(c) for c in re.findall(r"cosine min ([0-9.]+)", stdout)]


def blazeface_input(photo):
    img = Image.open(os.path.join(PHOTOS, photo)).convert("RGB").resize((128, 128), Image.BILINEAR)
    return (np.asarray(img, np.float32) / 127.5 - 1)[None]


def test_a_real_detector_from_photos_runs_in_onnx_runtime_within_the_reported_cosine(tmp_path):
    """BlazeFace (opset 12, NHWC) calibrated on darknet's photos: converted to opset 13, weights per channel."""
    out = tmp_path / "blazeface_int8.onnx"
    run = quantize(model_path("blazeface_front_128.onnx"), PHOTOS, out, "--layout", "nhwc", "--scale",
                   str(1 / 127.5), "--mean", "1")
    assert "int8 weights per channel" in run.stdout and "converted from opset 12 to 13" in run.stdout, run.stdout
    cosines = reported_cosines(run.stdout)
    assert len(cosines) == 4 and min(cosines) >= 0.99, run.stdout  # the default --min-cosine
    q = onnx.load(str(out))
    ops = [n.op_type for n in q.graph.node]
    assert ops.count("QuantizeLinear") >= 1 and ops.count("DequantizeLinear") > ops.count("QuantizeLinear")
    float_sess, q_sess = ort_session(model_path("blazeface_front_128.onnx")), ort_session(str(out))
    import kestrel
    k_sess = kestrel.InferenceSession(str(out))
    name = q_sess.get_inputs()[0].name
    for photo in ["person.jpg", "dog.jpg"]:  # calibration photos: the report covers them
        x = blazeface_input(photo)
        ref, got, ours = float_sess.run(None, {name: x}), q_sess.run(None, {name: x}), k_sess.run(None, {name: x})
        for r, g, k in zip(ref, got, ours):
            # ONNX Runtime on the quantized model keeps what Kestrel measured (0.99, less a margin for its
            # integer kernels, which round the requantization differently from QDQ's float arithmetic).
            assert cosine(g, r) >= 0.985, (photo, cosine(g, r))
            # Kestrel and ONNX Runtime on the same quantized model: apart by rounding at some quantizers.
            assert cosine(np.asarray(k), g) >= 0.995, (photo, cosine(np.asarray(k), g))


def small_model(path, opset=13, constant_weights=False):
    rng = np.random.default_rng(0)
    w_conv = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w_conv")
    w_mm = numpy_helper.from_array(rng.standard_normal((8 * 6 * 6, 10)).astype(np.float32), "w_mm")
    w_gemm = numpy_helper.from_array(rng.standard_normal((4, 10)).astype(np.float32), "w_gemm")
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    nodes = [helper.make_node("Conv", ["x", "w_conv"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["f"]),
             helper.make_node("MatMul", ["f", "w_mm"], ["m"]),
             helper.make_node("Gemm", ["m", "w_gemm"], ["y"], transB=1)]
    weights = [w_conv, w_mm, w_gemm, shape]
    if constant_weights:  # as Paddle2ONNX writes them
        nodes = [helper.make_node("Constant", [], [w.name], value=w) for w in weights] + nodes
        weights = []
    g = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], weights)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), str(path))


def small_model_with_samples(model, calib, count, seed):
    """The small model and `count` Gaussian inputs saved as calib/NN.npy."""
    small_model(model)
    calib.mkdir()
    rng = np.random.default_rng(seed)
    samples = [rng.standard_normal((1, 3, 6, 6)).astype(np.float32) for _ in range(count)]
    for i, x in enumerate(samples):
        np.save(calib / f"{i:02d}.npy", x)
    return samples


def test_npy_samples_give_one_qdq_pair_per_activation_and_per_channel_weights(tmp_path):
    model, calib, out = tmp_path / "small.onnx", tmp_path / "calib", tmp_path / "small_int8.onnx"
    samples = small_model_with_samples(model, calib, 16, seed=1)
    run = quantize(str(model), calib, out, "--min-cosine", "0")
    assert "3 nodes quantized" in run.stdout, run.stdout
    q = onnx.load(str(out))
    inits = {i.name: numpy_helper.to_array(i) for i in q.graph.initializer}
    dq = [n for n in q.graph.node if n.op_type == "DequantizeLinear"]
    weights = {n.output[0]: n for n in dq if n.input[0] in inits and inits[n.input[0]].dtype == np.int8}
    # One pair per quantized value: the three nodes' inputs, and the Conv's
    # output after its Relu (as ONNX Runtime's quantize_static writes it), which
    # the Reshape then reads dequantized; the model's output stays float.
    quantized = sorted(n.input[0] for n in q.graph.node if n.op_type == "QuantizeLinear")
    assert len(weights) == 3 and quantized == ["f", "m", "r", "x"], quantized
    reshape = next(n for n in q.graph.node if n.op_type == "Reshape")
    assert reshape.input[0] == "r_dequantized", reshape.input
    axes = sorted(helper.get_attribute_value(n.attribute[0]) for n in weights.values())
    assert axes == [0, 0, 1], axes  # Conv's output channels, Gemm's transB rows, MatMul's columns
    for n in weights.values():
        qw, scale = inits[n.input[0]], inits[n.input[1]]
        assert qw.min() >= -127 and np.abs(qw).max() == 127  # symmetric, each channel's largest weight at 127
        assert scale.ndim == 1 and np.all(scale > 0)
    # The float weights are gone: each weight is stored once, in int8.
    assert "w_conv" not in inits and "w_mm" not in inits and "w_gemm" not in inits
    # Activations: uint8 with the range widened to hold 0; the input's range covers every sample.
    x_scale = inits["x_scale"].item()
    lo, hi = min(s.min() for s in samples), max(s.max() for s in samples)
    assert abs(x_scale - (hi - lo) / 255) <= 1e-6 * x_scale
    assert inits["x_zero_point"].dtype == np.uint8
    f, g = ort_session(str(model)), ort_session(str(out))
    for s in samples[:4]:
        assert cosine(g.run(None, {"x": s})[0], f.run(None, {"x": s})[0]) >= 0.99


def test_int4_weights_turn_matmuls_into_matmul_nbits_that_onnx_runtime_runs_alike(tmp_path):
    """--int4-weights: the MatMul's weight in 4-bit blocks of 32 (symmetric, each block's largest weight at +-7,
    stored as q + 8) as one com.microsoft MatMulNBits reading the float activation; the Conv and the Gemm stay
    int8 QDQ. ONNX Runtime runs the file; its outputs and Kestrel's agree to float32's rounding (both dequantize
    the blocks and multiply in float: 1e-5 of the range), and stay within the reported cosine of the float model."""
    model, calib, out = tmp_path / "small.onnx", tmp_path / "calib", tmp_path / "small_int4.onnx"
    samples = small_model_with_samples(model, calib, 8, seed=4)
    # (--reduce-range where ONNX Runtime's int8 products saturate: the Conv and Gemm stay int8.)
    run = quantize(str(model), calib, out, "--min-cosine", "0", "--int4-weights",
                   *(["--reduce-range"] if ort_u8s8_saturates() else []))
    assert "1 MatMuls with 4-bit weights" in run.stdout, run.stdout
    q = onnx.load(str(out))
    nbits = [n for n in q.graph.node if n.op_type == "MatMulNBits"]
    assert len(nbits) == 1 and nbits[0].domain == "com.microsoft" and not any(n.op_type == "MatMul" for n in q.graph.node)
    attrs = {a.name: helper.get_attribute_value(a) for a in nbits[0].attribute}
    assert attrs == {"K": 288, "N": 10, "bits": 4, "block_size": 32}, attrs
    inits = {i.name: numpy_helper.to_array(i) for i in q.graph.initializer}
    packed, scales = inits[nbits[0].input[1]], inits[nbits[0].input[2]]
    assert packed.dtype == np.uint8 and packed.shape == (10, 9, 16) and scales.shape == (90,)
    nibbles = np.stack([packed & 15, packed >> 4], -1).reshape(10, 9, 32).astype(int) - 8
    assert nibbles.min() >= -7 and np.all(np.abs(nibbles).max(-1) == 7)  # each block's largest at +-7
    w = numpy_helper.to_array(next(i for i in onnx.load(str(model)).graph.initializer if i.name == "w_mm"))
    back = (nibbles * scales.reshape(10, 9, 1)).reshape(10, 288).T
    assert np.abs(back - w).max() <= scales.max() / 2 + 1e-6  # within half a step of each block
    assert nbits[0].input[0] == "f"  # the activation stays float
    assert sum(n.op_type == "QuantizeLinear" for n in q.graph.node) == 3  # x, r (the Conv's output) and m
    import kestrel
    ours = kestrel.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    ref, f = ort_session(str(out)), ort_session(str(model))
    floor = min(reported_cosines(run.stdout))
    for s in samples[:4]:
        a, b = np.asarray(ours.run(None, {"x": s})[0]), ref.run(None, {"x": s})[0]
        assert np.abs(a - b).max() <= 1e-5 * np.ptp(b)
        assert cosine(b, f.run(None, {"x": s})[0]) >= floor - 1e-4


def test_reduced_range_weights_run_alike_in_onnx_runtime_on_every_cpu(tmp_path):
    """--reduce-range: every int8 weight within [-64, 64], the largest at +-64 (scale = max |w| / 64),
    so a uint8 activation times a pair of weights stays within 16 bits and ONNX Runtime's int8 products are
    exact even on x86 CPUs without VNNI: its outputs agree with Kestrel's there too, to float32's rounding of the
    last Gemm's float output (1e-5 of the range; the full range's saturated products there were off by a quarter
    of it)."""
    model, calib, out = tmp_path / "small.onnx", tmp_path / "calib", tmp_path / "small_rr.onnx"
    samples = small_model_with_samples(model, calib, 6, seed=9)
    run = quantize(str(model), calib, out, "--min-cosine", "0", "--reduce-range")
    assert "within [-64, 64]" in run.stdout, run.stdout
    q = onnx.load(str(out))
    weights = [numpy_helper.to_array(i) for i in q.graph.initializer if i.data_type == TensorProto.INT8 and len(i.dims) >= 2]
    assert weights
    for w in weights:
        assert w.min() >= -64 and w.max() <= 64 and np.abs(w.astype(int)).max() == 64  # the largest at +-64
    import kestrel
    ours = kestrel.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    ref = ort_session(str(out))
    for s in samples[:3]:
        a, b = np.asarray(ours.run(None, {"x": s})[0]), ref.run(None, {"x": s})[0]
        assert np.abs(a - b).max() <= 1e-5 * np.ptp(b), float(np.abs(a - b).max())


def test_an_older_opset_is_converted_and_npz_samples_are_read_by_name(tmp_path):
    model, calib, out = tmp_path / "small11.onnx", tmp_path / "calib", tmp_path / "small11_int8.onnx"
    small_model(model, opset=11)
    calib.mkdir()
    rng = np.random.default_rng(2)
    for i in range(4):
        np.savez(calib / f"{i}.npz", x=rng.standard_normal((1, 3, 6, 6)).astype(np.float32))
    run = quantize(str(model), calib, out, "--per-tensor")
    assert "int8 weights per tensor" in run.stdout and "from opset 11 to 13" not in run.stdout, run.stdout
    ort_session(str(out))  # loads
    run = quantize(str(model), calib, out)
    assert "converted from opset 11 to 13" in run.stdout and "per channel" in run.stdout, run.stdout
    assert onnx.load(str(out)).opset_import[0].version == 13


def test_weights_in_constant_nodes_are_quantized_too(tmp_path):
    model, calib, out = tmp_path / "small.onnx", tmp_path / "calib", tmp_path / "small_int8.onnx"
    small_model_with_samples(model, calib, 4, seed=4)
    small_model(model, constant_weights=True)
    run = quantize(str(model), calib, out, "--min-cosine", "0")
    assert "3 nodes quantized" in run.stdout, run.stdout
    q = onnx.load(str(out))
    assert not [n for n in q.graph.node if n.op_type == "Constant"]
    ort_session(str(out))


@pytest.mark.parametrize("method", ["percentile", "entropy"])
def test_each_calibration_method_writes_a_model_onnx_runtime_runs(tmp_path, method):
    model, calib, out = tmp_path / "small.onnx", tmp_path / "calib", tmp_path / f"small_{method}.onnx"
    samples = small_model_with_samples(model, calib, 8, seed=3)
    # 864 values in all: a 99th percentile, where 99.999 would keep them all.
    run = quantize(str(model), calib, out, "--method", method, "--min-cosine", "0", "--percentile", "99")
    assert f"{method} over 8 samples" in run.stdout, run.stdout
    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(out)).graph.initializer}
    # Both clip the input's rarest values: a narrower range than min/max's.
    lo, hi = min(x.min() for x in samples), max(x.max() for x in samples)
    assert inits["x_scale"].item() < (hi - lo) / 255
    f, g = ort_session(str(model)), ort_session(str(out))
    # Random weights and a clipped Gaussian input (entropy clips near 3 sigma): looser than a trained model.
    assert cosine(g.run(None, {"x": samples[0]})[0], f.run(None, {"x": samples[0]})[0]) >= 0.95


@pytest.mark.parametrize("case", ["empty", "mixed", "method", "per_both", "no_out", "npy_for_two_inputs", "percentile"])
def test_bad_calibration_gets_an_error_naming_it(tmp_path, case):
    model, calib = tmp_path / "small.onnx", tmp_path / "calib"
    small_model(model)
    calib.mkdir()
    np.save(calib / "0.npy", np.zeros((1, 3, 6, 6), np.float32))
    args, expect = [KESTREL, "quantize", str(model), "--calib", str(calib), "--out", str(tmp_path / "q.onnx")], None
    if case == "empty":
        os.remove(calib / "0.npy")
        expect = "holds no .npz, .npy"
    elif case == "mixed":
        Image.new("RGB", (6, 6)).save(calib / "a.png")
        expect = "mixes arrays"
    elif case == "method":
        args += ["--method", "kl"]
        expect = "unknown calibration method 'kl'"
    elif case == "per_both":
        args += ["--per-channel", "--per-tensor"]
        expect = "exclude each other"
    elif case == "no_out":
        args = args[:-2]
        expect = "--out FILE.onnx"
    elif case == "npy_for_two_inputs":
        args[2] = model_path("silero_vad.onnx")
        expect = "has 3 inputs: give each sample as an .npz"
    elif case == "percentile":
        args += ["--method", "percentile", "--percentile", "30"]
        expect = "percentile must lie in (50, 100]"
    run = subprocess.run(args, capture_output=True, text=True)
    assert run.returncode != 0 and expect in run.stderr, (run.returncode, run.stderr)
    assert not os.path.exists(tmp_path / "q.onnx")

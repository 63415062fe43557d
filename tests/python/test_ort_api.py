"""The same scripts, written against ONNX Runtime's Python API, run with
`onnxruntime` (from PyPI) and with `kestrel`: the metadata must be equal and
the outputs agree within each test's tolerance.

Tolerances: Kestrel's CPU backend computes in float32 like ONNX Runtime's
CPU provider, with different summation orders and vector math, so results
differ by float32 rounding (relative 1e-4 of the output's largest magnitude,
cosine >= 0.99999). The Vulkan backend (lavapipe in CI) also runs float32."""
import os
import threading

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import kestrel
from conftest import ROOT, model_path, silero_feeds

BACKENDS = [["CPUExecutionProvider"], ["VulkanExecutionProvider"]]


def describe(runtime, path_or_bytes, providers):
    """An ONNX Runtime-style script: the inputs and outputs as the session describes them."""
    s = runtime.InferenceSession(path_or_bytes, providers=providers)
    return ([(a.name, a.type, a.shape) for a in s.get_inputs()],
            [(a.name, a.type, a.shape) for a in s.get_outputs()])


def run_all(runtime, path_or_bytes, providers, feeds, output_names=None):
    s = runtime.InferenceSession(path_or_bytes, providers=providers)
    return s.run(output_names, feeds)


def compare(ours, theirs, rel=1e-4, min_cosine=0.99999):
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert isinstance(a, np.ndarray), type(a)
        assert a.dtype == b.dtype and a.shape == b.shape, (i, a.dtype, b.dtype, a.shape, b.shape)
        if a.dtype.kind in "biu":
            assert np.array_equal(a, b), f"output {i} differs"
            continue
        a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
        scale = max(np.abs(b64).max(), 1e-30)
        err = np.abs(a64 - b64).max()
        assert err <= rel * scale, f"output {i}: max abs error {err:.3g} > {rel} x {scale:.3g}"
        if a64.size > 1 and np.linalg.norm(a64) > 0 and np.linalg.norm(b64) > 0:
            cosine = float(a64 @ b64 / (np.linalg.norm(a64) * np.linalg.norm(b64)))
            assert cosine >= min_cosine, f"output {i}: cosine {cosine:.7f} < {min_cosine}"


# Real models with their inputs.
def ppocr_cls_feeds():
    rng = np.random.default_rng(1)
    return {"x": rng.random((2, 3, 48, 192), dtype=np.float32)}


def blazeface_feeds():
    rng = np.random.default_rng(2)
    return {"input:0": rng.random((1, 128, 128, 3), dtype=np.float32) * 2 - 1}


REAL = [("silero_vad.onnx", silero_feeds), ("ppocr_mobile_v2_cls.onnx", ppocr_cls_feeds),
        ("blazeface_front_128.onnx", blazeface_feeds)]


@pytest.mark.parametrize("name,feeds", REAL, ids=[r[0] for r in REAL])
def test_metadata_is_onnx_runtimes(name, feeds):
    path = model_path(name)
    assert describe(kestrel, path, BACKENDS[0]) == describe(onnxruntime, path, ["CPUExecutionProvider"])


@pytest.mark.parametrize("providers", BACKENDS, ids=["cpu", "vulkan"])
@pytest.mark.parametrize("name,feeds", REAL, ids=[r[0] for r in REAL])
def test_real_models_match_onnx_runtime(name, feeds, providers):
    path = model_path(name)
    f = feeds()
    expected = run_all(onnxruntime, path, ["CPUExecutionProvider"], f)
    compare(run_all(kestrel, path, providers, f), expected)
    # From bytes, and one output by name, as well.
    with open(path, "rb") as fh:
        data = fh.read()
    last = onnxruntime.InferenceSession(path).get_outputs()[-1].name
    compare(run_all(kestrel, data, providers, f, [last]), expected[-1:])


def typed_model(elem, op="Identity"):
    """x (elem, [2, 3]) -> op -> y: for the element types numpy shares with ONNX."""
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"])], "typed",
                          [helper.make_tensor_value_info("x", elem, ["n", 3])],
                          [helper.make_tensor_value_info("y", elem, ["n", 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


TYPES = [(TensorProto.FLOAT16, np.float16, "Neg"), (TensorProto.DOUBLE, np.float64, "Neg"),
         (TensorProto.INT8, np.int8, "Neg"), (TensorProto.INT32, np.int32, "Abs"),
         (TensorProto.INT64, np.int64, "Neg"), (TensorProto.UINT8, np.uint8, "Identity"),
         (TensorProto.UINT16, np.uint16, "Identity"), (TensorProto.BOOL, np.bool_, "Not")]


@pytest.mark.parametrize("elem,dtype,op", TYPES, ids=[np.dtype(t[1]).name for t in TYPES])
def test_element_types_match_onnx_runtime(elem, dtype, op):
    model = typed_model(elem, op)
    x = (np.arange(-3, 3).reshape(2, 3) % 2 == 0) if dtype is np.bool_ else np.arange(-3, 3).reshape(2, 3).astype(dtype)
    expected = run_all(onnxruntime, model, ["CPUExecutionProvider"], {"x": x})
    ours = run_all(kestrel, model, ["CPUExecutionProvider"], {"x": x})
    assert ours[0].dtype == np.dtype(dtype)
    compare(ours, expected)
    assert describe(kestrel, model, BACKENDS[0]) == describe(onnxruntime, model, ["CPUExecutionProvider"])


def test_bfloat16_comes_back_as_ml_dtypes_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes")  # (pinned in the test environment)
    g = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)], "bf16",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [4])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()
    (y,) = kestrel.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": np.array(
        [1.0, -2.5, 3.0e3, 0.1], np.float32)})
    assert y.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(y.astype(np.float32), [1.0, -2.5, 3.0e3, 0.1], rtol=1 / 128)


# Failures: the exception ONNX Runtime raises has a Kestrel counterpart that is
# also the Python exception a caller would catch.
def test_errors_subclass_the_usual_python_exceptions(tmp_path):
    with pytest.raises(FileNotFoundError, match="nonexistent"):
        kestrel.InferenceSession(str(tmp_path / "nonexistent.onnx"))
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.NoSuchFile):
        onnxruntime.InferenceSession(str(tmp_path / "nonexistent.onnx"))
    with pytest.raises(kestrel.InvalidModel):
        kestrel.InferenceSession(b"not an onnx model")
    newer = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g", [helper.make_tensor_value_info("x", 1, [1])],
        [helper.make_tensor_value_info("y", 1, [1])]), opset_imports=[helper.make_opsetid("", 99)],
        ir_version=8).SerializeToString()
    with pytest.raises(NotImplementedError, match="opset 99 is not supported"):
        kestrel.InferenceSession(newer)
    s = kestrel.InferenceSession(model_path("silero_vad.onnx"), providers=["CPUExecutionProvider"])
    feeds = silero_feeds()
    with pytest.raises(ValueError, match="input 'input' must be float32, got float64"):
        s.run(None, {**feeds, "input": feeds["input"].astype(np.float64)})
    with pytest.raises(ValueError, match="missing input 'state'"):
        s.run(None, {"input": feeds["input"], "sr": feeds["sr"]})
    with pytest.raises(ValueError, match="invalid output name 'nope'"):
        s.run(["nope"], feeds)
    with pytest.raises(ValueError, match="numpy type <U1"):
        s.run(None, {**feeds, "input": np.array(["a"])})
    with pytest.raises(kestrel.KestrelError):
        s.run(None, {"input": feeds["input"]})
    unsupported = helper.make_model(helper.make_graph(
        [helper.make_node("NoSuchOpAnywhere", ["x"], ["y"])], "g", [helper.make_tensor_value_info("x", 1, [1])],
        [helper.make_tensor_value_info("y", 1, [1])]), opset_imports=[helper.make_opsetid("", 17)],
        ir_version=8).SerializeToString()
    with pytest.raises(NotImplementedError, match="NoSuchOpAnywhere"):
        kestrel.InferenceSession(unsupported)
    opts = kestrel.SessionOptions()
    with pytest.raises(ValueError, match="intra_op_num_threads must be 0 to 1024"):
        opts.intra_op_num_threads = 100000
    with pytest.raises(AttributeError):
        opts.no_such_option = 1


def test_session_options_reach_the_session():
    opts = kestrel.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.add_session_config_entry("kestrel.precision", "fp32")
    s = kestrel.InferenceSession(model_path("silero_vad.onnx"), opts, providers=["CPUExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"] and s.backend == "cpu"
    assert s.get_session_options().precision == "fp32"
    with pytest.raises(ValueError, match="unknown Kestrel session config entry 'kestrel.speed'"):
        opts.add_session_config_entry("kestrel.speed", "max")
    with pytest.warns(UserWarning, match="Kestrel has no 'CUDAExecutionProvider'"):
        s = kestrel.InferenceSession(model_path("silero_vad.onnx"),
                                     providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]
    v = kestrel.InferenceSession(model_path("silero_vad.onnx"), providers=["VulkanExecutionProvider"])
    assert v.get_providers() == ["VulkanExecutionProvider", "CPUExecutionProvider"]
    assert v.backend.startswith("vulkan"), v.backend


def test_tuning_options_reach_the_session(capfd):
    """trace = 1 writes a line per executed node; the CLIP fixture on the GPU runs as a
    few nodes around its fused encoder, and as many more with families = False."""
    clip = os.path.join(ROOT, "tests", "models", "clip", "torchscript.onnx")
    pixels = {"pixel_values": np.full((1, 3, 36, 36), 0.5, np.float32)}

    def trace_lines(families):
        opts = kestrel.SessionOptions()
        opts.trace, opts.families, opts.replay, opts.gemm_tiles = 1, families, False, "small"
        s = kestrel.InferenceSession(clip, opts, providers=["VulkanExecutionProvider"])
        capfd.readouterr()
        s.run(None, {s.get_inputs()[0].name: pixels["pixel_values"]})
        return capfd.readouterr().err.count("[kestrel trace]")

    fused, op_by_op = trace_lines(True), trace_lines(False)
    assert 0 < fused and 3 * fused < op_by_op, (fused, op_by_op)
    opts = kestrel.SessionOptions()
    opts.add_session_config_entry("kestrel.families", "false")
    assert opts.families is False
    for field, bad, says in [("trace", 3, "trace must be 0 to 2"), ("families", 1, "families must be True or False"),
                             ("gemm_tiles", "huge", "gemm_tiles must be one of auto, tiny, small, wide, large"),
                             ("attention", "fast", "attention must be one of auto, flash, chunked"),
                             ("cpu_kernels", "slow", "cpu_kernels must be one of fast, reference"),
                             ("attention_chunk", -1, "attention_chunk must be 0 to")]:
        with pytest.raises(ValueError, match=says):
            setattr(opts, field, bad)


def test_padding_free_reads_zero_at_padded_tokens():
    """padding_free = True: the fused ModernBERT computes the live tokens only (they agree
    with the session computing every token, which is ONNX Runtime's answer) and its output
    reads exactly zero at the padded ones, where the default session computes values."""
    d = os.path.join(ROOT, "tests", "models", "modernbert")
    feeds = {"input_ids": np.load(os.path.join(d, "input_0.npy")), "attention_mask": np.load(os.path.join(d, "input_1.npy"))}
    live = feeds["attention_mask"].astype(bool)
    assert not live.all(), "the fixture's batch has padding"

    def run(padding_free):
        opts = kestrel.SessionOptions()
        opts.padding_free = padding_free
        s = kestrel.InferenceSession(os.path.join(d, "torchscript.onnx"), opts, providers=["CPUExecutionProvider"])
        return s.run(None, feeds)[0]

    every, packed = run(False), run(True)
    np.testing.assert_allclose(packed[live], every[live], rtol=1e-4, atol=1e-4)
    assert np.all(packed[~live] == 0) and np.abs(every[~live]).max() > 0.1
    opts = kestrel.SessionOptions()
    opts.add_session_config_entry("kestrel.padding_free", "true")
    assert opts.padding_free is True
    with pytest.raises(ValueError, match="padding_free must be True or False"):
        opts.padding_free = 1


def test_outputs_are_numpy_arrays_over_kestrels_memory():
    model = typed_model(TensorProto.FLOAT)
    s = kestrel.InferenceSession(model, providers=["CPUExecutionProvider"])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = s.run(None, {"x": x})
    assert not y.flags.owndata and y.base is not None, "the output was copied into numpy's own memory"
    assert not np.shares_memory(x, y), "an output shares the caller's input"
    x[:] = -1
    np.testing.assert_array_equal(y, np.arange(6, dtype=np.float32).reshape(2, 3))
    # A strided view is made contiguous on the way in.
    big = np.arange(12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(s.run(None, {"x": big[:, ::2]})[0], big[:, ::2])


def test_io_binding_runs_as_run():
    s = kestrel.InferenceSession(model_path("silero_vad.onnx"), providers=["CPUExecutionProvider"])
    feeds = silero_feeds()
    binding = s.io_binding()
    for name, value in feeds.items():
        binding.bind_cpu_input(name, value)
    binding.bind_output("stateN")
    s.run_with_iobinding(binding)
    compare(binding.copy_outputs_to_cpu(), s.run(["stateN"], feeds), rel=0)


def test_runs_from_many_threads_agree():
    s = kestrel.InferenceSession(model_path("ppocr_mobile_v2_cls.onnx"), providers=["CPUExecutionProvider"])
    f = ppocr_cls_feeds()
    expected = s.run(None, f)
    results = [None] * 4

    def work(i):
        results[i] = s.run(None, f)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        compare(r, expected, rel=0)


def test_profiling_writes_a_chrome_trace(tmp_path):
    import json
    opts = kestrel.SessionOptions()
    opts.enable_profiling = True
    opts.profile_file_prefix = str(tmp_path / "kestrel")
    s = kestrel.InferenceSession(model_path("silero_vad.onnx"), opts, providers=["CPUExecutionProvider"])
    for _ in range(3):
        s.run(None, silero_feeds())
    events = json.load(open(s.end_profiling()))
    assert [e["name"] for e in events] == ["model_loading"] + ["model_run"] * 3
    assert all(e["dur"] > 0 for e in events)


def test_a_closed_session_refuses_runs():
    with kestrel.InferenceSession(model_path("silero_vad.onnx"), providers=["CPUExecutionProvider"]) as s:
        s.run(None, silero_feeds())
    with pytest.raises(ValueError, match="the session is closed"):
        s.run(None, silero_feeds())


def test_process_options_are_checked_and_taken():
    """The process's settings (one tensor pool, one CPU dispatch) from Python:
    refused by name when out of range, taken by the sessions made after."""
    with pytest.raises(ValueError, match="cpu_isa must be one of baseline, avx2, avx512"):
        kestrel.set_process_options(cpu_isa="avx3")
    with pytest.raises(ValueError, match="pool_mb must be 0 to"):
        kestrel.set_process_options(pool_mb=-5)
    kestrel.set_process_options(pool_mb=64, cpu_isa="baseline")
    clip = os.path.join(ROOT, "tests", "models", "clip", "torchscript.onnx")
    s = kestrel.InferenceSession(clip, providers=["CPUExecutionProvider"])
    (out, *_) = s.run(None, {s.get_inputs()[0].name: np.full((1, 3, 36, 36), 0.5, np.float32)})
    assert np.isfinite(out).all()
    kestrel.set_process_options()


"""Kestrel inside ONNX Runtime: the plugin execution provider (build/libkestrel_ort_ep.so)
registered with PyPI's onnxruntime, on Kestrel's Vulkan device (lavapipe in CI) and its CPU
backend. Each model runs twice in one process, with the Kestrel EP (ONNX Runtime's CPU EP
takes what Kestrel leaves) and with the CPU EP alone, on the same inputs; the outputs agree
within float32 reordering, and the nodes land where Kestrel's partition says."""
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import ROOT, model_path

PLUGIN = os.path.join(ROOT, "build", "libkestrel_ort_ep.so")
FAMILIES = os.path.join(ROOT, "tests", "models")
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "models")

# Float32 everywhere, so the two EPs differ only in the order of sums (blocked GEMMs,
# fused attention, Winograd-free convolutions): as tests/real_models.cpp argues, a few
# ulps per op through 40-120 layers stays well under 1e-4 of an output's range, with a
# 1e-5 floor for near-zero outputs; a wrong axis, pad or layout moves outputs by percents.
REL_TOL = 1e-4
ABS_FLOOR = 1e-5
COS_TOL = 0.99999


@pytest.fixture(scope="module")
def kestrel_devices():
    assert os.path.exists(PLUGIN), f"{PLUGIN} is missing: scripts/build.sh builds it"
    ort.register_execution_provider_library("Kestrel", PLUGIN)
    devices = [d for d in ort.get_ep_devices() if d.ep_name == "Kestrel"]
    yield {d.ep_metadata["kestrel.backend"]: d for d in devices}
    ort.unregister_execution_provider_library("Kestrel")


def sessions(model, device, options=None):
    so = ort.SessionOptions()
    so.add_provider_for_devices([device], options or {})
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    with_kestrel = ort.InferenceSession(model, sess_options=so)
    cpu_only = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return with_kestrel, cpu_only


def nodes_per_ep(session):
    count = {}
    for subgraph in session.get_provider_graph_assignment_info():
        count[subgraph.ep_name] = count.get(subgraph.ep_name, 0) + len(subgraph.get_nodes())
    return count


def assert_close(got, want, what):
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{what} output {i}: {g.shape} {g.dtype} vs {w.shape} {w.dtype}"
        g64, w64 = g.astype(np.float64).ravel(), w.astype(np.float64).ravel()
        span = float(w64.max() - w64.min()) if w64.size else 0.0
        err = float(np.abs(g64 - w64).max()) if w64.size else 0.0
        cos = float(g64 @ w64 / (np.linalg.norm(g64) * np.linalg.norm(w64) + 1e-30))
        # (The cosine of an output within the floor, such as a face score map of 5e-5, is noise.)
        assert err <= REL_TOL * span + ABS_FLOOR and (cos >= COS_TOL or span < 100 * ABS_FLOOR), \
            f"{what} output {i}: max abs {err:.3g} on a range of {span:.3g} (tolerance {REL_TOL} of it + {ABS_FLOOR}), " \
            f"cosine {cos:.8f}"


def test_devices_one_per_vulkan_device_and_the_cpu(kestrel_devices):
    assert set(kestrel_devices) == {"vulkan", "cpu"}
    vk = kestrel_devices["vulkan"]
    assert vk.ep_metadata["kestrel.device_name"], vk.ep_metadata
    # lavapipe is a CPU implementation of Vulkan: it sits on ONNX Runtime's CPU device.
    assert vk.device.type in (ort.OrtHardwareDeviceType.CPU, ort.OrtHardwareDeviceType.GPU)
    assert vk.ep_metadata["kestrel.device_type"] in ("cpu", "discrete", "integrated", "virtual", "other")


FIXTURES = sorted(
    (name, export)
    for name in os.listdir(FAMILIES) if os.path.isdir(os.path.join(FAMILIES, name))
    for export in ("torchscript", "dynamo") if os.path.exists(os.path.join(FAMILIES, name, export + ".onnx")))


@pytest.mark.parametrize("name,export", FIXTURES)
def test_family_fixture_on_the_kestrel_ep(kestrel_devices, name, export):
    model = os.path.join(FAMILIES, name, export + ".onnx")
    with_kestrel, cpu_only = sessions(model, kestrel_devices["vulkan"])
    feeds = {i.name: np.load(os.path.join(FAMILIES, name, f"input_{k}.npy"))
             for k, i in enumerate(with_kestrel.get_inputs())}
    assert_close(with_kestrel.run(None, feeds), cpu_only.run(None, feeds), f"{name}/{export}")
    # Still ONNX Runtime's reference outputs, as the fixture stores them.
    for k, out in enumerate(with_kestrel.run(None, feeds)):
        assert_close([out], [np.load(os.path.join(FAMILIES, name, f"{export}_output_{k}.npy"))], f"{name}/{export} stored")
    placed = nodes_per_ep(with_kestrel)
    if name == "modernbert_stack" and export == "dynamo":
        assert placed["Kestrel"] >= 380, placed
    else:
        assert list(placed) == ["Kestrel"], placed


@pytest.mark.parametrize("name,export", FIXTURES)
def test_family_encoder_is_claimed_after_onnx_runtimes_rewrites(kestrel_devices, name, export):
    # On Kestrel's CPU device only groups holding a fused encoder are claimed, so nodes on
    # Kestrel there mean the family walk found the encoder in the graph ONNX Runtime hands
    # over: after its basic optimizations (Gemm fusion of the linear layers, constant folding
    # of SAM's gathered relative-position tables), not in the file as exported.
    model = os.path.join(FAMILIES, name, export + ".onnx")
    with_kestrel, cpu_only = sessions(model, kestrel_devices["cpu"])
    placed = nodes_per_ep(with_kestrel)
    assert placed.get("Kestrel", 0) > 0, f"{name}/{export}: no fused encoder claimed ({placed})"
    feeds = {i.name: np.load(os.path.join(FAMILIES, name, f"input_{k}.npy"))
             for k, i in enumerate(with_kestrel.get_inputs())}
    assert_close(with_kestrel.run(None, feeds), cpu_only.run(None, feeds), f"{name}/{export} on Kestrel's CPU backend")


def silero_feeds():
    i = np.arange(576, dtype=np.float32)
    return {"input": (0.3 * np.sin(2 * np.pi * 180 * i / 16000))[None, :].astype(np.float32),
            "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}


def random_feeds(session, size):
    rng = np.random.default_rng(7)
    return {i.name: rng.random([d if isinstance(d, int) else size for d in i.shape], dtype=np.float32)
            for i in session.get_inputs()}


# (model, expected nodes on Kestrel: "all", or a count)
# (SCRFD is left out for CI's time: its first run on lavapipe took 100 s, all 144 nodes on Kestrel,
# agreeing with the CPU EP.)
REAL = [
    (os.path.join(SHARED, "yolox_nano.onnx"), "all"),
    (os.path.join(SHARED, "yunet_n_dynamic.onnx"), "all"),
    ("blazeface_back_256.onnx", "all"),
    ("ultraface_320.onnx", "all"),
    ("silero_vad.onnx", 0),  # an If at the top: its branches stay with ONNX Runtime
]


@pytest.mark.parametrize("model,expected", REAL, ids=[os.path.basename(m) for m, _ in REAL])
def test_real_model_on_the_kestrel_ep(kestrel_devices, model, expected):
    path = model if os.path.isabs(model) else model_path(model)
    with_kestrel, cpu_only = sessions(path, kestrel_devices["vulkan"])
    feeds = silero_feeds() if "silero" in path else random_feeds(with_kestrel, 160)
    assert_close(with_kestrel.run(None, feeds), cpu_only.run(None, feeds), os.path.basename(path))
    placed = nodes_per_ep(with_kestrel)
    if expected == "all":
        assert list(placed) == ["Kestrel"], placed
    else:
        assert placed.get("Kestrel", 0) == expected, placed


def test_cpu_device_claims_the_fused_encoders_only(kestrel_devices):
    model = os.path.join(FAMILIES, "clip", "torchscript.onnx")
    with_kestrel, cpu_only = sessions(model, kestrel_devices["cpu"])
    feeds = {"pixel_values": np.load(os.path.join(FAMILIES, "clip", "input_0.npy"))}
    assert_close(with_kestrel.run(None, feeds), cpu_only.run(None, feeds), "clip on Kestrel's CPU backend")
    assert nodes_per_ep(with_kestrel).get("Kestrel", 0) > 0
    # A convolutional model has no encoder: ONNX Runtime's CPU EP keeps it all.
    with_kestrel, _ = sessions(model_path("ultraface_320.onnx"), kestrel_devices["cpu"])
    assert list(nodes_per_ep(with_kestrel)) == ["CPUExecutionProvider"]


def save(tmp_path, graph, opset=17):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = str(tmp_path / (graph.name + ".onnx"))
    onnx.save(model, path)
    return path


def weight(name, rows, cols, seed):
    w = (np.random.default_rng(seed).standard_normal((rows, cols)) / np.sqrt(rows)).astype(np.float32)
    return numpy_helper.from_array(w, name)


def test_sequence_ops_split_the_graph_and_onnx_runtime_runs_them(kestrel_devices, tmp_path):
    # Sequences are not Kestrel values: the two products on either side become two fused nodes.
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["a"]),
         helper.make_node("SplitToSequence", ["a"], ["seq"], axis=1),
         helper.make_node("ConcatFromSequence", ["seq"], ["b"], axis=1),
         helper.make_node("MatMul", ["b", "w2"], ["y"])],
        "sequence_middle",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
        [weight("w1", 32, 8, 1), weight("w2", 8, 16, 2)])
    with_kestrel, cpu_only = sessions(save(tmp_path, g), kestrel_devices["vulkan"])
    feeds = random_feeds(with_kestrel, 4)
    assert_close(with_kestrel.run(None, feeds), cpu_only.run(None, feeds), "sequence_middle")
    assert nodes_per_ep(with_kestrel) == {"Kestrel": 2, "CPUExecutionProvider": 2}


def test_if_runs_on_onnx_runtime_with_kestrel_around_it(kestrel_devices, tmp_path):
    branch = lambda name, w: helper.make_graph(  # noqa: E731
        [helper.make_node("MatMul", ["a", w], [name + "_out"])], name, [],
        [helper.make_tensor_value_info(name + "_out", TensorProto.FLOAT, [4, 8])])
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["a"]),
         helper.make_node("If", ["cond"], ["b"], then_branch=branch("then", "wt"), else_branch=branch("else", "we")),
         helper.make_node("MatMul", ["b", "w2"], ["y"])],
        "if_middle",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32]),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
        [weight("w1", 32, 8, 1), weight("wt", 8, 8, 3), weight("we", 8, 8, 4), weight("w2", 8, 16, 2)])
    with_kestrel, cpu_only = sessions(save(tmp_path, g), kestrel_devices["vulkan"])
    x = np.random.default_rng(5).random((4, 32), dtype=np.float32)
    for cond in (True, False):
        feeds = {"x": x, "cond": np.array(cond)}
        assert_close(with_kestrel.run(None, feeds), cpu_only.run(None, feeds), f"if_middle, cond={cond}")
    placed = nodes_per_ep(with_kestrel)
    assert placed["Kestrel"] == 2 and placed["CPUExecutionProvider"] >= 1, placed


def test_a_dynamic_shape_that_changes_between_runs(kestrel_devices, tmp_path):
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["a"]), helper.make_node("Relu", ["a"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["y"])],
        "dynamic_rows",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", 16])],
        [weight("w1", 32, 64, 1), weight("w2", 64, 16, 2)])
    with_kestrel, cpu_only = sessions(save(tmp_path, g), kestrel_devices["vulkan"])
    rng = np.random.default_rng(9)
    for rows in (1, 7, 300, 1):
        feeds = {"x": rng.standard_normal((rows, 32)).astype(np.float32)}
        got = with_kestrel.run(None, feeds)
        assert got[0].shape == (rows, 16)
        assert_close(got, cpu_only.run(None, feeds), f"dynamic_rows at {rows} rows")
    assert list(nodes_per_ep(with_kestrel)) == ["Kestrel"]


def test_provider_options(kestrel_devices, tmp_path):
    model = os.path.join(FAMILIES, "clip", "torchscript.onnx")
    feeds = {"pixel_values": np.load(os.path.join(FAMILIES, "clip", "input_0.npy"))}
    with_kestrel, cpu_only = sessions(model, kestrel_devices["vulkan"], {"precision": "fp32", "threads": "2"})
    assert_close(with_kestrel.run(None, feeds), cpu_only.run(None, feeds), "clip with precision=fp32")
    with pytest.raises(Exception, match="precision"):
        sessions(model, kestrel_devices["vulkan"], {"precision": "fp8"})
    with pytest.raises(Exception, match="threads"):
        sessions(model, kestrel_devices["vulkan"], {"threads": "many"})


RELEASES = os.path.join(ROOT, ".deps", "onnxruntime-releases")
RUN_CLIP = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np, onnxruntime as ort
ort.register_execution_provider_library("Kestrel", sys.argv[2])
device = [d for d in ort.get_ep_devices() if d.ep_name == "Kestrel" and d.ep_metadata["kestrel.backend"] == "vulkan"][0]
so = ort.SessionOptions()
so.add_provider_for_devices([device], {})
model, x = sys.argv[3], {"pixel_values": np.load(sys.argv[4])}
got = ort.InferenceSession(model, sess_options=so).run(None, x)
want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, x)
print(ort.__version__, max(float(np.abs(g - w).max()) for g, w in zip(got, want)))
"""


@pytest.mark.parametrize("version", ["1.23.2", "1.29.0", "1.31.1"])
def test_other_onnx_runtime_releases_load_the_plugin(version):
    # The plugin is built against 1.29's headers: a newer runtime serves that API version,
    # an older one (1.23 to 1.28) a lower one, which the plugin steps down to.
    import subprocess
    import sys
    where = os.path.join(RELEASES, version)
    assert os.path.isdir(where), f"{where} is missing: run scripts/setup.sh"
    out = subprocess.run([sys.executable, "-c", RUN_CLIP, where, PLUGIN, os.path.join(FAMILIES, "clip", "torchscript.onnx"),
                          os.path.join(FAMILIES, "clip", "input_0.npy")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    ran, err = out.stdout.split()
    assert ran == version
    assert float(err) < 5e-4, out.stdout  # 1e-4 of the outputs' ranges (about 4 and 7), as above
    assert "is not available" not in out.stderr  # no API version asked that the runtime lacks


@pytest.mark.parametrize("policy", ["PREFER_CPU", "PREFER_GPU"])
def test_automatic_selection_never_picks_a_cpu_implementation_of_vulkan(kestrel_devices, policy):
    # ONNX Runtime's policies take the first Kestrel device on the hardware they choose. Here
    # the only Vulkan device is lavapipe, on the CPU, where Kestrel's CPU backend comes first:
    # it takes CLIP's fused encoder and leaves a convolutional model to ONNX Runtime.
    def placed(model):
        so = ort.SessionOptions()
        so.set_provider_selection_policy(getattr(ort.OrtExecutionProviderDevicePolicy, policy))
        so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        return nodes_per_ep(ort.InferenceSession(model, sess_options=so))
    assert kestrel_devices["vulkan"].ep_metadata["kestrel.device_type"] == "cpu"
    assert list(placed(os.path.join(FAMILIES, "clip", "torchscript.onnx"))) == ["Kestrel"]
    assert list(placed(model_path("blazeface_back_256.onnx"))) == ["CPUExecutionProvider"]

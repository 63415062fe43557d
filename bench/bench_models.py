"""The real models the Python benchmarks run, and how to feed them: shared by
bench/host_cpu_vs_ort.py and bench/gpu_vs_ort.py (machines with Python's
onnxruntime but no Node.js, such as the GPU server)."""
import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np
import onnxruntime as ort

# name, file, symbolic dims (as in bench/cpu_vs_ort.js); None: Silero's own inputs
MODELS = [
    ("ppocr-det 640x640", "ppocrv4_det.onnx",
     ["p2o.DynamicDimension.0=1", "p2o.DynamicDimension.1=640", "p2o.DynamicDimension.2=640"]),
    ("ppocr-rec 48x320", "ppocrv4_rec.onnx", ["p2o.DynamicDimension.0=1", "p2o.DynamicDimension.1=320"]),
    ("ppocr-cls 48x192", "ppocr_mobile_v2_cls.onnx",
     ["p2o.DynamicDimension.0=1", "p2o.DynamicDimension.1=48", "p2o.DynamicDimension.2=192"]),
    ("isnet medium (fp16) 1024", "isnet_medium.onnx", []),
    ("isnet small (uint8) 1024", "isnet_small.onnx", []),
    ("blazeface front 128", "blazeface_front_128.onnx", []),
    ("blazeface back 256", "blazeface_back_256.onnx", []),
    ("mlsd tiny 320", "mlsd_tiny_320.onnx", []),
    ("mlsd large 320", "mlsd_large_320.onnx", []),
    ("silero vad 512 samples", "silero_vad.onnx", None),
    ("ultraface 320", "ultraface_320.onnx", []),
    ("yolox nano 416", "yolox_nano.onnx", []),
]


def silero_inputs(d):
    i = np.arange(576, dtype=np.float32)
    x = (0.3 * np.sin(2 * np.pi * 180 * i / 16000) + 0.1 * np.sin(2 * np.pi * 720 * i / 16000)).astype(np.float32)
    feeds = {"input": x[None, :], "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}
    for k, v in feeds.items():
        np.save(os.path.join(d, k + ".npy"), v)
    return feeds


def prepare_inputs(kestrel, model, dims, d):
    """Writes the model's inputs under d; returns (feeds for onnxruntime, --input flags for kestrel)."""
    names = [i["name"] for i in json.loads(subprocess.check_output([kestrel, "inspect", model, "--json"]))["inputs"]]
    if dims is None:
        feeds = silero_inputs(d)
        pairs = [f"{n}={os.path.join(d, n + '.npy')}" for n in names]
    else:
        subprocess.check_call([kestrel, "run", model, "--save-inputs", d, "--backend", "cpu"]
                              + [x for dim in dims for x in ("--dim", dim)], stdout=subprocess.DEVNULL)
        feeds = {n: np.load(os.path.join(d, f"{i}.npy")) for i, n in enumerate(names)}
        pairs = [f"{n}={os.path.join(d, f'{i}.npy')}" for i, n in enumerate(names)]
    return feeds, [x for p in pairs for x in ("--input", p)]


def selected_gpu(kestrel):
    """The Vulkan device `kestrel probe` reports Kestrel would pick: its probe entry."""
    probe = json.loads(subprocess.check_output([kestrel, "probe"]))
    return probe["vulkan"]["devices"][probe["vulkan"]["selected"]]


def kestrel_bench(kestrel, model, input_flags, runs, extra, env=None, timeout=None):
    return json.loads(subprocess.check_output([kestrel, "bench", model, "--runs", str(runs), "--json"]
                                              + input_flags + extra, env=env, timeout=timeout))


def output_agreement(ours, ref):
    """Cosine and max |ours - ref| over max |ref| of two outputs (1.0 and 0.0 where a norm is 0)."""
    k = np.asarray(ours, dtype=np.float64).ravel()
    r = np.asarray(ref, dtype=np.float64).ravel()
    den = np.linalg.norm(k) * np.linalg.norm(r)
    rng = float(np.max(np.abs(r))) if r.size else 0.0
    return (float(k @ r / den) if den > 0 else 1.0), (float(np.max(np.abs(k - r)) / rng) if rng > 0 else 0.0)


def session_median_ms(session, feeds, runs, warmups=3):
    """Median ms of an onnxruntime session's runs after `warmups` untimed ones."""
    for _ in range(warmups):
        session.run(None, feeds)
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        session.run(None, feeds)
        t.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(t))


def ort_median_ms(model, feeds, threads, runs):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return session_median_ms(s, feeds, runs), s.run(None, feeds)


def family_model(work, name):
    """A full-size family model under work/NAME (exported by tools/export_models.py --full on
    first use): (model path, feeds for onnxruntime, --input flags for kestrel)."""
    d = os.path.join(work, name)
    model = os.path.join(d, "torchscript.onnx")
    if not os.path.exists(model):
        import export_models  # (torch and transformers: only where models are exported)
        export_models.build_one(name, work, True, ["torchscript"])
    meta = json.load(open(os.path.join(d, "meta.json")))
    feeds = {n: np.load(os.path.join(d, f"input_{i}.npy")) for i, n in enumerate(meta["inputs"])}
    flags = [x for i, n in enumerate(meta["inputs"]) for x in ("--input", f"{n}={os.path.join(d, f'input_{i}.npy')}")]
    return model, feeds, flags


def parse_args():
    """The options both scripts take."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=20)
    return ap.parse_args()


def each_model(a, isnet_runs):
    """Yields (name, model path, runs, feeds, kestrel --input flags) for every model present;
    the inputs live in a temporary folder while the caller's loop body runs."""
    for name, file, dims in MODELS:
        model = os.path.join(a.models, file)
        if not os.path.exists(model):
            print(f"{name}: {model} missing, skipped")
            continue
        runs = min(a.runs, isnet_runs) if "isnet" in file else a.runs
        with tempfile.TemporaryDirectory() as d:
            feeds, flags = prepare_inputs(a.kestrel, model, dims, d)
            yield name, model, runs, feeds, flags

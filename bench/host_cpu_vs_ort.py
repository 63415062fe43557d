#!/usr/bin/env python3
"""Kestrel's CPU backend beside ONNX Runtime's CPU EP on a machine with Python's
onnxruntime but no Node.js (such as a GPU server's host): the same
comparison as bench/cpu_vs_ort.js, on the same inputs and thread count, in one run.

  python3 bench/host_cpu_vs_ort.py --kestrel build/kestrel --models models [--threads N] [--runs N]
"""
import argparse
import json
import os
import platform
import subprocess
import tempfile
import time

import numpy as np
import onnxruntime as ort

# name, file, symbolic dims (as in bench/cpu_vs_ort.js)
MODELS = [
    ("ppocr-det 640x640", "ppocrv4_det.onnx",
     ["p2o.DynamicDimension.0=1", "p2o.DynamicDimension.1=640", "p2o.DynamicDimension.2=640"]),
    ("ppocr-rec 48x320", "ppocrv4_rec.onnx", ["p2o.DynamicDimension.0=1", "p2o.DynamicDimension.1=320"]),
    ("ppocr-cls 48x192", "ppocr_mobile_v2_cls.onnx",
     ["p2o.DynamicDimension.0=1", "p2o.DynamicDimension.1=48", "p2o.DynamicDimension.2=192"]),
    ("isnet medium (fp16) 1024", "isnet_medium.onnx", []),
    ("blazeface front 128", "blazeface_front_128.onnx", []),
    ("blazeface back 256", "blazeface_back_256.onnx", []),
    ("mlsd tiny 320", "mlsd_tiny_320.onnx", []),
    ("mlsd large 320", "mlsd_large_320.onnx", []),
    ("silero vad 512 samples", "silero_vad.onnx", None),
]


def silero_inputs(d):
    i = np.arange(576, dtype=np.float32)
    x = (0.3 * np.sin(2 * np.pi * 180 * i / 16000) + 0.1 * np.sin(2 * np.pi * 720 * i / 16000)).astype(np.float32)
    feeds = {"input": x[None, :], "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}
    for k, v in feeds.items():
        np.save(os.path.join(d, k + ".npy"), v)
    return feeds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=20)
    a = ap.parse_args()
    rows = []
    for name, file, dims in MODELS:
        model = os.path.join(a.models, file)
        if not os.path.exists(model):
            print(f"{name}: {model} missing, skipped")
            continue
        runs = min(a.runs, 5) if "isnet" in file else a.runs
        with tempfile.TemporaryDirectory() as d:
            names = [i["name"] for i in json.loads(subprocess.check_output([a.kestrel, "inspect", model, "--json"]))["inputs"]]
            if dims is None:
                feeds = silero_inputs(d)
                pairs = [f"{n}={os.path.join(d, n + '.npy')}" for n in names]
            else:
                subprocess.check_call([a.kestrel, "run", model, "--save-inputs", d, "--threads", str(a.threads)]
                                      + [x for dim in dims for x in ("--dim", dim)], stdout=subprocess.DEVNULL)
                feeds = {n: np.load(os.path.join(d, f"{i}.npy")) for i, n in enumerate(names)}
                pairs = [f"{n}={os.path.join(d, f'{i}.npy')}" for i, n in enumerate(names)]
            k = json.loads(subprocess.check_output([a.kestrel, "bench", model, "--threads", str(a.threads), "--runs",
                                                    str(runs), "--json"] + [x for p in pairs for x in ("--input", p)]))
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        for _ in range(3):
            s.run(None, feeds)
        t = []
        for _ in range(runs):
            t0 = time.perf_counter()
            s.run(None, feeds)
            t.append((time.perf_counter() - t0) * 1e3)
        o = float(np.median(t))
        rows.append((name, runs, k["median_ms"], o))
        print(f"{name}: kestrel {k['median_ms']:.2f} ms, onnxruntime {o:.2f} ms", flush=True)
    print(f"\nCPU: {platform.processor() or platform.machine()}, {os.cpu_count()} logical cores; threads {a.threads}; "
          f"onnxruntime {ort.__version__} (Python); median of the runs after warm-up")
    print("| model | runs | Kestrel CPU (ms) | ONNX Runtime CPU EP (ms) | Kestrel / ORT |")
    print("|---|---:|---:|---:|---:|")
    for name, runs, k, o in rows:
        print(f"| {name} | {runs} | {k:.2f} | {o:.2f} | {k / o:.2f}x |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Photo to boxes, end to end, in one run: `kestrel detect` beside the usual
Python pipeline (Pillow decodes and resizes, NumPy letterboxes and decodes,
ONNX Runtime's CPU EP runs the model) on the same photos, per detector, in
milliseconds per photo and as a ratio. Both sides count everything after the
model is loaded: reading the file, the letterbox, the model, the decode and
NMS. Each photo goes through R times (--repeat); the first pass's detections
are compared (same count and labels, IoU). Beside the mean over every photo,
the mean after the first batch (Kestrel batches where the model allows; the
Python pipeline's batch is one photo): a session's first run builds its GPU
pipelines and checks or calibrates what it fused.

  python3 bench/detect_vs_python.py --kestrel build/kestrel [--threads 2] [--repeat 10] [--backend cpu|vulkan]
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import detect_reference as ref  # noqa: E402

# file under ../shared/models or models/ (scripts/fetch_models.sh): (arch, input width and height)
MODELS = {
    "yolox_nano.onnx": ("yolox", (416, 416)),
    "yolov8n_int8.onnx": ("yolov8", (640, 640)),
    "scrfd_500m_bnkps.onnx": ("scrfd", (640, 640)),  # its input is open: both sides take 640 x 640
    "yunet_n_320_320.onnx": ("yunet", (320, 320)),
    "yunet_n_dynamic.onnx": ("yunet", (320, 320)),  # open batch and size: Kestrel batches its photos
    "ultraface_320.onnx": ("ultraface", (320, 240)),
    "blazeface_front_128.onnx": ("blazeface", (128, 128)),
}
CONF, IOU = 0.25, 0.45
OPEN_INPUT = {"scrfd_500m_bnkps.onnx", "yunet_n_dynamic.onnx"}  # both sides take the size above


def python_pipeline(path, arch, size, photos, repeat, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name, out_names = sess.get_inputs()[0].name, [o.name for o in sess.get_outputs()]
    first, times = [], []
    for r in range(repeat):
        for p in photos:
            t0 = time.perf_counter()
            rgb = np.asarray(Image.open(p).convert("RGB"))
            outs = sess.run(None, {name: ref.letterbox(rgb, arch, size)})
            dets = ref.reference_detections(arch, ref.by_index_and_name(outs, out_names), size,
                                            rgb.shape[1], rgb.shape[0], CONF, IOU)
            times.append(time.perf_counter() - t0)
            if r == 0:
                first.append(dets)
    # The mean over every photo, as Kestrel's total / photos, and over all but the first (its first run).
    return 1000 * float(np.mean(times)), 1000 * float(np.mean(times[1:] or times)), first


def kestrel_pipeline(kestrel, path, photos, repeat, threads, backend, size):
    run = subprocess.run([kestrel, "detect", path] + photos * repeat +
                         ["--json", "--threads", str(threads), "--backend", backend, "--conf", str(CONF), "--iou",
                          str(IOU)] + (["--size", f"{size[0]}x{size[1]}"] if os.path.basename(path) in OPEN_INPUT else []),
                         capture_output=True, text=True, check=True)
    m = re.search(r"(\d+) images in ([0-9.]+) s", run.stderr)
    rest = re.search(r"the other (\d+) at ([0-9.]+) images/s", run.stderr)
    results = [json.loads(line) for line in run.stdout.splitlines()][:len(photos)]
    all_ms = 1000 * float(m.group(2)) / int(m.group(1))
    return all_ms, 1000 / float(rest.group(2)) if rest else all_ms, results


def agreement(k, p):
    """Whether both found the same objects (as many, each of Kestrel's matched by a box of its class with
    IoU >= 0.5; the two resize a photo with different bilinear code, so near-equal scores may swap order),
    and the least IoU of those matches."""
    if len(k) != len(p):
        return False, 0.0
    least = 1.0
    for d in k:
        best = max([ref.box_iou(d["box"], b) for c, _, b, _ in p if c == d["class_id"]], default=0.0)
        least = min(least, best)
    return least >= 0.5, least


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--models", default=os.path.join(os.path.dirname(ROOT), "shared", "models"))
    ap.add_argument("--photos", default=os.path.join(ROOT, "models", "photos"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--only", nargs="*", default=[], help="these model files only (e.g. yolox_nano.onnx)")
    a = ap.parse_args()
    photos = sorted(os.path.join(a.photos, f) for f in os.listdir(a.photos) if f.endswith((".jpg", ".png")))
    print(f"{len(photos)} photos x {a.repeat}, {a.threads} threads, Kestrel backend {a.backend}; host "
          f"{platform.processor() or platform.machine()}, onnxruntime {ort.__version__}")
    print("| detector | Kestrel (ms / photo) | Pillow + NumPy + ONNX Runtime (ms / photo) | Python / Kestrel | "
          "after the first batch: Kestrel / Python (ms / photo) | Python / Kestrel | same detections (photos) | "
          "least IoU |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for f, (arch, size) in MODELS.items():
        if a.only and f not in a.only:
            continue
        path = os.path.join(a.models, f)
        if not os.path.exists(path):
            path = os.path.join(ROOT, "models", f)
        k_ms, k_rest, k_res = kestrel_pipeline(a.kestrel, path, photos, a.repeat, a.threads, a.backend, size)
        p_ms, p_rest, p_res = python_pipeline(path, arch, size, photos, a.repeat, a.threads)
        agree = [agreement(k["detections"], p) for k, p in zip(k_res, p_res)]
        same = sum(ok for ok, _ in agree)
        least = min((iou for ok, iou in agree if ok), default=0.0)
        print(f"| {f} ({arch}) | {k_ms:.1f} | {p_ms:.1f} | {p_ms / k_ms:.2f}x | {k_rest:.1f} / {p_rest:.1f} | "
              f"{p_rest / k_rest:.2f}x | {same} of {len(photos)} | {least:.3f} |", flush=True)


if __name__ == "__main__":
    main()

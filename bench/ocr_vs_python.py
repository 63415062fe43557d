#!/usr/bin/env python3
"""Photo to text, end to end, in one run: `kestrel ocr` beside RapidOCR
(rapidocr_onnxruntime: OpenCV, NumPy, pyclipper and ONNX Runtime's CPU EP, the
usual Python pipeline for PP-OCR's ONNX models) on the same photos with the
same three files (PP-OCRv4 det and rec; with --cls the v2.0 direction
classifier). RapidOCR is set to PaddleOCR's settings, which Kestrel follows
(longest side at most 960, ImageNet mean and std, box threshold 0.6, unclip
1.5, no dilation), so both do the same work; Pillow decodes its photos. Both
count everything after the
models are loaded; each photo goes through R times (--repeat). The lines each
reads on the first pass are compared.

RapidOCR is not one of Kestrel's dependencies; make a venv for it:
  python3 -m venv /tmp/rapid && /tmp/rapid/bin/pip install rapidocr_onnxruntime==1.4.4
  /tmp/rapid/bin/python bench/ocr_vs_python.py --kestrel build/kestrel [--threads 2] [--repeat 5] [--cls]
"""
import argparse
import json
import os
import platform
import re
import subprocess
import time

import numpy as np
import onnxruntime as ort
from PIL import Image
from rapidocr_onnxruntime import RapidOCR

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")
PHOTOS = ["imageTextN.png", "imageTextR.png", "scenetext01.jpg"]


def rapidocr(photos, repeat, threads, cls):
    engine = RapidOCR(det_model_path=os.path.join(MODELS, "ppocrv4_det.onnx"),
                      rec_model_path=os.path.join(MODELS, "ppocrv4_rec.onnx"),
                      cls_model_path=os.path.join(MODELS, "ppocr_mobile_v2_cls.onnx"),
                      rec_keys_path=os.path.join(MODELS, "ppocr_keys_v1.txt"), use_cls=cls,
                      det_limit_side_len=960, det_limit_type="max", det_box_thresh=0.6, det_unclip_ratio=1.5,
                      det_use_dilation=False, intra_op_num_threads=threads, inter_op_num_threads=1,
                      # PaddleOCR's normalization (RapidOCR's default is a mean and std of 0.5).
                      det_mean=[0.485, 0.456, 0.406], det_std=[0.229, 0.224, 0.225])
    first, start = [], time.perf_counter()
    for r in range(repeat):
        for p in photos:
            # Decoded here: RapidOCR's own loader reads a palette PNG's indices as grey levels.
            bgr = np.ascontiguousarray(np.asarray(Image.open(p).convert("RGB"))[:, :, ::-1])
            result, _ = engine(bgr, use_cls=cls)
            if r == 0:
                first.append([text for _, text, _ in (result or [])])
    return 1000 * (time.perf_counter() - start) / (repeat * len(photos)), first


def kestrel(binary, photos, repeat, threads, backend, cls):
    extra = ["--cls", os.path.join(MODELS, "ppocr_mobile_v2_cls.onnx")] if cls else []
    run = subprocess.run([binary, "ocr", os.path.join(MODELS, "ppocrv4_det.onnx"),
                          os.path.join(MODELS, "ppocrv4_rec.onnx")] + photos * repeat +
                         ["--json", "--threads", str(threads), "--backend", backend] + extra,
                         capture_output=True, text=True, check=True)
    m = re.search(r"(\d+) images in ([0-9.]+) s", run.stderr)
    results = [json.loads(line) for line in run.stdout.splitlines()][:len(photos)]
    return 1000 * float(m.group(2)) / int(m.group(1)), [[l["text"] for l in r["lines"]] for r in results]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--cls", action="store_true", help="with the direction classifier on both sides")
    a = ap.parse_args()
    print(f"{a.repeat} passes, {a.threads} threads, Kestrel backend {a.backend}{', with the classifier' if a.cls else ''}; "
          f"host {platform.processor() or platform.machine()}, onnxruntime {ort.__version__}")
    print("| photo | Kestrel (ms) | RapidOCR (ms) | RapidOCR / Kestrel | lines Kestrel / RapidOCR | same text |")
    print("|---|---:|---:|---:|---:|---:|")
    for photo in PHOTOS:
        path = os.path.join(MODELS, "photos", photo)
        k_ms, k_lines = kestrel(a.kestrel, [path], a.repeat, a.threads, a.backend, a.cls)
        r_ms, r_lines = rapidocr([path], a.repeat, a.threads, a.cls)
        same = len(set(k_lines[0]) & set(r_lines[0]))
        print(f"| {photo} | {k_ms:.1f} | {r_ms:.1f} | {r_ms / k_ms:.2f}x | {len(k_lines[0])} / {len(r_lines[0])} | "
              f"{same} |", flush=True)


if __name__ == "__main__":
    main()

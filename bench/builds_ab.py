#!/usr/bin/env python3
"""Two Kestrel builds side by side on the same models: `kestrel bench` of each,
alternating, for a few rounds (so drift of the machine falls on both), then
each build's outputs (`kestrel run`, its fourth run: replayed on the GPU)
against ONNX Runtime's CPU EP with its optimizations off, on the same inputs
(`--ort-optimized`: with its default optimizations, the form a quantized
model's integer fusions are held to).

  python3 bench/builds_ab.py --base OLD/kestrel --new build/kestrel \\
      --models m1.onnx m2.onnx [--flags "--backend vulkan --precision fp16"] \\
      [--extra m1.onnx="--shape x=1,3,640,640"] [--rounds 2] [--runs 20]

Prints, per model, each round's median of each build, their ratio, and each
build's lowest cosine and largest max error over the output's range.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_models import output_agreement  # noqa: E402


def median_ms(kestrel, model, flags, runs):
    out = subprocess.run([kestrel, "bench", model, "--runs", str(runs)] + flags, capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+) ms", out.stdout + out.stderr)
    if not m:
        sys.exit(f"{kestrel} bench {model} failed:\n{out.stdout}{out.stderr}")
    return float(m.group(1))


def agreement(kestrel, model, flags, work, optimized):
    """(lowest cosine, largest max error / range) over the outputs against ONNX Runtime."""
    ins, outs = os.path.join(work, "in"), os.path.join(work, "out")
    r = subprocess.run([kestrel, "run", model, "--runs", "4", "--save-inputs", ins, "--output-dir", outs] + flags,
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{kestrel} run {model} failed:\n{r.stdout}{r.stderr}")
    so = ort.SessionOptions()
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3  # its notes on unused initializers are not ours to print
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds = {x.name: np.load(os.path.join(ins, f"{i}.npy")) for i, x in enumerate(s.get_inputs())}
    worst = (1.0, 0.0)
    for i, ref in enumerate(s.run(None, feeds)):
        cos, err = output_agreement(np.load(os.path.join(outs, f"{i}.npy")), ref)
        worst = (min(worst[0], cos), max(worst[1], err))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the build before")
    ap.add_argument("--new", required=True, help="the build under test")
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--flags", default="--backend vulkan --precision fp16", help="flags for both builds' bench and run")
    ap.add_argument("--extra", action="append", default=[], help="MODEL=FLAGS: more flags for one model")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--ort-optimized", action="store_true",
                    help="hold the outputs to ONNX Runtime with its default optimizations (else none)")
    a = ap.parse_args()
    extra = dict(e.split("=", 1) for e in a.extra)
    print("| model | base median (ms), by round | new median (ms), by round | base / new | new vs ORT | base vs ORT |")
    print("|---|---|---|---:|---|---|")
    for model in a.models:
        flags = shlex.split(a.flags) + shlex.split(extra.get(model, ""))
        base, new = [], []
        for _ in range(a.rounds):
            base.append(median_ms(a.base, model, flags, a.runs))
            new.append(median_ms(a.new, model, flags, a.runs))
        with tempfile.TemporaryDirectory() as wb, tempfile.TemporaryDirectory() as wn:
            ab = agreement(a.base, model, flags, wb, a.ort_optimized)
            an = agreement(a.new, model, flags, wn, a.ort_optimized)
        # tools/export_models.py writes NAME/torchscript.onnx: the folder names the model.
        label = os.path.basename(model)
        if label in ("torchscript.onnx", "dynamo.onnx"):
            label = f"{os.path.basename(os.path.dirname(model))}/{label}"
        print(f"| {label} | {' / '.join(f'{x:.3f}' for x in base)} | "
              f"{' / '.join(f'{x:.3f}' for x in new)} | {np.median(base) / np.median(new):.2f}x | "
              f"{an[0]:.7f}, {an[1]:.1e} | {ab[0]:.7f}, {ab[1]:.1e} |", flush=True)


if __name__ == "__main__":
    main()

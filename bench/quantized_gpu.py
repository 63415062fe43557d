#!/usr/bin/env python3
"""A calibrated transformer on the GPU, in one run: a full-size family model (exported by
tools/export_models.py --full on first use, random weights) and its `kestrel quantize` file (defaults:
minmax, weights int8 per channel, calibrated on photos pre-processed as the family's processor does),
run by Kestrel-Vulkan side by side:
  - the float model in float32 and in float16 (its fused encoder);
  - the int8 file in float32 and float16 sessions (its projections MatMulIntegerToFloat on integer
    products: int8 tensor cores where the device has them);
  - the int8 file on Kestrel's CPU backend, whose integer sums are the same: the Vulkan run's output
    is held to it.
Prints median ms, the ratios, each output's agreement with ONNX Runtime's run of the float model, and
where the int8 run's device time goes (`bench --profile`).

  python3 bench/quantized_gpu.py --kestrel build/kestrel --work /tmp/fam --photos models/photos \\
      --models clip --runs 20
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from bench_models import family_model, kestrel_bench, output_agreement  # noqa: E402
from quantized_transformers import PREP  # noqa: E402


def kestrel_output(kestrel, model, flags, backend):
    with tempfile.TemporaryDirectory() as d:
        subprocess.check_call([kestrel, "run", model, "--output-dir", d] + backend + flags, stdout=subprocess.DEVNULL)
        return np.load(os.path.join(d, "0.npy"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--work", required=True, help="where the full-size models are (or are exported to)")
    ap.add_argument("--photos", required=True, help="calibration photos for kestrel quantize")
    ap.add_argument("--models", nargs="+", default=["clip"], choices=sorted(PREP))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=20)
    a = ap.parse_args()
    rows = []
    for name in a.models:
        model, feeds, flags = family_model(a.work, name)
        side = next(iter(feeds.values())).shape[-1]
        q = os.path.join(a.work, name, "int8_static.onnx")
        subprocess.run([a.kestrel, "quantize", model, "--calib", a.photos, "--out", q, "--threads", str(a.threads),
                        "--size", f"{side}x{side}"] + PREP[name], capture_output=True, text=True, check=True)
        so = ort.SessionOptions()
        so.log_severity_level = 3
        ref = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        cpu = ["--backend", "cpu", "--threads", str(a.threads)]
        cpu_q = kestrel_output(a.kestrel, q, flags, cpu)
        runs = {}
        for label, path, prec in [("float fp32", model, "fp32"), ("float fp16", model, "fp16"),
                                  ("int8 fp32", q, "fp32"), ("int8 fp16", q, "fp16")]:
            vk = ["--backend", "vulkan", "--precision", prec, "--threads", str(a.threads)]
            ms = kestrel_bench(a.kestrel, path, flags, a.runs, vk)["median_ms"]
            out = kestrel_output(a.kestrel, path, flags, vk)
            runs[label] = (ms, output_agreement(out, ref), output_agreement(out, cpu_q) if path == q else None)
            print(f"{name} {label}: {ms:.3f} ms", flush=True)
        prof = kestrel_bench(a.kestrel, q, flags, a.runs, ["--backend", "vulkan", "--precision", "fp16", "--profile",
                                                          "--threads", str(a.threads)])["profile"]["ops"]
        rows.append((name, runs, output_agreement(cpu_q, ref), prof))
    print(f"\nVulkan, median of {a.runs} runs; the int8 file from `kestrel quantize` (defaults)")
    print("| model | float fp32 | float fp16 (fused) | int8 in fp32 | int8 in fp16 | int8 fp16 / float fp16 speed |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r, _, _ in rows:
        print(f"| {name} | " + " | ".join(f"{r[l][0]:.2f}" for l in ("float fp32", "float fp16", "int8 fp32",
                                                                      "int8 fp16")) +
              f" | {r['float fp16'][0] / r['int8 fp16'][0]:.2f}x |")
    print("\nAgreement (cosine, max abs / range): each run against ONNX Runtime's float model; the int8 runs also "
          "against Kestrel's CPU backend on the int8 file")
    for name, r, cpu_vs_ref, prof in rows:
        print(f"- {name}: CPU int8 vs float {cpu_vs_ref[0]:.6f}, {cpu_vs_ref[1]:.2g}")
        for l, (ms, vs_ref, vs_cpu) in r.items():
            extra = f"; vs the CPU's int8 {vs_cpu[0]:.7f}, {vs_cpu[1]:.2g}" if vs_cpu else ""
            print(f"  - {l}: vs float {vs_ref[0]:.6f}, {vs_ref[1]:.2g}{extra}")
        total = sum(prof.values())
        top = sorted(prof.items(), key=lambda kv: -kv[1])[:8]
        print(f"  - int8 fp16 by op (each node waited for, {total:.2f} ms): " +
              ", ".join(f"{op} {ms:.2f}" for op, ms in top))


if __name__ == "__main__":
    main()

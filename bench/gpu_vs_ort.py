#!/usr/bin/env python3
"""Kestrel on a Vulkan GPU beside ONNX Runtime's CPU EP on the same host, for each
real model, in one run: Kestrel-Vulkan in float32 and float16 storage, Kestrel's
own CPU backend, and ONNX Runtime with every host core. Also prints the share
of each model's FLOPs that ran on the GPU, what stayed on the CPU, and how
far Kestrel-Vulkan's float32 outputs are from ONNX Runtime's on the same input
in float32 and float16 storage (lowest cosine over the outputs, largest max abs
error over the output's range).

  python3 bench/gpu_vs_ort.py --kestrel build/kestrel --models models [--threads N] [--runs N]
"""
import json
import os
import platform
import subprocess
import tempfile

import numpy as np
import onnxruntime as ort

from bench_models import each_model, kestrel_bench, ort_median_ms, output_agreement, parse_args, selected_gpu


def agreement(kestrel, model, flags, ref, precision):
    """Lowest cosine and largest max-abs/range of Kestrel-Vulkan against ONNX Runtime's outputs."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.check_call([kestrel, "run", model, "--backend", "vulkan", "--precision", precision, "--output-dir", d]
                              + flags, stdout=subprocess.DEVNULL)
        worst_cos, worst_err = 1.0, 0.0
        for i, r in enumerate(ref):
            cos, err = output_agreement(np.load(os.path.join(d, f"{i}.npy")), r)
            worst_cos, worst_err = min(worst_cos, cos), max(worst_err, err)
        return worst_cos, worst_err


def main():
    a = parse_args()
    gpu = selected_gpu(a.kestrel)
    rows = []
    for name, model, runs, feeds, flags in each_model(a, isnet_runs=10):
        common = ["--threads", str(a.threads)]
        k32 = kestrel_bench(a.kestrel, model, flags, runs, ["--backend", "vulkan", "--precision", "fp32"] + common)
        k16 = kestrel_bench(a.kestrel, model, flags, runs, ["--backend", "vulkan", "--precision", "fp16"] + common)
        kcpu = kestrel_bench(a.kestrel, model, flags, runs, ["--backend", "cpu"] + common)
        info = json.loads(subprocess.check_output([a.kestrel, "inspect", model, "--json", "--backend", "vulkan", "--run"] + flags))
        o, ref = ort_median_ms(model, feeds, a.threads, runs)
        p = info["placement"]
        p["agreement"] = [agreement(a.kestrel, model, flags, ref, prec) for prec in ("fp32", "fp16")]
        rows.append((name, k32["median_ms"], k16["median_ms"], kcpu["median_ms"], o, p))
        print(f"{name}: vulkan fp32 {k32['median_ms']:.2f} ms, fp16 {k16['median_ms']:.2f} ms, "
              f"kestrel cpu {kcpu['median_ms']:.2f} ms, onnxruntime {o:.2f} ms; "
              f"GPU FLOPs {100 * p['gpu_flops_share']:.1f}%, CPU nodes {p['cpu_reasons']}; {p.get('precision_note', '')}",
              flush=True)
    print(f"\nGPU: {gpu['name']} (Vulkan {gpu['api_version']}, driver {gpu['driver_info']}); host CPU: "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical cores, threads {a.threads}; "
          f"onnxruntime {ort.__version__} CPU EP (Python); median of {a.runs} runs after warm-up")
    print("| model | Kestrel Vulkan fp32 (ms) | Kestrel Vulkan fp16 (ms) | Kestrel CPU (ms) | ONNX Runtime CPU EP (ms) "
          "| ORT / Kestrel-Vulkan fp32 | ORT / Kestrel-Vulkan fp16 | auto picks | GPU share of FLOPs | GPU nodes "
          "| fp32 vs ORT: cosine, max abs / range | fp16 vs ORT: cosine, max abs / range |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---|")
    for name, k32, k16, kc, o, p in rows:
        note = p.get("precision_note", "")
        pick = "fp16" if "auto: fp16" in note else "fp32" if "auto: fp32" in note else "?"
        print(f"| {name} | {k32:.2f} | {k16:.2f} | {kc:.2f} | {o:.2f} | {o / k32:.2f}x | {o / k16:.2f}x | {pick} | "
              f"{100 * p['gpu_flops_share']:.1f}% | {p['gpu_nodes']}/{p['gpu_nodes'] + p['cpu_nodes']} | "
              + " | ".join(f"{c:.7f}, {e:.1e}" for c, e in p["agreement"]) + " |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Kestrel's CPU backend beside ONNX Runtime's CPU EP on a machine with Python's
onnxruntime but no Node.js (such as a GPU server's host): the same
comparison as bench/cpu_vs_ort.js, on the same inputs and thread count, in one run.

  python3 bench/host_cpu_vs_ort.py --kestrel build/kestrel --models models [--threads N] [--runs N]
"""
import os
import platform

import onnxruntime as ort

from bench_models import each_model, kestrel_bench, ort_median_ms, parse_args


def main():
    a = parse_args()
    rows = []
    for name, model, runs, feeds, flags in each_model(a, isnet_runs=5):
        k = kestrel_bench(a.kestrel, model, flags, runs, ["--backend", "cpu", "--threads", str(a.threads)])
        o, _ = ort_median_ms(model, feeds, a.threads, runs)
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

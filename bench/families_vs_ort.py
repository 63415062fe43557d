#!/usr/bin/env python3
"""Full-size transformer family models, in one run: Kestrel-Vulkan with the
encoder fused (its attention in one pass, flash attention, and again through a
scores buffer: --attention chunked), Kestrel-Vulkan op by op (KESTREL_FAMILIES=off), ONNX Runtime's
CPU EP on every host core, and PyTorch CUDA fp16 eager and torch.compile
(default mode; --no-compile leaves it out), with Kestrel's fused outputs
checked against ONNX Runtime's on the same input.

Needs torch, transformers and onnxruntime (the GPU machine has them). Models
are exported on first use by tools/export_models.py --full into --work.

  python3 bench/families_vs_ort.py --kestrel build/kestrel --work /tmp/families [--models clip ...]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
import export_models  # noqa: E402
from bench_models import family_model, kestrel_bench, ort_median_ms, output_agreement, selected_gpu  # noqa: E402

DEFAULT = ["clip", "siglip", "dinov2", "depth_anything"]


def torch_cuda_fp16_ms(name, runs, compiled=False):
    """Median ms of the PyTorch model in fp16 on CUDA, eager or (compiled)
    under torch.compile; None when torch.compile fails on it."""
    import torch
    torch.manual_seed(export_models.SEED)
    model, args, _, _, _ = export_models.FAMILIES[name](True)
    export_models.randomize(model)
    export_models.keep_depth_positive(model, name, True)
    model = model.half().cuda().eval()
    args = [a.cuda().half() if a.is_floating_point() else a.cuda() for a in args]
    if compiled:
        model = torch.compile(model)
    with torch.no_grad():
        try:
            for _ in range(5):  # torch.compile compiles on the first call
                model(*args)
        except Exception as e:  # noqa: BLE001 - reported, the column shows "-"
            print(f"{name}: torch.compile failed: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
            return None
        torch.cuda.synchronize()
        t = []
        for _ in range(runs):
            t0 = time.perf_counter()
            model(*args)
            torch.cuda.synchronize()
            t.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(t))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", nargs="*", default=DEFAULT)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "fp16"], help="Kestrel-Vulkan's storage precision")
    ap.add_argument("--no-compile", action="store_true", help="leave out torch.compile (its first call compiles for minutes)")
    ap.add_argument("--no-per-op", action="store_true", help="leave out the op-by-op column (SAM's takes ~1 s a run)")
    a = ap.parse_args()
    gpu = selected_gpu(a.kestrel)
    rows = []
    for name in a.models:
        model, feeds, flags = family_model(a.work, name)
        flags += ["--threads", str(a.threads)]
        info = json.loads(subprocess.check_output([a.kestrel, "inspect", model, "--json"]))
        fam = ", ".join(f"{c['family']} ({c['layers']} layers)" for c in info["families"]) or "none"
        env = dict(os.environ)
        vulkan = ["--backend", "vulkan", "--precision", a.precision]
        fused = kestrel_bench(a.kestrel, model, flags, a.runs, vulkan, env)
        # The same fused session recording every run, as before replay (replay.h).
        recording = kestrel_bench(a.kestrel, model, flags, a.runs, vulkan, dict(env, KESTREL_VK_REPLAY="off"))
        # The same with attention through a scores buffer instead of flash attention.
        chunked = kestrel_bench(a.kestrel, model, flags, a.runs, vulkan + ["--attention", "chunked"], env)
        env_off = dict(env, KESTREL_FAMILIES="off")
        per_op = None if a.no_per_op else kestrel_bench(a.kestrel, model, flags, a.runs, vulkan, env_off)
        o_ms, ref = ort_median_ms(model, feeds, a.threads, max(3, a.runs // 4))
        t_ms = torch_cuda_fp16_ms(name, a.runs)
        c_ms = None if a.no_compile else torch_cuda_fp16_ms(name, a.runs, compiled=True)
        with tempfile.TemporaryDirectory() as out:
            # The first run checks the claim on the CPU, the second learns the
            # placement, the third is kept for replay: the fourth, a replay,
            # is the GPU path compared here.
            subprocess.check_call([a.kestrel, "run", model, "--backend", "vulkan", "--precision", a.precision, "--runs", "4",
                                   "--output-dir", out] + flags, stdout=subprocess.DEVNULL)
            k0 = np.load(os.path.join(out, "0.npy"))
        cos, err = output_agreement(k0, ref[0])
        absrel = float(np.mean(np.abs(k0 - ref[0]) / np.maximum(np.abs(ref[0]), 1e-6))) if name == "depth_anything" else None
        row = dict(name=name, family=fam, fused=fused["median_ms"], recording=recording["median_ms"], chunked=chunked["median_ms"], per_op=per_op["median_ms"] if per_op else None, ort=o_ms, torch=t_ms, compiled=c_ms,
                   cos=cos, err=err, absrel=absrel, placement=fused.get("placement", ""))
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\nGPU: {gpu['name']} (Vulkan {gpu['api_version']}, driver {gpu['driver_info']}); host: "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical cores, ONNX Runtime threads {a.threads}; "
          f"onnxruntime {ort.__version__} CPU EP; median of {a.runs} runs after warm-up (ONNX Runtime: {max(3, a.runs // 4)}); "
          f"Kestrel-Vulkan storage {a.precision}")
    print("| model | claimed | Kestrel Vulkan fused (ms) | fused, recording every run (ms) | fused, chunked attention (ms) "
          "| Kestrel Vulkan per-op (ms) "
          "| ONNX Runtime CPU EP (ms) | PyTorch CUDA fp16 eager (ms) | torch.compile fp16 (ms) | per-op / fused "
          "| ORT / fused | PyTorch / fused | torch.compile / fused | fused vs ORT: cosine, max abs / range |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        extra = f", depth AbsRel {r['absrel']:.1e}" if r["absrel"] is not None else ""
        c = r["compiled"]
        c_ms, c_ratio = (f"{c:.2f}", f"{c / r['fused']:.2f}x") if c is not None else ("-", "-")
        p = r["per_op"]
        p_ms, p_ratio = (f"{p:.2f}", f"{p / r['fused']:.2f}x") if p is not None else ("-", "-")
        print(f"| {r['name']} | {r['family']} | {r['fused']:.2f} | {r['recording']:.2f} | {r['chunked']:.2f} | {p_ms} | {r['ort']:.2f} | {r['torch']:.2f} | "
              f"{c_ms} | {p_ratio} | {r['ort'] / r['fused']:.2f}x | {r['torch'] / r['fused']:.2f}x | {c_ratio} | "
              f"{r['cos']:.7f}, {r['err']:.1e}{extra} |")


if __name__ == "__main__":
    main()

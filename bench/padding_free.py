#!/usr/bin/env python3
"""ModernBERT on right-padded batches, in one run: Kestrel computing every
token (as the graph, and ONNX Runtime, do) beside Kestrel padding-free
(--padding-free: the live tokens only, zeros at padded ones), with PyTorch
CUDA fp16 eager on the same padded batch and ONNX Runtime's CPU EP as the
reference. Each Kestrel output is checked against ONNX Runtime's at the live
tokens (cosine, max abs over the live tokens' range); the padding-free one
must also read exactly zero at every padded token.

Needs torch, transformers and onnxruntime (the GPU machine has them). Models
are exported on first use by tools/export_models.py --full into --work
(modernbert_batch: 4 x 512 tokens, 512, 384, 256 and 128 live).

  python3 bench/padding_free.py --kestrel build/kestrel --work /tmp/families [--models modernbert_batch]
      [--runs 20] [--rounds 2] [--flags "--backend vulkan --precision fp16 --threads 16"]
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
from bench_models import family_model, kestrel_bench, output_agreement  # noqa: E402


def live_agreement(ours, ref, mask):
    """(cosine, max abs / range) over the live tokens, and max |ours| over the padded ones."""
    live = mask.astype(bool)
    cos, rel = output_agreement(ours[live], ref[live])
    padded = float(np.max(np.abs(ours[~live]))) if (~live).any() else 0.0
    return cos, rel, padded


def kestrel_output(kestrel, model, flags, extra):
    """Output 0 of a kestrel run (its fourth: the first checks the fused encoder on the CPU)."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.check_call([kestrel, "run", model, "--runs", "4", "--output-dir", d] + flags + extra,
                              stdout=subprocess.DEVNULL)
        return np.load(os.path.join(d, "0.npy"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", nargs="+", default=["modernbert_batch"])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--flags", default="--backend vulkan --precision fp16 --threads 16")
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args()
    extra = a.flags.split()
    print(f"host: {platform.node()}, kestrel flags: {a.flags}, runs {a.runs}, rounds {a.rounds}")
    rows = []
    for name in a.models:
        model, feeds, flags = family_model(a.work, name)
        mask = feeds["attention_mask"]
        so = ort.SessionOptions()
        so.intra_op_num_threads = os.cpu_count()
        ref = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        modes = {"every token": [], "padding-free": ["--padding-free"]}
        agree = {m: live_agreement(kestrel_output(a.kestrel, model, flags, extra + f), ref, mask)
                 for m, f in modes.items()}
        medians = {m: [] for m in modes}
        for _ in range(a.rounds):  # the modes alternate, so a disturbed stretch of the machine hits both
            for m, f in modes.items():
                medians[m].append(kestrel_bench(a.kestrel, model, flags, a.runs, extra + f)["median_ms"])
        torch_ms = None
        if not a.no_torch:
            from families_vs_ort import torch_cuda_fp16_ms
            torch_ms = torch_cuda_fp16_ms(name, a.runs)
        live = int(mask.sum())
        rows.append((name, f"{mask.shape[0]} x {mask.shape[1]}, {live} live ({100.0 * live / mask.size:.1f}%)",
                     medians, agree, torch_ms))
    print()
    print("| model | batch | Kestrel every token (ms) | Kestrel padding-free (ms) | every / padding-free "
          "| PyTorch fp16 eager (ms) | PyTorch / padding-free | live tokens vs ORT, every token "
          "| live tokens vs ORT, padding-free | max abs at padded tokens, padding-free |")
    print("|---|---|---:|---:|---:|---:|---:|---|---|---:|")
    for name, batch, med, agree, torch_ms in rows:
        e, p = med["every token"], med["padding-free"]
        ratio = float(np.median(e)) / float(np.median(p))
        fmt = lambda v: " / ".join(f"{x:.3f}" for x in v)  # noqa: E731
        t = f"{torch_ms:.3f}" if torch_ms else "-"
        tr = f"{torch_ms / float(np.median(p)):.2f}x" if torch_ms else "-"
        ae, ap_ = agree["every token"], agree["padding-free"]
        print(f"| {name} | {batch} | {fmt(e)} | {fmt(p)} | {ratio:.2f}x | {t} | {tr} "
              f"| {ae[0]:.7f}, {ae[1]:.1e} | {ap_[0]:.7f}, {ap_[1]:.1e} | {ap_[2]:.1e} |")


if __name__ == "__main__":
    main()

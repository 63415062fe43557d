#!/usr/bin/env python3
"""4-bit weights on the CPU, in one run: Kestrel's com.microsoft MatMulNBits beside its float32 MatMul on the same
weights dequantized, and ONNX Runtime (CPU EP, default optimizations) on both files, as medians and ratios.

The models are bench/int4_gpu.py's chain (asymmetric uint4 blocks of 32 along K, packed zero points), here of a
small decoder's widths (2048 -> 5632 -> 2048, twice) so both copies fit a small machine: one row (a token, where
Kestrel reads the 4-bit blocks in place, unpacked in registers) and 16 (a short prompt, on panels of columns
dequantized at run time; --rows takes others). Faithfulness: each output against ONNX Runtime's on the 4-bit file.

  python3 bench/int4_cpu.py --kestrel build/kestrel --work /tmp/int4cpu --threads 2 [--runs 20]
"""
import argparse
import json
import os
import platform
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_models import kestrel_bench, output_agreement, session_median_ms  # noqa: E402
from int4_gpu import chain_models  # noqa: E402

WIDTHS = [2048, 5632, 2048, 5632, 2048]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rows", type=int, nargs="*", default=[1, 16])
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    import subprocess

    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    table = []
    for rows in a.rows:
        nbits, floatm, x, _ = chain_models(a.work, rows, seed=rows, widths=WIDTHS)
        xfile = os.path.join(a.work, f"x_{rows}.npy")
        flags = ["--input", f"x={xfile}", "--backend", "cpu", "--threads", str(a.threads)]
        ort_nbits = ort.InferenceSession(nbits, so, providers=["CPUExecutionProvider"])
        ref = ort_nbits.run(None, {"x": x})[0]
        row = {"rows": rows}
        for label, model in [("Kestrel int4", nbits), ("Kestrel fp32", floatm)]:
            out = os.path.join(a.work, f"out_{rows}_{label.split()[1]}")
            subprocess.check_call([a.kestrel, "run", model, "--output-dir", out] + flags, stdout=subprocess.DEVNULL)
            cos, err = output_agreement(np.load(os.path.join(out, "0.npy")), ref)
            row[label] = {"ms": kestrel_bench(a.kestrel, model, flags[:2], a.runs, flags[2:])["median_ms"], "cos": cos,
                          "err": err}
        row["ORT int4"] = {"ms": session_median_ms(ort_nbits, {"x": x}, a.runs)}
        ort_float = ort.InferenceSession(floatm, so, providers=["CPUExecutionProvider"])
        row["ORT fp32"] = {"ms": session_median_ms(ort_float, {"x": x}, a.runs)}
        cos, err = output_agreement(ort_float.run(None, {"x": x})[0], ref)
        row["ORT fp32"].update(cos=cos, err=err)
        table.append(row)
        print(json.dumps(row), flush=True)

    print(f"\nCPU: {platform.processor() or platform.machine()}, {a.threads} threads; onnxruntime {ort.__version__}; "
          f"median of {a.runs} runs; a chain {' -> '.join(map(str, WIDTHS))}, 4-bit blocks of 32")
    print("| rows | Kestrel int4 | Kestrel fp32 | ORT int4 | ORT fp32 | Kestrel int4 / Kestrel fp32 | "
          "Kestrel int4 / ORT int4 |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in table:
        k4, k32, o4, o32 = (r[c]["ms"] for c in ("Kestrel int4", "Kestrel fp32", "ORT int4", "ORT fp32"))
        print(f"| {r['rows']} | {k4:.2f} | {k32:.2f} | {o4:.2f} | {o32:.2f} | {k32 / k4:.2f}x | {o4 / k4:.2f}x |")
    print("\nAgainst ONNX Runtime on the 4-bit file (cosine, max abs / range):")
    for r in table:
        print(f"- {r['rows']} rows: " + "; ".join(f"{c} {r[c]['cos']:.7f}, {r[c]['err']:.1e}" for c in
                                                   ("Kestrel int4", "Kestrel fp32", "ORT fp32")))


if __name__ == "__main__":
    main()

"""Quantized transformers on the CPU, in one run: a full-size family model (exported by
tools/export_models.py --full on first use, random weights) quantized two ways, each file run by
Kestrel and by ONNX Runtime (CPU EP) beside both on the float model, with the ratios:
  - int8 static: `kestrel quantize` with its defaults (minmax, weights per channel), calibrated on
    photos pre-processed as the family's processor does; Kestrel runs its projections as
    MatMulIntegerToFloat on integer products, as ONNX Runtime does;
  - int8 dynamic: ONNX Runtime's quantize_dynamic (weights int8 per tensor), which both run as
    DynamicQuantizeMatMul;
  - int4 weights: `kestrel quantize --int4-weights` (MatMuls as com.microsoft MatMulNBits with float
    activations, the rest as the static file).
Also prints each quantized file's agreement: Kestrel against ONNX Runtime on the same file, and each
against the float model's output (ONNX Runtime's).

  python bench/quantized_transformers.py --kestrel build/kestrel --work /tmp/m --photos models/photos \\
      --models clip --threads 2 16 --runs 10
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from bench_models import family_model, kestrel_bench, ort_median_ms, output_agreement  # noqa: E402

# name -> `kestrel quantize` pre-processing (the family's image processor's mean and std; the size is
# the model's)
PREP = {
    "clip": ["--mean", "0.4815,0.4578,0.4082", "--std", "0.2686,0.2613,0.2758"],
    "dinov2": ["--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"],
}


def kestrel_outputs(kestrel, model, flags):
    with tempfile.TemporaryDirectory() as d:
        subprocess.check_call([kestrel, "run", model, "--backend", "cpu", "--output-dir", d] + flags,
                              stdout=subprocess.DEVNULL)
        files = sorted((f for f in os.listdir(d) if f.endswith(".npy")), key=lambda f: int(f.split(".")[0]))
        return [np.load(os.path.join(d, f)) for f in files]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--work", required=True, help="where the full-size models are (or are exported to)")
    ap.add_argument("--photos", required=True, help="calibration photos for kestrel quantize")
    ap.add_argument("--models", nargs="+", default=["clip"], choices=sorted(PREP))
    ap.add_argument("--threads", nargs="+", type=int, default=[2])
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    rows, agreement = [], []
    for name in a.models:
        model, feeds, flags = family_model(a.work, name)
        side = next(iter(feeds.values())).shape[-1]
        static = os.path.join(a.work, name, "int8_static.onnx")
        dynamic = os.path.join(a.work, name, "int8_dynamic.onnx")
        int4 = os.path.join(a.work, name, "int4_weights.onnx")
        for path, extra in [(static, []), (int4, ["--int4-weights"])]:
            report = subprocess.run([a.kestrel, "quantize", model, "--calib", a.photos, "--out", path,
                                     "--threads", str(max(a.threads)), "--size", f"{side}x{side}"] + PREP[name] + extra,
                                    capture_output=True, text=True, check=True).stdout
            print("\n".join(l for l in report.splitlines() if "left in float" not in l), flush=True)
        quantize_dynamic(model, dynamic, weight_type=QuantType.QInt8)
        so = ort.SessionOptions()
        so.log_severity_level = 3
        ref = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)
        for label, path in [("int8 static (kestrel quantize)", static), ("int8 dynamic (quantize_dynamic)", dynamic),
                            ("int4 weights (kestrel quantize --int4-weights)", int4)]:
            ort_q = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
            ours = kestrel_outputs(a.kestrel, path, flags)
            vs_ort = output_agreement(ours[0], ort_q[0])
            agreement.append((name, label, vs_ort, output_agreement(ours[0], ref[0])[0],
                              output_agreement(ort_q[0], ref[0])[0]))
        for t in a.threads:
            cpu = ["--backend", "cpu", "--threads", str(t)]
            k = {f: kestrel_bench(a.kestrel, p, flags, a.runs, cpu)["median_ms"]
                 for f, p in [("fp32", model), ("static", static), ("dynamic", dynamic), ("int4", int4)]}
            o = {f: ort_median_ms(p, feeds, t, a.runs)[0] for f, p in [("fp32", model), ("static", static),
                                                                       ("dynamic", dynamic), ("int4", int4)]}
            rows.append((name, t, k, o))
            print(f"{name} at {t} threads: kestrel {k}, onnxruntime {o}", flush=True)
    print(f"\nCPU, median of {a.runs} runs after warm-up; onnxruntime {ort.__version__}")
    forms = ("fp32", "static", "dynamic", "int4")
    print("| model | threads | Kestrel ms: fp32, int8 static, int8 dynamic, int4 weights | ORT ms: the same | "
          "Kestrel static / Kestrel fp32 speed | Kestrel / ORT speed: fp32, static, dynamic, int4 |")
    print("|---|---:|---|---|---:|---|")
    for name, t, k, o in rows:
        ratios = ", ".join(f"{o[f] / k[f]:.2f}x" for f in forms)
        print(f"| {name} | {t} | " + ", ".join(f"{k[f]:.2f}" for f in forms) + " | " +
              ", ".join(f"{o[f]:.2f}" for f in forms) + f" | {k['fp32'] / k['static']:.2f}x | {ratios} |")
    print("\n| model | file | Kestrel vs ORT on it: cosine, max abs / range | Kestrel vs fp32: cosine | "
          "ORT vs fp32: cosine |")
    print("|---|---|---|---:|---:|")
    for name, label, (cos, rel), kf, of in agreement:
        print(f"| {name} | {label} | {cos:.6f}, {rel:.2g} | {kf:.6f} | {of:.6f} |")


if __name__ == "__main__":
    main()

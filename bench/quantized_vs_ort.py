"""Quantized models on the CPU, in one run: Kestrel int8 beside Kestrel fp32 and
beside ONNX Runtime on the same quantized model (CPU EP), with the ratios.

The float models are quantized here by `kestrel quantize` from darknet's photos
(every Conv/MatMul/Gemm, --min-cosine 0: the speed question is the fully
quantized model's); YOLOv8n int8 and IS-Net small come quantized (ConvInteger
with DynamicQuantizeLinear). Also prints how far Kestrel's outputs are from
ONNX Runtime's on each quantized model, and how far each engine's int8
outputs are from the float model's (ONNX Runtime fp32): ONNX Runtime's
fused u8 x s8 products saturate 16-bit pair sums on x86 CPUs with AVX2 and
no VNNI (its quantization docs advise reduce_range there), so on such a CPU
its int8 answer is not the integer one Kestrel gives, and the distance to
the float model says which of the two is off.

  python bench/quantized_vs_ort.py --kestrel build/kestrel --models models \\
      --shared ../shared/models --threads 2 --runs 10
"""
import argparse
import os
import subprocess
import tempfile

import kestrel
import onnxruntime as ort

from bench_models import kestrel_bench, ort_median_ms, output_agreement, prepare_inputs

# name, file, folder key, symbolic dims, `kestrel quantize` pre-processing (None: already quantized)
MODELS = [
    ("BlazeFace front 128", "blazeface_front_128.onnx", "models", [],
     ["--layout", "nhwc", "--scale", str(1 / 127.5), "--mean", "1"]),
    ("BlazeFace back 256", "blazeface_back_256.onnx", "models", [],
     ["--layout", "nhwc", "--scale", str(1 / 127.5), "--mean", "1"]),
    ("UltraFace 320", "ultraface_320.onnx", "models", [], ["--scale", "1", "--mean", "127", "--std", "128"]),
    ("PP-OCRv4 det 640", "ppocrv4_det.onnx", "models",
     ["p2o.DynamicDimension.0=1", "p2o.DynamicDimension.1=640", "p2o.DynamicDimension.2=640"],
     ["--size", "640x640", "--bgr", "--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"]),
    ("YOLOX-nano 416", "yolox_nano.onnx", "shared", [], ["--scale", "1"]),
    ("YOLOv8n int8 640", "yolov8n_int8.onnx", "shared", [], None),
    ("IS-Net small 1024", "isnet_small.onnx", "models", [], None),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--only", nargs="*", default=[], help="run only the models whose name contains one of these")
    a = ap.parse_args()
    photos = os.path.join(a.models, "photos")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, file, where, dims, prep in MODELS:
            if a.only and not any(o.lower() in name.lower() for o in a.only):
                continue
            model = os.path.join(a.models if where == "models" else a.shared, file)
            if not os.path.exists(model):
                print(f"{name}: {model} missing, skipped")
                continue
            runs = min(a.runs, 3) if "isnet" in file else a.runs
            qmodel = model
            if prep is not None:
                qmodel = os.path.join(work, "int8_" + file)
                subprocess.check_call([a.kestrel, "quantize", model, "--calib", photos, "--out", qmodel,
                                       "--min-cosine", "0", "--check", "1", "--threads", str(a.threads)] + prep,
                                      stdout=subprocess.DEVNULL)
            with tempfile.TemporaryDirectory() as d:
                feeds, flags = prepare_inputs(a.kestrel, model, dims or [], d)
                threads = ["--backend", "cpu", "--threads", str(a.threads)]
                kq = kestrel_bench(a.kestrel, qmodel, flags, runs, threads)["median_ms"]
                oq, oq_out = ort_median_ms(qmodel, feeds, a.threads, runs)
                kf = of = of_out = None
                if prep is not None:
                    kf = kestrel_bench(a.kestrel, model, flags, runs, threads)["median_ms"]
                    of, of_out = ort_median_ms(model, feeds, a.threads, runs)
                so = kestrel.SessionOptions()
                so.intra_op_num_threads = a.threads
                ours = kestrel.InferenceSession(qmodel, so, providers=["CPUExecutionProvider"]).run(None, feeds)
                agree = [output_agreement(k, r) for k, r in zip(ours, oq_out)]
                # Each engine's int8 outputs against the float model's (min cosine).
                vs_float = None
                if of_out is not None:
                    vs_float = tuple(min(output_agreement(q, f)[0] for q, f in zip(out, of_out)) for out in (ours, oq_out))
                rows.append((name, kf, kq, of, oq, min(c for c, _ in agree), max(m for _, m in agree), vs_float))
                print(f"{name}: kestrel fp32 {kf} int8 {kq:.2f} ms, onnxruntime fp32 {of} int8 {oq:.2f} ms", flush=True)
    print(f"\nCPU, {a.threads} threads, median of {a.runs} runs after warm-up; onnxruntime {ort.__version__}")
    print("| model | Kestrel fp32 ms | Kestrel int8 ms | ORT fp32 ms | ORT int8 ms | Kestrel int8 / Kestrel fp32 speed"
          " | Kestrel int8 / ORT int8 speed | Kestrel vs ORT on int8: cosine, max abs / range"
          " | int8 vs the float model, min cosine: Kestrel, ORT |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    fmt = lambda v: "-" if v is None else f"{v:.2f}"
    for name, kf, kq, of, oq, cos, rel, vs_float in rows:
        own = "-" if kf is None else f"{kf / kq:.2f}x"
        floats = "-" if vs_float is None else f"{vs_float[0]:.4f}, {vs_float[1]:.4f}"
        print(f"| {name} | {fmt(kf)} | {kq:.2f} | {fmt(of)} | {oq:.2f} | {own} | {oq / kq:.2f}x | {cos:.6f}, {rel:.2g}"
              f" | {floats} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""GEMM throughput on the GPU, in one run: Kestrel-Vulkan's GEMM kernels
(scalar on 64x64 and on 128x128 tiles in float32; scalar and tensor-core in
float16 storage) beside torch.matmul (float16, float32 with and without TF32)
on the same shapes, as TFLOP/s and as ratios, with Kestrel's outputs checked
against a float64 product of the same input.

Each shape is a chain of eight MatMuls whose weights stay on the device, as a
transformer's projections run: y = x W1 W2 ... W8. Two Kestrel figures: the
whole run (the input and output cross PCIe and are converted on the host),
and the GEMMs alone, from `bench --profile`, which waits for the device after
each node: the seven MatMuls after the first (whose time holds the upload).
torch's figure is the chain on the device, timed by CUDA events.

Needs torch (CUDA) and onnx (the GPU machine has them).

  python3 bench/gemm_gpu.py --kestrel build/kestrel --work /tmp/gemm [--runs 10]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_models import kestrel_bench, output_agreement, selected_gpu  # noqa: E402

# name: (rows, widths along the chain: x is [rows, widths[0]], W_i is [widths[i], widths[i+1]])
SHAPES = {
    "4096x4096x4096": (4096, [4096] * 9),
    "CLIP MLP, batch 64: 12608x768->3072->768": (12608, [768, 3072] * 4 + [768]),
    "DINOv2-S MLP: 1370x384->1536->384": (1370, [384, 1536] * 4 + [384]),
    # SAM ViT-B's products on its 64x64 grid: the MLP, and the attention's output projection
    "SAM MLP: 4096x768->3072->768": (4096, [768, 3072] * 4 + [768]),
    "SAM out projection: 4096x768->768": (4096, [768] * 9),
}
# Kestrel's variants: (label, precision, environment)
VARIANTS = [
    ("fp32 64x64 tiles", "fp32", {"KESTREL_GEMM_TILES": "small"}),
    ("fp32 128x128 tiles", "fp32", {"KESTREL_GEMM_TILES": "large"}),
    ("fp16 scalar", "fp16", {"KESTREL_COOPMAT": "off", "KESTREL_GEMM_TILES": "large"}),
    ("fp16 tensor cores", "fp16", {}),
]


def chain_model(path, rows, widths, seed):
    rng = np.random.default_rng(seed)
    weights = [(rng.standard_normal((widths[i], widths[i + 1])) / np.sqrt(widths[i])).astype(np.float32)
               for i in range(len(widths) - 1)]
    nodes, inits = [], []
    prev = "x"
    for i, w in enumerate(weights):
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        out = "y" if i == len(weights) - 1 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [out]))
        prev = out
    g = helper.make_graph(nodes, "gemm_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, widths[0]])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, widths[-1]])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return weights


def flops(rows, widths):
    return sum(2.0 * rows * widths[i] * widths[i + 1] for i in range(len(widths) - 1))


def torch_ms(x, weights, dtype, tf32, runs):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = tf32
    xs = torch.from_numpy(x).cuda().to(dtype)
    ws = [torch.from_numpy(w).cuda().to(dtype) for w in weights]

    def chain():
        y = xs
        for w in ws:
            y = y @ w
        return y

    return cuda_median_ms(chain, runs)


def cuda_median_ms(fn, runs):
    """Median ms of fn() on the device (CUDA events) after three untimed calls."""
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def reference(x, weights):
    import torch
    y = torch.from_numpy(x).cuda().double()
    for w in weights:
        y = y @ torch.from_numpy(w).cuda().double()
    return y.cpu().numpy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--shapes", nargs="*", default=list(SHAPES))
    ap.add_argument("--coop-tiles", nargs="*", default=[], choices=["tiny", "small", "wide", "large"],
                    help="also time the tensor-core GEMM with each of these tiles forced")
    a = ap.parse_args()
    variants = VARIANTS + [(f"fp16 tensor cores, {t} tile", "fp16", {"KESTREL_GEMM_TILES": t}) for t in a.coop_tiles]
    os.makedirs(a.work, exist_ok=True)
    gpu = selected_gpu(a.kestrel)
    rows_out = []
    for si, name in enumerate(a.shapes):
        rows, widths = SHAPES[name]
        model = os.path.join(a.work, f"chain{si}.onnx")
        weights = chain_model(model, rows, widths, seed=si)
        f = flops(rows, widths)
        row = {"shape": name, "gflop": f / 1e9}
        with tempfile.TemporaryDirectory() as d:
            subprocess.check_call([a.kestrel, "run", model, "--backend", "cpu", "--save-inputs", d],
                                  stdout=subprocess.DEVNULL)
            x = np.load(os.path.join(d, "0.npy"))
            ref = reference(x, weights)
            flags = ["--input", f"x={os.path.join(d, '0.npy')}"]
            for label, precision, extra_env in variants:
                env = dict(os.environ, **extra_env)
                vk = ["--backend", "vulkan", "--precision", precision]
                ms = kestrel_bench(a.kestrel, model, flags, a.runs, vk, env)["median_ms"]
                nodes = kestrel_bench(a.kestrel, model, flags, a.runs, vk + ["--profile"], env)["profile"]["nodes"]
                gemm_ms = sum(n["ms"] for n in nodes[1:])
                gemm_flops = f - 2.0 * rows * widths[0] * widths[1]
                out = os.path.join(d, "out")
                subprocess.check_call([a.kestrel, "run", model, "--output-dir", out] + vk + flags, env=env,
                                      stdout=subprocess.DEVNULL)
                cos, err = output_agreement(np.load(os.path.join(out, "0.npy")), ref)
                row[label] = {"ms": ms, "run_tflops": f / ms / 1e9, "tflops": gemm_flops / gemm_ms / 1e9,
                              "cos": cos, "err": err}
        import torch
        for label, dtype, tf32 in [("torch fp16", torch.float16, False), ("torch fp32 TF32", torch.float32, True),
                                   ("torch fp32", torch.float32, False)]:
            ms = torch_ms(x, weights, dtype, tf32, a.runs)
            row[label] = {"ms": ms, "tflops": f / ms / 1e9}
        rows_out.append(row)
        print(json.dumps(row), flush=True)

    print(f"\nGPU: {gpu['name']} (Vulkan {gpu['api_version']}, driver {gpu['driver_info']}); host "
          f"{platform.processor() or platform.machine()}; torch {__import__('torch').__version__}; "
          f"median of {a.runs} runs; GEMM TFLOP/s (Kestrel: MatMuls 2 to 8, each waited for; in brackets, the whole "
          f"run with upload, download and host conversions)")
    kcols = [v[0] for v in variants]
    tcols = ["torch fp16", "torch fp32 TF32", "torch fp32"]
    print("| chain of 8 | " + " | ".join(f"Kestrel {c}" for c in kcols) + " | " + " | ".join(tcols) +
          " | tensor cores / torch fp16 | 128x128 fp32 / torch fp32 |")
    print("|---|" + "---:|" * (len(kcols) + len(tcols) + 2))
    for r in rows_out:
        cells = [f"{r[c]['tflops']:.1f} ({r[c]['run_tflops']:.1f})" for c in kcols] + [f"{r[c]['tflops']:.1f}" for c in tcols]
        print(f"| {r['shape']} ({r['gflop']:.0f} GFLOP) | " + " | ".join(cells) + " | "
              f"{r['fp16 tensor cores']['tflops'] / r['torch fp16']['tflops']:.2f}x | "
              f"{r['fp32 128x128 tiles']['tflops'] / r['torch fp32']['tflops']:.2f}x |")
    print("\nFaithfulness against a float64 product of the same input (cosine, max abs / range):")
    for r in rows_out:
        print(f"- {r['shape']}: " + "; ".join(f"{c} {r[c]['cos']:.7f}, {r[c]['err']:.1e}" for c in kcols))


if __name__ == "__main__":
    main()

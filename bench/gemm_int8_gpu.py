#!/usr/bin/env python3
"""Integer GEMM throughput on the GPU, in one run: Kestrel-Vulkan's quantized
products (int8 tensor cores where the device has them, else the plain integer
kernel) beside its float16 tensor-core GEMM and torch's int8 and float16
products (torch._int_mm, torch.matmul) on the same shapes, as TOPS and ratios.

Each shape is a chain of eight quantized projections in the QDQ form a
quantizer writes (x -> QuantizeLinear -> DequantizeLinear -> MatMul with a
DequantizeLinear'd int8 weight per column, ...): Kestrel fuses it into
QLinearMatMul nodes (uint8 activations, exact int32 sums, requantized) and a
last MatMulIntegerToFloat. The same weights' float chain runs in float16 for
the float figure. Kestrel's int8 output is checked against its CPU backend's
(exact integer sums on both: the same bits expected) and both against the
float64 product of the float chain.

Kestrel's GEMM figure comes from `bench --profile` (each node waited for): the
products 2 to 8, each with its requantization pass. torch's are the chain on
the device timed by CUDA events (int8: the products alone, int32 out, no
requantization).

  python3 bench/gemm_int8_gpu.py --kestrel build/kestrel --work /tmp/gemm8 [--runs 10]
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
from gemm_gpu import SHAPES, chain_model, cuda_median_ms, flops, reference, torch_ms  # noqa: E402

PRODUCTS = ("QLinearMatMul", "MatMulIntegerToFloat")


def qdq_chain_model(path, x, weights):
    """The float chain's QDQ form: each activation quantized per tensor (uint8, its range from the float chain on
    x), each weight int8 per column (symmetric)."""
    nodes, inits = [], []
    h, prev = x.astype(np.float64), "x"
    for i, w in enumerate(weights):
        lo, hi = min(0.0, float(h.min())), max(0.0, float(h.max()))
        scale = np.float32((hi - lo) / 255 or 1.0)
        zp = np.uint8(np.clip(round(-lo / float(scale)), 0, 255))
        ws = (np.abs(w).max(axis=0) / 127).astype(np.float32)
        wq = np.clip(np.round(w / ws), -127, 127).astype(np.int8)
        inits += [numpy_helper.from_array(np.array(scale), f"s{i}"), numpy_helper.from_array(np.array(zp), f"z{i}"),
                  numpy_helper.from_array(wq, f"wq{i}"), numpy_helper.from_array(ws, f"ws{i}"),
                  numpy_helper.from_array(np.zeros(ws.shape, np.int8), f"wz{i}")]
        out = "y" if i == len(weights) - 1 else f"h{i}"
        nodes += [helper.make_node("QuantizeLinear", [prev, f"s{i}", f"z{i}"], [f"q{i}"]),
                  helper.make_node("DequantizeLinear", [f"q{i}", f"s{i}", f"z{i}"], [f"d{i}"]),
                  helper.make_node("DequantizeLinear", [f"wq{i}", f"ws{i}", f"wz{i}"], [f"w{i}"], axis=1),
                  helper.make_node("MatMul", [f"d{i}", f"w{i}"], [out])]
        prev = out
        h = h @ w
    g = helper.make_graph(nodes, "qdq_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [x.shape[0], weights[-1].shape[1]])],
                          inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def torch_int8_ms(rows, widths, runs):
    import torch
    g = torch.Generator(device="cuda").manual_seed(0)
    # An int8 input of each width (an int32 result is not the next product's input: the products alone);
    # weights column-major, the layout cuBLAS's int8 kernels take.
    xs = {k: torch.randint(-128, 128, (rows, k), dtype=torch.int8, device="cuda", generator=g) for k in set(widths)}
    ws = [torch.randint(-128, 128, (widths[i + 1], widths[i]), dtype=torch.int8, device="cuda", generator=g).t()
          for i in range(len(widths) - 1)]

    def chain():
        for w in ws:
            torch._int_mm(xs[w.shape[0]], w)

    return cuda_median_ms(chain, runs)


def product_ms(kestrel, model, flags, runs, vk, quantized, env):
    """Device ms of the chain's products, each waited for: the float chain's 2 to 8 (the first node's time holds
    the input's upload), the quantized chain's eight (its first node is the input's QuantizeLinear)."""
    profile = kestrel_bench(kestrel, model, flags, runs, vk + ["--profile"], env)["profile"]
    kernels = {k: round(v["device_ms"], 3) for k, v in profile.get("kernels", {}).items()}
    if quantized:
        return sum(profile["ops"].get(op, 0.0) for op in PRODUCTS), kernels
    return sum(n["ms"] for n in profile["nodes"][1:]), kernels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--shapes", nargs="*", default=list(SHAPES))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    gpu = selected_gpu(a.kestrel)
    rows_out = []
    for si, name in enumerate(a.shapes):
        rows, widths = SHAPES[name]
        fmodel, qmodel = os.path.join(a.work, f"chain{si}.onnx"), os.path.join(a.work, f"qchain{si}.onnx")
        weights = chain_model(fmodel, rows, widths, seed=si)
        f = flops(rows, widths)
        gemm_flops = f - 2.0 * rows * widths[0] * widths[1]
        row = {"shape": name, "gflop": f / 1e9}
        with tempfile.TemporaryDirectory() as d:
            subprocess.check_call([a.kestrel, "run", fmodel, "--backend", "cpu", "--save-inputs", d],
                                  stdout=subprocess.DEVNULL)
            x = np.load(os.path.join(d, "0.npy"))
            qdq_chain_model(qmodel, x, weights)
            ref = reference(x, weights)
            flags = ["--input", f"x={os.path.join(d, '0.npy')}"]
            outs = {}
            plain = dict(os.environ, KESTREL_COOPMAT="off", KESTREL_INT_DOT="off")
            dot = dict(os.environ, KESTREL_COOPMAT="off", KESTREL_INT_DOT="on")
            for label, model, vk, env in [
                    ("fp16 tensor cores", fmodel, ["--backend", "vulkan", "--precision", "fp16"], None),
                    ("int8", qmodel, ["--backend", "vulkan"], None),
                    ("int8 dot products", qmodel, ["--backend", "vulkan"], dot),
                    ("int8 plain kernel", qmodel, ["--backend", "vulkan"], plain),
                    ("int8 on the CPU", qmodel, ["--backend", "cpu"], None)]:
                out = os.path.join(d, label.replace(" ", "_"))
                subprocess.check_call([a.kestrel, "run", model, "--output-dir", out] + vk + flags, env=env,
                                      stdout=subprocess.DEVNULL)
                outs[label] = np.load(os.path.join(out, "0.npy"))
                if label == "int8 on the CPU":
                    continue
                ms = kestrel_bench(a.kestrel, model, flags, a.runs, vk, env)["median_ms"]
                quantized = model == qmodel
                gms, kernels = product_ms(a.kestrel, model, flags, a.runs, vk, quantized, env)
                cos, err = output_agreement(outs[label], ref)
                row[label] = {"ms": ms, "tops": (f if quantized else gemm_flops) / gms / 1e9, "cos": cos, "err": err,
                              "device ms by kernel": kernels}
            row["int8 equals cpu"] = bool(np.array_equal(outs["int8"], outs["int8 on the CPU"]))
            row["int8 vs cpu"] = output_agreement(outs["int8"], outs["int8 on the CPU"])
            row["plain kernel equals cpu"] = bool(np.array_equal(outs["int8 plain kernel"], outs["int8 on the CPU"]))
            row["dot products equal cpu"] = bool(np.array_equal(outs["int8 dot products"], outs["int8 on the CPU"]))
        import torch
        ms = torch_ms(x, weights, torch.float16, False, a.runs)
        row["torch fp16"] = {"ms": ms, "tops": f / ms / 1e9}
        ms = torch_int8_ms(rows, widths, a.runs)
        row["torch int8"] = {"ms": ms, "tops": f / ms / 1e9}
        rows_out.append(row)
        print(json.dumps(row), flush=True)

    print(f"\nGPU: {gpu['name']} (Vulkan {gpu['api_version']}, driver {gpu['driver_info']}; int8 tensor cores: "
          f"{gpu.get('coop_matrix_int8_16x16x32')}); host {platform.processor() or platform.machine()}; torch "
          f"{__import__('torch').__version__}; median of {a.runs} runs; TOPS of products 2 to 8 (Kestrel, each node "
          f"waited for: float 2 to 8, int8 all eight with their requantization) and of the chain (torch)")
    print("| chain of 8 | Kestrel int8 | int8, dot products | int8, plain kernel | Kestrel fp16 tensor cores | "
          "torch._int_mm int8 | torch.matmul fp16 | Kestrel int8 / fp16 | Kestrel int8 / torch int8 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows_out:
        k8, d8, p8, k16, t8, t16 = (r[c]["tops"] for c in ("int8", "int8 dot products", "int8 plain kernel",
                                                             "fp16 tensor cores", "torch int8", "torch fp16"))
        print(f"| {r['shape']} ({r['gflop']:.0f} GFLOP) | {k8:.1f} | {d8:.1f} | {p8:.1f} | {k16:.1f} | {t8:.1f} | "
              f"{t16:.1f} | {k8 / k16:.2f}x | {k8 / t8:.2f}x |")
    print("\nFaithfulness against the float64 product of the float chain (cosine, max abs / range), and the int8 run "
          "against Kestrel's CPU backend on the same file:")
    for r in rows_out:
        vs_cpu = "identical" if r["int8 equals cpu"] else "cosine %.7f, %.1e" % tuple(r["int8 vs cpu"])
        vs_cpu += "; plain kernel " + ("identical" if r["plain kernel equals cpu"] else "differs")
        vs_cpu += "; dot products " + ("identical" if r["dot products equal cpu"] else "differs")
        print(f"- {r['shape']}: int8 {r['int8']['cos']:.7f}, {r['int8']['err']:.1e}; fp16 "
              f"{r['fp16 tensor cores']['cos']:.7f}, {r['fp16 tensor cores']['err']:.1e}; int8 vs CPU: {vs_cpu}")


if __name__ == "__main__":
    main()

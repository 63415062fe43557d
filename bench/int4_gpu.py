#!/usr/bin/env python3
"""4-bit weights on the GPU, in one run: Kestrel-Vulkan's com.microsoft MatMulNBits (weights left packed,
dequantized where the kernel loads them) beside its float16 MatMul on the same weights dequantized, and torch's
float16 matmul on those, as device milliseconds, weight bandwidth and ratios.

Each shape is a chain of projections as a decoder's layers have them (4096 -> 11008 -> 4096, twice): rows 1 (one
token: each weight read once, bandwidth-bound) and 512 (a prompt: compute-bound). The 4-bit model is written here
as ONNX Runtime's weight-only quantizer writes it (asymmetric uint4 blocks of 32 along K, packed zero points, float
scales); the float model holds the same weights dequantized, so every run computes the same product. Faithfulness:
Kestrel's output against ONNX Runtime's CPU run of the same 4-bit file (cosine, max abs over the range).

Kestrel's figures are from `bench --profile`: the products' time with each node waited for (a submit and a wait in
each), and the device's own time for the run's kernels (Vulkan timestamps); torch's is the chain on the device timed
by CUDA events.

  python3 bench/int4_gpu.py --kestrel build/kestrel --work /tmp/int4 [--runs 20]
"""
import argparse
import json
import os
import platform
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_models import kestrel_bench, output_agreement, selected_gpu  # noqa: E402
from gemm_gpu import cuda_median_ms  # noqa: E402

WIDTHS = [4096, 11008, 4096, 11008, 4096]
BLOCK = 32


def quantize_4bit(w):
    """W [K, N] as MatMulNBits' B [N, blocks, BLOCK / 2], scales [N * blocks], packed zero points, and the
    dequantized float weights those give."""
    K, N = w.shape
    blocks = (K + BLOCK - 1) // BLOCK
    wt = np.zeros((N, blocks * BLOCK), np.float32)
    wt[:, :K] = w.T
    wb = wt.reshape(N, blocks, BLOCK)
    lo, hi = np.minimum(wb.min(axis=2), 0), np.maximum(wb.max(axis=2), 0)
    scale = ((hi - lo) / 15).astype(np.float32)
    scale[scale == 0] = 1
    zp = np.clip(np.round(-lo / scale), 0, 15).astype(np.uint8)
    q = np.clip(np.round(wb / scale[:, :, None]) + zp[:, :, None], 0, 15).astype(np.uint8)
    packed = (q[:, :, 0::2] | (q[:, :, 1::2] << 4)).astype(np.uint8)
    zpad = np.zeros((N, blocks + blocks % 2), np.uint8)
    zpad[:, :blocks] = zp
    zpacked = (zpad[:, 0::2] | (zpad[:, 1::2] << 4)).astype(np.uint8)
    deq = ((q.astype(np.float32) - zp[:, :, None]) * scale[:, :, None]).reshape(N, -1)[:, :K].T
    return packed, scale.reshape(-1), zpacked, np.ascontiguousarray(deq)


def chain_models(work, rows, seed, widths=WIDTHS):
    """The 4-bit chain of `widths` and its float twin; the input x."""
    rng = np.random.default_rng(seed)
    nbits_nodes, float_nodes, nbits_inits, float_inits = [], [], [], []
    prev = "x"
    for i in range(len(widths) - 1):
        K, N = widths[i], widths[i + 1]
        packed, scales, zps, deq = quantize_4bit((rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32))
        out = "y" if i == len(widths) - 2 else f"h{i}"
        nbits_inits += [numpy_helper.from_array(packed, f"b{i}"), numpy_helper.from_array(scales, f"s{i}"),
                        numpy_helper.from_array(zps, f"z{i}")]
        nbits_nodes.append(helper.make_node("MatMulNBits", [prev, f"b{i}", f"s{i}", f"z{i}"], [out],
                                            domain="com.microsoft", K=K, N=N, bits=4, block_size=BLOCK))
        float_inits.append(numpy_helper.from_array(deq, f"w{i}"))
        float_nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [out]))
        prev = out
    x = rng.standard_normal((rows, widths[0])).astype(np.float32)
    io = ([helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, widths[0]])],
          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, widths[-1]])])
    paths = []
    for name, nodes, inits, opsets in [
            ("nbits", nbits_nodes, nbits_inits, [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]),
            ("float", float_nodes, float_inits, [helper.make_opsetid("", 17)])]:
        path = os.path.join(work, f"{name}_{rows}.onnx")
        onnx.save(helper.make_model(helper.make_graph(nodes, name, *io, inits), opset_imports=opsets, ir_version=8),
                  path)
        paths.append(path)
    np.save(os.path.join(work, f"x_{rows}.npy"), x)
    return paths[0], paths[1], x, [numpy_helper.to_array(t) for t in float_inits]


def products_ms(kestrel, model, flags, runs, vk, op):
    """The products' ms a run with each node waited for (host clock: submit and wait included), and the
    device's own time for all of the run's kernels (Vulkan timestamps)."""
    profile = kestrel_bench(kestrel, model, flags, runs, vk + ["--profile"])["profile"]
    device = sum(k["device_ms"] for k in profile.get("kernels", {}).values())
    return profile["ops"][op], device


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rows", type=int, nargs="*", default=[1, 512])
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    import onnxruntime as ort
    import torch
    gpu = selected_gpu(a.kestrel)
    weight_bytes_4bit = sum(WIDTHS[i] * WIDTHS[i + 1] * (0.5 + 4 / BLOCK + 0.5 / BLOCK) for i in range(len(WIDTHS) - 1))
    weight_bytes_fp16 = sum(WIDTHS[i] * WIDTHS[i + 1] * 2 for i in range(len(WIDTHS) - 1))
    table = []
    for rows in a.rows:
        nbits, floatm, x, deq = chain_models(a.work, rows, seed=rows)
        flags = ["--input", f"x={os.path.join(a.work, f'x_{rows}.npy')}"]
        ref = ort.InferenceSession(nbits, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        row = {"rows": rows, "gflop": 2.0 * rows * sum(WIDTHS[i] * WIDTHS[i + 1] for i in range(len(WIDTHS) - 1)) / 1e9}
        for label, model, op, vk in [("int4 fp16", nbits, "MatMulNBits", ["--precision", "fp16"]),
                                     ("int4 fp32", nbits, "MatMulNBits", ["--precision", "fp32"]),
                                     ("fp16 weights", floatm, "MatMul", ["--precision", "fp16"])]:
            vk = ["--backend", "vulkan"] + vk
            out = os.path.join(a.work, f"out_{rows}_{label.replace(' ', '_')}")
            subprocess.check_call([a.kestrel, "run", model, "--output-dir", out] + vk + flags, stdout=subprocess.DEVNULL)
            cos, err = output_agreement(np.load(os.path.join(out, "0.npy")), ref)
            ms, device = products_ms(a.kestrel, model, flags, a.runs, vk, op)
            row[label] = {"ms": ms, "device_ms": device, "cos": cos, "err": err}
        xs = torch.from_numpy(x).cuda().half()
        ws = [torch.from_numpy(w).cuda().half() for w in deq]

        def chain():
            y = xs
            for w in ws:
                y = y @ w
            return y

        row["torch fp16"] = {"ms": cuda_median_ms(chain, a.runs)}
        cos, err = output_agreement(chain().float().cpu().numpy(), ref)
        row["torch fp16"].update(cos=cos, err=err)
        table.append(row)
        print(json.dumps(row), flush=True)

    print(f"\nGPU: {gpu['name']} (Vulkan {gpu['api_version']}, driver {gpu['driver_info']}); host "
          f"{platform.processor() or platform.machine()}; torch {torch.__version__}; median of {a.runs} runs; device "
          f"ms of the four products ({' -> '.join(map(str, WIDTHS))}); weights {weight_bytes_4bit / 1e6:.0f} MB in "
          f"4 bits, {weight_bytes_fp16 / 1e6:.0f} MB in float16")
    print("| rows | Kestrel int4, fp16 run | Kestrel int4, fp32 run | Kestrel fp16 weights | torch.matmul fp16 | "
          "int4 / fp16 weights | int4 / torch | int4 weight GB/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in table:
        k4, k4f, k16, t16 = (r[c]["ms"] for c in ("int4 fp16", "int4 fp32", "fp16 weights", "torch fp16"))
        print(f"| {r['rows']} ({r['gflop']:.1f} GFLOP) | {k4:.3f} | {k4f:.3f} | {k16:.3f} | {t16:.3f} | "
              f"{k16 / k4:.2f}x | {t16 / k4:.2f}x | {weight_bytes_4bit / k4 / 1e6:.0f} |")
    # Each node waited for puts a submit and a wait in every node's time: the kernels' own device time
    # (timestamps, the whole run's) is what the kernels cost.
    print("\nThe kernels' device time alone (Vulkan timestamps, all of a run's dispatches), ms:")
    print("| rows | Kestrel int4, fp16 run | Kestrel int4, fp32 run | Kestrel fp16 weights | torch.matmul fp16 | "
          "int4 / torch | int4 weight GB/s | fp16 weight GB/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in table:
        k4, k4f, k16 = (r[c]["device_ms"] for c in ("int4 fp16", "int4 fp32", "fp16 weights"))
        t16 = r["torch fp16"]["ms"]
        print(f"| {r['rows']} | {k4:.3f} | {k4f:.3f} | {k16:.3f} | {t16:.3f} | {t16 / k4:.2f}x | "
              f"{weight_bytes_4bit / k4 / 1e6:.0f} | {weight_bytes_fp16 / k16 / 1e6:.0f} |")
    print("\nAgainst ONNX Runtime's CPU run of the 4-bit file (cosine, max abs / range):")
    for r in table:
        print(f"- {r['rows']} rows: " + "; ".join(f"{c} {r[c]['cos']:.7f}, {r[c]['err']:.1e}" for c in
                                                   ("int4 fp16", "int4 fp32", "fp16 weights", "torch fp16")))


if __name__ == "__main__":
    main()

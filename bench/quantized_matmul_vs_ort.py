"""One quantized transformer projection on the CPU, Kestrel beside ONNX Runtime (CPU EP) in one run, in
the three forms quantization tools write it:
  - QDQ with a quantized output (DequantizeLinear, DequantizeLinear -> MatMul -> QuantizeLinear):
    both run QLinearMatMul;
  - QDQ with a float output and a bias (a Linear before a residual sum): Kestrel runs
    MatMulIntegerToFloat, ONNX Runtime a float Gemm on the dequantized weights;
  - quantize_dynamic's (DynamicQuantizeLinear, MatMulInteger, Cast, Mul): both run
    DynamicQuantizeMatMul.
Kestrel at each instruction-set level given (KESTREL_CPU_ISA: avx512 takes VNNI where the CPU has it,
avx2 the int16 product); ONNX Runtime at the CPU's own. Prints medians and ratios (above 1: Kestrel
faster), and how far Kestrel's outputs are from ONNX Runtime's.

  python bench/quantized_matmul_vs_ort.py --kestrel build/kestrel --rows 197 --k 768 --n 3072 \\
      --threads 2 --isa avx512 avx2 --runs 50
"""
import argparse
import json
import os
import subprocess
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

from bench_models import output_agreement, session_median_ms


def qdq_model(path, rows, K, N, float_out, rng):
    xs, xzp = np.float32(0.027), np.uint8(128)
    w = rng.integers(-127, 128, (K, N)).astype(np.int8)
    ws = rng.uniform(0.001, 0.01, N).astype(np.float32)
    inits = [numpy_helper.from_array(np.array(xs), "xs"), numpy_helper.from_array(np.array(xzp), "xzp"),
             numpy_helper.from_array(w, "wq"), numpy_helper.from_array(ws, "ws"),
             numpy_helper.from_array(np.zeros(N, np.int8), "wzp")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xzp"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xzp"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wzp"], ["wd"], axis=1),
             helper.make_node("MatMul", ["xd", "wd"], ["m"])]
    if float_out:
        inits.append(numpy_helper.from_array(rng.normal(0, 1, N).astype(np.float32), "b"))
        nodes.append(helper.make_node("Add", ["m", "b"], ["y"]))
        out = TensorProto.FLOAT
    else:
        inits += [numpy_helper.from_array(np.array(np.float32(0.06)), "ys"),
                  numpy_helper.from_array(np.array(np.uint8(128)), "yzp")]
        nodes.append(helper.make_node("QuantizeLinear", ["m", "ys", "yzp"], ["y"]))
        out = TensorProto.UINT8
    g = helper.make_graph(nodes, "projection", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows, K])],
                          [helper.make_tensor_value_info("y", out, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)


def dynamic_model(path, rows, K, N, rng, work):
    w = (rng.normal(0, 0.05, (K, N))).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "projection",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows, K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w, "w")])
    fp = os.path.join(work, "float.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), fp)
    quantize_dynamic(fp, path, weight_type=QuantType.QInt8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--rows", type=int, default=197)
    ap.add_argument("--k", type=int, default=768)
    ap.add_argument("--n", type=int, default=3072)
    ap.add_argument("--threads", nargs="+", type=int, default=[2])
    ap.add_argument("--isa", nargs="+", default=["avx512", "avx2"])
    ap.add_argument("--runs", type=int, default=50)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        x = rng.uniform(-3, 3, (1, a.rows, a.k)).astype(np.float32)
        xin = os.path.join(work, "x.npy")
        np.save(xin, x)
        forms = [("QDQ, quantized output", "qdq_q.onnx"), ("QDQ, float output + bias", "qdq_f.onnx"),
                 ("quantize_dynamic", "dynamic.onnx")]
        qdq_model(os.path.join(work, forms[0][1]), a.rows, a.k, a.n, False, rng)
        qdq_model(os.path.join(work, forms[1][1]), a.rows, a.k, a.n, True, rng)
        dynamic_model(os.path.join(work, forms[2][1]), a.rows, a.k, a.n, rng, work)
        for label, file in forms:
            path = os.path.join(work, file)
            for t in a.threads:
                so = ort.SessionOptions()
                so.intra_op_num_threads = t
                so.log_severity_level = 3
                s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
                o = session_median_ms(s, {"x": x}, a.runs, warmups=5)
                ref = s.run(None, {"x": x})[0]
                for isa in a.isa:
                    env = dict(os.environ, KESTREL_CPU_ISA=isa)
                    k = json.loads(subprocess.check_output(
                        [a.kestrel, "bench", path, "--backend", "cpu", "--threads", str(t), "--runs", str(a.runs),
                         "--json", "--input", f"x={xin}"], env=env))["median_ms"]
                    with tempfile.TemporaryDirectory() as d:
                        subprocess.check_call([a.kestrel, "run", path, "--backend", "cpu", "--input", f"x={xin}",
                                               "--output-dir", d], env=env, stdout=subprocess.DEVNULL)
                        ours = np.load(os.path.join(d, "0.npy"))
                    cos, rel = output_agreement(ours, ref)
                    rows.append((label, t, isa, k, o, cos, rel))
                    print(f"{label}, {t} threads, {isa}: kestrel {k:.3f} ms, onnxruntime {o:.3f} ms", flush=True)
    print(f"\n[{a.rows}, {a.k}] x [{a.k}, {a.n}], median of {a.runs} runs; onnxruntime {ort.__version__}")
    print("| form | threads | Kestrel level | Kestrel ms | ORT ms | ORT / Kestrel | Kestrel vs ORT: cosine, max abs / range |")
    print("|---|---:|---|---:|---:|---:|---|")
    for label, t, isa, k, o, cos, rel in rows:
        print(f"| {label} | {t} | {isa} | {k:.3f} | {o:.3f} | {o / k:.2f}x | {cos:.7f}, {rel:.2g} |")


if __name__ == "__main__":
    main()

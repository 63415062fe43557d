#!/usr/bin/env python3
"""Kestrel and ONNX Runtime's CPU EP in one process, run in alternation, for
each real model: the fair comparison where one run takes a tenth of a
millisecond and the host's state (which cores, which clocks) moves a whole
process's timings by up to 2x. Both engines are called from Python the same
way (Kestrel through its Python package, ONNX Runtime through an IO binding);
each call's time includes reading the outputs back into numpy.

Each round times a block of runs of every engine, in an order that alternates
between rounds. Before each block the process sleeps (--settle) and makes two
untimed calls: an engine's idle worker threads keep spinning for tens of
milliseconds after its last run (ONNX Runtime's intra-op pool does by
default), and on a machine with as many cores as threads they would take a
core from the next engine's block (on a 2-core machine this more than doubled
Kestrel's 2-thread times). A round's ratio is ONNX Runtime's median over Kestrel's (above
1: Kestrel is faster), against ONNX Runtime's fastest thread count.

  .deps/python/bin/python bench/interleaved_vs_ort.py --kestrel build/kestrel \
      --models models [--only silero] [--backend vulkan] [--threads 16] [--ort-threads 1,16] \
      [--rounds 30] [--block 100] [--cpus 0-15]
"""
import argparse
import os
import platform
import time

import numpy as np
import onnxruntime as ort

from bench_models import each_model, output_agreement
import kestrel  # the installed package: pip install . (scripts/python_package.sh)

PROVIDERS = {"vulkan": ["VulkanExecutionProvider"], "cpu": ["CPUExecutionProvider"]}


def kestrel_session(model, backend, precision, threads):
    opts = kestrel.SessionOptions()
    opts.precision = precision
    opts.intra_op_num_threads = threads
    return kestrel.InferenceSession(model, opts, providers=PROVIDERS[backend])


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kestrel", required=True, help="the kestrel CLI (prepares the inputs)")
    ap.add_argument("--models", required=True)
    ap.add_argument("--only", default="", help="run the models whose name contains this")
    ap.add_argument("--backend", default="vulkan", help="Kestrel backends, comma-separated (vulkan,cpu)")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="Kestrel's CPU threads")
    ap.add_argument("--ort-threads", default=f"1,{os.cpu_count()}", help="ONNX Runtime intra-op thread counts")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--block", type=int, default=100, help="runs of each engine per round")
    ap.add_argument("--cpus", default="", help="pin the process to these cores, e.g. 0-15")
    ap.add_argument("--settle", type=float, default=0.3,
                    help="seconds to wait before each block, for the other engine's idle threads to stop spinning")
    return ap.parse_args()


def parse_cpus(text):
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def ort_runner(model, feeds, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    io = s.io_binding()
    for name, value in feeds.items():
        io.bind_cpu_input(name, value)
    for o in s.get_outputs():
        io.bind_output(o.name, "cpu")

    def run():
        s.run_with_iobinding(io)
        return io.copy_outputs_to_cpu()

    return run


def block_ms(run, n, settle):
    """Median wall time of n calls, in ms, after `settle` seconds of quiet and two untimed calls."""
    time.sleep(settle)
    run()
    run()
    t = np.empty(n)
    for i in range(n):
        t0 = time.perf_counter_ns()
        run()
        t[i] = time.perf_counter_ns() - t0
    return float(np.median(t)) / 1e6


def main():
    a = parse_args()
    if a.cpus:
        os.sched_setaffinity(0, parse_cpus(a.cpus))
    ort_threads = [int(t) for t in a.ort_threads.split(",")]
    a.runs = a.block  # (each_model reads it)
    rows = []
    for name, model, _, feeds, _ in each_model(a, isnet_runs=a.block):
        if a.only not in name:
            continue
        sessions = {f"kestrel-{b}": kestrel_session(model, b, a.precision, a.threads) for b in a.backend.split(",")}
        engines = {k: (lambda s=s: s.run(None, feeds)) for k, s in sessions.items()}
        for t in ort_threads:
            engines[f"ort{t}"] = ort_runner(model, feeds, t)
        for run in engines.values():  # warm-up (Kestrel's first run of a shape also checks fused claims)
            for _ in range(5):
                run()
        ref = engines[f"ort{ort_threads[0]}"]()
        medians = {e: [] for e in engines}
        order = list(engines)
        for r in range(a.rounds):
            for e in (order if r % 2 == 0 else order[::-1]):
                medians[e].append(block_ms(engines[e], a.block, a.settle))
        overall = {e: float(np.median(m)) for e, m in medians.items()}
        best = min((e for e in engines if e.startswith("ort")), key=lambda e: overall[e])
        print(f"{name}: " + ", ".join(f"{e} {overall[e]:.4f} ms" for e in engines), flush=True)
        for k, s in sessions.items():
            agree = [output_agreement(o, r) for o, r in zip(engines[k](), ref)]
            ratios = np.array(medians[best]) / np.array(medians[k])
            rows.append((name, s.backend.split(":")[0], overall[k], overall[best], best, ratios, agree))
            s.close()

    cpus = sorted(os.sched_getaffinity(0))
    print(f"\nhost: {platform.processor() or platform.machine()}, {os.cpu_count()} logical cores, process on "
          f"{len(cpus)} ({cpus[0]}-{cpus[-1]}); Kestrel backends {a.backend}, --precision {a.precision} "
          f"--threads {a.threads}; onnxruntime {ort.__version__} CPU EP at {a.ort_threads} intra-op threads; "
          f"{a.rounds} rounds of {a.block} runs per engine, order alternating, {a.settle} s settling before each block")
    print("| model | Kestrel session | Kestrel (ms) | ORT fastest (ms) | ORT threads | ORT / Kestrel (medians) "
          "| per-round ratio min / median / max | rounds Kestrel faster | cosine, max abs / range |")
    print("|---|---|---:|---:|---:|---:|---|---:|---|")
    for name, backend, k_ms, o_ms, best, ratios, agree in rows:
        cos = min(c for c, _ in agree)
        err = max(e for _, e in agree)
        print(f"| {name} | {backend} | {k_ms:.4f} | {o_ms:.4f} | {best[3:]} | {o_ms / k_ms:.2f}x | "
              f"{ratios.min():.2f} / {np.median(ratios):.2f} / {ratios.max():.2f} | {int((ratios > 1).sum())}/{len(ratios)} "
              f"| {cos:.7f}, {err:.1e} |")


if __name__ == "__main__":
    main()

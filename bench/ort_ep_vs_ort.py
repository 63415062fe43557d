#!/usr/bin/env python3
"""ONNX Runtime with Kestrel's plugin EP (libkestrel_ort_ep.so on the best Vulkan device), in
one process beside ONNX Runtime's CPU EP alone (every host core) and Kestrel standalone
(`kestrel bench --backend vulkan`), on full-size transformer families (exported on first use
by tools/export_models.py --full into --work) and the real models: median ms of warm runs,
ratios, how many nodes ONNX Runtime gave Kestrel, and the Kestrel EP's outputs against the
CPU EP's on the same input (cosine, max abs over max |ref|).

  python3 bench/ort_ep_vs_ort.py --plugin build/libkestrel_ort_ep.so --kestrel build/kestrel \\
      --models models --work /tmp/families [--families clip dinov2 ...] [--precision fp32|fp16]
"""
import argparse
import itertools
import json
import os
import platform
import sys

import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
from bench_models import (each_model, family_model, kestrel_bench, ort_median_ms, output_agreement,  # noqa: E402
                          session_median_ms)

FAMILIES = ["clip", "siglip", "dinov2", "depth_anything", "modernbert"]


def kestrel_ep_session(device, model, precision):
    so = ort.SessionOptions()
    so.add_provider_for_devices([device], {"precision": precision})
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    return ort.InferenceSession(model, sess_options=so)


def placement(session):
    count = {}
    for sg in session.get_provider_graph_assignment_info():
        count[sg.ep_name] = count.get(sg.ep_name, 0) + len(sg.get_nodes())
    return count


def family_models(a):
    for name in a.families:
        model, feeds, flags = family_model(a.work, name)
        yield name + " (full size)", model, a.runs, feeds, flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--models", required=True, help="folder of the real models (scripts/fetch_models.sh)")
    ap.add_argument("--work", required=True, help="where the full-size family models are exported")
    ap.add_argument("--families", nargs="*", default=FAMILIES)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "auto"])
    a = ap.parse_args()
    ort.register_execution_provider_library("Kestrel", os.path.abspath(a.plugin))
    vulkan = [d for d in ort.get_ep_devices() if d.ep_name == "Kestrel" and d.ep_metadata.get("kestrel.backend") == "vulkan"]
    if not vulkan:
        sys.exit("no Kestrel Vulkan EP device: is a Vulkan driver installed?")
    device = vulkan[0]
    rows = []
    # (each_model's inputs live in a temporary folder only while its loop body runs)
    sources = itertools.chain(family_models(a),
                              each_model(argparse.Namespace(kestrel=a.kestrel, models=a.models, runs=a.runs), 5))
    for name, model, runs, feeds, flags in sources:
        try:
            cpu_ms, ref = ort_median_ms(model, feeds, a.threads, max(3, runs // 2))
            ep = kestrel_ep_session(device, model, a.precision)
            # Kestrel checks a fused encoder on the CPU on the first run at a shape, learns
            # the placement on the next and records for replay on the third: five warm-ups.
            ep_ms = session_median_ms(ep, feeds, runs, warmups=5)
            got = ep.run(None, feeds)
            cos, err = min((output_agreement(g, r) for g, r in zip(got, ref)), key=lambda ce: ce[0])
            placed = placement(ep)
            alone = kestrel_bench(a.kestrel, model, flags + ["--threads", str(a.threads)], runs,
                                  ["--backend", "vulkan", "--precision", a.precision])["median_ms"]
        except Exception as e:  # noqa: BLE001 - reported in the table
            print(f"{name}: {type(e).__name__}: {str(e)[:300]}", file=sys.stderr)
            continue
        total = sum(placed.values())
        row = dict(name=name, cpu=cpu_ms, ep=ep_ms, alone=alone, cos=cos, err=err,
                   on_kestrel=f"{placed.get('Kestrel', 0)} of {total}")
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\nGPU: {device.ep_metadata.get('kestrel.device_name')}; host: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} logical cores; onnxruntime {ort.__version__}, CPU EP on {a.threads} threads; "
          f"Kestrel storage {a.precision}; median of {a.runs} warm runs (isnet: 5)")
    print("| model | nodes on Kestrel | ORT CPU EP (ms) | ORT + Kestrel EP (ms) | Kestrel alone (ms) "
          "| CPU EP / Kestrel EP | Kestrel EP / Kestrel alone | Kestrel EP vs CPU EP: cosine, max abs / max |ref| |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['name']} | {r['on_kestrel']} | {r['cpu']:.2f} | {r['ep']:.2f} | {r['alone']:.2f} | "
              f"{r['cpu'] / r['ep']:.2f}x | {r['ep'] / r['alone']:.2f}x | {r['cos']:.7f}, {r['err']:.1e} |")


if __name__ == "__main__":
    main()

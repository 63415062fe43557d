#!/usr/bin/env python3
"""Kestrel-Vulkan against ncnn's Vulkan backend on the same ONNX models and
inputs: the CNNs in --model-dirs and the full-size transformer families of
tools/export_models.py (random weights, exported on first use into --work).

Per model: one seeded random input (the families: export_models' own input);
ONNX Runtime's CPU EP once, the reference; pnnx converts the ONNX to ncnn
(model.ncnn.param/.bin, weights stored as fp16, pnnx's default; cached in
--work); ncnn with net.opt.use_vulkan_compute = True and its GPU defaults
(fp16 packed/storage/arithmetic where the device has them; the table's
header prints the options read back), in a child process so that a crash of
ncnn costs one row: median of --runs runs after --warmup, each run one
Extractor, the input set from a host Mat, every output extracted (read back
to the host); Kestrel `bench --backend vulkan` at fp16 and fp32 (median of
--runs after its own warm-up); and the outputs of both against ONNX Runtime's
(cosine and max abs error / max |reference| over all outputs together, the
notes naming a single output whose cosine is below 0.999; Kestrel's through
`kestrel run --runs 4` at fp16, the replayed run, as bench/families_vs_ort.py
does). A model pnnx, ncnn or Kestrel fails on gets its row with the error;
rows print as they finish, the whole table again at the end.

By default each model is prepared (export, ONNX Runtime reference, pnnx) and
then timed, nothing else running. --prep-jobs N prepares N models at once
beside the timings (the exports pinned to the upper half of the host's cores
where it has 8 or more): quicker, but the timings suffer, ncnn's most (its CPU
threads contend: on the H200 machine, with 6, ncnn's medians came out up to
26 times slower than with 0, Kestrel's within 4%); a second run over the same
--work reuses every conversion and export.

Needs onnxruntime, numpy, ncnn (PyPI), the pnnx binary, and for the families
torch and transformers (the GPU machine has all but ncnn and pnnx).

  python3 bench/ncnn_vs_kestrel.py --kestrel build/kestrel --pnnx PATH/pnnx --work /tmp/ncnnbench \\
      [--model-dirs models ../shared/models] [--models yolox_nano clip ...] [--runs 30] [--budget-s 240]
"""
import argparse
import concurrent.futures as cf
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SEED = 1234
# name, file, input shape (batch 1), as pnnx's inputshape and the .npy fed to every engine
CNNS = [
    ("yolox_nano", "yolox_nano.onnx", [1, 3, 416, 416]),
    ("scrfd_500m_bnkps", "scrfd_500m_bnkps.onnx", [1, 3, 640, 640]),
    ("yunet_n_320_320", "yunet_n_320_320.onnx", [1, 3, 320, 320]),
    ("ultraface_320", "ultraface_320.onnx", [1, 3, 240, 320]),
    ("blazeface_back_256", "blazeface_back_256.onnx", [1, 256, 256, 3]),
    ("mlsd_tiny_320", "mlsd_tiny_320.onnx", [1, 320, 320, 4]),
    ("ppocrv4_det", "ppocrv4_det.onnx", [1, 3, 640, 640]),
]
FAMILIES = ["dinov2", "clip", "sam"]  # export_models.FAMILIES names, full size
DEFAULT = [c[0] for c in CNNS] + FAMILIES

_children = []  # every process started, killed on the way out
_children_lock = threading.Lock()


def run_cmd(cmd, timeout, cwd=None, env=None):
    """(returncode or None on timeout, stdout, stderr) of cmd, killed past timeout seconds."""
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with _children_lock:
        _children.append(p)
    try:
        out, err = p.communicate(timeout=max(1.0, timeout))
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return None, out, err


def kill_children():
    with _children_lock:
        for p in _children:
            if p.poll() is None:
                p.kill()


def short(text, n=110):
    """The last informative line of an error text, cut to n characters."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    keep = [ln for ln in lines if any(w in ln.lower() for w in ("error", "fail", "not support", "unsupported",
                                                                   "exception", "abort", "segmentation"))]
    s = (keep or lines or ["(no output)"])[-1]
    return (s[:n] + "...") if len(s) > n else s


def agreement(outs, refs, names):
    """(cosine, max abs error / max |reference|) over all outputs together, matched in order, and a note
    naming the worst single output where its cosine is below 0.999 (or the outputs that do not match)."""
    from bench_models import output_agreement
    if len(outs) != len(refs):
        return None, None, f"{len(outs)} outputs, ONNX Runtime {len(refs)}"
    notes, worst = [], None
    for o, r, n in zip(outs, refs, names):
        o, r = np.asarray(o, np.float32).ravel(), np.asarray(r, np.float32).ravel()
        if o.size != r.size:
            notes.append(f"{n}: {o.size} elements, ONNX Runtime {r.size}")
            continue
        c, e = output_agreement(o, r)
        if worst is None or c < worst[0]:
            worst = (c, e, n, float(np.max(np.abs(r))) if r.size else 0.0)
    if notes:
        return None, None, "; ".join(notes)
    c, e = output_agreement(np.concatenate([np.asarray(o, np.float32).ravel() for o in outs]),
                            np.concatenate([np.asarray(r, np.float32).ravel() for r in refs]))
    note = (f"worst output {worst[2]}: cosine {worst[0]:.4f}, max abs / range {worst[1]:.1e}, range {worst[3]:.1e}"
            if worst and worst[0] < 0.999 else "")
    return c, e, note


# ------------------------------------------------------------------ ncnn, in a child process


def ncnn_worker(a):
    """--ncnn-worker: loads the ncnn model, times it, saves its outputs, prints one JSON line."""
    import ncnn
    res = {"ncnn": ncnn.__version__}
    if ncnn.get_gpu_count() == 0:
        print(json.dumps(dict(res, error="ncnn sees no Vulkan GPU")))
        return
    try:
        g = ncnn.get_gpu_info(ncnn.get_default_gpu_index())
        res["gpu"] = f"{g.device_name()} (Vulkan api {g.api_version() >> 22}.{(g.api_version() >> 12) & 1023}, driver version {g.driver_version()})"
    except Exception:  # noqa: BLE001 - the name is only printed
        pass
    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    t0 = time.perf_counter()
    if net.load_param(a.param) != 0:
        print(json.dumps(dict(res, error="load_param failed (a layer ncnn lacks?)")))
        return
    if net.load_model(a.bin) != 0:
        print(json.dumps(dict(res, error="load_model failed")))
        return
    res["load_ms"] = (time.perf_counter() - t0) * 1e3
    res["opt"] = {k: bool(getattr(net.opt, k)) for k in ("use_fp16_packed", "use_fp16_storage", "use_fp16_arithmetic",
                                                         "use_bf16_storage", "use_int8_inference", "use_cooperative_matrix")
                  if hasattr(net.opt, k)}
    in_names, out_names = list(net.input_names()), list(net.output_names())
    key = lambda s: (len(s), s)  # noqa: E731 - out2 before out10
    in_names.sort(key=key)
    out_names.sort(key=key)
    arrays = [np.load(p) for p in a.inputs]
    if len(in_names) != len(arrays):
        print(json.dumps(dict(res, error=f"ncnn model has {len(in_names)} inputs, ONNX {len(arrays)}")))
        return
    # ncnn's blobs have no batch axis: batch 1 is dropped.
    arrays = [np.ascontiguousarray(x[0] if x.ndim > 1 and x.shape[0] == 1 else x, dtype=np.float32) for x in arrays]
    mats = [ncnn.Mat(x) for x in arrays]

    def once():
        ex = net.create_extractor()
        for n, m in zip(in_names, mats):
            ex.input(n, m)
        outs = []
        for n in out_names:
            ret, m = ex.extract(n)
            if ret != 0:
                raise RuntimeError(f"extract {n} returned {ret}")
            outs.append(np.array(m))  # a copy on the host
        return outs

    try:
        t0 = time.perf_counter()
        outs = once()
        res["first_ms"] = (time.perf_counter() - t0) * 1e3
        for _ in range(a.warmup):
            once()
        t = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            once()
            t.append((time.perf_counter() - t0) * 1e3)
    except Exception as e:  # noqa: BLE001 - reported in the row
        print(json.dumps(dict(res, error=f"{type(e).__name__}: {e}")))
        return
    for i, o in enumerate(outs):
        np.save(os.path.join(a.out_dir, f"ncnn_out_{i}.npy"), o)
    res.update(median_ms=float(np.median(t)), min_ms=float(np.min(t)), outputs=len(outs),
               shapes=[list(o.shape) for o in outs])
    print(json.dumps(res))


# ------------------------------------------------------------------ preparation: input, reference, pnnx


def find_model(dirs, file):
    for d in dirs:
        p = os.path.join(d, file)
        if os.path.exists(p):
            return p
    return None


def export_family(name, work, timeout):
    """WORK/families/NAME/torchscript.onnx and its inputs, through export_models.build_one in a child process."""
    fam = os.path.join(work, "families")
    model = os.path.join(fam, name, "torchscript.onnx")
    if os.path.exists(model):
        return model, None
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    upper = cores[len(cores) // 2:] if len(cores) >= 8 else cores
    code = ("import os, sys\n"
            f"cores = {upper!r}\n"
            "if cores and hasattr(os, 'sched_setaffinity'): os.sched_setaffinity(0, cores)\n"
            f"sys.path.insert(0, {os.path.join(HERE, '..', 'tools')!r})\n"
            "import export_models\n"
            f"export_models.build_one({name!r}, {fam!r}, True, ['torchscript'])\n")
    rc, out, err = run_cmd([sys.executable, "-c", code], timeout)
    if rc is None:
        return None, f"export timed out after {timeout:.0f} s"
    if rc != 0 or not os.path.exists(model):
        return None, "export failed: " + short(out + err)
    return model, None


def prepare(name, a, deadline):
    """Everything before the GPU: the ONNX, inputs, the ONNX Runtime reference and the ncnn conversion.
    Returns a dict; 'error' says what failed (the row shows it)."""
    import onnxruntime as ort
    d = os.path.join(a.work, name)
    os.makedirs(d, exist_ok=True)
    p = dict(name=name, dir=d)
    t_start = time.perf_counter()
    left = lambda: deadline - time.monotonic()  # noqa: E731
    if name in FAMILIES:
        model, err = export_family(name, a.work, min(a.step_timeout * 2, left()))
        if err:
            return dict(p, error=err)
        fd = os.path.dirname(model)
        meta = json.load(open(os.path.join(fd, "meta.json")))
        inputs = [os.path.join(fd, f"input_{i}.npy") for i in range(len(meta["inputs"]))]
        names = meta["inputs"]
        p["kind"] = f"{meta.get('family', name)} (transformers {meta.get('transformers', '?')}, random weights)"
    else:
        spec = {c[0]: c for c in CNNS}[name]
        model = find_model(a.model_dirs, spec[1])
        if model is None:
            return dict(p, error=f"{spec[1]} not found in {' '.join(a.model_dirs)}")
        so = ort.SessionOptions()
        so.log_severity_level = 3
        names = [i.name for i in ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).get_inputs()]
        rng = np.random.default_rng(SEED)
        inputs = []
        for i, n in enumerate(names):
            path = os.path.join(d, f"input_{i}.npy")
            np.save(path, rng.random(spec[2], dtype=np.float32))  # uniform [0, 1), like a scaled photo
            inputs.append(path)
        p["kind"] = "cnn"
    p.update(model=model, inputs=inputs, input_names=names)
    p["kestrel_flags"] = [x for n, f in zip(names, inputs) for x in ("--input", f"{n}={f}")]
    feeds = {n: np.load(f) for n, f in zip(names, inputs)}
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.ref_threads
    so.log_severity_level = 3
    try:
        s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        p["output_names"] = [o.name for o in s.get_outputs()]
        p["ref"] = s.run(None, feeds)
    except Exception as e:  # noqa: BLE001
        return dict(p, error=f"ONNX Runtime reference failed: {type(e).__name__}: {str(e)[:100]}")
    # pnnx, cached: model.ncnn.param/.bin beside a link to the ONNX
    param, bin_ = os.path.join(d, "model.ncnn.param"), os.path.join(d, "model.ncnn.bin")
    if not (os.path.exists(param) and os.path.exists(bin_)):
        link = os.path.join(d, "model.onnx")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(model), link)
        shapes = ",".join("[" + ",".join(str(v) for v in feeds[n].shape) + "]" for n in names)
        t0 = time.perf_counter()
        rc, out, err = run_cmd([a.pnnx, "model.onnx", f"inputshape={shapes}"], min(a.step_timeout, left()), cwd=d)
        with open(os.path.join(d, "pnnx.log"), "w") as f:
            f.write(out + err)
        p["pnnx_s"] = time.perf_counter() - t0
        if rc is None:
            return dict(p, error=f"pnnx timed out after {p['pnnx_s']:.0f} s")
        if rc != 0 or not os.path.exists(param):
            return dict(p, error=f"pnnx failed (rc {rc}): " + short(out + err))
        for junk in ("model.pnnx.bin", "model.pnnx.onnx", "model.pnnxsim.onnx"):  # fp32 copies, large for the families
            if os.path.exists(os.path.join(d, junk)):
                os.remove(os.path.join(d, junk))
    p.update(param=param, bin=bin_, prep_s=time.perf_counter() - t_start)
    return p


# ------------------------------------------------------------------ the GPU part, one model at a time


def bench_model(p, a, deadline):
    from bench_models import kestrel_bench
    row = dict(name=p["name"], kind=p.get("kind", ""), notes=[])
    if "error" in p:
        row["notes"].append(p["error"])
    left = lambda: max(5.0, deadline - time.monotonic())  # noqa: E731
    # ncnn
    if "param" in p:
        rc, out, err = run_cmd([sys.executable, os.path.abspath(__file__), "--ncnn-worker", "--param", p["param"], "--bin",
                                p["bin"], "--out-dir", p["dir"], "--runs", str(a.runs), "--warmup", str(a.warmup),
                                "--inputs"] + p["inputs"], min(a.step_timeout, left()))
        res = None
        for line in reversed((out or "").splitlines()):
            if line.startswith("{"):
                res = json.loads(line)
                break
        if rc is None:
            row["notes"].append("ncnn timed out")
        elif res is None:
            row["notes"].append(f"ncnn crashed (rc {rc}): " + short(err))
        elif "error" in res:
            row["notes"].append("ncnn: " + res["error"])
            row["ncnn_info"] = res
        else:
            row["ncnn_info"] = res
            row["ncnn_ms"] = res["median_ms"]
            outs = [np.load(os.path.join(p["dir"], f"ncnn_out_{i}.npy")) for i in range(res["outputs"])]
            c, e, note = agreement(outs, p["ref"], p["output_names"])
            row["ncnn_cos"], row["ncnn_err"] = c, e
            if note:
                row["notes"].append("ncnn: " + note)
    # Kestrel
    if "model" in p and "ref" in p:
        for prec in ("fp16", "fp32"):
            try:
                r = kestrel_bench(a.kestrel, p["model"], p["kestrel_flags"], a.runs, ["--backend", "vulkan", "--precision", prec],
                                  timeout=min(a.step_timeout, left()))
                row[f"k_{prec}"] = r["median_ms"]
            except subprocess.CalledProcessError as e:
                row["notes"].append(f"Kestrel bench {prec} failed (rc {e.returncode})")
            except subprocess.TimeoutExpired:
                row["notes"].append(f"Kestrel bench {prec} timed out")
        with tempfile.TemporaryDirectory() as out:
            rc, o, err = run_cmd([a.kestrel, "run", p["model"], "--backend", "vulkan", "--precision", "fp16", "--runs", "4",
                                  "--output-dir", out] + p["kestrel_flags"], min(a.step_timeout, left()))
            if rc == 0:
                outs = [np.load(os.path.join(out, f"{i}.npy")) for i in range(len(p["ref"]))
                        if os.path.exists(os.path.join(out, f"{i}.npy"))]
                c, e, note = agreement(outs, p["ref"], p["output_names"])
                row["k_cos"], row["k_err"] = c, e
                if note:
                    row["notes"].append("Kestrel: " + note)
            else:
                row["notes"].append(f"Kestrel run failed (rc {rc}): " + short(err))
    return row


def fmt_ms(v):
    return f"{v:.3f}" if v is not None and v < 10 else (f"{v:.2f}" if v is not None else "-")


def fmt_agree(c, e):
    return f"{c:.6f}, {e:.1e}" if c is not None else "-"


HEADER = ("| model | Kestrel fp16 (ms) | Kestrel fp32 (ms) | ncnn Vulkan (ms) | ncnn / Kestrel fp16 "
          "| Kestrel fp16 vs ORT: cosine, max abs / range | ncnn vs ORT: cosine, max abs / range | notes |\n"
          "|---|---:|---:|---:|---:|---|---|---|")


def table_row(r):
    k16, nc = r.get("k_fp16"), r.get("ncnn_ms")
    ratio = f"{nc / k16:.2f}x" if k16 and nc else "-"
    notes = "; ".join(r["notes"]).replace("|", "/") or ""
    return (f"| {r['name']} | {fmt_ms(k16)} | {fmt_ms(r.get('k_fp32'))} | {fmt_ms(nc)} | {ratio} | "
            f"{fmt_agree(r.get('k_cos'), r.get('k_err'))} | {fmt_agree(r.get('ncnn_cos'), r.get('ncnn_err'))} | {notes} |")


def machine_lines(a):
    import onnxruntime as ort
    lines = []
    try:
        probe = json.loads(subprocess.check_output([a.kestrel, "probe"], timeout=60))
        g = probe["vulkan"]["devices"][probe["vulkan"]["selected"]]
        lines.append(f"Kestrel's Vulkan device: {g['name']} (Vulkan {g['api_version']}, driver {g['driver_info']}, "
                     f"cooperative matrix KHR {g.get('cooperative_matrix_khr')}, NV {g.get('cooperative_matrix_nv')}); "
                     f"host CPU {probe['cpu'].get('model', '?')}, {probe['cpu'].get('logical_cores', os.cpu_count())} logical cores")
    except Exception as e:  # noqa: BLE001
        lines.append(f"kestrel probe failed: {e}")
    try:
        smi = subprocess.check_output(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm",
                                       "--format=csv,noheader"], text=True, timeout=30).strip()
        lines.append(f"nvidia-smi: {smi}")
    except Exception:  # noqa: BLE001 - not an NVIDIA machine
        pass
    try:
        kv = subprocess.check_output([a.kestrel, "--version"], text=True, timeout=30).strip()
    except Exception:  # noqa: BLE001
        kv = "?"
    try:
        from importlib.metadata import version
        ncnn_v = version("ncnn")
    except Exception:  # noqa: BLE001
        ncnn_v = "?"
    lines.append(f"{kv}; ncnn {ncnn_v} (PyPI); pnnx {a.pnnx}; onnxruntime {ort.__version__} CPU EP (reference); "
                 f"Python {platform.python_version()}; {platform.platform()}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kestrel")
    ap.add_argument("--pnnx", default="pnnx")
    ap.add_argument("--work", default="/tmp/ncnn_vs_kestrel")
    ap.add_argument("--model-dirs", nargs="*",
                    default=[os.path.join(HERE, "..", "models"), os.path.join(HERE, "..", "..", "shared", "models")])
    ap.add_argument("--models", nargs="*", default=DEFAULT, help=f"from {', '.join(DEFAULT)}")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5, help="ncnn's untimed runs after the first (Kestrel bench warms up on its own)")
    ap.add_argument("--ref-threads", type=int, default=4, help="ONNX Runtime's threads for the reference outputs")
    ap.add_argument("--prep-jobs", type=int, default=0, help="models prepared (export, reference, pnnx) at once "
                    "beside the GPU timings, which then suffer; 0 (default): each in turn")
    ap.add_argument("--step-timeout", type=float, default=300, help="seconds for one pnnx, export or ncnn step")
    ap.add_argument("--budget-s", type=float, default=0, help="stop starting models after this many seconds (0: no limit)")
    # the ncnn child
    ap.add_argument("--ncnn-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--param", help=argparse.SUPPRESS)
    ap.add_argument("--bin", help=argparse.SUPPRESS)
    ap.add_argument("--out-dir", help=argparse.SUPPRESS)
    ap.add_argument("--inputs", nargs="*", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.ncnn_worker:
        return ncnn_worker(a)
    if not a.kestrel:
        ap.error("--kestrel is required")
    unknown = [m for m in a.models if m not in DEFAULT]
    if unknown:
        ap.error(f"unknown models {unknown}; choose from {', '.join(DEFAULT)}")
    a.kestrel = os.path.abspath(a.kestrel)
    if os.sep in a.pnnx:
        a.pnnx = os.path.abspath(a.pnnx)
    a.model_dirs = [os.path.abspath(d) for d in a.model_dirs]
    os.makedirs(a.work, exist_ok=True)
    t_start = time.monotonic()
    deadline = t_start + (a.budget_s if a.budget_s > 0 else 1e9)

    pool = cf.ThreadPoolExecutor(max_workers=a.prep_jobs) if a.prep_jobs > 0 else None
    # the families' exports take longest: started first
    order = sorted(a.models, key=lambda m: m not in FAMILIES) if pool else a.models
    futures = {m: pool.submit(prepare, m, a, deadline) for m in order} if pool else {}

    for line in machine_lines(a):
        print(line, flush=True)
    print(f"median of {a.runs} runs; ncnn: {a.warmup} warm-up runs after the first, each run one Extractor (input "
          f"from a host Mat, every output extracted to the host) in Python; Kestrel: `kestrel bench --backend vulkan "
          f"--precision fp16|fp32`; agreement: all outputs together against ONNX Runtime CPU EP on the same input; "
          f"preparation {'on ' + str(a.prep_jobs) + ' threads beside the timings' if pool else 'in turn'}\n", flush=True)
    print(HEADER, flush=True)
    rows, ncnn_info = [], None
    try:
        for m in a.models:
            if time.monotonic() > deadline:
                rows.append(dict(name=m, notes=[f"skipped: --budget-s {a.budget_s:.0f} spent"]))
                print(table_row(rows[-1]), flush=True)
                continue
            t0 = time.monotonic()
            if pool:
                try:
                    p = futures[m].result(timeout=max(1.0, deadline - time.monotonic()))
                except cf.TimeoutError:
                    p = dict(name=m, error="skipped: not prepared (export/pnnx) within --budget-s")
                except Exception as e:  # noqa: BLE001
                    p = dict(name=m, error=f"preparation failed: {type(e).__name__}: {str(e)[:100]}")
            else:
                try:
                    p = prepare(m, a, deadline)
                except Exception as e:  # noqa: BLE001
                    p = dict(name=m, error=f"preparation failed: {type(e).__name__}: {str(e)[:100]}")
            try:
                r = bench_model(p, a, deadline)
            except Exception as e:  # noqa: BLE001
                r = dict(name=m, notes=[f"failed: {type(e).__name__}: {str(e)[:100]}"])
            if r.get("ncnn_info") and "opt" in r["ncnn_info"]:
                ncnn_info = r["ncnn_info"]
            r["wall_s"] = time.monotonic() - t0
            rows.append(r)
            print(table_row(r), flush=True)
    finally:
        kill_children()
        if pool:
            pool.shutdown(wait=False, cancel_futures=True)
    print(f"\ntotal {time.monotonic() - t_start:.0f} s")
    if ncnn_info:
        print(f"ncnn {ncnn_info.get('ncnn')} on {ncnn_info.get('gpu', '?')}, net.opt read back: "
              + ", ".join(f"{k}={v}" for k, v in ncnn_info["opt"].items()))
    print("\n" + HEADER)
    for r in rows:
        print(table_row(r))
    sys.stdout.flush()
    os._exit(0)  # prep threads still waiting on killed children need not be joined


if __name__ == "__main__":
    main()

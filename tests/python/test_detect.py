"""kestrel detect on real detectors and photos, against an independent
reference: ONNX Runtime runs the very input Kestrel built (--save-inputs), the
NumPy decoder of bench/detect_reference.py turns its output into boxes (grid
decode, class-wise NMS, the letterbox undone), and both must give the same
labels in the same order, IoU >= 0.95 per box and scores within 1e-3. The
letterbox itself is checked on the saved input (the grey where each detector
puts it)."""
import json
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest

from conftest import ROOT, model_path

sys.path.insert(0, os.path.join(ROOT, "bench"))
import detect_reference  # noqa: E402  (the NumPy decoder, shared with bench/detect_vs_python.py)
from detect_reference import box_iou, letterbox_map  # noqa: E402

KESTREL = os.path.join(ROOT, "build", "kestrel")
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "models")
PHOTOS = os.path.join(ROOT, "models", "photos")
CONF, IOU = 0.25, 0.45

# model: (arch, photos, labels expected among the scores over 0.5)
CASES = {
    "yolox_nano.onnx": ("yolox", ["dog.jpg", "horses.jpg", "person.jpg"], {"dog.jpg": {"dog", "bicycle", "car"}}),
    "yolov8n_int8.onnx": ("yolov8", ["dog.jpg", "person.jpg", "giraffe.jpg"],
                          {"dog.jpg": {"dog", "bicycle"}, "person.jpg": {"person", "horse", "dog"}}),
    "scrfd_500m_bnkps.onnx": ("scrfd", ["astronaut.png", "person.jpg"], {"astronaut.png": {"face"}}),
    "yunet_n_320_320.onnx": ("yunet", ["astronaut.png", "person.jpg"], {"astronaut.png": {"face"}}),
    "yunet_n_dynamic.onnx": ("yunet", ["astronaut.png", "person.jpg"], {"astronaut.png": {"face"}}),
    "ultraface_320.onnx": ("ultraface", ["astronaut.png", "person.jpg"], {"astronaut.png": {"face"}}),
    "blazeface_front_128.onnx": ("blazeface", ["astronaut.png", "person.jpg"], {"astronaut.png": {"face"}}),
    "blazeface_back_256.onnx": ("blazeface", ["astronaut.png", "person.jpg"], {"astronaut.png": {"face"}}),
}
# The letterbox's grey as each detector's input holds it: 114 of 255 (YOLO) or black (faces), normalized
# (UltraFace stretches the photo over its input: no border).
GREY = {"yolox": 114.0, "yolov8": 114.0 / 255.0, "scrfd": (0 - 127.5) / 128.0, "yunet": 0.0, "blazeface": -1.0}


def model_file(name):
    """The shared detectors (../shared/models), else the ones scripts/fetch_models.sh downloads (models/)."""
    shared = os.path.join(SHARED, name)
    return shared if os.path.exists(shared) else model_path(name)


def reference_detections(arch, outs, size, w, h):
    return detect_reference.reference_detections(arch, outs, size, w, h, CONF, IOU)


def detect(model, photos, tmp_path):
    """kestrel detect's JSON per photo, and the model inputs it built."""
    inputs = tmp_path / "inputs"
    run = subprocess.run([KESTREL, "detect", model] + [os.path.join(PHOTOS, p) for p in photos] +
                         ["--json", "--conf", str(CONF), "--iou", str(IOU), "--threads", "2", "--save-inputs",
                          str(inputs), "--out", str(tmp_path / "annotated")],
                         capture_output=True, text=True, check=True)
    results = [json.loads(line) for line in run.stdout.splitlines()]
    assert [os.path.basename(r["image"]) for r in results] == photos
    return results, [np.load(inputs / f"{i}.npy") for i in range(len(results))]


def nchw(x):
    """The saved input as [1, 3, H, W] whatever its layout (BlazeFace takes NHWC)."""
    return x if x.shape[1] == 3 else x.transpose(0, 3, 1, 2)


def assert_same_detections(got, ref, image, score_tol, min_iou, kps_tol):
    assert [d["class_id"] for d in got] == [r[0] for r in ref], (image, got, ref)
    for d, (_, s, b, k) in zip(got, ref):
        assert abs(d["score"] - s) <= score_tol, (image, d, s)
        assert box_iou(d["box"], b) >= min_iou, (image, d["box"], b)
        if k is not None:  # faces: the five keypoints, within kps_tol of the box's size
            span = max(b[2] - b[0], b[3] - b[1])
            assert np.abs(np.array(d["keypoints"]) - np.array(k)).max() <= kps_tol * span, (image, d, k)


@pytest.mark.parametrize("model", list(CASES))
def test_the_decode_matches_numpy_on_kestrels_own_output(model, tmp_path):
    """The letterbox, the decode, NMS and the mapping back, each against this file's NumPy: the model's raw
    output here is Kestrel's own (`kestrel run` on the saved input), so only the pipeline around it is tested."""
    arch, photos, expected = CASES[model]
    path = model_file(model)
    results, inputs = detect(path, photos, tmp_path)
    size = (nchw(inputs[0]).shape[3], nchw(inputs[0]).shape[2])  # width, height
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])  # for the input's and outputs' names
    names, input_name = [o.name for o in sess.get_outputs()], sess.get_inputs()[0].name
    for i, (res, x) in enumerate(zip(results, inputs)):
        x = nchw(x)
        assert x.shape == (1, 3, size[1], size[0])
        # The letterbox: the photo where the detector puts it, grey (114) around it.
        _, _, px, py, nw, nh = letterbox_map(arch, res["width"], res["height"], size)
        canvas = np.zeros((size[1], size[0]), bool)
        canvas[int(py):int(py) + nh, int(px):int(px) + nw] = True
        if arch in GREY:
            assert np.allclose(x[0][:, ~canvas], GREY[arch]), "the border is not the letterbox's grey"
        else:
            assert canvas.all(), "a stretched photo fills the input"
        assert not np.allclose(x[0][:, canvas], GREY.get(arch, 0.0)), "the photo is not where the letterbox puts it"
        assert os.path.exists(res["annotated"])
        raw = tmp_path / f"raw{i}"
        subprocess.run([KESTREL, "run", path, "--input", f"{input_name}={tmp_path / 'inputs' / f'{i}.npy'}",
                        "--output-dir", str(raw), "--threads", "2"], check=True, capture_output=True)
        outs = [np.load(raw / f"{j}.npy") for j in range(len(names))]
        ref = reference_detections(arch, detect_reference.by_index_and_name(outs, names), size, res["width"],
                                   res["height"])
        # The same float32 outputs on both sides: only the float arithmetic of the decode differs.
        assert_same_detections(res["detections"], ref, res["image"], 1e-5, 0.999, 1e-3)
        name = os.path.basename(res["image"])
        if name in expected:
            seen = {d["label"] for d in res["detections"] if d["score"] > 0.5}
            assert expected[name] <= seen, (name, seen)


@pytest.mark.parametrize("model", [
    "yolox_nano.onnx", "scrfd_500m_bnkps.onnx", "yunet_n_320_320.onnx", "yunet_n_dynamic.onnx", "ultraface_320.onnx",
    "blazeface_front_128.onnx", "blazeface_back_256.onnx",
    # Quantized: its Sigmoids feed DynamicQuantizeLinear, so Kestrel computes them in ONNX Runtime's arithmetic
    # (ops/logistic.h); only the head's Softmax still rounds differently (2 of 537,600 values a step apart).
    "yolov8n_int8.onnx",
])
def test_detections_match_onnx_runtime_decoded_by_numpy(model, tmp_path):
    """End to end against an independent reference: ONNX Runtime on the same input, decoded here."""
    arch, photos, _ = CASES[model]
    path = model_file(model)
    results, inputs = detect(path, photos, tmp_path)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    size = (nchw(inputs[0]).shape[3], nchw(inputs[0]).shape[2])  # width, height
    for res, x in zip(results, inputs):
        outs = sess.run(None, {sess.get_inputs()[0].name: x})
        ref = reference_detections(arch, detect_reference.by_index_and_name(outs, [o.name for o in sess.get_outputs()]),
                                   size, res["width"], res["height"])
        assert_same_detections(res["detections"], ref, res["image"], 1e-3, 0.95, 0.02)


def test_a_model_that_is_no_detector_is_refused_with_what_was_seen():
    run = subprocess.run([KESTREL, "detect", os.path.join(ROOT, "models", "mlsd_tiny_320.onnx"),
                          os.path.join(PHOTOS, "dog.jpg")], capture_output=True, text=True)
    assert run.returncode != 0
    assert "[1,3,H,W]" in run.stderr and "[1,320,320,4]" in run.stderr, run.stderr
    run = subprocess.run([KESTREL, "detect", os.path.join(SHARED, "yolox_nano.onnx"), os.path.join(PHOTOS, "dog.jpg"),
                          "--arch", "yolov8"], capture_output=True, text=True)
    assert run.returncode != 0
    assert "--arch yolov8 does not fit" in run.stderr and "[1,3549,85]" in run.stderr, run.stderr


def test_a_broken_photo_is_named(tmp_path):
    with open(os.path.join(PHOTOS, "dog.jpg"), "rb") as f:
        (tmp_path / "cut.jpg").write_bytes(f.read()[:20000])
    run = subprocess.run([KESTREL, "detect", os.path.join(SHARED, "yolox_nano.onnx"), str(tmp_path / "cut.jpg")],
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert "cut.jpg" in run.stderr, run.stderr


def write_png(path, pixels, bit_depth=8):
    """A minimal PNG writer (grey or RGB, 8 or 16 bits) for the odd photos below."""
    import struct
    import zlib
    h, w = pixels.shape[:2]
    color = 0 if pixels.ndim == 2 else 2
    dtype = ">u2" if bit_depth == 16 else "u1"
    raw = b"".join(b"\0" + pixels[y].astype(dtype).tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_odd_photos_run_and_broken_ones_are_named(tmp_path):
    """Grey, 16-bit and very wide photos are read (as RGB, 8 bits); an empty file and a 0x0 PNG are refused by name."""
    rng = np.random.default_rng(1)
    write_png(tmp_path / "grey.png", rng.integers(0, 256, (300, 400)))
    write_png(tmp_path / "deep.png", rng.integers(0, 65536, (300, 400, 3)), 16)
    write_png(tmp_path / "wide.png", rng.integers(0, 256, (8, 20000, 3)))
    run = subprocess.run([KESTREL, "detect", os.path.join(SHARED, "yolox_nano.onnx"), str(tmp_path / "grey.png"),
                          str(tmp_path / "deep.png"), str(tmp_path / "wide.png"), "--json"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    sizes = [(r["width"], r["height"]) for r in map(json.loads, run.stdout.splitlines())]
    assert sizes == [(400, 300), (400, 300), (20000, 8)]
    (tmp_path / "empty.jpg").write_bytes(b"")
    write_png(tmp_path / "zero.png", np.zeros((0, 0, 3)))
    for bad in ("empty.jpg", "zero.png"):
        run = subprocess.run([KESTREL, "detect", os.path.join(SHARED, "yolox_nano.onnx"), str(tmp_path / bad)],
                             capture_output=True, text=True)
        assert run.returncode != 0 and bad in run.stderr and "cannot read image" in run.stderr, run.stderr


@pytest.mark.parametrize("model", ["yunet_n_dynamic.onnx", "scrfd_500m_bnkps.onnx"])
def test_photos_batched_where_the_model_allows_give_each_photos_answer(model, tmp_path):
    """An open batch dimension: photos go through the model several at a time (8 by default; here 3, then the 2
    left) and each gets the detections it gets alone."""
    photos = [os.path.join(PHOTOS, p) for p in ("astronaut.png", "person.jpg", "dog.jpg", "horses.jpg", "kite.jpg")]

    def run(batch):
        out = subprocess.run([KESTREL, "detect", model_file(model)] + photos +
                             ["--json", "--threads", "2", "--size", "320x320", "--batch", str(batch)],
                             capture_output=True, text=True, check=True)
        return [json.loads(line) for line in out.stdout.splitlines()]

    alone, batched = run(1), run(3)
    assert [r["image"] for r in batched] == photos
    assert sum(len(r["detections"]) for r in alone) > 0
    for a, b in zip(alone, batched):
        assert (a["width"], a["height"]) == (b["width"], b["height"])
        ref = [(d["class_id"], d["score"], d["box"], d.get("keypoints")) for d in a["detections"]]
        assert_same_detections(b["detections"], ref, b["image"], 1e-4, 0.999, 1e-3)


def test_batch_is_refused_where_the_model_takes_one_photo_a_run():
    run = subprocess.run([KESTREL, "detect", model_file("ultraface_320.onnx"), os.path.join(PHOTOS, "dog.jpg"),
                          "--batch", "4"], capture_output=True, text=True)
    assert run.returncode != 0
    assert "--batch 4: this model takes one photo a run" in run.stderr and "[1,3,240,320]" in run.stderr, run.stderr
    run = subprocess.run([KESTREL, "detect", model_file("yunet_n_dynamic.onnx"), os.path.join(PHOTOS, "dog.jpg"),
                          "--batch", "0"], capture_output=True, text=True)
    assert run.returncode != 0 and "--batch must be 1 or more" in run.stderr, run.stderr


@pytest.mark.parametrize("model", ["yolox_nano.onnx", "scrfd_500m_bnkps.onnx", "yunet_n_dynamic.onnx",
                                   "ultraface_320.onnx", "blazeface_back_256.onnx"])
def test_decode_and_nms_on_the_gpu_give_the_cpus_boxes(model, tmp_path):
    """On the Vulkan backend the head's decode and NMS run on the device (the DetectionBoxes node; the placement
    line shows every node there): the boxes the CPU backend finds, to the float32 model's agreement (the raw outputs
    of the two backends differ by about 1e-5; a box in a different order or a missed suppression would not pass).
    The trace names the device each node ran on.
    YuNet's dynamic export batches the three photos in one run."""
    photos = [os.path.join(PHOTOS, p) for p in ("astronaut.png", "person.jpg", "dog.jpg")]

    size = ["--size", "320x320"] if model in ("yunet_n_dynamic.onnx", "scrfd_500m_bnkps.onnx") else []

    def run(backend):
        out = subprocess.run([KESTREL, "detect", model_file(model)] + photos +
                             ["--json", "--threads", "2", "--backend", backend] + size, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return out.stdout

    cpu = [json.loads(line) for line in run("cpu").splitlines()]
    traced = subprocess.run([KESTREL, "detect", model_file(model), photos[0], "--threads", "2", "--backend", "vulkan",
                             "--trace", "2"] + size, capture_output=True, text=True)
    assert traced.returncode == 0, traced.stderr
    node = [line for line in (traced.stdout + traced.stderr).splitlines() if " DetectionBoxes " in line]
    assert node and " gpu " in node[0], node  # the decode and NMS ran on the device
    gpu = [json.loads(line) for line in run("vulkan").splitlines()]
    assert sum(len(r["detections"]) for r in cpu) > 0 and len(gpu) == len(cpu) == len(photos)
    for a, b in zip(cpu, gpu):
        ref = [(d["class_id"], d["score"], d["box"], d.get("keypoints")) for d in a["detections"]]
        assert_same_detections(b["detections"], ref, b["image"], 1e-4, 0.999, 1e-3)

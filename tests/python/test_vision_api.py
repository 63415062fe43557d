"""kestrel.detect / kestrel.Detector and kestrel.ocr / kestrel.TextReader from the installed package: the
answer of the `kestrel detect` and `kestrel ocr` commands, from a path and from an RGB array."""
import json
import os
import subprocess

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT, model_path

KESTREL = os.path.join(ROOT, "build", "kestrel")
PHOTOS = os.path.join(ROOT, "models", "photos")
CPU = dict(providers=["CPUExecutionProvider"])


def cli_json(*args):
    run = subprocess.run([KESTREL, *args, "--json", "--backend", "cpu"], capture_output=True, text=True, check=True)
    return json.loads(run.stdout.splitlines()[0])


def test_detect_gives_the_commands_answer_from_a_path_and_from_pixels(installed_package):
    kestrel = installed_package
    model, photo = model_path("ultraface_320.onnx"), os.path.join(PHOTOS, "astronaut.png")
    from_path = kestrel.detect(model, photo, **CPU)
    assert from_path["image"] == photo and (from_path["width"], from_path["height"]) == (512, 512)
    assert from_path["detections"][0]["label"] == "face"
    assert from_path["detections"] == cli_json("detect", model, photo)["detections"]
    rgb = np.asarray(Image.open(photo).convert("RGB"))
    detector = kestrel.Detector(model, arch="ultraface", **CPU)
    from_pixels = detector.detect(rgb)
    assert from_pixels["detections"] == from_path["detections"]
    # A view whose rows are not contiguous (every other column) is read as the picture it shows.
    half = detector.detect(rgb[:, ::2])
    assert half["width"] == 256 and half["detections"][0]["label"] == "face"


def test_ocr_reads_the_page_from_a_path_and_from_pixels(installed_package):
    kestrel = installed_package
    det, rec, photo = model_path("ppocrv4_det.onnx"), model_path("ppocrv4_rec.onnx"), os.path.join(PHOTOS, "imageTextN.png")
    page = kestrel.ocr(det, rec, photo, **CPU)
    assert page["lines"][0]["text"] == "technical details are too complex to cover in the book itself."
    assert page["lines"] == cli_json("ocr", det, rec, photo)["lines"]
    reader = kestrel.TextReader(det, rec, dictionary=model_path("ppocr_keys_v1.txt"), **CPU)
    assert reader.read(np.asarray(Image.open(photo).convert("RGB")))["lines"] == page["lines"]


def test_bad_photos_and_models_raise_kestrel_errors(installed_package, tmp_path):
    kestrel = installed_package
    detector = kestrel.Detector(model_path("ultraface_320.onnx"), **CPU)
    with pytest.raises(kestrel.InvalidArgument, match="RGB uint8 of shape"):
        detector.detect(np.zeros((10, 10, 3), np.float32))
    with pytest.raises(kestrel.InvalidArgument, match="RGB uint8 of shape"):
        detector.detect(np.zeros((10, 10), np.uint8))
    with pytest.raises(kestrel.InvalidArgument, match="a path or an RGB uint8 numpy array"):
        detector.detect(42)
    with pytest.raises(kestrel.KestrelError, match="nothing.jpg"):
        detector.detect("/nothing.jpg")
    with pytest.raises(kestrel.InvalidArgument, match="unknown detector architecture"):
        kestrel.Detector(model_path("ultraface_320.onnx"), arch="yolo9000")
    (tmp_path / "ab.txt").write_text("a\nb\n")
    with pytest.raises(kestrel.InvalidArgument, match="has 2 entries"):
        kestrel.TextReader(model_path("ppocrv4_det.onnx"), model_path("ppocrv4_rec.onnx"),
                           dictionary=tmp_path / "ab.txt", **CPU)

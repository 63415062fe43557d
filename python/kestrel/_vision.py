"""Photos to boxes and to text: the pipelines of `kestrel detect` and `kestrel
ocr` from Python. Each result is the photo's JSON object as a dict (README:
detect, ocr): {"image", "width", "height", "detections": [...]} or
{"image", "width", "height", "lines": [...]}, boxes in the photo's pixels.

    import kestrel
    faces = kestrel.detect("ultraface_320.onnx", "photo.jpg")["detections"]
    reader = kestrel.TextReader("ppocrv4_det.onnx", "ppocrv4_rec.onnx")
    lines = [l["text"] for l in reader.read(rgb_array)["lines"]]

A photo is a path (JPEG, PNG, BMP, ...) or an RGB uint8 numpy array of shape
(height, width, 3). Providers and sess_options are InferenceSession's.
"""
import json
import os

import numpy as np

from ._errors import InvalidArgument
from ._options import SessionOptions
from ._session import _backend_of
from . import _kestrel


def _native_options(sess_options, providers, provider_options):
    options = sess_options if sess_options is not None else SessionOptions()
    if not isinstance(options, SessionOptions):
        raise InvalidArgument(f"sess_options must be a kestrel.SessionOptions, got {type(sess_options).__name__}")
    return options._native(*_backend_of(providers, provider_options))


def _run_on(image, on_file, on_pixels):
    """The native call for a path or an RGB array, its JSON as a dict."""
    if isinstance(image, (str, os.PathLike)):
        return json.loads(on_file(os.fspath(image)))
    if isinstance(image, np.ndarray):
        if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
            raise InvalidArgument(f"a photo array must be RGB uint8 of shape (height, width, 3), got {image.dtype} "
                                  f"{image.shape}")
        pixels = np.ascontiguousarray(image)
        h, w = pixels.shape[:2]
        return json.loads(on_pixels(pixels.ctypes.data, w, h, pixels.strides[0], ""))
    raise InvalidArgument(f"a photo is a path or an RGB uint8 numpy array, got {type(image).__name__}")


class Detector:
    """An object or face detector (YOLOv8 / YOLO11, YOLOX, YOLOv5, SCRFD, YuNet, UltraFace, BlazeFace), its head
    recognized from the model; arch names the one expected ("auto": any). size=(width, height) sizes a model whose
    input is open (default 640 x 640)."""

    def __init__(self, model, arch="auto", size=None, sess_options=None, providers=None, provider_options=None):
        width, height = size if size is not None else (0, 0)
        self._native = _kestrel.Detector(os.fspath(model), arch, int(width), int(height),
                                         _native_options(sess_options, providers, provider_options))

    def detect(self, image, conf=0.25, iou=0.45):
        """Boxes scoring at least conf after class-wise NMS at iou, best first."""
        return _run_on(image, lambda p: self._native.detect_file(p, conf, iou),
                       lambda d, w, h, s, n: self._native.detect_rgb8(d, w, h, s, n, conf, iou))


class TextReader:
    """PP-OCR: text detection, the optional direction classifier (cls) and recognition over a dictionary (default:
    ppocr_keys_v1.txt beside the recognizer)."""

    def __init__(self, det, rec, cls=None, dictionary=None, sess_options=None, providers=None, provider_options=None):
        self._native = _kestrel.TextReader(os.fspath(det), os.fspath(rec), os.fspath(cls) if cls else "",
                                           os.fspath(dictionary) if dictionary else "",
                                           _native_options(sess_options, providers, provider_options))

    def read(self, image, min_score=0.5):
        """The lines read with a mean probability of at least min_score, in reading order."""
        return _run_on(image, lambda p: self._native.read_file(p, min_score),
                       lambda d, w, h, s, n: self._native.read_rgb8(d, w, h, s, n, min_score))


def detect(model, image, conf=0.25, iou=0.45, **options):
    """One photo through a detector made for it (Detector's options: arch, size, providers, ...)."""
    return Detector(model, **options).detect(image, conf, iou)


def ocr(det, rec, image, cls=None, dictionary=None, min_score=0.5, **options):
    """One photo's text (TextReader's options: providers, sess_options, ...)."""
    return TextReader(det, rec, cls, dictionary, **options).read(image, min_score)

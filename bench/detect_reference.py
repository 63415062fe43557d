"""Detectors decoded in NumPy, independently of Kestrel: each detector's
letterbox as its own Python does it, its head's decode, class-wise NMS and the
boxes mapped back to the photo. tests/python/test_detect.py holds `kestrel
detect` to it on ONNX Runtime's outputs, and bench/detect_vs_python.py times
it as the usual Python pipeline (Pillow, NumPy, ONNX Runtime). Sizes are
(width, height) of the model's input."""
import numpy as np

# Where each detector puts the photo: the top-left corner, the centre (Ultralytics), or stretched over the input.
TOP_LEFT = ("yolox", "scrfd", "yunet")
STRETCH = ("ultraface",)


def by_index_and_name(outs, names):
    """A model's outputs as the decoders read them: by position (YOLO heads) and by name (face heads)."""
    return dict(enumerate(outs)) | dict(zip(names, outs))


def letterbox_map(arch, w, h, size):
    """(x scale, y scale, x pad, y pad, scaled width, scaled height) of a w x h photo in the input."""
    sw, sh = size
    if arch in STRETCH:  # UltraFace: resized to the input, aspect not kept
        return sw / w, sh / h, 0.0, 0.0, sw, sh
    r = min(sw / w, sh / h)
    if arch in TOP_LEFT:  # YOLOX, insightface, OpenCV: floored size, top-left corner
        return r, r, 0.0, 0.0, int(w * r), int(h * r)
    nw, nh = int(round(w * r)), int(round(h * r))  # Ultralytics LetterBox: centred
    return r, r, float(round((sw - nw) / 2 - 0.1)), float(round((sh - nh) / 2 - 0.1)), nw, nh


def nms(boxes, cls, score, iou):
    """Class-wise: the indices kept, best first."""
    order = np.argsort(-score, kind="stable")
    kept = []
    for i in order:
        if all(cls[k] != cls[i] or box_iou(boxes[k], boxes[i]) <= iou for k in kept):
            kept.append(i)
    return kept


def unletterbox(arch, size, w, h, box, kps):
    rx, ry, px, py, _, _ = letterbox_map(arch, w, h, size)
    box = [np.clip((box[0] - px) / rx, 0, w), np.clip((box[1] - py) / ry, 0, h), np.clip((box[2] - px) / rx, 0, w),
           np.clip((box[3] - py) / ry, 0, h)]
    return box, None if kps is None else [((x - px) / rx, (y - py) / ry) for x, y in kps]


def reference_detections(arch, outs, size, w, h, conf, iou):
    """(class, score, box, keypoints) per detection, best first, from the model's outputs (by index and by name)."""
    if arch in ("scrfd", "yunet"):
        return reference_faces(arch, outs, size, w, h, conf, iou)
    if arch == "blazeface":
        return reference_blazeface(outs, size, w, h, conf, iou)
    sw, sh = size
    if arch == "ultraface":  # softmax scores [N, 2] (face second), corner boxes in 0..1
        score = outs["scores"].reshape(-1, 2)[:, 1]
        xyxy = outs["boxes"].reshape(-1, 4) * np.array([sw, sh, sw, sh], np.float32)
        cls = np.zeros(len(score), int)
        keep = score >= conf
        xyxy, cls, score = xyxy[keep], cls[keep], score[keep]
        return [(0, float(score[i])) + unletterbox(arch, size, w, h, xyxy[i], None) for i in nms(xyxy, cls, score, iou)]
    out = outs[0][0]
    if arch == "yolov8":  # [4 + C, N]
        boxes, scores = out[:4].T, out[4:].T
        cls = scores.argmax(1)
        score = scores[np.arange(len(cls)), cls]
    else:  # YOLOX [N, 5 + C], raw: grid offsets and log sizes per stride-8/16/32 cell
        grids, strides = [], []
        for s in (8, 16, 32):
            gy, gx = np.meshgrid(np.arange(sh // s), np.arange(sw // s), indexing="ij")
            grids.append(np.stack([gx.ravel(), gy.ravel()], 1))
            strides.append(np.full((gx.size, 1), s))
        g, st = np.concatenate(grids).astype(np.float32), np.concatenate(strides).astype(np.float32)
        boxes = np.concatenate([(out[:, :2] + g) * st, np.exp(out[:, 2:4]) * st], 1)
        cls = out[:, 5:].argmax(1)
        score = out[:, 4] * out[np.arange(len(cls)), 5 + cls]
    keep = score >= conf
    boxes, cls, score = boxes[keep], cls[keep], score[keep]
    xyxy = np.concatenate([boxes[:, :2] - boxes[:, 2:] / 2, boxes[:, :2] + boxes[:, 2:] / 2], 1)
    return [(int(cls[i]), float(score[i])) + unletterbox(arch, size, w, h, xyxy[i], None)
            for i in nms(xyxy, cls, score, iou)]


def reference_faces(arch, outs, size, w, h, conf, iou):
    """SCRFD (insightface's decode: distances from two anchors a cell) and YuNet (OpenCV's FaceDetectorYN)."""
    sw, sh = size
    boxes, score, kps = [], [], []
    for s in (8, 16, 32):
        gy, gx = np.meshgrid(np.arange(sh // s), np.arange(sw // s), indexing="ij")
        cx, cy = gx.ravel().astype(np.float32), gy.ravel().astype(np.float32)
        if arch == "scrfd":
            cx, cy = np.repeat(cx, 2) * s, np.repeat(cy, 2) * s
            b, k = outs[f"bbox_{s}"].reshape(-1, 4) * s, outs[f"kps_{s}"].reshape(-1, 10) * s
            score.append(outs[f"score_{s}"].reshape(-1))
            boxes.append(np.stack([cx - b[:, 0], cy - b[:, 1], cx + b[:, 2], cy + b[:, 3]], 1))
            kps.append(np.stack([cx[:, None] + k[:, 0::2], cy[:, None] + k[:, 1::2]], 2))
        else:
            c, o = np.clip(outs[f"cls_{s}"].reshape(-1), 0, 1), np.clip(outs[f"obj_{s}"].reshape(-1), 0, 1)
            b, k = outs[f"bbox_{s}"].reshape(-1, 4), outs[f"kps_{s}"].reshape(-1, 10)
            score.append(np.sqrt(c * o))
            bx, by, bw, bh = (cx + b[:, 0]) * s, (cy + b[:, 1]) * s, np.exp(b[:, 2]) * s, np.exp(b[:, 3]) * s
            boxes.append(np.stack([bx - bw / 2, by - bh / 2, bx + bw / 2, by + bh / 2], 1))
            kps.append(np.stack([(cx[:, None] + k[:, 0::2]) * s, (cy[:, None] + k[:, 1::2]) * s], 2))
    boxes, score, kps = np.concatenate(boxes), np.concatenate(score), np.concatenate(kps)
    keep = score >= conf
    boxes, score, kps = boxes[keep], score[keep], kps[keep]
    cls = np.zeros(len(score), int)
    return [(0, float(score[i])) + unletterbox(arch, size, w, h, boxes[i], kps[i]) for i in nms(boxes, cls, score, iou)]


def reference_blazeface(outs, size, w, h, conf, iou):
    """MediaPipe BlazeFace: logits [N, 1] and anchor offsets [N, 16] (box, six keypoints; input pixels) for a
    finer grid of 2 anchors a cell and a coarser one of 6, anchors at the cells' centres."""
    sw, sh = size
    by_index = [outs[i] for i in sorted(k for k in outs if isinstance(k, int))]
    scores = [o for o in by_index if o.shape[-1] == 1]
    regs = [o for o in by_index if o.shape[-1] != 1]
    boxes, score, kps = [], [], []
    for s, r, per_cell in zip(scores, regs, (2, 6)):
        s, r = s.reshape(-1), r.reshape(len(s.reshape(-1)), -1)
        cells = int(round(np.sqrt(len(s) / per_cell)))
        gy, gx = np.meshgrid(np.arange(cells), np.arange(cells), indexing="ij")
        ax = np.repeat((gx.ravel() + 0.5) * sw / cells, per_cell).astype(np.float32)
        ay = np.repeat((gy.ravel() + 0.5) * sh / cells, per_cell).astype(np.float32)
        score.append((1 / (1 + np.exp(-np.clip(s.astype(np.float64), -100, 100)))).astype(np.float32))
        cx, cy = ax + r[:, 0], ay + r[:, 1]
        boxes.append(np.stack([cx - r[:, 2] / 2, cy - r[:, 3] / 2, cx + r[:, 2] / 2, cy + r[:, 3] / 2], 1))
        kps.append(np.stack([ax[:, None] + r[:, 4::2], ay[:, None] + r[:, 5::2]], 2))
    boxes, score, kps = np.concatenate(boxes), np.concatenate(score), np.concatenate(kps)
    keep = score >= conf
    boxes, score, kps = boxes[keep], score[keep], kps[keep]
    cls = np.zeros(len(score), int)
    return [(0, float(score[i])) + unletterbox("blazeface", size, w, h, boxes[i], kps[i])
            for i in nms(boxes, cls, score, iou)]


def box_iou(a, b):
    iw, ih = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def letterbox(rgb, arch, size):
    """The model's input from an RGB uint8 photo (H, W, 3), as each detector's own Python builds it
    (Pillow's bilinear resize standing in for OpenCV's)."""
    from PIL import Image
    h, w = rgb.shape[:2]
    sw, sh = size
    _, _, px, py, nw, nh = letterbox_map(arch, w, h, size)
    canvas = np.full((sh, sw, 3), 114 if arch in ("yolox", "yolov8", "yolov5") else 0, np.float32)
    canvas[int(py):int(py) + nh, int(px):int(px) + nw] = np.asarray(
        Image.fromarray(rgb).resize((nw, nh), Image.BILINEAR), np.float32)
    if arch in ("yolox", "yunet"):
        x = canvas[:, :, ::-1]  # BGR, 0..255
    elif arch == "scrfd":
        x = (canvas - 127.5) / 128.0
    elif arch == "ultraface":
        x = (canvas - 127.0) / 128.0
    elif arch == "blazeface":  # MediaPipe: RGB in -1..1, NHWC
        return np.ascontiguousarray((canvas / 127.5 - 1.0)[None], np.float32)
    else:
        x = canvas / 255.0
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None], np.float32)

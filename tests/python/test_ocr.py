"""kestrel ocr with PP-OCRv4's detector and recognizer (and the v2.0 direction
classifier) on photos with real text from Debian's opencv-doc: a printed page,
the same page turned a few degrees, a street sign, and the page upside down.
Each must read the words printed there; bad input gets an error naming it."""
import json
import os
import subprocess

import pytest
from PIL import Image

from conftest import ROOT, model_path

KESTREL = os.path.join(ROOT, "build", "kestrel")
PHOTOS = os.path.join(ROOT, "models", "photos")

# The page's thirteen lines (imageTextN.png), as printed.
PAGE = [
    "technical details are too complex to cover in the book itself.",
    "In teaching our courses, we have found it useful for the students to attempt a number of",
    "small implementation projects, which often build on one another, in order to get them used to",
    "working with real-world images and the challenges that these present. The students are then",
    "asked to choose an individual topic for each of their small-group, final projects. (Sometimes",
    "these projects even turn into conference papers!) The exercises at the end of each chapter",
    "contain numerous suggestions for smaller mid-term projects, as well as more open-ended",
    "problems whose solutions are still active research topics. Wherever possible, I encourage",
    "students to try their algorithms on their own personal photographs, since this better motivates",
    "them, often leads to creative variants on the problems, and better acquaints them with the",
    "variety and complexity of real-world imagery.",
    "In formulating and solving computer vision problems, I have often found it useful to draw",
    "inspiration from three high-level approaches:",
]


def ocr(photos, *flags, check=True):
    run = subprocess.run([KESTREL, "ocr", model_path("ppocrv4_det.onnx"), model_path("ppocrv4_rec.onnx")] +
                         list(photos) + ["--json", "--threads", "2"] + list(flags),
                         capture_output=True, text=True, check=False)
    if check:
        assert run.returncode == 0, run.stderr
        return [json.loads(line) for line in run.stdout.splitlines()]
    return run


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The page, the turned page, the sign and the page upside down, read once without the classifier."""
    out = tmp_path_factory.mktemp("ocr")
    upside = out / "upside_down.png"
    Image.open(os.path.join(PHOTOS, "imageTextN.png")).convert("RGB").rotate(180).save(upside)
    photos = [os.path.join(PHOTOS, p) for p in ("imageTextN.png", "imageTextR.png", "scenetext01.jpg")] + [str(upside)]
    results = ocr(photos, "--out", str(out / "annotated"))
    assert [r["image"] for r in results] == photos
    return {os.path.basename(r["image"]): r for r in results}, upside, out


def texts(result):
    return [line["text"] for line in result["lines"]]


def test_the_printed_page_is_read_line_by_line_in_order(pages):
    got = texts(pages[0]["imageTextN.png"])
    # Every line, in reading order; one character wrong anywhere fails.
    assert got == PAGE, "\n".join(got)


def test_the_turned_page_is_read(pages):
    got = texts(pages[0]["imageTextR.png"])
    assert len(got) == len(PAGE)
    exact = sum(g == p for g, p in zip(got, PAGE))
    # The page turned ~5 degrees: each line is cut out straight; most read exactly (here 10 of 13; the
    # rest lose a space after a comma or read "I" as "1"), none is wildly off.
    assert exact >= 9, "\n".join(got)
    for g, p in zip(got, PAGE):
        assert sum(a != b for a, b in zip(g.replace(" ", ""), p.replace(" ", ""))) <= 3, (g, p)


def test_the_street_sign_is_read(pages):
    got = texts(pages[0]["scenetext01.jpg"])
    for word in ("NOTICE", "DOUBLE", "PARKING", "PROHIBITED", "AT ALL TIMES"):
        assert word in got, got


def test_lines_come_with_scores_and_four_corners_inside_the_photo(pages):
    r = pages[0]["imageTextN.png"]
    assert (r["width"], r["height"]) == (556, 257)
    for line in r["lines"]:
        assert 0.5 <= line["score"] <= 1.0
        assert len(line["box"]) == 4
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = line["box"]
        assert x0 < x1 and y1 < y2 and x2 > x3 and y0 < y3  # top-left first, clockwise
        assert all(0 <= x < 556 and 0 <= y < 257 for x, y in line["box"])
    assert os.path.getsize(r["annotated"]) > 0


def test_the_direction_classifier_turns_upside_down_lines(pages):
    _, upside, _ = pages
    plain = texts(pages[0]["upside_down.png"])
    assert PAGE[0] not in plain  # upside down, the recognizer alone cannot read it
    turned = ocr([str(upside)], "--cls", model_path("ppocr_mobile_v2_cls.onnx"))[0]
    read = [line for line in turned["lines"] if line["text"] in PAGE]
    assert len(read) >= 7, texts(turned)  # the classifier is sure enough to turn most lines
    assert all(line.get("turned") for line in read)


def test_a_missing_dictionary_is_named(tmp_path):
    rec = tmp_path / "rec.onnx"
    os.symlink(model_path("ppocrv4_rec.onnx"), rec)
    run = subprocess.run([KESTREL, "ocr", model_path("ppocrv4_det.onnx"), str(rec),
                          os.path.join(PHOTOS, "imageTextN.png")], capture_output=True, text=True)
    assert run.returncode != 0
    assert "--dict" in run.stderr and "ppocr_keys_v1.txt" in run.stderr


def test_a_dictionary_of_the_wrong_size_is_refused(tmp_path):
    small = tmp_path / "abc.txt"
    small.write_text("a\nb\nc\n")
    run = ocr([os.path.join(PHOTOS, "imageTextN.png")], "--dict", str(small), check=False)
    assert run.returncode != 0
    assert "has 3 entries, but the recognizer has 6625 classes" in run.stderr


def test_a_detector_given_as_the_recognizer_is_refused():
    run = subprocess.run([KESTREL, "ocr", model_path("ppocrv4_det.onnx"), model_path("ppocrv4_det.onnx"),
                          os.path.join(PHOTOS, "imageTextN.png"), "--dict", model_path("ppocr_keys_v1.txt")],
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert "text recognition model's output" in run.stderr and "[N, steps, classes]" in run.stderr


def test_a_truncated_photo_is_named(tmp_path):
    bad = tmp_path / "cut.jpg"
    with open(os.path.join(PHOTOS, "scenetext01.jpg"), "rb") as f:
        bad.write_bytes(f.read()[:2000])
    run = ocr([str(bad)], check=False)
    assert run.returncode != 0
    assert "cut.jpg" in run.stderr

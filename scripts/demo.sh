#!/usr/bin/env bash
# Real models end to end: sets up, builds, downloads the models and photos,
# then cuts the dog out of a photo with IS-Net on Kestrel and writes
# out/dog_cutout.png (RGBA: the predicted foreground mask is the alpha), and
# finds the face in a portrait with UltraFace: out/astronaut.png, boxed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash scripts/setup.sh
bash scripts/build.sh
bash scripts/fetch_models.sh
mkdir -p out
./build/kestrel remove-bg models/isnet_medium.onnx models/photos/dog.jpg out/dog_cutout.png
./build/kestrel detect models/ultraface_320.onnx models/photos/astronaut.png --conf 0.6 --out out
echo "demo: open $top/out/dog_cutout.png and $top/out/astronaut.png"

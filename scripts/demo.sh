#!/usr/bin/env bash
# One real model end to end: sets up, builds, downloads the models and photos,
# then cuts the dog out of a photo with IS-Net on Kestrel and writes
# out/dog_cutout.png (RGBA: the predicted foreground mask is the alpha).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash scripts/setup.sh
bash scripts/build.sh
bash scripts/fetch_models.sh
mkdir -p out
./build/kestrel remove-bg models/isnet_medium.onnx models/photos/dog.jpg out/dog_cutout.png
echo "demo: open $top/out/dog_cutout.png"

#!/bin/bash
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/k && tar xJf .hostbench/bundle.tar.xz -C /tmp/k && export LD_LIBRARY_PATH=/tmp/k/lib
mkdir -p /work && ln -sfn "$PWD" /work/main
timeout 120 /tmp/k/bin/kestrel_tests --gtest_filter='Families.*:-Families.Inspect*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|FAILED|Failure|cosine" | head -20
python3 tools/export_models.py --out /tmp/fam --full ${PROFILE:-sam modernbert_b8} 2>&1 | grep -E "ok,|rror" | cut -c1-200
for m in ${PROFILE:-sam modernbert_b8}; do
  for a in flash chunked; do
    echo "== $m $a"; /tmp/k/bin/kestrel bench /tmp/fam/$m/torchscript.onnx --backend vulkan --precision fp16 --runs 10 --attention $a --profile $(python3 -c "
import json,os;d='/tmp/fam/$m';meta=json.load(open(d+'/meta.json'))
print(' '.join(f'--input {n}={d}/input_{i}.npy' for i,n in enumerate(meta['inputs'])))") 2>&1 | grep -E "median|flash|softmax|gemm|total|device" | head -12
  done
done
timeout ${FVO:-330} python3 bench/families_vs_ort.py --kestrel /tmp/k/bin/kestrel --work /tmp/fam --models ${MODELS:-sam modernbert_b8 clip} --runs 10 --threads 16 --precision fp16 --no-compile 2>&1 | grep -E "^\{|^\||GPU:" | cut -c1-400

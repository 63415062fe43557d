#!/bin/bash
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/k && tar xJf .hostbench/bundle.tar.xz -C /tmp/k && export LD_LIBRARY_PATH=/tmp/k/lib
mkdir -p /work && ln -sfn "$PWD" /work/main
timeout 120 /tmp/k/bin/kestrel_tests --gtest_filter='Families.*:-Families.Inspect*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" | head -20
python3 -c "
import sys; sys.path.insert(0,'tools'); import export_models
for n in '${PROFILE:-sam modernbert_b8}'.split(): export_models.build_one(n, '/tmp/fam', True, ['torchscript'])" 2>&1 | grep -E "ok,|rror" | cut -c1-150
for m in ${PROFILE:-sam modernbert_b8}; do
  IN=$(python3 -c "
import json,os;d='/tmp/fam/$m';meta=json.load(open(d+'/meta.json'))
print(' '.join(f'--input {n}={d}/input_{i}.npy' for i,n in enumerate(meta['inputs'])))")
  for a in flash chunked flash; do
    /tmp/k/bin/kestrel bench /tmp/fam/$m/torchscript.onnx --backend vulkan --precision fp16 --runs 20 --attention $a $IN 2>&1 | grep -E "median" | sed "s/^/$a: /"
  done
  /tmp/k/bin/kestrel bench /tmp/fam/$m/torchscript.onnx --backend vulkan --precision fp16 --runs 5 --profile $IN 2>&1 | grep -E "flash|softmax|gemm|device time" | head -6
  timeout 120 /tmp/k/bin/kestrel parity /tmp/fam/$m/torchscript.onnx --backend vulkan --precision fp16 $IN 2>&1 | tail -4
done

#!/bin/bash
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/k && tar xJf .hostbench/bundle.tar.xz -C /tmp/k && export LD_LIBRARY_PATH=/tmp/k/lib
python3 - <<'PY'
import sys, os, json, subprocess, tempfile
sys.path.insert(0, 'tools'); sys.path.insert(0, 'bench')
import numpy as np, onnxruntime as ort, export_models
from bench_models import output_agreement
for name in ['sam', 'modernbert_batch']:
    export_models.build_one(name, '/tmp/fam', True, ['torchscript'])
    d = f'/tmp/fam/{name}'; model = f'{d}/torchscript.onnx'
    meta = json.load(open(f'{d}/meta.json'))
    feeds = {n: np.load(f'{d}/input_{i}.npy') for i, n in enumerate(meta['inputs'])}
    flags = [x for i, n in enumerate(meta['inputs']) for x in ('--input', f'{n}={d}/input_{i}.npy')]
    so = ort.SessionOptions(); so.intra_op_num_threads = 16
    ref = ort.InferenceSession(model, so, providers=['CPUExecutionProvider']).run(None, feeds)[0]
    for att in ['flash', 'chunked']:
        with tempfile.TemporaryDirectory() as out:
            subprocess.check_call(['/tmp/k/bin/kestrel', 'run', model, '--backend', 'vulkan', '--precision', 'fp16', '--runs', '4',
                                   '--attention', att, '--output-dir', out] + flags, stdout=subprocess.DEVNULL)
            k0 = np.load(os.path.join(out, '0.npy'))
        cos, err = output_agreement(k0, ref)
        print(f'{name} {att}: cosine {cos:.7f}, max abs / range {err:.1e}', flush=True)
        b = subprocess.run(['/tmp/k/bin/kestrel', 'bench', model, '--backend', 'vulkan', '--precision', 'fp16', '--runs', '20',
                            '--attention', att] + flags, capture_output=True, text=True).stdout
        print('  ', [l for l in b.splitlines() if 'median' in l][:1], flush=True)
PY

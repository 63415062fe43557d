// The real models the benchmarks compare on, and the inputs both engines are
// given: one list, so every bench/*.js measures the same models and shapes.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

// name, file under models/ (or a path from there), symbolic dims to fix (the shapes the app uses),
// and for the slow models a cap on the runs (each takes seconds)
const MODELS = [
  ['ppocr-det 640x640', 'ppocrv4_det.onnx', ['p2o.DynamicDimension.0=1', 'p2o.DynamicDimension.1=640', 'p2o.DynamicDimension.2=640']],
  ['ppocr-rec 48x320', 'ppocrv4_rec.onnx', ['p2o.DynamicDimension.0=1', 'p2o.DynamicDimension.1=320']],
  ['ppocr-cls 48x192', 'ppocr_mobile_v2_cls.onnx', ['p2o.DynamicDimension.0=1', 'p2o.DynamicDimension.1=48', 'p2o.DynamicDimension.2=192']],
  ['isnet medium (fp16) 1024', 'isnet_medium.onnx', [], 3],
  ['isnet small (int8) 1024', 'isnet_small.onnx', [], 3],
  ['blazeface front 128', 'blazeface_front_128.onnx', []],
  ['blazeface back 256', 'blazeface_back_256.onnx', []],
  ['mlsd tiny 320', 'mlsd_tiny_320.onnx', []],
  ['mlsd large 320', 'mlsd_large_320.onnx', []],
  ['silero vad 512 samples', 'silero_vad.onnx', []],
  ['ultraface 320', 'ultraface_320.onnx', []],
  // A detector from the shared test data beside the repository (../shared/models).
  ['yolox nano 416', '../../shared/models/yolox_nano.onnx', []],
];

// Minimal .npy writer for the few inputs made here.
function writeNpy(file, descr, shape, typed) {
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  Buffer.from('\x93NUMPY', 'latin1').copy(pre);
  pre[6] = 1; pre[7] = 0; pre.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), Buffer.from(typed.buffer)]));
}

// Silero VAD: one 512-sample chunk at 16 kHz (a voiced-like signal), zero state.
function sileroInputs(dir) {
  const x = new Float32Array(512).map((_, i) => 0.3 * Math.sin(2 * Math.PI * 180 * i / 16000) + 0.1 * Math.sin(2 * Math.PI * 720 * i / 16000));
  writeNpy(path.join(dir, 'input.npy'), '<f4', [1, 512], x);
  writeNpy(path.join(dir, 'state.npy'), '<f4', [2, 1, 128], new Float32Array(256));
  writeNpy(path.join(dir, 'sr.npy'), '<i8', [], new BigInt64Array([16000n]));
  return ['input', 'state', 'sr'].map((n) => `${n}=${path.join(dir, `${n}.npy`)}`);
}

// Writes the model's inputs into dir and returns them as NAME=FILE.npy pairs:
// Kestrel's seeded random inputs (so both engines see the same bytes), except
// Silero VAD, whose sample rate and state must be real values.
function writeInputs(kestrel, model, dims, dir, threads) {
  if (path.basename(model) === 'silero_vad.onnx') return sileroInputs(dir);
  const names = JSON.parse(execFileSync(kestrel, ['inspect', model, '--json']).toString()).inputs.map((i) => i.name);
  execFileSync(kestrel, ['run', model, ...dims.flatMap((d) => ['--dim', d]), '--save-inputs', dir, '--threads', String(threads)],
               { stdio: ['ignore', 'ignore', 'inherit'] });
  return names.map((n, i) => `${n}=${path.join(dir, `${i}.npy`)}`);
}

module.exports = { MODELS, writeNpy, sileroInputs, writeInputs };

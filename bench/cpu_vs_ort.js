#!/usr/bin/env node
// Times Kestrel's CPU backend and ONNX Runtime's CPU EP on each real model, on
// the same inputs and at the same thread count, in one run, and prints the ratio.
//   node bench/cpu_vs_ort.js [--threads N] [--runs N] [--models a,b] [--markdown]
// Needs: build/kestrel, scripts/fetch_models.sh run, .deps (scripts/setup.sh).
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const top = path.resolve(__dirname, '..');
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : def;
};
const threads = parseInt(arg('--threads', String(os.cpus().length)), 10);
const runs = parseInt(arg('--runs', '10'), 10);
const only = arg('--models', '');

// name, file under models/, symbolic dims to fix (the shapes the app uses),
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
];

const kestrel = path.join(top, 'build', 'kestrel');

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
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kestrel-bench-'));
const rows = [];
for (const [name, file, dims, maxRuns] of MODELS) {
  const n = Math.min(runs, maxRuns || runs);
  if (only && !only.split(',').some((m) => name.includes(m))) continue;
  const model = path.join(top, 'models', file);
  if (!fs.existsSync(model)) {
    console.error(`${name}: ${model} missing (run scripts/fetch_models.sh)`);
    process.exitCode = 1;
    continue;
  }
  const dir = path.join(tmp, file);
  fs.mkdirSync(dir);
  const dimArgs = dims.flatMap((d) => ['--dim', d]);
  const names = JSON.parse(execFileSync(kestrel, ['inspect', model, '--json']).toString()).inputs.map((i) => i.name);
  const pairs = file === 'silero_vad.onnx'
    ? sileroInputs(dir)
    : (() => {
        // Kestrel writes its seeded random inputs so both engines see the same bytes.
        execFileSync(kestrel, ['run', model, ...dimArgs, '--save-inputs', dir, '--threads', String(threads)],
                     { stdio: ['ignore', 'ignore', 'inherit'] });
        return names.map((n, i) => `${n}=${path.join(dir, `${i}.npy`)}`);
      })();
  const k = JSON.parse(execFileSync(kestrel, ['bench', model, '--threads', String(threads), '--runs', String(n), '--warmup', '1', '--json',
    ...pairs.flatMap((p) => ['--input', p])]).toString());
  const o = JSON.parse(execFileSync('node', [path.join(top, 'tools', 'ort_reference.js'), model, path.join(dir, 'ort'),
    ...pairs, '--threads', String(threads), '--bench', String(n)]).toString().trim().split('\n').pop());
  rows.push([name, k.median_ms, o.median_ms, n]);
  console.error(`${name}: kestrel ${k.median_ms.toFixed(2)} ms, onnxruntime ${o.median_ms.toFixed(2)} ms`);
}
fs.rmSync(tmp, { recursive: true, force: true });

const cpu = os.cpus()[0].model.trim();
console.log(`\nCPU: ${cpu}, ${os.cpus().length} logical cores; threads ${threads}; median of the runs after warm-up`);
console.log('| model | runs | Kestrel CPU (ms) | ONNX Runtime CPU EP (ms) | Kestrel / ORT |');
console.log('|---|---:|---:|---:|---:|');
for (const [name, k, o, n] of rows) console.log(`| ${name} | ${n} | ${k.toFixed(2)} | ${o.toFixed(2)} | ${(k / o).toFixed(2)}x |`);

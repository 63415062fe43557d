#!/usr/bin/env node
// Times Kestrel's CPU backend and ONNX Runtime's CPU EP on each real model, on
// the same inputs and at the same thread count, in one run, and prints the ratio.
//   node bench/cpu_vs_ort.js [--threads N] [--runs N] [--models a,b] [--markdown] [--kestrel PATH]
// Needs: build/kestrel, scripts/fetch_models.sh run, .deps (scripts/setup.sh).
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { MODELS, writeInputs } = require('./real_models');

const top = path.resolve(__dirname, '..');
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : def;
};
const threads = parseInt(arg('--threads', String(os.cpus().length)), 10);
const runs = parseInt(arg('--runs', '10'), 10);
const only = arg('--models', '');

const kestrel = path.resolve(arg('--kestrel', path.join(top, 'build', 'kestrel')));

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
  const dir = path.join(tmp, path.basename(file));
  fs.mkdirSync(dir);
  const pairs = writeInputs(kestrel, model, dims, dir, threads);
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

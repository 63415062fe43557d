#!/usr/bin/env node
// The ONNX Runtime side of bench/memory_vs_ort.js: one process that loads one
// model on the CPU EP, runs it like `kestrel bench` does (one warm-up run, then
// RUNS runs) and prints one JSON line {"vmhwm_bytes"} (its resident high-water
// mark, read from /proc/self/status just before exit).
//
//   node bench/memory_ort_run.js MODEL [NAME=FILE.npy ...] --threads N --runs N [--no-arena]
//
// --no-arena sets enableCpuMemArena: false (ONNX Runtime's CPU allocator then
// mallocs and frees each tensor instead of keeping a growing arena).
'use strict';
const fs = require('fs');
const path = require('path');
const { loadOrt, readNpy } = require(path.join(__dirname, '..', 'tools', 'ort_reference.js'));

function vmhwmBytes() {
  const m = /VmHWM:\s*(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'latin1'));
  return m ? Number(m[1]) * 1024 : 0;
}

async function main() {
  const argv = process.argv.slice(2);
  const opt = (name) => {
    const i = argv.indexOf(name);
    if (i < 0) return null;
    const v = argv.splice(i, 2)[1];
    if (!/^\d+$/.test(v || '')) throw new Error(`${name} expects a whole number, got '${v}'`);
    return Number(v);
  };
  const threads = opt('--threads') || 1;
  const runs = opt('--runs') || 1;
  const noArena = argv.includes('--no-arena');
  const [model, ...pairs] = argv.filter((s) => s !== '--no-arena');
  if (!model) throw new Error('usage: memory_ort_run.js MODEL [NAME=FILE.npy ...] --threads N --runs N [--no-arena]');

  const ort = loadOrt();
  ort.env.logLevel = 'error';
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], executionMode: 'sequential', interOpNumThreads: 1, intraOpNumThreads: threads,
    logSeverityLevel: 3, enableCpuMemArena: !noArena,
  });
  const feeds = {};
  for (const s of pairs) {
    const eq = s.indexOf('=');
    if (eq <= 0) throw new Error(`inputs are NAME=FILE.npy, got '${s}'`);
    const t = readNpy(s.slice(eq + 1));
    feeds[s.slice(0, eq)] = new ort.Tensor(t.type, t.data, t.dims);
  }
  for (let i = 0; i < 1 + runs; ++i) await session.run(feeds);
  console.log(JSON.stringify({ vmhwm_bytes: vmhwmBytes() }));
  await session.release();
}

main().catch((e) => {
  process.stderr.write(`memory_ort_run: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});

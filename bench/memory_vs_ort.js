#!/usr/bin/env node
// Peak memory of Kestrel beside ONNX Runtime (onnxruntime-node, CPU EP) on each
// real model, on the same inputs and at the same thread count, in one run.
//
//   nice -n 10 node bench/memory_vs_ort.js [--threads N] [--runs N] [--models a,b]
//                                         [--vulkan-models a,b | --no-vulkan]
//
// What is measured. Every engine runs in its own fresh process (load the model,
// one warm-up run, then RUNS runs, as `kestrel bench` does), started through
// GNU time, whose %M is the child's ru_maxrss: its peak resident set (VmHWM),
// the same measure for both engines. For Kestrel also, from `kestrel bench
// --json`: peak_host_bytes (tensor memory in use at once at most, weights
// included, counted in the pool's size classes) and, on Vulkan,
// peak_device_bytes (memory the session holds on the device; on lavapipe that
// is host memory as well, inside the RSS). Kestrel's CPU backend runs three
// times: with the default pool; with KESTREL_POOL_MB=0 (no idle buffers kept);
// and with that and MALLOC_MMAP_THRESHOLD_=131072 as well, so glibc maps every
// large tensor on its own and unmaps it when freed (its default raises the
// threshold after a large free and keeps later tensors in its heap). The last
// is the floor a tighter pool would reach: weights, live tensors and code.
// ONNX Runtime runs with its CPU memory arena on (its default) and off
// (enableCpuMemArena: false).
//
// Baselines, so the table can show the memory a model adds: Kestrel's RSS on
// a one-node model (Relu on one float), per backend; ONNX Runtime's RSS on the
// same one-node model (node + onnxruntime-node loaded); plain node's RSS.
// "above base" = peak RSS - that engine's baseline.
//
// Needs: build/kestrel, scripts/fetch_models.sh run, .deps (scripts/setup.sh),
// GNU time at /usr/bin/time.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { MODELS, writeNpy, writeInputs } = require('./real_models');

const top = path.resolve(__dirname, '..');
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : def;
};
const threads = parseInt(arg('--threads', '2'), 10);
const runs = parseInt(arg('--runs', '5'), 10);
const only = arg('--models', '');
// IS-Net takes minutes per run on lavapipe: not on Vulkan unless asked.
const vulkanOnly = process.argv.includes('--no-vulkan') ? null : arg('--vulkan-models', '');
const onVulkan = (name) => vulkanOnly !== null && (vulkanOnly ? vulkanOnly.split(',').some((m) => name.includes(m)) : !name.startsWith('isnet'));

const kestrel = path.join(top, 'build', 'kestrel');
const ortRun = path.join(__dirname, 'memory_ort_run.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kestrel-memory-'));

// Runs one process under GNU time; returns its stdout and peak RSS in bytes.
function measured(cmd, args, env = {}) {
  const rssFile = path.join(tmp, 'maxrss');
  const out = execFileSync('/usr/bin/time', ['-f', '%M', '-o', rssFile, cmd, ...args],
                           { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 26 }).toString();
  return { out, rss: Number(fs.readFileSync(rssFile, 'latin1').trim().split('\n').pop()) * 1024 };
}

function kestrelBench(model, pairs, backend, env = {}, n = runs) {
  const r = measured(kestrel, ['bench', model, '--backend', backend, '--threads', String(threads), '--runs', String(n),
    '--warmup', '1', '--json', ...pairs.flatMap((p) => ['--input', p])], env);
  const j = JSON.parse(r.out.trim().split('\n').pop());
  return { rss: r.rss, host: j.peak_host_bytes, device: j.peak_device_bytes };
}

function ortBench(model, pairs, arena, n = runs) {
  return measured('node', [ortRun, model, ...pairs, '--threads', String(threads), '--runs', String(n),
    ...(arena ? [] : ['--no-arena'])]).rss;
}

// A one-node ONNX model, y = Relu(x) on a float[1], encoded by hand (no
// protobuf library here): the baseline both engines load.
function trivialModel(file) {
  const varint = (n) => { const b = []; for (; n > 127; n >>>= 7) b.push((n & 127) | 128); b.push(n); return Buffer.from(b); };
  const num = (field, n) => Buffer.concat([varint(field << 3), varint(n)]);
  const msg = (field, ...parts) => {
    const body = Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
    return Buffer.concat([varint((field << 3) | 2), varint(body.length), body]);
  };
  // ValueInfoProto{name, type: TypeProto{tensor_type{elem_type FLOAT, shape{dim{dim_value 1}}}}}
  const valueInfo = (field, name) => msg(field, msg(1, name), msg(2, msg(1, num(1, 1), msg(2, msg(1, num(1, 1))))));
  const node = msg(1, msg(1, 'x'), msg(2, 'y'), msg(4, 'Relu'));
  const graph = msg(7, node, msg(2, 'one_relu'), valueInfo(11, 'x'), valueInfo(12, 'y'));
  fs.writeFileSync(file, Buffer.concat([num(1, 8), msg(8, num(2, 17)), graph]));
  const x = path.join(path.dirname(file), 'x.npy');
  writeNpy(x, '<f4', [1], new Float32Array([0.5]));
  return [`x=${x}`];
}

const MiB = (b) => (b / 1048576).toFixed(1);
const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(2)}x` : 'n/a');

const baseDir = path.join(tmp, 'trivial');
fs.mkdirSync(baseDir);
const trivial = path.join(baseDir, 'one_relu.onnx');
const trivialPairs = trivialModel(trivial);
const base = {
  node: measured('node', ['-e', '0']).rss,
  ort: ortBench(trivial, trivialPairs, true),
  ortNoArena: ortBench(trivial, trivialPairs, false),
  cpu: kestrelBench(trivial, trivialPairs, 'cpu').rss,
  vulkan: vulkanOnly !== null ? kestrelBench(trivial, trivialPairs, 'vulkan').rss : 0,
};
console.error(`baselines: node ${MiB(base.node)} MiB, ONNX Runtime one-node model ${MiB(base.ort)} (arena off ${MiB(base.ortNoArena)}), ` +
              `Kestrel CPU one-node model ${MiB(base.cpu)}, Kestrel Vulkan one-node model ${MiB(base.vulkan)} MiB`);

const cpuRows = [];
const vkRows = [];
for (const [name, file, dims, maxRuns] of MODELS) {
  if (only && !only.split(',').some((m) => name.includes(m))) continue;
  const n = Math.min(runs, maxRuns || runs);
  const model = path.join(top, 'models', file);
  if (!fs.existsSync(model)) {
    console.error(`${name}: ${model} missing (run scripts/fetch_models.sh)`);
    process.exitCode = 1;
    continue;
  }
  const dir = path.join(tmp, path.basename(file));
  fs.mkdirSync(dir);
  const pairs = writeInputs(kestrel, model, dims, dir, threads);
  const k = kestrelBench(model, pairs, 'cpu', {}, n);
  const k0 = kestrelBench(model, pairs, 'cpu', { KESTREL_POOL_MB: '0' }, n);
  const kMap = kestrelBench(model, pairs, 'cpu', { KESTREL_POOL_MB: '0', MALLOC_MMAP_THRESHOLD_: '131072' }, n);
  const on = ortBench(model, pairs, true, n);
  const off = ortBench(model, pairs, false, n);
  const mb = fs.statSync(model).size;
  cpuRows.push({ name, mb, k, k0, kMap, on, off });
  console.error(`${name}: Kestrel CPU RSS ${MiB(k.rss)} MiB (tensors ${MiB(k.host)}, pool cap 0: ${MiB(k0.rss)}, ` +
                `and big blocks unmapped: ${MiB(kMap.rss)}), ` +
                `ONNX Runtime RSS ${MiB(on)} / ${MiB(off)} MiB (arena on / off)`);
  if (onVulkan(name)) {
    const v = kestrelBench(model, pairs, 'vulkan', {}, Math.min(n, 2));
    vkRows.push({ name, v, on });
    console.error(`${name}: Kestrel Vulkan RSS ${MiB(v.rss)} MiB (host tensors ${MiB(v.host)}, device ${MiB(v.device)})`);
  }
}
fs.rmSync(tmp, { recursive: true, force: true });

console.log(`\nCPU: ${os.cpus()[0].model.trim()}, ${os.cpus().length} logical cores; ${threads} threads; ${runs} runs after one warm-up ` +
            '(IS-Net capped at 3); MiB = 2^20 bytes');
console.log(`Baselines (one-node model): Kestrel CPU ${MiB(base.cpu)}${vulkanOnly !== null ? `, Kestrel Vulkan ${MiB(base.vulkan)}` : ''}, ` +
            `ONNX Runtime ${MiB(base.ort)} (arena off ${MiB(base.ortNoArena)}); plain node ${MiB(base.node)}.`);
console.log('\n| model | file MiB | Kestrel peak RSS | above base | Kestrel peak tensor bytes | Kestrel RSS, KESTREL_POOL_MB=0 | ' +
            '+ MALLOC_MMAP_THRESHOLD_=131072 | ' +
            'ORT peak RSS, arena on / off | ORT above base, on / off | Kestrel / ORT RSS | Kestrel / ORT above base |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const { name, mb, k, k0, kMap, on, off } of cpuRows) {
  const kAbove = k.rss - base.cpu;
  const oAbove = on - base.ort;
  console.log(`| ${name} | ${MiB(mb)} | ${MiB(k.rss)} | ${MiB(kAbove)} | ${MiB(k.host)} | ${MiB(k0.rss)} | ${MiB(kMap.rss)} | ${MiB(on)} / ${MiB(off)} | ` +
              `${MiB(oAbove)} / ${MiB(off - base.ortNoArena)} | ${ratio(k.rss, on)} | ${ratio(kAbove, oAbove)} |`);
}
if (vkRows.length) {
  console.log('\nKestrel Vulkan (lavapipe: device memory is host memory, inside the RSS) beside ONNX Runtime CPU EP, arena on:');
  console.log('| model | Kestrel Vulkan peak RSS | above base | host tensor bytes | device bytes | ORT peak RSS | Kestrel / ORT RSS |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const { name, v, on } of vkRows) {
    console.log(`| ${name} | ${MiB(v.rss)} | ${MiB(v.rss - base.vulkan)} | ${MiB(v.host)} | ${MiB(v.device)} | ${MiB(on)} | ${ratio(v.rss, on)} |`);
  }
}

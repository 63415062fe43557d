#!/usr/bin/env node
// The GEMM choice, measured: OpenBLAS and oneDNN SGEMM (build/bench/gemm_candidates)
// beside ONNX Runtime's MatMul (MLAS) on the same shapes and thread count.
//   node bench/gemm_vs_ort.js [--threads N]
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const top = path.resolve(__dirname, '..');
const i = process.argv.indexOf('--threads');
const threads = i > 0 ? parseInt(process.argv[i + 1], 10) : 2;
const ort = require(process.env.KESTREL_ORT_NODE_MODULES
  ? path.join(process.env.KESTREL_ORT_NODE_MODULES, 'onnxruntime-node')
  : path.join(top, '.deps/npm/node_modules/onnxruntime-node'));

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kestrel-gemm-'));
  const lines = execFileSync(path.join(top, 'build/bench/gemm_candidates'),
    ['--threads', String(threads), '--json', '--models', dir]).toString().trim().split('\n').map((l) => JSON.parse(l));
  console.log(`CPU: ${os.cpus()[0].model.trim()}; ${threads} threads; median of 10 runs`);
  console.log('| MxNxK | what | ORT MatMul ms | OpenBLAS ms | oneDNN ms | OpenBLAS / ORT | oneDNN / ORT |');
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const r of lines) {
    const s = await ort.InferenceSession.create(path.join(dir, `matmul_${r.m}x${r.n}x${r.k}.onnx`),
      { intraOpNumThreads: threads, interOpNumThreads: 1 });
    const a = new ort.Tensor('float32', Float32Array.from({ length: r.m * r.k }, () => Math.random() - 0.5), [r.m, r.k]);
    await s.run({ A: a });
    const t = [];
    for (let k = 0; k < 10; ++k) {
      const t0 = process.hrtime.bigint();
      await s.run({ A: a });
      t.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    t.sort((x, y) => x - y);
    const o = t[5];
    console.log(`| ${r.m}x${r.n}x${r.k} | ${r.what} | ${o.toFixed(2)} | ${r.openblas_ms.toFixed(2)} | ${r.onednn_ms.toFixed(2)} | ` +
      `${(r.openblas_ms / o).toFixed(2)}x | ${(r.onednn_ms / o).toFixed(2)}x |`);
  }
  fs.rmSync(dir, { recursive: true, force: true });
})();

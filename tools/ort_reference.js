#!/usr/bin/env node
// Runs an ONNX model on ONNX Runtime's CPU execution provider: the reference
// Kestrel's outputs and timings are compared against.
//
//   node tools/ort_reference.js MODEL OUTDIR [NAME=FILE.npy ...] [--threads N] [--bench RUNS] [--no-optimizations]
//
// Every model input must be given as a .npy file. Output i (in the model's
// output order) is written to OUTDIR/i.npy. With --bench RUNS, the model is
// run a few times to warm up, then RUNS times, and one JSON line
// {"min_ms","median_ms","max_ms"} is printed last on stdout. --no-optimizations
// turns ONNX Runtime's graph optimizations off, as the family fixtures'
// reference outputs were made (tests/models/README.md).
// onnxruntime-node is loaded from .deps/npm/node_modules (scripts/setup.sh),
// or from the node_modules folder named by KESTREL_ORT_NODE_MODULES.
'use strict';
const fs = require('fs');
const path = require('path');

const WARMUP_RUNS = 3;

function die(msg) {
  process.stderr.write(`ort_reference: ${msg}\n`);
  process.exit(1);
}

function loadOrt() {
  const dir = process.env.KESTREL_ORT_NODE_MODULES || path.join(__dirname, '..', '.deps', 'npm', 'node_modules');
  const where = path.join(dir, 'onnxruntime-node');
  if (!fs.existsSync(where)) die(`onnxruntime-node not found at ${where}: run scripts/setup.sh or set KESTREL_ORT_NODE_MODULES`);
  return require(where);
}

// ONNX Runtime tensor type <-> numpy descr and typed array. float16 travels as
// raw 16-bit words; bool as one byte per element.
const TYPES = {
  float32: { descr: '<f4', array: Float32Array },
  float64: { descr: '<f8', array: Float64Array },
  float16: { descr: '<f2', array: Uint16Array },
  int8: { descr: '|i1', array: Int8Array },
  uint8: { descr: '|u1', array: Uint8Array },
  int16: { descr: '<i2', array: Int16Array },
  uint16: { descr: '<u2', array: Uint16Array },
  int32: { descr: '<i4', array: Int32Array },
  uint32: { descr: '<u4', array: Uint32Array },
  int64: { descr: '<i8', array: BigInt64Array },
  uint64: { descr: '<u8', array: BigUint64Array },
  bool: { descr: '|b1', array: Uint8Array },
};
// numpy also writes one-byte types with '<' or '=' and bool as '?'.
function typeOfDescr(descr) {
  const d = descr.replace(/^[=]/, '<').replace(/^<([iub]1)$/, '|$1').replace(/^\|?\?$/, '|b1');
  for (const [t, info] of Object.entries(TYPES)) if (info.descr === d) return t;
  return null;
}

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') die(`${file} is not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) die(`${file}: cannot parse the header ${header.trim()}`);
  if (fortran[1] === 'True') die(`${file}: Fortran-order arrays are not supported`);
  const type = typeOfDescr(descr[1]);
  if (!type) die(`${file}: element type '${descr[1]}' is not supported`);
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s.length).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const Arr = TYPES[type].array;
  const offset = start + headerLen;
  if (buf.length - offset < count * Arr.BYTES_PER_ELEMENT)
    die(`${file}: holds ${buf.length - offset} data bytes, shape [${dims}] needs ${count * Arr.BYTES_PER_ELEMENT}`);
  // Copy into a fresh, aligned buffer: the file's data offset need not be aligned.
  const data = new Arr(count);
  new Uint8Array(data.buffer).set(buf.subarray(offset, offset + count * Arr.BYTES_PER_ELEMENT));
  return { type, dims, data };
}

function writeNpy(file, type, dims, data) {
  const info = TYPES[type];
  if (!info) die(`output ${file}: element type ${type} cannot be written as .npy`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${info.descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Pad with spaces so the data starts on a 64-byte boundary; end with '\n'.
  header += ' '.repeat(64 - ((10 + header.length + 1) % 64 || 64)) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  let bytes;
  if (type === 'bool') bytes = Buffer.from(Uint8Array.from(data, v => (v ? 1 : 0)));
  else bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), bytes]));
}

function parseArgs(argv) {
  const a = { inputs: [], threads: 0, bench: 0, optimize: true };
  const pos = [];
  for (let i = 0; i < argv.length; ++i) {
    const s = argv[i];
    const wholeNumber = (flag, v) => {
      if (!/^\d+$/.test(v || '')) die(`${flag} expects a whole number, got '${v}'`);
      return Number(v);
    };
    if (s === '--threads') a.threads = wholeNumber(s, argv[++i]);
    else if (s === '--bench') a.bench = wholeNumber(s, argv[++i]);
    else if (s === '--no-optimizations') a.optimize = false;
    else if (s.startsWith('--')) die(`unknown option '${s}'`);
    else pos.push(s);
  }
  if (pos.length < 2) die('usage: ort_reference.js MODEL OUTDIR [NAME=FILE.npy ...] [--threads N] [--bench RUNS] [--no-optimizations]');
  [a.model, a.outdir] = pos;
  for (const s of pos.slice(2)) {
    const eq = s.indexOf('=');
    if (eq <= 0) die(`inputs are NAME=FILE.npy, got '${s}'`);
    a.inputs.push([s.slice(0, eq), s.slice(eq + 1)]);
  }
  return a;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  // Errors only: ONNX Runtime warns about unused initializers in several real models.
  ort.env.logLevel = 'error';
  const options = { executionProviders: ['cpu'], executionMode: 'sequential', interOpNumThreads: 1, logSeverityLevel: 3 };
  if (a.threads > 0) options.intraOpNumThreads = a.threads;
  if (!a.optimize) options.graphOptimizationLevel = 'disabled';
  const session = await ort.InferenceSession.create(a.model, options);

  const feeds = {};
  for (const [name, file] of a.inputs) {
    if (!session.inputNames.includes(name)) die(`model has no input '${name}' (inputs: ${session.inputNames.join(', ')})`);
    const t = readNpy(file);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const missing = session.inputNames.filter(n => !(n in feeds));
  if (missing.length) die(`no .npy given for input(s) ${missing.join(', ')}`);

  const outputs = await session.run(feeds);
  fs.mkdirSync(a.outdir, { recursive: true });
  session.outputNames.forEach((name, i) => {
    const t = outputs[name];
    writeNpy(path.join(a.outdir, `${i}.npy`), t.type, t.dims, t.data);
    console.log(`output ${i} '${name}': ${t.type} [${t.dims.join(',')}]`);
  });

  if (a.bench > 0) {
    for (let i = 0; i < WARMUP_RUNS; ++i) await session.run(feeds);
    const ms = [];
    for (let i = 0; i < a.bench; ++i) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    ms.sort((x, y) => x - y);
    const n = ms.length;
    const median = n % 2 ? ms[(n - 1) / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    console.log(JSON.stringify({ min_ms: ms[0], median_ms: median, max_ms: ms[n - 1] }));
  }
  await session.release();
}

// Run as a script; bench/ scripts require it for its .npy reader and loader.
if (require.main === module) main().catch(e => die(e && e.message ? e.message : String(e)));
module.exports = { loadOrt, readNpy };

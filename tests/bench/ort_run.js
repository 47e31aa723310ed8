// Run an ONNX model with ONNX Runtime (onnxruntime-node) N times and print one JSON line:
// {"runs_s":[...],"outputs":{name:[shape]}}. Used by the benchmarks as the peer measured in the same run.
// usage: node ort_run.js MODEL.onnx THREADS RUNS NAME=FILE.bin:d0,d1,... [...]
'use strict';
const path = require('path');
const fs = require('fs');
// Loads onnxruntime-node, exiting with the install command when it is missing.
const {ort} = require(path.join(__dirname, '..', 'tools', 'ort_reference.js'));

async function main() {
  const [modelPath, threads, runs, ...inputs] = process.argv.slice(2);
  const feeds = {};
  for (const spec of inputs) {
    const [name, rest] = spec.split('=');
    const [file, dims] = rest.split(':');
    const buf = fs.readFileSync(file);
    const data = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
    feeds[name] = new ort.Tensor('float32', data, dims.split(',').map(Number));
  }
  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  const times = [];
  let outputs = {};
  for (let i = 0; i < Number(runs); ++i) {
    const t0 = process.hrtime.bigint();
    const result = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
    outputs = Object.fromEntries(Object.entries(result).map(([k, v]) => [k, v.dims]));
  }
  console.log(JSON.stringify({ runs_s: times, outputs }));
}
main().catch((e) => {
  console.error(e.message);
  process.exit(1);
});

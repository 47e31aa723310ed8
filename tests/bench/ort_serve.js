#!/usr/bin/env node
// ONNX Runtime as a long-lived worker for a reference pipeline driven from Python (tests/bench/txt2img_precisions.py):
// loads MODEL once (onnxruntime-node, default graph optimisations, THREADS intra-op threads), prints one JSON line
// {"ready": true, "load_s": ...}, then answers one request per line of standard input until it closes:
//   {"feeds": {"NAME": {"file": "x.bin", "dtype": "float32"|"int64", "shape": [...]}, ...}, "out": "y.bin"}
// Each feed is the raw little-endian contents of its file; the model's first output is written to "out" as raw
// float32 and the answer is {"ok": true, "run_s": ..., "dims": [...]} (or {"ok": false, "error": "..."}).
// Loading the SD 1.5 UNet takes seconds, so a 10-step pipeline would spend more time loading than running if
// every UNet evaluation started a process.
//
// usage: node ort_serve.js MODEL THREADS
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

// Loads onnxruntime-node, exiting with the install command when it is missing.
const {ort} = require(path.join(__dirname, '..', 'tools', 'ort_reference.js'));

const ARRAYS = {float32: Float32Array, int64: BigInt64Array};

function readFeed(spec) {
    const Array_ = ARRAYS[spec.dtype];
    if (!Array_) throw new Error(`unsupported dtype ${spec.dtype}`);
    const bytes = fs.readFileSync(spec.file);
    const count = spec.shape.reduce((a, b) => a * b, 1);
    if (bytes.length !== count * Array_.BYTES_PER_ELEMENT)
        throw new Error(`${spec.file}: ${bytes.length} bytes, expected ${count} ${spec.dtype} for [${spec.shape}]`);
    // Copy into an aligned buffer: Node's pooled Buffers can start at any offset.
    const data = new Array_(count);
    new Uint8Array(data.buffer).set(bytes);
    return new ort.Tensor(spec.dtype, data, spec.shape);
}

async function main() {
    const [model, threads] = process.argv.slice(2);
    if (!model || !fs.existsSync(model) || !(Number(threads) >= 1)) {
        console.error('usage: node ort_serve.js MODEL THREADS');
        process.exit(2);
    }
    let t = process.hrtime.bigint();
    const session = await ort.InferenceSession.create(model, {
        intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
    });
    console.log(JSON.stringify({ready: true, load_s: Number(process.hrtime.bigint() - t) / 1e9}));
    const lines = readline.createInterface({input: process.stdin, terminal: false});
    for await (const line of lines) {
        if (!line.trim()) continue;
        try {
            const request = JSON.parse(line);
            const feeds = {};
            for (const [name, spec] of Object.entries(request.feeds)) feeds[name] = readFeed(spec);
            t = process.hrtime.bigint();
            const outputs = await session.run(feeds);
            const runS = Number(process.hrtime.bigint() - t) / 1e9;
            const out = outputs[session.outputNames[0]];
            if (out.type !== 'float32') throw new Error(`first output is ${out.type}, expected float32`);
            fs.writeFileSync(request.out, Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength));
            console.log(JSON.stringify({ok: true, run_s: runS, dims: out.dims}));
        } catch (e) {
            console.log(JSON.stringify({ok: false, error: String(e && e.message ? e.message : e)}));
        }
    }
    await session.release();
}

main().catch(e => {
    console.error('ort_serve.js: ' + (e && e.stack ? e.stack : e));
    process.exit(1);
});

#!/usr/bin/env node
// Reference outputs for the op conformance cases: for every CASES_DIR/<family>/<case>/case.json, run
// model.onnx with ONNX Runtime (onnxruntime-node, CPU, one thread, no graph optimisations, so results do not
// depend on the machine's core count) on the case's input_<i>.npy and write expected_<k>.npy.
//
// usage: node ort_reference.js CASES_DIR
//
// A case ONNX Runtime rejects, or whose output shape differs from the one model.txt declares, gets an
// error.txt (the C++ harness reports it as that case's failure) instead of stopping every other family.
// A missing onnxruntime-node or CASES_DIR is fatal.
'use strict';

const fs = require('fs');
const path = require('path');

let ort;
try {
    ort = require('onnxruntime-node');
} catch (e) {
    console.error('ort_reference.js: cannot load the npm package onnxruntime-node (' + e.message.split('\n')[0] +
                  ').\n' +
                  'Install it once with:  cd ' + __dirname + ' && npm ci --ignore-scripts\n' +
                  '(--ignore-scripts skips the CUDA download; the CPU library ships in the package).');
    process.exit(1);
}

// .npy descr <-> ONNX Runtime tensor type and the typed array holding it (float16 travels as raw bits).
const DTYPES = [
    {descr: '<f4', ort: 'float32', array: Float32Array},
    {descr: '<f2', ort: 'float16', array: Uint16Array},
    {descr: '<i8', ort: 'int64', array: BigInt64Array},
    {descr: '|u1', ort: 'uint8', array: Uint8Array},
    {descr: '|i1', ort: 'int8', array: Int8Array},
    {descr: '<i4', ort: 'int32', array: Int32Array},
    {descr: '|b1', ort: 'bool', array: Uint8Array},
    {descr: '<f8', ort: 'float64', array: Float64Array},
    {descr: '<i2', ort: 'int16', array: Int16Array},
    {descr: '<u2', ort: 'uint16', array: Uint16Array},
    {descr: '<u4', ort: 'uint32', array: Uint32Array},
    {descr: '<u8', ort: 'uint64', array: BigUint64Array},
];

function readNpy(file) {
    const buf = fs.readFileSync(file);
    if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY')
        throw new Error(file + ' is not a .npy file');
    const major = buf[6];
    const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
    const start = major === 1 ? 10 : 12;
    const header = buf.toString('latin1', start, start + headerLen);
    const descr = /'descr':\s*'([^']+)'/.exec(header);
    const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
    if (!descr || !shape || !/'fortran_order':\s*False/.test(header))
        throw new Error(file + ': unsupported .npy header ' + header);
    const dt = DTYPES.find(d => d.descr === descr[1]);
    if (!dt) throw new Error(file + ': unsupported .npy dtype ' + descr[1]);
    const dims = shape[1].split(',').map(s => s.trim()).filter(s => s.length).map(Number);
    const count = dims.reduce((a, b) => a * b, 1);
    const data = new dt.array(count); // fresh, aligned buffer
    const bytes = count * dt.array.BYTES_PER_ELEMENT;
    if (buf.length < start + headerLen + bytes) throw new Error(file + ' is truncated');
    new Uint8Array(data.buffer).set(buf.subarray(start + headerLen, start + headerLen + bytes));
    return new ort.Tensor(dt.ort, data, dims);
}

function writeNpy(file, tensor) {
    const dt = DTYPES.find(d => d.ort === tensor.type);
    if (!dt) throw new Error('output type ' + tensor.type + ' is not an onnxstream dtype');
    const dims = tensor.dims.map(Number);
    const shape = dims.length === 1 ? '(' + dims[0] + ',)' : '(' + dims.join(', ') + ')';
    let header = "{'descr': '" + dt.descr + "', 'fortran_order': False, 'shape': " + shape + ', }';
    // Version 1.0: magic(6) + version(2) + length(2) + header, padded to a multiple of 64 ending in \n.
    header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
    const pre = Buffer.alloc(10);
    pre.write('\x93NUMPY', 0, 'latin1');
    pre[6] = 1;
    pre[7] = 0;
    pre.writeUInt16LE(header.length, 8);
    const d = tensor.data;
    const body = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
    fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

const SESSION_OPTIONS = {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'disabled',
    logSeverityLevel: 3,
};

async function runCase(dir) {
    const meta = JSON.parse(fs.readFileSync(path.join(dir, 'case.json'), 'utf8'));
    const feeds = {};
    for (const input of meta.inputs)
        if (input.kind === 'input') feeds[input.name] = readNpy(path.join(dir, input.file));
    const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), SESSION_OPTIONS);
    try {
        const results = await session.run(feeds);
        for (const out of meta.outputs) {
            const t = results[out.name];
            if (!t) throw new Error('ONNX Runtime produced no output ' + out.name);
            const got = t.dims.map(Number);
            if (got.length !== out.shape.length || got.some((d, i) => d !== out.shape[i]))
                throw new Error('ONNX Runtime gives output ' + out.index + ' the shape [' + got +
                                '] but model.txt declares [' + out.shape + ']; fix the case (out_shapes=...)');
            writeNpy(path.join(dir, out.file), t);
        }
    } finally {
        await session.release();
    }
}

async function main() {
    const root = process.argv[2];
    if (!root || !fs.existsSync(root)) {
        console.error('usage: node ort_reference.js CASES_DIR (' + (root || 'no folder given') +
                      ' does not exist)');
        process.exit(2);
    }
    let ok = 0, failed = 0;
    for (const family of fs.readdirSync(root).sort()) {
        const famDir = path.join(root, family);
        if (!fs.statSync(famDir).isDirectory()) continue;
        for (const name of fs.readdirSync(famDir).sort()) {
            const dir = path.join(famDir, name);
            if (!fs.existsSync(path.join(dir, 'case.json'))) continue;
            if (fs.existsSync(path.join(dir, 'error.txt'))) continue; // the generator already failed it
            try {
                await runCase(dir);
                ok++;
            } catch (e) {
                failed++;
                // Paths in ONNX Runtime's message are shown as they will be after gen_op_cases.py's final rename.
                const why = e && e.message ? e.message : String(e);
                const msg = ('case ' + family + '/' + name + ': ONNX Runtime failed: ' + why)
                                .split(root).join(root.replace(/\.tmp$/, ''));
                for (const f of fs.readdirSync(dir))
                    if (f.startsWith('expected_')) fs.unlinkSync(path.join(dir, f));
                fs.writeFileSync(path.join(dir, 'error.txt'), msg + '\n');
                console.error('ort_reference.js: ' + msg);
            }
        }
    }
    console.log('ort_reference.js: onnxruntime-node ' + ort.env.versions.node + ': ' + ok + ' cases computed, ' +
                failed + ' failed');
}

// ort: the loaded onnxruntime-node, for the benchmarks' ONNX Runtime runners (tests/bench/ort_*.js).
module.exports = {ort, readNpy, writeNpy};

if (require.main === module) {
    main().catch(e => {
        console.error('ort_reference.js: ' + (e && e.stack ? e.stack : e));
        process.exit(1);
    });
}

#!/usr/bin/env node
// ONNX Runtime's side of `onnxstream-convert --check`: runs MODEL.onnx with onnxruntime-node (CPU, default
// graph optimisations) on the inputs in WORK_DIR, making any that are missing, and writes its outputs there.
//
// usage: node check_ort.js MODEL.onnx WORK_DIR [NAME=d0,d1,...]...
//   NAME=dims fixes the symbolic dimensions of input NAME (the converter's --input-shape); others become 1.
// Inputs: $ONNXSTREAM_CHECK_INPUTS/<input name>.npy when that folder is given and has it (the user's), else
// made here: float inputs uniform in [-1, 1) from a fixed seed, integer and bool inputs zeros. Writes WORK_DIR/input_<k>.npy, ort_<k>.npy and
// check.txt, one line per tensor: "input" or "output", its ONNX name and its file, separated by tabs.
// onnxruntime-node is found by Node's usual resolution (NODE_PATH); exit status 2 when it is not there.
'use strict';

const fs = require('fs');
const path = require('path');

let ort;
try {
    ort = require('onnxruntime-node');
} catch (e) {
    console.error('cannot load the npm package onnxruntime-node (' + e.message.split('\n')[0] + ')');
    process.exit(2);
}

const DTYPES = {
    float32: {descr: '<f4', array: Float32Array}, float16: {descr: '<f2', array: Uint16Array},
    float64: {descr: '<f8', array: Float64Array}, int64: {descr: '<i8', array: BigInt64Array},
    int32: {descr: '<i4', array: Int32Array}, int8: {descr: '|i1', array: Int8Array},
    uint8: {descr: '|u1', array: Uint8Array}, bool: {descr: '|b1', array: Uint8Array},
};

function writeNpy(file, type, dims, data) {
    const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
    let header = `{'descr': '${DTYPES[type].descr}', 'fortran_order': False, 'shape': ${shape}, }`;
    while ((10 + header.length + 1) % 64 !== 0) header += ' ';
    header += '\n';
    const pre = Buffer.alloc(10);
    pre.write('\x93NUMPY', 0, 'latin1');
    pre[6] = 1;
    pre[7] = 0;
    pre.writeUInt16LE(header.length, 8);
    fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
                                          Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

function readNpy(file) {
    const buf = fs.readFileSync(file);
    const len = buf.readUInt16LE(8);
    const header = buf.toString('latin1', 10, 10 + len);
    const descr = /'descr': '([^']+)'/.exec(header)[1];
    const dims = /'shape': \(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
    const type = Object.keys(DTYPES).find(k => DTYPES[k].descr === descr);
    if (!type) throw new Error(`${file}: unsupported dtype ${descr}`);
    const bytes = buf.subarray(10 + len);
    const copy = new Uint8Array(bytes.length);
    copy.set(bytes);
    return {type, dims, data: new DTYPES[type].array(copy.buffer)};
}

// A fixed-seed generator: the same inputs on every machine and run.
let seed = 12345;
function uniform() {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648 * 2 - 1;
}

function halfBits(x) {
    const f = new Float32Array([x]), u = new Uint32Array(f.buffer)[0];
    const sign = (u >>> 16) & 0x8000, exp = ((u >>> 23) & 0xff) - 127 + 15, mant = (u >>> 13) & 0x3ff;
    if (exp <= 0) return sign;
    return sign | (exp << 10) | mant;
}

function makeInput(type, dims) {
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new DTYPES[type].array(n);
    if (type === 'float32' || type === 'float64') for (let i = 0; i < n; ++i) data[i] = uniform();
    else if (type === 'float16') for (let i = 0; i < n; ++i) data[i] = halfBits(uniform());
    return data;
}

async function main() {
    const [modelPath, work, ...shapeArgs] = process.argv.slice(2);
    if (!modelPath || !work) {
        console.error('usage: node check_ort.js MODEL.onnx WORK_DIR [NAME=d0,d1,...]...');
        process.exit(1);
    }
    const fixed = {};
    for (const s of shapeArgs) {
        const eq = s.indexOf('=');
        fixed[s.slice(0, eq)] = s.slice(eq + 1).split(',').map(Number);
    }
    // Inputs the converter pinned (--input-value): NAME=v0,v1,...;NAME2=...
    const pinned = {};
    for (const s of (process.env.ONNXSTREAM_CHECK_VALUES || '').split(';').filter(Boolean)) {
        const eq = s.indexOf('=');
        pinned[s.slice(0, eq)] = s.slice(eq + 1).split(',').map(Number);
    }
    const session = await ort.InferenceSession.create(modelPath, {intraOpNumThreads: 1});
    const feeds = {}, listing = [];
    session.inputNames.forEach((name, k) => {
        const file = path.join(work, `input_${k}.npy`);
        const given = process.env.ONNXSTREAM_CHECK_INPUTS ? path.join(process.env.ONNXSTREAM_CHECK_INPUTS, `${name}.npy`) : '';
        let t;
        if (pinned[name]) {
            const meta = session.inputMetadata[k];
            const type = meta.type === 'float' ? 'float32' : meta.type;
            if (!DTYPES[type]) throw new Error(`input ${name}: dtype ${meta.type} is not supported by --check`);
            const dims = fixed[name] || meta.shape.map(d => (typeof d === 'number' && d > 0 ? d : 1));
            const data = makeInput(type, dims);
            pinned[name].forEach((v, i) => {
                data[i] = type === 'float16' ? halfBits(v) : typeof data[i] === 'bigint' ? BigInt(v) : v;
            });
            t = {type, dims, data};
            writeNpy(file, type, dims, t.data);
        } else if (given && fs.existsSync(given)) {
            t = readNpy(given);
            fs.copyFileSync(given, file);
        } else {
            const meta = session.inputMetadata[k];
            const type = meta.type === 'float' ? 'float32' : meta.type;
            if (!DTYPES[type]) throw new Error(`input ${name}: dtype ${meta.type} is not supported by --check`);
            const dims = fixed[name] || meta.shape.map(d => (typeof d === 'number' && d > 0 ? d : 1));
            t = {type, dims, data: makeInput(type, dims)};
            writeNpy(file, type, dims, t.data);
        }
        feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
        listing.push(['input', name, file].join('\t'));
    });
    const results = await session.run(feeds);
    session.outputNames.forEach((name, k) => {
        const t = results[name];
        const file = path.join(work, `ort_${k}.npy`);
        if (!DTYPES[t.type]) throw new Error(`output ${name}: dtype ${t.type} is not supported by --check`);
        writeNpy(file, t.type, t.dims, t.data);
        listing.push(['output', name, file].join('\t'));
    });
    fs.writeFileSync(path.join(work, 'check.txt'), listing.join('\n') + '\n');
}

main().catch(e => {
    console.error(e.message || String(e));
    process.exit(1);
});

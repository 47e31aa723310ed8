#!/usr/bin/env node
// Runs a streaming audio model with ONNX Runtime (onnxruntime-node from tests/tools) over a sequence of
// chunks in one session, feeding each run's state output back as the next run's state input, as an
// application does. Writes OUT_DIR/outputs.npy (every chunk's first output, stacked) and OUT_DIR/state.npy
// (the last state).
//
// usage: node ort_sequence.js MODEL.onnx CHUNKS.npy STATE.npy OUT_DIR [NAME=INT64_SCALAR]...
//   CHUNKS.npy holds [chunks, ...one chunk's shape]; the model's inputs are (chunk, state, scalars...) and its
//   outputs (output, next state), in the session's order.
'use strict';

const fs = require('fs');
const path = require('path');

const toolsDir = path.join(__dirname, '..', 'tools');
let ort, readNpy, writeNpy;
try {
    ort = require(path.join(toolsDir, 'node_modules', 'onnxruntime-node'));
    ({readNpy, writeNpy} = require(path.join(toolsDir, 'ort_reference.js')));
} catch (e) {
    console.error('ort_sequence.js: cannot load onnxruntime-node (' + e.message.split('\n')[0] + ').\n' +
                  'Install it once with:  cd ' + toolsDir + ' && npm ci --ignore-scripts');
    process.exit(2);
}

async function main() {
    const [modelPath, chunksPath, statePath, outDir, ...scalars] = process.argv.slice(2);
    if (!modelPath || !chunksPath || !statePath || !outDir) {
        console.error('usage: node ort_sequence.js MODEL.onnx CHUNKS.npy STATE.npy OUT_DIR [NAME=INT64_SCALAR]...');
        process.exit(2);
    }
    const session = await ort.InferenceSession.create(modelPath, {
        executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 3});
    const [chunkName, stateName] = session.inputNames;
    const [outName, nextStateName] = session.outputNames;
    const chunks = readNpy(chunksPath);
    let state = readNpy(statePath);
    const perChunk = chunks.dims.slice(1);
    const chunkSize = perChunk.reduce((a, b) => a * b, 1);
    const extra = {};
    for (const s of scalars) {
        const eq = s.indexOf('=');
        extra[s.slice(0, eq)] = new ort.Tensor('int64', BigInt64Array.from([BigInt(s.slice(eq + 1))]), []);
    }
    const outputs = [];
    let outDims = null;
    for (let i = 0; i < chunks.dims[0]; ++i) {
        const chunk = new ort.Tensor('float32', chunks.data.slice(i * chunkSize, (i + 1) * chunkSize), perChunk);
        const r = await session.run({[chunkName]: chunk, [stateName]: state, ...extra});
        outputs.push(...r[outName].data);
        outDims = r[outName].dims;
        state = r[nextStateName];
    }
    fs.mkdirSync(outDir, {recursive: true});
    writeNpy(path.join(outDir, 'outputs.npy'),
             new ort.Tensor('float32', Float32Array.from(outputs), [chunks.dims[0], ...outDims]));
    writeNpy(path.join(outDir, 'state.npy'), state);
}

main().catch(e => {
    console.error('ort_sequence.js: ' + e.message);
    process.exit(1);
});

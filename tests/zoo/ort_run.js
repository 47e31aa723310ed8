#!/usr/bin/env node
// Runs one zoo model with ONNX Runtime (onnxruntime-node from tests/tools, CPU, default graph optimisations,
// as an application would) RUNS times on .npy inputs, writes every output as OUT_DIR/<index>.npy (the
// session's output order) and prints one JSON line:
//   {"ort_version":..,"outputs":[{"name","file","shape"}],"runs_s":[..],"peak_rss_bytes":..}
// peak_rss_bytes is this node process's peak RSS (process.resourceUsage().maxRSS): node itself, ONNX Runtime
// and the model.
//
// usage: node ort_run.js MODEL.onnx OUT_DIR THREADS RUNS NAME=FILE.npy [...]
'use strict';

const fs = require('fs');
const path = require('path');

const toolsDir = path.join(__dirname, '..', 'tools');
let ort, readNpy, writeNpy;
try {
    ort = require(path.join(toolsDir, 'node_modules', 'onnxruntime-node'));
    ({readNpy, writeNpy} = require(path.join(toolsDir, 'ort_reference.js')));
} catch (e) {
    console.error('ort_run.js: cannot load onnxruntime-node (' + e.message.split('\n')[0] + ').\n' +
                  'Install it once with:  cd ' + toolsDir + ' && npm ci --ignore-scripts');
    process.exit(2);
}

async function main() {
    const [modelPath, outDir, threads, runs, ...inputs] = process.argv.slice(2);
    if (!modelPath || !outDir || !(Number(runs) >= 1) || inputs.length === 0) {
        console.error('usage: node ort_run.js MODEL.onnx OUT_DIR THREADS RUNS NAME=FILE.npy [...]');
        process.exit(2);
    }
    const feeds = {};
    for (const spec of inputs) {
        const eq = spec.indexOf('=');
        feeds[spec.slice(0, eq)] = readNpy(spec.slice(eq + 1));
    }
    const session = await ort.InferenceSession.create(modelPath, {
        executionProviders: ['cpu'],
        intraOpNumThreads: Number(threads),
        interOpNumThreads: 1,
        executionMode: 'sequential',
        logSeverityLevel: 3,
    });
    const times = [];
    let result;
    for (let i = 0; i < Number(runs); ++i) {
        const t0 = process.hrtime.bigint();
        result = await session.run(feeds);
        times.push(Number(process.hrtime.bigint() - t0) / 1e9);
    }
    fs.mkdirSync(outDir, {recursive: true});
    const outputs = session.outputNames.map((name, i) => {
        const file = path.join(outDir, i + '.npy');
        writeNpy(file, result[name]);
        return {name, file, shape: result[name].dims.map(Number)};
    });
    await session.release();
    console.log(JSON.stringify({
        ort_version: ort.env.versions.node,
        outputs,
        runs_s: times,
        peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
    }));
}

main().catch((e) => {
    console.error('ort_run.js: ' + (e && e.message ? e.message : e));
    process.exit(1);
});

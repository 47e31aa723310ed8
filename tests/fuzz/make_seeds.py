#!/usr/bin/python3
"""Seed corpora for the fuzz targets, written to OUT/<target>/ (run by run_fuzz.sh; nothing here is committed).

Every target starts from its kept regressions (tests/fuzz/regressions/<target>/) and the shared crashers
(../shared/data/crashers/<target>-*). model_run reads the same model.txt files as model_txt; convert_capi the
same ONNX files as onnx_import, behind an option byte (plain, fp16, int8 weights, a fixed input shape).

From real files: ../shared's YOLOv8n model.txt and ONNX model (its big initializers turned into graph inputs
so that it stays under the fuzzers' 1 MB input cap), the bad-input corpus, and whatever the test generators
left in the build folders given with --build (model.txt, *.npy, range_data.txt, *.onnx, *.safetensors). Plus
small hand-made .npy files of every dtype and header version, range data, ONNX models, and safetensors files,
valid and each broken in one way.
"""
import argparse
import hashlib
import json
import os
import struct
import sys

import numpy as np

MAX_BYTES = 1 << 20


def add(out, target, data, limit=MAX_BYTES):
    if len(data) > limit:
        return False
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
    return True


def add_file(out, target, path):
    with open(path, "rb") as f:
        return add(out, target, f.read())


def walk(roots, names=None, suffix=None):
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in ("node_modules", ".git", "fuzz-work")]
            for fn in filenames:
                if (names and fn in names) or (suffix and fn.endswith(suffix)):
                    yield os.path.join(dirpath, fn)


def npy_bytes(arr, version):
    import io
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, version=version, allow_pickle=False)
    return buf.getvalue()


def safetensors_bytes(header, data=b"", pad=True, length=None):
    """A safetensors file: the header (a dict, or JSON text or bytes as they are) padded with spaces to a
    multiple of 8 as writers pad it, after its little-endian length (or `length` instead of the true one)."""
    if isinstance(header, str):
        header = header.encode()
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def safetensors_seeds(out, root, builds):
    for p in walk([os.path.join(root, "tests")] + builds, suffix=".safetensors"):
        if os.path.getsize(p) <= MAX_BYTES:
            add_file(out, "safetensors", p)
    sizes = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I8": 1, "U8": 1, "BOOL": 1}
    shapes = [[2, 3], [4], [], [1, 1], [2], [3], [1], [2, 1]]
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for (dtype, size), shape in zip(sizes.items(), shapes):
        n = size
        for d in shape:
            n *= d
        header["t_" + dtype.lower()] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    add(out, "safetensors", safetensors_bytes(header, bytes(range(offset))))
    add(out, "safetensors", safetensors_bytes({}))
    add(out, "safetensors", safetensors_bytes({}, pad=False))
    w = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    add(out, "safetensors", safetensors_bytes({"w": w}, b"\0\0\x80?\0\0\0@"))
    add(out, "safetensors", safetensors_bytes({"z": {"dtype": "F16", "shape": [0, 3], "data_offsets": [0, 0]},
                                               "b": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}},
                                              b"\x80?"))
    # Near misses, one fault each.
    def one(**fields):
        return {"w": dict(w, **fields)}
    near = [
        (one(data_offsets=[0, 7]), bytes(7)),                      # byte count
        (one(dtype="F64", shape=[1]), bytes(8)),                   # a dtype the engine does not read
        (one(dtype="X"), bytes(8)),                                # unknown dtype
        (one(shape=[-2]), bytes(8)),                               # negative dim
        (one(shape=[2.0]), bytes(8)),                              # fractional
        (one(shape=[[2]]), bytes(8)),                              # nested
        (one(shape=[4611686018427387904]), b""),                   # bytes past 64 bits
        (one(data_offsets=[8, 0]), bytes(8)),                      # end before begin
        (one(), bytes(4)),                                         # truncated
        (one(), bytes(12)),                                        # data past the tensors
        ({"w": w, "v": {"dtype": "U8", "shape": [1], "data_offsets": [9, 10]}}, bytes(10)),  # gap
        ({"w": w, "v": {"dtype": "U8", "shape": [1], "data_offsets": [7, 8]}}, bytes(8)),    # overlap
        ({"__metadata__": {"k": 1}}, b""),                         # metadata not a string
        ({"w": {"dtype": "F32", "shape": [2]}}, bytes(8)),         # no data_offsets
        ({"w": dict(w, extra=1)}, bytes(8)),                       # unknown field
    ]
    for header, data in near:
        add(out, "safetensors", safetensors_bytes(header, data))
    text = json.dumps({"w": w})
    add(out, "safetensors", safetensors_bytes(text[:-1] + ', "w": ' + json.dumps(w) + "}", bytes(8)))  # duplicate
    add(out, "safetensors", safetensors_bytes(text + " x", bytes(8)))                                  # trailing
    add(out, "safetensors", safetensors_bytes(text.encode().replace(b'"w"', b'"w\xff"'), bytes(8)))  # bad UTF-8
    add(out, "safetensors", safetensors_bytes({"w": w}, bytes(8), length=1 << 20))                   # length
    add(out, "safetensors", safetensors_bytes({"w": w}, bytes(8), length=100000001))


def onnx_seeds(out, shared, builds):
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        print("make_seeds: python3-onnx missing, no hand-made ONNX seeds", file=sys.stderr)
        return
    yolo = os.path.join(shared, "data", "yolov8n", "yolov8n.onnx")
    if os.path.exists(yolo):
        m = onnx.load(yolo)
        keep = []
        for t in m.graph.initializer:
            if t.ByteSize() > 256:
                m.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
            else:
                keep.append(t)
        del m.graph.initializer[:]
        m.graph.initializer.extend(keep)
        add(out, "onnx_import", m.SerializeToString())
    for p in walk(builds, suffix=".onnx"):
        if os.path.getsize(p) <= MAX_BYTES:
            add_file(out, "onnx_import", p)

    def model(nodes, inputs, outputs, inits=(), opset=17, functions=()):
        g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                                 functions=list(functions)).SerializeToString()

    f32 = TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", f32, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", f32, None)
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    add(out, "onnx_import", model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                                  helper.make_node("Relu", ["c"], ["r"]),
                                  helper.make_node("Reshape", ["r", "shape"], ["y"])], [x], [y], [w, shape]))
    add(out, "onnx_import", model([helper.make_node("Shape", ["x"], ["s"]),
                                  helper.make_node("ConstantOfShape", ["s"], ["z"]),
                                  helper.make_node("Add", ["x", "z"], ["y"])], [x], [y], opset=11))
    fn = helper.make_function("local", "Twice", ["a"], ["b"], [helper.make_node("Add", ["a", "a"], ["b"])],
                              [helper.make_opsetid("", 17)])
    add(out, "onnx_import", model([helper.make_node("Twice", ["x"], ["y"], domain="local")], [x], [y],
                                  functions=[fn]))
    mm = numpy_helper.from_array(np.ones((8, 5), np.float32), "mm")
    bias = numpy_helper.from_array(np.ones((5,), np.float32), "bias")
    add(out, "onnx_import", model([helper.make_node("MatMul", ["x", "mm"], ["t"]),
                                  helper.make_node("Add", ["t", "bias"], ["u"]),
                                  helper.make_node("Softmax", ["u"], ["y"], axis=-1)], [x], [y], [mm, bias]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--root", required=True, help="project root")
    ap.add_argument("--build", action="append", default=[], help="build folders with generated test cases")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    shared = os.path.join(root, "..", "shared")
    builds = [b for b in a.build if os.path.isdir(b)]

    # model.txt
    for p in walk([os.path.join(shared, "models"), os.path.join(root, "tests")] + builds, names={"model.txt"}):
        add_file(a.out, "model_txt", p)
    # .npy: real ones, then every dtype, rank 0..4, header versions 1..3
    for p in walk([os.path.join(shared, "data")] + builds, suffix=".npy"):
        if os.path.getsize(p) <= 64 << 10:
            add_file(a.out, "npy", p)
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float16, np.int64, np.uint8, np.int8, np.int32, np.bool_):
        for shape in ((), (3,), (2, 3), (1, 2, 2, 2), (0, 4)):
            add(a.out, "npy", npy_bytes((rng.random(shape) * 10).astype(dt), (1, 0)))
    add(a.out, "npy", npy_bytes(np.arange(6, dtype=np.float32), (2, 0)))
    add(a.out, "npy", npy_bytes(np.arange(6, dtype=np.float32), (3, 0)))
    # range_data.txt
    for p in walk(builds, names={"range_data.txt"}):
        add_file(a.out, "range_data", p)
    add(a.out, "range_data", b"images,0,1\n/model.0/conv/Conv,-3.5,12.25\n")
    add(a.out, "range_data", b"# calibrated\r\na,-1e-3,1e3\r\n\r\nb,0,0\r\n")
    safetensors_seeds(a.out, root, builds)
    onnx_seeds(a.out, shared, builds)
    targets = ("model_txt", "model_run", "npy", "range_data", "safetensors", "onnx_import", "convert_capi")
    for t in targets:
        kept = os.path.join(root, "tests", "fuzz", "regressions", t)
        if os.path.isdir(kept):
            for fn in sorted(os.listdir(kept)):
                if not fn.startswith("."):
                    add_file(a.out, t, os.path.join(kept, fn))
        crashers = os.path.join(shared, "data", "crashers")
        if os.path.isdir(crashers):
            for fn in sorted(os.listdir(crashers)):
                if fn.startswith(t + "-"):
                    add_file(a.out, t, os.path.join(crashers, fn))
    for src, dst, prefixes in (("model_txt", "model_run", [b""]), ("onnx_import", "convert_capi", [b"\0", b"\1", b"\4", b"\x08"])):
        d = os.path.join(a.out, src)
        for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            with open(os.path.join(d, fn), "rb") as f:
                data = f.read()
            for prefix in prefixes:
                add(a.out, dst, prefix + data)
    for t in targets:
        d = os.path.join(a.out, t)
        print(f"seeds {t}: {len(os.listdir(d)) if os.path.isdir(d) else 0}")


if __name__ == "__main__":
    main()

"""Op conformance cases: the API used by tests/tools/op_cases/<family>.py, and the writer that turns one case
into a directory with an ONNX model (for ONNX Runtime) and the same op as an OnnxStream model.txt (for us).

A family module defines CASES, a list of Case objects:

    from opcase import Case, rand, randint, weight, const
    CASES = [
        Case("add_broadcast_f32", "Add", [rand(2, 3, 4), rand(3, 1)]),
        Case("reshape_const", "Reshape", [rand(2, 6), weight(const([3, -1], "int64"))]),
        Case("clip_omitted_min", "Clip", [rand(10), None, weight(const(0.5, "float32"))]),
    ]

Inputs are pushed graph inputs (rand/randint/const/numpy array), weights (weight(x): a .bin file in model.txt
and an initializer in ONNX) or None (an omitted optional input). Random data comes from a numpy Generator
seeded by a hash of "family/case", so every run produces the same bytes.
"""

import hashlib
import json
import os
import re

import numpy as np

DTYPES = ("float32", "float16", "int64", "uint8", "int8", "int32", "bool", "float64", "int16", "uint16", "uint32",
          "uint64")
INT_DTYPES = ("int64", "uint8", "int8", "int32", "int16", "uint16", "uint32", "uint64")
_CASE_NAME = re.compile(r"^[A-Za-z0-9_]+$")


class OpCaseError(Exception):
    """A case that cannot be generated; the message names the case and says what to change."""


def _check_dtype(dtype):
    dtype = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if dtype not in DTYPES:
        raise OpCaseError(f"dtype '{dtype}' is not one of {', '.join(DTYPES)}")
    return dtype


def _check_shape(shape):
    for d in shape:
        if not isinstance(d, (int, np.integer)) or d < 0:
            raise OpCaseError(f"bad shape {shape}: dimensions must be non-negative integers")
    return tuple(int(d) for d in shape)


class Data:
    """Tensor data, produced lazily so random values come from the case's own generator."""

    def __init__(self, kind, shape=None, dtype="float32", low=None, high=None, array=None):
        self.kind = kind
        self.shape = shape
        self.dtype = dtype
        self.low = low
        self.high = high
        self.array = array

    def make(self, rng):
        if self.kind == "const":
            return self.array
        if self.kind == "randint":
            return rng.integers(self.low, self.high, size=self.shape, dtype=np.int64).astype(self.dtype)
        if self.dtype == "bool":
            return rng.random(self.shape) < 0.5
        if self.dtype in INT_DTYPES:
            return rng.integers(int(self.low), int(self.high), size=self.shape, dtype=np.int64).astype(self.dtype)
        return rng.uniform(self.low, self.high, size=self.shape).astype(self.dtype)


def rand(*shape, dtype="float32", low=-1.0, high=1.0):
    """Uniform random tensor in [low, high) (bool: fair coin; integer dtypes: integers in [low, high))."""
    dtype = _check_dtype(dtype)
    if not low < high:
        raise OpCaseError(f"rand: low ({low}) must be below high ({high})")
    return Data("rand", _check_shape(shape), dtype, low, high)


def randint(*shape, low=0, high=10, dtype="int64"):
    """Uniform random integers in [low, high) (numpy convention: high is excluded)."""
    dtype = _check_dtype(dtype)
    if not low < high:
        raise OpCaseError(f"randint: low ({low}) must be below high ({high})")
    return Data("randint", _check_shape(shape), dtype, int(low), int(high))


def const(values, dtype):
    """Fixed values (a Python scalar gives a rank-0 tensor)."""
    dtype = _check_dtype(dtype)
    arr = np.array(values, dtype=dtype)
    return Data("const", arr.shape, dtype, array=arr)


class Weight:
    def __init__(self, data, stored=None):
        self.data = data
        self.stored = stored


def weight(x, stored=None):
    """Make an input a weight: a .bin file in model.txt and an initializer in the ONNX model.

    stored="float16" (for a float32 x): the .bin file and model.txt hold the values rounded to float16 (an
    `onnxstream-convert --fp16` weight beside float32 activations, which ONNX has no form for), and the ONNX
    initializer holds those same values in float32, so ONNX Runtime computes what an exact float32 kernel would.
    """
    if isinstance(x, Weight):
        raise OpCaseError("weight(weight(...)): the input is already a weight")
    data = _as_data(x)
    if stored is not None and (stored != "float16" or data.dtype != "float32"):
        raise OpCaseError(f"weight(..., stored={stored!r}): only a float32 weight can be stored as float16")
    return Weight(data, stored)


def _as_data(x):
    if isinstance(x, Data):
        return x
    if isinstance(x, np.ndarray):
        dtype = _check_dtype(x.dtype.name)
        return Data("const", x.shape, dtype, array=x)
    raise OpCaseError(f"an input must be rand(...), randint(...), const(...), a numpy array, weight(...) or None; "
                      f"got {type(x).__name__}")


class Case:
    """One op run on one set of inputs.

    attrs: ONNX attributes; the Python type picks the ONNX type (bool/int -> INT, float -> FLOAT, str/bytes ->
    STRING, list of int -> INTS, list with a float -> FLOATS, list of str -> STRINGS, numpy array -> TENSOR).
    outputs: number of op outputs. atol/rtol: None = default by output dtype (float32 1e-4/1e-4, float16
    1e-2/1e-2, integers and bool exact). chunk_bytes: also run the case with every streamable weight over this
    many bytes read in row chunks (the model option weight_chunk_bytes). out_shapes: model.txt output shapes when onnx shape inference cannot
    know them (data-dependent shapes); checked against ONNX Runtime's actual shapes. txt_attrs: model.txt
    attribute text overrides ({"key": "text"} adds/replaces, {"key": None} drops), for attributes whose
    model.txt spelling differs from the ONNX value. domain: ONNX operator domain ("" = ai.onnx).
    rel_l2: also hold every float output to ||got - expected|| / ||expected|| <= rel_l2.
    reference: for forms ONNX Runtime does not implement (LSTM with layout=1), a function (helper, node) that
    returns the ONNX nodes model.onnx runs instead of `node` (the op as built for the case), computing the same
    outputs from the same inputs; model.txt keeps the op itself.
    """

    def __init__(self, name, op, inputs, attrs=None, opset=17, outputs=1, atol=None, rtol=None,
                 out_shapes=None, txt_attrs=None, domain="", chunk_bytes=None, rel_l2=None, reference=None):
        if not isinstance(name, str) or not _CASE_NAME.match(name):
            raise OpCaseError(f"case name {name!r} must match [A-Za-z0-9_]+ (it names a directory and a gtest)")
        self.name = name
        self.op = op
        self.family = None  # set by the generator from the module name
        self.inputs = [None if x is None else x if isinstance(x, Weight) else _as_data(x) for x in inputs]
        self.attrs = dict(attrs or {})
        self.opset = int(opset)
        if outputs < 1:
            raise OpCaseError(f"case {name}: outputs must be at least 1")
        self.outputs = int(outputs)
        self.atol = None if atol is None else float(atol)
        self.rtol = None if rtol is None else float(rtol)
        if chunk_bytes is not None and (not isinstance(chunk_bytes, int) or chunk_bytes < 1):
            raise OpCaseError(f"case {name}: chunk_bytes must be a positive integer")
        self.chunk_bytes = chunk_bytes
        if out_shapes is not None:
            if len(out_shapes) != self.outputs:
                raise OpCaseError(f"case {name}: out_shapes has {len(out_shapes)} shapes for "
                                  f"{self.outputs} outputs")
            out_shapes = [_check_shape(s) for s in out_shapes]
        self.out_shapes = out_shapes
        self.txt_attrs = dict(txt_attrs or {})
        self.domain = domain
        self.rel_l2 = None if rel_l2 is None else float(rel_l2)
        if reference is not None and not callable(reference):
            raise OpCaseError(f"case {name}: reference must be a function (helper, node) -> list of nodes")
        self.reference = reference

    def seed(self):
        digest = hashlib.sha256(f"{self.family}/{self.name}".encode()).digest()
        return int.from_bytes(digest[:8], "little")


def escape_name(name):
    """OnnxStream's model.txt name escaping: every char outside [A-Za-z0-9] becomes _XX_ (uppercase hex)."""
    out = []
    for b in name.encode("utf-8"):
        c = chr(b)
        out.append(c if c.isascii() and c.isalnum() else f"_{b:02X}_")
    return "".join(out)


def _txt_float(v):
    # Python's repr of the shortest decimal that reads back as the same float32 (ONNX FLOAT attributes are
    # float32): 1e-4 -> "0.0001", 1e-5 -> "1e-05", 2 -> "2.0".
    return repr(float(str(np.float32(v))))


def _attr_text(value):
    if isinstance(value, (bool, int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return _txt_float(value)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        return ",".join(_attr_text(v) for v in value.reshape(-1).tolist())
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (float, np.floating)) for v in value):
            return ",".join(_txt_float(v) for v in value)
        return ",".join(_attr_text(v) for v in value)
    raise OpCaseError(f"attribute value {value!r} of type {type(value).__name__} has no model.txt form")


def _onnx_attr(helper, key, value):
    from onnx import AttributeProto, numpy_helper
    if isinstance(value, (bool, np.bool_)):
        return helper.make_attribute(key, int(value))
    if isinstance(value, np.integer):
        return helper.make_attribute(key, int(value))
    if isinstance(value, np.floating):
        return helper.make_attribute(key, float(value))
    if isinstance(value, np.ndarray):
        return helper.make_attribute(key, numpy_helper.from_array(value, key))
    if isinstance(value, (list, tuple)):
        if len(value) == 0:
            return helper.make_attribute(key, [], attr_type=AttributeProto.INTS)
        if all(isinstance(v, (int, np.integer, bool)) for v in value):
            return helper.make_attribute(key, [int(v) for v in value])
        if all(isinstance(v, (int, float, np.integer, np.floating)) for v in value):
            return helper.make_attribute(key, [float(v) for v in value])
        if all(isinstance(v, (str, bytes)) for v in value):
            return helper.make_attribute(key, [v.encode() if isinstance(v, str) else v for v in value])
        raise OpCaseError(f"attribute {key}: list {value!r} mixes types")
    return helper.make_attribute(key, value)


def _shape_text(shape):
    return ",".join(str(d) for d in shape)


def _static_shape(value_info):
    t = value_info.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None, t.tensor_type.elem_type if t.HasField("tensor_type") else 0
    dims = []
    for d in t.tensor_type.shape.dim:
        if not d.HasField("dim_value"):
            return None, t.tensor_type.elem_type
        dims.append(d.dim_value)
    return tuple(dims), t.tensor_type.elem_type


def write_case(case, out_dir):
    """Write case into out_dir (created): model.onnx, model.txt, weight .bin files, input_<i>.npy and case.json."""
    import onnx
    from onnx import helper, mapping, numpy_helper, shape_inference

    rng = np.random.default_rng(case.seed())
    os.makedirs(out_dir, exist_ok=True)

    node_inputs, graph_inputs, initializers, txt_inputs, json_inputs = [], [], [], [], []
    for i, x in enumerate(case.inputs):
        if x is None:
            node_inputs.append("")
            txt_inputs.append("")
            json_inputs.append({"index": i, "kind": "omitted"})
            continue
        is_weight = isinstance(x, Weight)
        # np.array, not np.ascontiguousarray: the latter turns a rank-0 tensor into shape (1,).
        arr = np.array((x.data if is_weight else x).make(rng), order="C")
        dtype = _check_dtype(arr.dtype.name)
        name = f"w_{i}" if is_weight else f"in_{i}"
        node_inputs.append(name)
        entry = {"index": i, "name": name, "dtype": dtype, "shape": list(arr.shape)}
        if is_weight:
            file = escape_name(name) + ".bin"
            stored = arr
            if x.stored:  # the file's dtype; ONNX gets the same values in the initializer's dtype
                stored = arr.astype(x.stored)
                arr = stored.astype(arr.dtype)
                entry.update(dtype=x.stored, onnx_dtype=dtype)
            # .bin files are raw little-endian; bool is one byte 0/1 as in numpy.
            stored.astype(stored.dtype.newbyteorder("<"), copy=False).tofile(os.path.join(out_dir, file))
            initializers.append(numpy_helper.from_array(arr, name))
            txt_inputs.append(f"{file}({stored.dtype.name}:{_shape_text(arr.shape)})")
            entry.update(kind="weight", file=file)
        else:
            np.save(os.path.join(out_dir, f"input_{i}.npy"), arr)
            elem = mapping.NP_TYPE_TO_TENSOR_TYPE[arr.dtype]
            graph_inputs.append(helper.make_tensor_value_info(name, elem, list(arr.shape)))
            txt_inputs.append(f"{escape_name(name)}({_shape_text(arr.shape)})")
            entry.update(kind="input", file=f"input_{i}.npy")
        json_inputs.append(entry)

    out_names = [f"out_{k}" for k in range(case.outputs)]
    try:
        attrs = [_onnx_attr(helper, k, v) for k, v in sorted(case.attrs.items())]
    except (TypeError, ValueError, OpCaseError) as e:
        raise OpCaseError(f"bad attribute: {e}") from None
    node = helper.make_node(case.op, node_inputs, out_names, name=case.name, domain=case.domain)
    node.attribute.extend(attrs)
    untyped_outputs = [helper.make_empty_tensor_value_info(n) for n in out_names]
    nodes = list(case.reference(helper, node)) if case.reference else [node]
    graph = helper.make_graph(nodes, case.name, graph_inputs, untyped_outputs, initializer=initializers)
    opsets = [helper.make_opsetid("", case.opset)]
    if case.domain:
        opsets.append(helper.make_opsetid(case.domain, 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="onnxstream-opcase")
    model.ir_version = 8

    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
        inferred_outputs = {vi.name: vi for vi in inferred.graph.output}
    except Exception:  # a schema onnx 1.12 does not know (newer opset): fall back to out_shapes
        inferred_outputs = {}
    out_shapes, out_elems = [], []
    for k, n in enumerate(out_names):
        shape, elem = _static_shape(inferred_outputs[n]) if n in inferred_outputs else (None, 0)
        if case.out_shapes is not None:
            shape = case.out_shapes[k]
        if shape is None:
            raise OpCaseError(f"onnx shape inference cannot tell the static shape of output {k}; "
                              f"give the case out_shapes=[...] (one shape per output)")
        out_shapes.append(shape)
        out_elems.append(elem)
    # Typed outputs let ONNX Runtime check our declared shapes too; an unknown element type stays untyped.
    del model.graph.output[:]
    for n, shape, elem in zip(out_names, out_shapes, out_elems):
        model.graph.output.append(helper.make_tensor_value_info(n, elem, list(shape)) if elem
                                  else helper.make_empty_tensor_value_info(n))
    onnx.save(model, os.path.join(out_dir, "model.onnx"))

    txt_attrs = {k: _attr_text(v) for k, v in case.attrs.items()}
    for k, v in case.txt_attrs.items():
        if v is None:
            txt_attrs.pop(k, None)
        else:
            txt_attrs[k] = str(v)
    line = (f"{escape_name(case.name)}:{case.op}*input:{';'.join(txt_inputs)}"
            f"*output:{';'.join(f'{escape_name(n)}({_shape_text(s)})' for n, s in zip(out_names, out_shapes))}")
    if txt_attrs:
        line += "*" + ";".join(f"{k}:{v}" for k, v in sorted(txt_attrs.items()))
    with open(os.path.join(out_dir, "model.txt"), "w", newline="\n") as f:
        f.write(line + "\n")

    meta = {
        "family": case.family, "case": case.name, "op": case.op, "opset": case.opset,
        "atol": case.atol, "rtol": case.rtol, "rel_l2": case.rel_l2, "chunk_bytes": case.chunk_bytes,
        "inputs": json_inputs,
        "outputs": [{"index": k, "name": n, "shape": list(s), "file": f"expected_{k}.npy"}
                    for k, (n, s) in enumerate(zip(out_names, out_shapes))],
    }
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")

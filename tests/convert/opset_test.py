#!/usr/bin/python3
"""Models of opsets 18 to 22 (read as opset 17 on every system), checked with `onnxstream-convert --check`
against ONNX Runtime:
- the Reduce family with axes as an input (constant, absent, empty with noop_with_empty_axes: the
  element-wise part alone, |x|, x*x, log x, x), Split with num_outputs (even and uneven), Resize with the new
  attributes at their defaults, with antialias, along chosen axes, with keep_aspect_ratio_policy and with
  half_pixel_symmetric coordinates, Pad along chosen axes and in wrap mode, Cast with saturate, and Conv at
  opset 22; with an ONNX that knows them (Debian 13), float8 QuantizeLinear/DequantizeLinear and Cast
  saturate=0, an int4 weight packed two per byte, and blocked dequantization;
- a Reduce whose axes are a graph input: refused naming the input, converted once --input-value pins it;
- operators new in those opsets that the engine runs: Gelu (20), GroupNormalization with per-group (18) and
  per-channel (21) scale and bias, Mish (18);
- malformed forms are refused naming the node and the reason (float axes, num_outputs against the
  outputs), and opset 23 is refused naming the newest opset read.
usage: opset_test.py --convert CONVERT --node-modules DIR --work DIR
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import convert_cases  # noqa: E402
from checklist import check, finish  # noqa: E402

MODELS = r'''
import numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper as nh
import sys
out = sys.argv[1]
def save(name, nodes, inputs, outputs, opset, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, "%s/%s.onnx" % (out, name))
f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
# opset 18: ReduceMean/ReduceMax with axes input, Split num_outputs (uneven), Resize with default new attrs
save("reduce18", [helper.make_node("ReduceMean", ["x", "axes"], ["m"], keepdims=1),
                  helper.make_node("ReduceMax", ["x", "axes2"], ["mx"], keepdims=0),
                  helper.make_node("ReduceL2", ["x"], ["l2"], keepdims=0),
                  helper.make_node("ReduceSumSquare", ["x", "noaxes"], ["id"], noop_with_empty_axes=1)],
     [f("x", [2, 3, 4])], [f("m", None), f("mx", None), f("l2", None), f("id", None)], 18,
     [nh.from_array(np.array([1, 2], np.int64), "axes"), nh.from_array(np.array([-1], np.int64), "axes2"),
      nh.from_array(np.array([], np.int64), "noaxes")])
save("split18", [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)],
     [f("x", [2, 9])], [f("a", None), f("b", None), f("c", None)], 18)
save("resize19", [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", antialias=0,
                                   keep_aspect_ratio_policy="stretch")],
     [f("x", [1, 2, 4, 4])], [f("y", None)], 19, [nh.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
save("gelu20", [helper.make_node("Gelu", ["x"], ["y"], approximate="tanh"),
                helper.make_node("Cast", ["y"], ["z"], to=TensorProto.FLOAT, saturate=1)],
     [f("x", [2, 5])], [f("z", None)], 20)
save("groupnorm21", [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2, epsilon=1e-5)],
     [f("x", [1, 4, 3, 3])], [f("y", None)], 21,
     [nh.from_array(np.array([1, 2, 3, 4], np.float32), "s"), nh.from_array(np.array([0, .5, -1, 2], np.float32), "b")])
save("conv22", [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]), helper.make_node("Mish", ["y"], ["z"])],
     [f("x", [1, 2, 5, 5])], [f("z", None)], 22, [nh.from_array(np.random.rand(3, 2, 3, 3).astype(np.float32), "w")])
# refusals
save("resize_antialias", [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", antialias=1)],
     [f("x", [1, 2, 4, 4])], [f("y", None)], 18, [nh.from_array(np.array([1, 1, .5, .5], np.float32), "scales")])
save("resize_axes", [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", axes=[2, 3])],
     [f("x", [1, 2, 4, 4])], [f("y", None)], 18, [nh.from_array(np.array([.5, .5], np.float32), "scales")])
save("pad_axes", [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"])],
     [f("x", [2, 3])], [f("y", None)], 18, [nh.from_array(np.array([1, 1], np.int64), "pads"),
                                           nh.from_array(np.array([1], np.int64), "axes")])
# opset 19: Resize's keep_aspect_ratio_policy over reversed axes feeding a Relu (its shape comes from the
# engine's inference), half_pixel_symmetric; Pad in wrap mode along chosen axes, and with the axes omitted
save("resize19_aspect", [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest", axes=[3, 2],
                                          keep_aspect_ratio_policy="not_larger"),
                         helper.make_node("Relu", ["y"], ["z"])],
     [f("x", [1, 2, 6, 8])], [f("z", None)], 19, [nh.from_array(np.array([5, 9], np.int64), "sizes")])
save("resize19_symmetric", [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear",
                                             coordinate_transformation_mode="half_pixel_symmetric")],
     [f("x", [1, 2, 5, 7])], [f("y", None)], 19,
     [nh.from_array(np.array([1, 1, 1.7, 0.6], np.float32), "scales")])
save("pad19_wrap", [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], mode="wrap"),
                    helper.make_node("Pad", ["y", "pads2", "", ""], ["z"], mode="wrap")],
     [f("x", [2, 3, 4])], [f("z", None)], 19,
     [nh.from_array(np.array([2, 1, 1, 3], np.int64), "pads"), nh.from_array(np.array([-1, 0], np.int64), "axes"),
      nh.from_array(np.array([0, 1, 0, 0, 2, 1], np.int64), "pads2")])
save("reduce_float_axes", [helper.make_node("ReduceMean", ["x", "axes"], ["m"])], [f("x", [2, 3])], [f("m", None)], 18,
     [nh.from_array(np.array([1], np.float32), "axes")])
save("split_bad_num", [helper.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=3)], [f("x", [2, 9])],
     [f("a", None), f("b", None)], 18)
save("reduce_axes_input", [helper.make_node("ReduceMax", ["x", "axes"], ["m"], keepdims=0)],
     [f("x", [2, 3, 4]), helper.make_tensor_value_info("axes", TensorProto.INT64, [2])], [f("m", None)], 18)
save("opset23", [helper.make_node("Relu", ["x"], ["y"])], [f("x", [2])], [f("y", None)], 23)
for op in ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd", "ReduceMin"]:
    save("noop_" + op, [helper.make_node(op, ["x", "noaxes"], ["y"], noop_with_empty_axes=1),
                        helper.make_node(op, ["x"], ["z"], keepdims=1)],
         [f("x", [2, 3])], [f("y", None), f("z", None)], 18, [nh.from_array(np.array([], np.int64), "noaxes")])
save("split18_uneven", [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)],
     [f("x", [2, 10])], [f("a", None), f("b", None), f("c", None)], 18)
save("groupnorm18", [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2, epsilon=1e-5)],
     [f("x", [1, 4, 3, 3])], [f("y", None)], 18,
     [nh.from_array(np.array([1, 2], np.float32), "s"), nh.from_array(np.array([0, .5], np.float32), "b")])
# The float8 and 4-bit types (an ONNX that knows them, 1.16 or later): float8 QuantizeLinear/DequantizeLinear
# round trips and non-saturating Casts; an int4 weight packed two per byte with an odd element count,
# dequantized per axis, and a blocked int8 one, each into a MatMul.
if hasattr(TensorProto, "INT4"):
    e4 = lambda n, v: helper.make_tensor(n, TensorProto.FLOAT8E4M3FN, [len(v)], v)
    save("float8_qdq21", [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
                          helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1),
                          helper.make_node("Cast", ["x"], ["c"], to=TensorProto.FLOAT8E5M2, saturate=0),
                          helper.make_node("Cast", ["c"], ["d"], to=TensorProto.FLOAT),
                          helper.make_node("Add", ["y", "d"], ["out"])],
         [f("x", [2, 3, 4])], [f("out", None)], 21,
         [nh.from_array(np.array([0.5, 0.01, 2.0], np.float32), "s"), e4("z", [0, 0, 0])])
    w4 = helper.make_tensor("w", TensorProto.INT4, [3, 5], list(np.arange(15) % 16 - 8))
    save("int4_weight21", [helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0),
                           helper.make_node("MatMul", ["x", "wf"], ["y"])],
         [f("x", [2, 3])], [f("y", None)], 21,
         [w4, nh.from_array(np.array([0.1, 0.2, 0.05], np.float32), "ws"),
          helper.make_tensor("wz", TensorProto.INT4, [3], [1, -2, 0])])
    save("blocked_weight21", [helper.make_node("DequantizeLinear", ["w", "ws"], ["wf"], axis=0, block_size=2),
                              helper.make_node("MatMul", ["x", "wf"], ["y"])],
         [f("x", [2, 5])], [f("y", None)], 21,
         [nh.from_array(np.arange(-20, 20, dtype=np.int8).reshape(5, 8), "w"),
          nh.from_array(np.linspace(0.01, 0.1, 24).astype(np.float32).reshape(3, 8), "ws")])
'''

CONVERTS = ["reduce18", "split18", "split18_uneven", "resize19", "resize_antialias", "resize_axes", "pad_axes",
            "resize19_aspect", "resize19_symmetric", "pad19_wrap", "gelu20", "groupnorm18", "groupnorm21",
            "conv22"] + \
    ["noop_" + op for op in ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd", "ReduceMin"]]
REFUSED = {"opset23": "newest onnxstream reads (22)", "reduce_float_axes": "axes is float; ONNX asks for int64",
           "split_bad_num": "num_outputs is 3 but the node has 2 outputs"}


def main():
    a, cli = convert_cases.setup(MODELS)

    # Models of types the installed ONNX does not know are not written.
    newer = [n for n in ("float8_qdq21", "int4_weight21", "blocked_weight21")
             if os.path.exists(os.path.join(a.work, n + ".onnx"))]
    for name in CONVERTS + newer:
        rc, out = cli(os.path.join(a.work, name + ".onnx"), os.path.join(a.work, name), "--check",
                      "--check-tolerance", "1e-5")
        check(rc == 0 and "check passed" in out,
              "%s converts and matches ONNX Runtime%s" % (name, "" if rc == 0 else " (" + out.strip()[-300:] + ")"))
    # A Reduce whose axes are a graph input: refused naming the input, then converted with it pinned.
    model = os.path.join(a.work, "reduce_axes_input.onnx")
    rc, out = cli(model, os.path.join(a.work, "reduce_axes_unpinned"))
    check(rc == 1 and "values of 'axes'" in out and "--input-value axes=" in out,
          "a Reduce's axes fed as an input are refused, naming the option that pins them (%s)" % out.strip()[-200:])
    rc, out = cli(model, os.path.join(a.work, "reduce_axes_pinned"), "--input-value", "axes=0,2", "--check",
                  "--check-tolerance", "1e-5")
    check(rc == 0 and "check passed" in out, "with --input-value axes=0,2 it converts and matches ONNX Runtime%s"
          % ("" if rc == 0 else " (" + out.strip()[-300:] + ")"))
    for name, reason in REFUSED.items():
        rc, out = cli(os.path.join(a.work, name + ".onnx"), os.path.join(a.work, name))
        check(rc == 1 and reason in out, "%s is refused saying '%s' (%s)" % (name, reason, out.strip()[-200:]))
    finish()


if __name__ == "__main__":
    main()

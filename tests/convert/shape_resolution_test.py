#!/usr/bin/python3
"""Shapes that come from computed-shape chains, checked with `onnxstream-convert --check` (ONNX Runtime):
- a torch.onnx export (dynamic batch and channel axes, fixed with --input-shape) whose `view`/`expand` take
  their sizes from `x.shape` at run time (Shape -> Gather -> Mul -> Concat -> Reshape/Expand) and feed an
  Einsum, whose output ONNX's own inference leaves symbolic: converts with static shapes (the engine's
  inference fills in what ONNX's does not) and matches ONNX Runtime, at two input shapes;
- a Reshape whose target shape is computed from input data: refused, naming the node and the input its
  shape comes from.
usage: shape_resolution_test.py --convert CONVERT --node-modules DIR --work DIR
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import convert_cases  # noqa: E402
from checklist import check, finish  # noqa: E402

MODELS = r'''
import sys, torch, onnx
from onnx import helper, TensorProto

class ViewExpandEinsum(torch.nn.Module):
    def forward(self, x, y):
        b, c, h, w = x.shape
        a = x.view(b * c, h * w)
        e = y.expand(b * c, h * w)
        z = torch.einsum("ij,ij->i", a, e)
        return z.view(b, c) + 1

out = sys.argv[1]
torch.onnx.export(ViewExpandEinsum(), (torch.randn(2, 3, 4, 5), torch.randn(1, 20)), out + "/view_expand_einsum.onnx",
                  input_names=["x", "y"], output_names=["z"], opset_version=13, dynamic_axes={"x": {0: "b", 1: "c"}})

cast = helper.make_node("Cast", ["s"], ["target"], to=TensorProto.INT64)
reshape = helper.make_node("Reshape", ["x", "target"], ["y"], name="data_reshape")
g = helper.make_graph([cast, reshape], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
                                             helper.make_tensor_value_info("s", TensorProto.FLOAT, [2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), out + "/data_reshape.onnx")
'''


def main():
    a, cli = convert_cases.setup(MODELS)

    model = os.path.join(a.work, "view_expand_einsum.onnx")
    for shape in ("2,3,4,5", "4,1,4,5"):
        rc, out = cli(model, os.path.join(a.work, "einsum_" + shape.replace(",", "x")), "--input-shape", "x=" + shape,
                      "--check", "--check-tolerance", "1e-5")
        check(rc == 0 and "check passed" in out,
              "view/expand on run-time sizes feeding an Einsum, x=%s: static shapes, matches ONNX Runtime%s"
              % (shape, "" if rc == 0 else " (" + out.strip()[-300:] + ")"))

    rc, out = cli(os.path.join(a.work, "data_reshape.onnx"), os.path.join(a.work, "data_reshape"))
    check(rc == 1 and "'data_reshape' (Reshape)" in out and "values of 'target'" in out and "run time" in out,
          "a Reshape to a shape computed from data is refused, naming the node and the input (%s)" % out.strip()[-300:])
    finish()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""If, Loop and Scan in exported models, checked with `onnxstream-convert --check` (ONNX Runtime on the original model):
- a scripted PyTorch module branching on its input's shape, with an If nested in the taken branch: for
  three input shapes each conversion takes a different path, leaves no If in model.txt and matches ONNX
  Runtime;
- a module whose whole graph sits under an If on an input value (a sample rate): with --input-value the
  pinned input leaves the model, each value keeps its own branch, and both match ONNX Runtime given that
  value; without it the If runs in the engine (both branches guarded, an IfMerge), matches ONNX Runtime for
  each value, gives the pinned conversions' outputs exactly and reads only the taken branch's weights; the
  same with an If nested in a branch, for each path through the two;
- an LSTM whose sequence output nobody reads: that output is not a model output of the conversion;
- Loops: PyTorch's `for i in range(x.shape[0])` appending to a list (a sequence) that is stacked after the
  loop, at two lengths, and hand-made Loops with a scan output and with no iteration, unroll and match ONNX
  Runtime; a while-style Loop and one of 5000 iterations are refused with the reason;
- hand-made Scans, forward and reversed, along axes 0 and 1, at opsets 13 and 11, unroll and match ONNX
  Runtime; one of 3000 steps is refused;
- malformed subgraphs and bad --input-value specs fail with a message and exit status 1, never a crash.
usage: control_flow_test.py --convert CONVERT --run RUN --node-modules DIR --work DIR
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import convert_cases  # noqa: E402
import cross_exe  # noqa: E402
from checklist import check, finish  # noqa: E402

MODELS = r'''
import sys, torch, onnx
from onnx import helper, TensorProto

class Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)
    def forward(self, x):
        if x.shape[1] == 8:
            y = self.a(x)
            if x.shape[0] > 1:
                y = y * 2.0 + x
            else:
                y = torch.relu(y)
        else:
            y = self.b(x[:, :8])
        return y

class OnValue(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv1d(1, 4, 5)
        self.b = torch.nn.Conv1d(1, 4, 3)
    def forward(self, x, sr):
        if sr == 16000:
            return torch.sigmoid(self.a(x)).mean(dim=2)
        else:
            return torch.tanh(self.b(x)).mean(dim=2)

class NestedOnValue(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)
        self.c = torch.nn.Linear(8, 8)
    def forward(self, x, mode):
        if mode > 0:
            y = self.a(x)
            if mode > 1:
                y = torch.relu(y) + self.c(x)
            else:
                y = y * 2.0
        else:
            y = self.b(x)
        return y

class LastState(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 6)
    def forward(self, x):
        _, (h, c) = self.lstm(x)
        return h

class Steps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
    def forward(self, x):
        h = torch.zeros(x.shape[1], 8)
        outs = []
        for i in range(x.shape[0]):
            h = torch.tanh(self.lin(x[i]) + h)
            outs.append(h * 2.0)
        return h, torch.stack(outs)

out = sys.argv[1]
torch.manual_seed(0)
torch.onnx.export(torch.jit.script(Steps()), (torch.randn(5, 3, 8),), out + "/steps.onnx", input_names=["x"],
                  output_names=["h", "all"], opset_version=13, dynamic_axes={"x": {0: "steps"}})
torch.onnx.export(torch.jit.script(Nested()), (torch.randn(2, 8),), out + "/nested.onnx", input_names=["x"],
                  output_names=["y"], opset_version=13, dynamic_axes={"x": {0: "batch", 1: "width"}})
torch.onnx.export(torch.jit.script(NestedOnValue()), (torch.randn(2, 8), torch.tensor(2)), out + "/nested_on_value.onnx",
                  input_names=["x", "mode"], output_names=["y"], opset_version=13)
torch.onnx.export(LastState(), (torch.randn(5, 1, 8),), out + "/last_state.onnx", input_names=["x"],
                  output_names=["h"], opset_version=13)
torch.onnx.export(torch.jit.script(OnValue()), (torch.randn(1, 1, 64), torch.tensor(16000)), out + "/on_value.onnx",
                  input_names=["x", "sr"], output_names=["y"], opset_version=13)

# Malformed: a condition of two values; a branch with two outputs for an If with one.
def if_model(cond_values, then_outputs, name):
    then_nodes = [helper.make_node("Identity", ["x"], ["t%d" % i]) for i in range(then_outputs)]
    then_g = helper.make_graph(then_nodes, "then", [], [helper.make_tensor_value_info("t%d" % i, TensorProto.FLOAT, [2])
                                                        for i in range(then_outputs)])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e0"])], "else", [],
                               [helper.make_tensor_value_info("e0", TensorProto.FLOAT, [2])])
    cond = helper.make_tensor("cond", TensorProto.BOOL, [len(cond_values)], cond_values)
    node = helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], initializer=[cond])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    open(out + "/" + name, "wb").write(m.SerializeToString())

# Loops written by hand: acc += x each iteration, scan output acc * 2; trip count and condition vary.
def loop_model(name, trip, condition="true"):
    body_nodes = [helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
                  helper.make_node("Mul", ["acc_out", "two"], ["scan"])]
    if condition == "true":
        body_nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    else:  # while acc < 10
        body_nodes += [helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
                       helper.make_node("Less", ["total", "ten"], ["cond_out"])]
    scan = trip > 0  # a scan output of no iteration has no shape to give
    body = helper.make_graph(body_nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2])] +
        ([helper.make_tensor_value_info("scan", TensorProto.FLOAT, [2])] if scan else []))
    start = helper.make_node("Neg", ["x"], ["start"])
    loop = helper.make_node("Loop", ["trip", "cond", "start"], ["acc", "scans"] if scan else ["acc"], body=body)
    inits = [helper.make_tensor("trip", TensorProto.INT64, [], [trip]),
             helper.make_tensor("cond", TensorProto.BOOL, [], [True]),
             helper.make_tensor("two", TensorProto.FLOAT, [], [2]),
             helper.make_tensor("ten", TensorProto.FLOAT, [], [10])]
    outputs = [helper.make_tensor_value_info("acc", TensorProto.FLOAT, [2])]
    if scan:
        outputs.append(helper.make_tensor_value_info("scans", TensorProto.FLOAT, [trip, 2]))
    g = helper.make_graph([start, loop], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], outputs,
                          initializer=inits)
    open(out + "/" + name, "wb").write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())

loop_model("loop_scan.onnx", 3)
loop_model("loop_zero_trips.onnx", 0)
loop_model("loop_while.onnx", 3, condition="while")
loop_model("loop_too_long.onnx", 5000)

# Scans written by hand: a running sum over the steps, its doubled value scanned out.
def scan_model(name, x_shape, in_axis=0, in_reverse=0, out_axis=0, out_reverse=0, opset=13):
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x_t"], ["acc_out"]), helper.make_node("Mul", ["acc_out", "two"], ["y_t"])],
        "body", [helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [2]),
                 helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("y_t", TensorProto.FLOAT, [2])],
        initializer=[helper.make_tensor("two", TensorProto.FLOAT, [], [2])])
    scan = helper.make_node("Scan", ["start", "x"], ["acc", "ys"], body=body, num_scan_inputs=1,
                            scan_input_axes=[in_axis], scan_input_directions=[in_reverse],
                            scan_output_axes=[out_axis], scan_output_directions=[out_reverse])
    steps = x_shape[in_axis]
    g = helper.make_graph([helper.make_node("Neg", ["s"], ["start"]), scan], "g",
                          [helper.make_tensor_value_info("s", TensorProto.FLOAT, [2]),
                           helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("acc", TensorProto.FLOAT, [2]),
                           helper.make_tensor_value_info("ys", TensorProto.FLOAT, [steps, 2] if out_axis == 0 else [2, steps])])
    open(out + "/" + name, "wb").write(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString())

scan_model("scan_sum.onnx", [4, 2])
scan_model("scan_reversed_axis1.onnx", [2, 5], in_axis=1, in_reverse=1, out_axis=1, out_reverse=1, opset=11)
scan_model("scan_too_long.onnx", [3000, 2])

if_model([True, False], 1, "two_value_condition.onnx")
if_model([True], 2, "branch_output_count.onnx")
if_model([False], 1, "else_taken.onnx")
'''


def op_types(folder):
    with open(os.path.join(folder, "model.txt")) as f:
        return [line.split("*", 1)[0].rsplit(":", 1)[1] for line in f if line.strip()]


def weight_bytes_by_guard(folder):
    """Bytes of the weight files that model.txt's unguarded lines read ("always") and that lines under the first
    If's then- and else-guards read (each reference is one read of the file per run)."""
    sizes = {"always": 0, "then": 0, "else": 0}
    lines = [l.rstrip("\n") for l in open(os.path.join(folder, "model.txt")) if l.strip()]
    else_guard = next(l.split("*output:")[1].split("(")[0] for l in lines if ":Not*" in l)
    for l in lines:
        parts = l.split("*")
        attrs = dict(kv.split(":", 1) for kv in parts[3].split(";")) if len(parts) > 3 and parts[3] else {}
        guard = attrs.get("onnxstream_guard")
        kind = "always" if guard is None else ("else" if guard == else_guard else "then")
        for ref in parts[1][len("input:"):].split(";"):
            name = ref.split("(")[0]
            if name.endswith(".bin"):
                stem = name[:-len("_nchw.bin")] if name.endswith("_nchw.bin") else name[:-4]
                files = [f for f in os.listdir(folder) if f in (name, stem + "_nhwc.bin")]
                sizes[kind] += os.path.getsize(os.path.join(folder, files[0]))
    return sizes


def main():
    a, cli = convert_cases.setup(MODELS, run=True)

    run_exe = cross_exe.wrap(a.run)

    def run(folder, **inputs):
        """onnxstream-run on FOLDER with inputs NAME=FILE (in the work folder); returns its outputs and bytes read."""
        out_dir = folder + ".out"
        shutil.rmtree(out_dir, ignore_errors=True)
        args = [folder, "--json", "--output-dir", out_dir]
        for name, f in inputs.items():
            args += ["--input", "%s=%s" % (name, os.path.join(a.work, f))]
        p = subprocess.run([run_exe] + args, capture_output=True, text=True)
        if p.returncode != 0:
            check(False, "onnxstream-run %s: %s" % (folder, (p.stdout + p.stderr)[-300:]))
            return {}, 0
        report = json.loads(p.stdout)
        return ({o["name"]: np.load(o["file"]) for o in report["outputs"]}, report["weights"][0]["bytes_read"])

    def runtime_if(model, folder, name, values, dtype):
        """Convert MODEL with no --input-value; check it against ONNX Runtime for each value of input NAME."""
        rc, out = cli(os.path.join(a.work, model), os.path.join(a.work, folder))
        check(rc == 0, "%s converts without --input-value%s" % (model, "" if rc == 0 else ": " + out[-300:]))
        if rc != 0:
            return []
        for v in values:
            given = os.path.join(a.work, "%s_%s_%s" % (folder, name, v))
            os.makedirs(given, exist_ok=True)
            np.save(os.path.join(given, name + ".npy"), np.array(v, dtype=dtype))
            rc, out = cli(os.path.join(a.work, model), os.path.join(a.work, folder), "--check-only", "--check-inputs",
                          given, "--check-tolerance", "1e-5")
            check(rc == 0 and "check passed" in out, "%s, %s=%s: the engine's If matches ONNX Runtime%s"
                  % (model, name, v, "" if rc == 0 else ": " + out[-300:]))
        return op_types(os.path.join(a.work, folder))

    def converts(model, folder, *args):
        rc, out = cli(os.path.join(a.work, model), os.path.join(a.work, folder), "--check", *args)
        types = op_types(os.path.join(a.work, folder)) if rc == 0 else []
        check(rc == 0 and "check passed" in out and not {"If", "Loop", "Scan"} & set(types) and types,
              "%s %s: no If, Loop or Scan left, matches ONNX Runtime%s" % (model, " ".join(args), "" if rc == 0 else ": " + out[-300:]))
        return types

    # The branch taken depends on the shape: Linear a + (x*2 + x) for 2x8, Linear a + Relu for 1x8,
    # Linear b on a slice for 3x12.
    t = converts("nested.onnx", "nested_2x8", "--input-shape", "x=2,8")
    check("Relu" not in t and "Mul" in t, "2x8 took the nested then-branch (%s)" % ",".join(t))
    t = converts("nested.onnx", "nested_1x8", "--input-shape", "x=1,8")
    check("Relu" in t, "1x8 took the nested else-branch (%s)" % ",".join(t))
    t = converts("nested.onnx", "nested_3x12", "--input-shape", "x=3,12")
    check("Slice" in t and "Relu" not in t, "3x12 took the outer else-branch (%s)" % ",".join(t))

    t = converts("on_value.onnx", "sr16k", "--input-value", "sr=16000")
    check("Sigmoid" in t and "Tanh" not in t, "sr=16000 keeps the sigmoid branch (%s)" % ",".join(t))
    t = converts("on_value.onnx", "sr8k", "--input-value", "sr=8000")
    check("Tanh" in t and "Sigmoid" not in t, "sr=8000 keeps the tanh branch (%s)" % ",".join(t))
    with open(os.path.join(a.work, "sr16k", "model.txt")) as f:
        check("sr(" not in f.read(), "the pinned input is no longer an input of the converted model")
    # Without --input-value the If runs in the engine: both branches guarded, only the taken one runs.
    t = runtime_if("on_value.onnx", "unpinned", "sr", [16000, 8000, 44100], np.int64)
    check("IfMerge" in t and "Sigmoid" in t and "Tanh" in t, "both branches are in model.txt (%s)" % ",".join(t))
    x = np.random.default_rng(3).standard_normal((1, 1, 64)).astype(np.float32)
    np.save(os.path.join(a.work, "x.npy"), x)
    read = {}
    for sr, pinned in ((16000, "sr16k"), (8000, "sr8k")):
        np.save(os.path.join(a.work, "sr.npy"), np.array(sr, dtype=np.int64))
        y, read[sr] = run(os.path.join(a.work, "unpinned"), x="x.npy", sr="sr.npy")
        y_pinned, _ = run(os.path.join(a.work, pinned), x="x.npy")
        check(np.array_equal(y["y"], y_pinned["y"]), "sr=%d: the engine's If gives the pinned conversion's output" % sr)
    branch = weight_bytes_by_guard(os.path.join(a.work, "unpinned"))
    check(read[16000] == branch["always"] + branch["then"] and read[8000] == branch["always"] + branch["else"],
          "only the taken branch's weights are read: %s bytes for sr=16000, %s for 8000 (weights: %s)"
          % (read[16000], read[8000], branch))
    # Nested: an If inside the then-branch, all on an input value.
    t = runtime_if("nested_on_value.onnx", "nested_on_value", "mode", [0, 1, 2, 5], np.int64)
    check(t.count("IfMerge") == 2 and "If" not in t, "both Ifs run in the engine (%s)" % ",".join(t))

    # Loops: torch's `for i in range(x.shape[0])` with a list stacked after it, at two lengths.
    for steps in (5, 1):
        t = converts("steps.onnx", "steps_%d" % steps, "--input-shape", "x=%d,3,8" % steps)
        check("Loop" not in t and t.count("Gemm") == steps and "SequenceInsert" not in t,
              "%d steps: the loop is %d copies of its body (%s)" % (steps, steps, ",".join(sorted(set(t)))))
    t = converts("loop_scan.onnx", "loop_scan")
    check("Loop" not in t and t.count("Add") == 3, "a hand-made Loop with a scan output unrolls (%s)" % ",".join(t))
    t = converts("loop_zero_trips.onnx", "loop_zero_trips")
    check(t == ["Neg"], "a Loop of 0 iterations passes its initial value on (%s)" % ",".join(t))
    for model, want in [("loop_while.onnx", "trip count is known"), ("loop_too_long.onnx", "at most 1024")]:
        rc, out = cli(os.path.join(a.work, model), os.path.join(a.work, model + ".out"))
        check(rc == 1 and "Loop x1" in out and want in out, "%s is refused, saying why (%s)" % (model, out.strip()[-200:]))

    # Scans: forward along axis 0 (opset 13), and backwards along axis 1 into a reversed axis-1 output
    # (opset 11: Unsqueeze takes its axes as an attribute).
    t = converts("scan_sum.onnx", "scan_sum")
    check("Scan" not in t and t.count("Add") == 4, "a Scan of 4 steps is 4 copies of its body (%s)" % ",".join(t))
    t = converts("scan_reversed_axis1.onnx", "scan_reversed_axis1")
    check("Scan" not in t and t.count("Add") == 5, "a reversed Scan along axis 1 unrolls (%s)" % ",".join(sorted(set(t))))
    rc, out = cli(os.path.join(a.work, "scan_too_long.onnx"), os.path.join(a.work, "scan_too_long.out"))
    check(rc == 1 and "Scan x1" in out and "1024 steps" in out, "a Scan of 3000 steps is refused (%s)" % out.strip()[-160:])

    # An LSTM whose sequence output Y nobody reads: model.txt must list Y, outputs.txt keeps it out.
    converts("last_state.onnx", "last_state")
    np.save(os.path.join(a.work, "x_seq.npy"), np.zeros((5, 1, 8), np.float32))
    outs, _ = run(os.path.join(a.work, "last_state"), x="x_seq.npy")
    check(sorted(outs) == ["h"], "the LSTM's unused Y is not a model output (outputs: %s)" % sorted(outs))

    t = converts("else_taken.onnx", "else_taken")
    check(t == ["Neg"], "a constant false condition keeps the else branch (%s)" % ",".join(t))
    for model, want in [("two_value_condition.onnx", "condition"), ("branch_output_count.onnx", "output")]:
        rc, out = cli(os.path.join(a.work, model), os.path.join(a.work, model + ".out"))
        check(rc == 1 and want in out and "Segmentation" not in out, "%s is refused (%s)" % (model, out.strip()[-200:]))
    model = os.path.join(a.work, "on_value.onnx")
    for spec, want in [("sr=1,2", "takes 1 value"), ("rate=16000", "no input 'rate'"), ("sr=abc", "not a valid int64"),
                       ("sr", "expects NAME=v0"), ("x=1", "takes 64 values")]:
        rc, out = cli(model, os.path.join(a.work, "bad_value"), "--input-value", spec)
        check(rc == 1 and want in out, "--input-value %s is refused with '%s' (%s)" % (spec, want, out.strip()[-200:]))
    finish()


if __name__ == "__main__":
    main()

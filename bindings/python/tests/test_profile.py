"""Per-op profiles (Flag.PROFILE), their rendering and the roofline measurement, on a three-op model whose
shapes, bytes and FLOPs the test computes itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

import onnxstream
from onnxstream import Error, Flag, ProfileFormat, Roofline, Status

# y = x · W (2x3 · 3x4), z = relu(y), s = z + z
MODEL = ("mm:MatMul*input:x(2,3);w.bin(float32:3,4)*output:y(2,4)\n"
         "act:Relu*input:y(2,4)*output:z(2,4)\n"
         "sum:Add*input:z(2,4);z(2,4)*output:s(2,4)\n")
X = np.array([[1, 2, 3], [-1, 0.5, 2]], dtype=np.float32)
W = np.array([[1, 0, -1, 2], [0.5, 1, 0, -2], [1, 1, 1, 1]], dtype=np.float32)
F32 = np.dtype(np.float32).itemsize


@pytest.fixture
def weights_dir(tmp_path):
    W.tofile(tmp_path / "w.bin")
    return tmp_path


def open_model(weights_dir, **kwargs) -> onnxstream.Model:
    return onnxstream.Model.from_string(MODEL, weights_dir, threads=1, provider="nocache", **kwargs)


def test_profile_records_every_op(weights_dir):
    with open_model(weights_dir, flags=Flag.PROFILE) as model:
        assert model.profile() == []  # before the first run
        out = model.run({"x": X})
        np.testing.assert_allclose(out["s"], 2 * np.maximum(X @ W, 0), rtol=1e-6)
        ops = model.profile()
        assert [(o.op_name, o.op_type) for o in ops] == [("mm", "MatMul"), ("act", "Relu"), ("sum", "Add")]
        previous_end = 0
        for i, op in enumerate(ops):
            assert isinstance(op, onnxstream.OpProfile)
            assert (op.op_index, op.line) == (i, i + 1)
            assert op.start_ns >= previous_end, ops
            previous_end = op.start_ns + op.duration_ns
            assert op.weight_wait_ns <= op.duration_ns and op.kernel_prepare_ns <= op.duration_ns, op
            assert op.memory_bytes > 0, op

        (m, k), n = X.shape, W.shape[1]
        y_shape = (m, n)
        mm, relu, add = ops
        assert mm.inputs == "float32[2,3], w:float32[3,4]"
        assert mm.outputs == "float32[2,4]"
        assert mm.flops == 2 * m * n * k  # 2 per multiply-add
        assert mm.weight_bytes == W.nbytes
        assert mm.activation_bytes == X.nbytes + int(np.prod(y_shape)) * F32
        assert (relu.inputs, relu.outputs, relu.flops, relu.weight_bytes) == ("float32[2,4]", "float32[2,4]", 0, 0)
        assert relu.activation_bytes == 2 * int(np.prod(y_shape)) * F32
        assert (add.flops, add.weight_bytes) == (0, 0)
        assert add.activation_bytes == 3 * int(np.prod(y_shape)) * F32  # z twice in, s out

        model.run({"x": np.zeros_like(X)})
    # Python copies: intact after a later run and after close.
    assert ops[0].op_name == "mm" and ops[0].inputs == "float32[2,3], w:float32[3,4]"
    with pytest.raises(Error) as e:
        model.profile()
    assert e.value.status == Status.BAD_STATE


def test_render_profile(weights_dir):
    with open_model(weights_dir, flags=Flag.PROFILE) as model:
        with pytest.raises(Error) as e:
            model.render_profile(ProfileFormat.TRACE_JSON)
        assert e.value.status == Status.BAD_STATE
        model.run({"x": X})

        trace = json.loads(model.render_profile(ProfileFormat.TRACE_JSON))
        op_events = [ev for ev in trace["traceEvents"] if ev.get("cat") == "op"]
        assert [(ev["name"], ev["args"]["op"]) for ev in op_events] == [
            ("MatMul", "mm"), ("Relu", "act"), ("Add", "sum")]
        assert op_events[0]["args"]["flops"] == 2 * 2 * 4 * 3
        assert json.loads(model.render_profile("trace-json")) == trace  # the format's name works too

        summary = model.render_profile(ProfileFormat.SUMMARY)
        assert "MatMul" in summary and "total" in summary and "% peak" not in summary
        assert "% peak" in model.render_profile("summary", Roofline(1e9, 1e9))
        assert "% peak" in model.render_profile(ProfileFormat.SUMMARY, peak=(1e9, 1e9))
        with pytest.raises(Error) as e:
            model.render_profile(ProfileFormat.SUMMARY, peak="fast")
        assert e.value.status == Status.INVALID_ARGUMENT
        with pytest.raises(Error) as e:
            model.render_profile(7)
        assert e.value.status == Status.INVALID_ARGUMENT and "unknown format" in e.value.message


def test_no_profile_without_the_flag(weights_dir):
    with open_model(weights_dir) as model:
        model.run({"x": X})
        assert model.profile() == []
        for fmt in ProfileFormat:
            with pytest.raises(Error) as e:
                model.render_profile(fmt)
            assert e.value.status == Status.BAD_STATE
            assert "ONNXSTREAM_FLAG_PROFILE" in e.value.message


def test_measure_roofline():
    r = onnxstream.measure_roofline(1)
    assert isinstance(r, Roofline)
    assert 0 < r.flops_per_s < float("inf") and 0 < r.bytes_per_s < float("inf")
    with pytest.raises(Error) as e:
        onnxstream.measure_roofline(-1)
    assert e.value.status == Status.INVALID_ARGUMENT and "threads" in e.value.message

"""onnxstream.convert: YOLOv8n's ONNX twin converted, run, and compared with ONNX Runtime's output."""

from __future__ import annotations

import numpy as np
import pytest

import onnxstream
from onnxstream import Error, Status
from onnxstream.convert import _shape_strings

needs_convert = pytest.mark.skipif(
    "not onnxstream.has_convert()", reason="the library was built without the ONNX importer")


@needs_convert
def test_convert_yolov8n_and_run(yolo, tmp_path):
    reports = []
    out = tmp_path / "yolov8n"
    assert onnxstream.convert(yolo.onnx_path, out, report=lambda level, m: reports.append((level, m))) == out
    assert (out / "model.txt").is_file()
    assert any(level == onnxstream.LogLevel.INFO for level, _ in reports)
    with onnxstream.Model(out, threads=2) as model:
        # balanced keeps the prepared convolutions it chose after the first run: the later runs reuse them.
        for _ in range(3):
            yolo.check(model.run({"images": yolo.input}))
        stats = model.run_stats()
        assert stats.kept_kernels > 0 and 0 < stats.kept_kernel_bytes <= 24 << 20


@needs_convert
def test_convert_to_model_safetensors(yolo, tmp_path):
    files = onnxstream.convert(yolo.onnx_path, tmp_path / "files", weights="files")
    store = onnxstream.convert(yolo.onnx_path, tmp_path / "store", weights=onnxstream.WeightsFormat.SAFETENSORS)
    assert (store / "model.safetensors").is_file() and not (files / "model.safetensors").exists()
    assert not list(store.glob("*.bin")) and len(list(files.glob("*.bin"))) > 100
    assert (store / "model.txt").read_text() == (files / "model.txt").read_text()
    outputs = {}
    for folder in (files, store):
        with onnxstream.Model(folder, threads=2) as model:
            outputs[folder] = model.run({"images": yolo.input})["output0"]
    yolo.check({"output0": outputs[files]})
    assert np.array_equal(outputs[store].view(np.uint32), outputs[files].view(np.uint32))
    # Packing the .bin folder afterwards writes the same store.
    onnxstream.pack_weights(files, remove_files=True)
    assert (files / "model.safetensors").read_bytes() == (store / "model.safetensors").read_bytes()


@needs_convert
def test_convert_w4(yolo, tmp_path):
    # YOLOv8n has no MatMul, Gemm or feed-forward weight: w4 stores its convolutions as int8, as w8 does.
    w4 = onnxstream.convert(yolo.onnx_path, tmp_path / "w4", quantize="w4")
    w8 = onnxstream.convert(yolo.onnx_path, tmp_path / "w8", quantize=onnxstream.Quantize.W8)
    assert (w4 / "model.txt").read_text() == (w8 / "model.txt").read_text()
    assert "int8[@" in (w4 / "model.txt").read_text() and "int4[" not in (w4 / "model.txt").read_text()


@needs_convert
def test_convert_errors(yolo, tmp_path):
    with pytest.raises(Error) as e:
        onnxstream.convert(tmp_path / "missing.onnx", tmp_path / "out")
    assert e.value.status == Status.IO
    assert not (tmp_path / "out").exists()

    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file").write_text("x")
    with pytest.raises(Error) as e:
        onnxstream.convert(yolo.onnx_path, tmp_path / "busy")
    assert e.value.status == Status.INVALID_ARGUMENT

    not_onnx = tmp_path / "not.onnx"
    not_onnx.write_bytes(b"\x00garbage" * 10)
    with pytest.raises(Error) as e:
        onnxstream.convert(not_onnx, tmp_path / "out2")
    assert e.value.status == Status.INVALID_MODEL

    for kwargs in (dict(quantize=7), dict(quantize="w2"), dict(keep_fp32="*norm*"),
                   dict(calibration_inputs=tmp_path),  # calibration_inputs only with W8A8
                   dict(weights=7), dict(weights="zip"), dict(weights=True)):
        with pytest.raises(Error) as e:
            onnxstream.convert(yolo.onnx_path, tmp_path / "out3", **kwargs)
        assert e.value.status == Status.INVALID_ARGUMENT, kwargs
        assert not (tmp_path / "out3").exists()


def test_input_shapes_spellings():
    assert _shape_strings({"sample": (1, 4, 64, 64), "t": [1]}) == ["sample=1,4,64,64", "t=1"]
    assert _shape_strings(["sample=1,4,64,64"]) == ["sample=1,4,64,64"]
    with pytest.raises(Error):
        _shape_strings({"sample": "1,4"})
    assert _shape_strings({}) == []


@needs_convert
def test_convert_resizable_runs_at_any_size(tmp_path):
    """A graph that computes a Reshape target from its input's height and width, converted with resizable:
    one Model then runs it at several sizes (NumPy reshapes for the reference)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    def const(name, values):
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64,
                                                                                   [len(values)], values))
    nodes = [helper.make_node("Shape", ["x"], ["s"]), const("i2", [2]), const("i3", [3]), const("head", [1, 4]),
             helper.make_node("Gather", ["s", "i2"], ["h"]), helper.make_node("Gather", ["s", "i3"], ["w"]),
             helper.make_node("Mul", ["h", "w"], ["hw"]), helper.make_node("Concat", ["head", "hw"], ["t"], axis=0),
             helper.make_node("Reshape", ["x", "t"], ["r"]), helper.make_node("Relu", ["r"], ["y"])]
    graph = helper.make_graph(nodes, "hw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "hw.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), str(path))
    out = onnxstream.convert(path, tmp_path / "any", input_shapes={"x": (1, 4, 6, 5)},
                             resizable={"x": (1, 4, 9, 7)})
    text = (out / "model.txt").read_text()
    assert "InputDims" in text and "x(1,4,?,?)" in text
    rng = np.random.default_rng(4)
    with onnxstream.Model(out, threads=1) as model:
        assert model.inputs[0].shape == (1, 4, -1, -1)  # -1: any size
        for h, w in ((6, 5), (3, 8), (9, 7), (6, 5)):
            x = rng.standard_normal((1, 4, h, w)).astype(np.float32)
            y = model.run({"x": x})["y"]
            assert np.array_equal(y, np.maximum(x.reshape(1, 4, h * w), 0)), (h, w)

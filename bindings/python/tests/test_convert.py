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
        yolo.check(model.run({"images": yolo.input}))


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

    for kwargs in (dict(quantize=7), dict(quantize="w4"), dict(keep_fp32="*norm*"),
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

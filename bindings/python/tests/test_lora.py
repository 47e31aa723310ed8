"""Model.add_lora on a one-MatMul model: y = x · (W + scale · alpha / rank · (up · down)ᵀ), computed here."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import onnxstream
from onnxstream import Error, Status

MODEL = "/mm/MatMul:MatMul*input:x(2,3);w.bin(float32:3,4)*output:y(2,4)\n"
X = np.array([[1, 2, 3], [-1, 0.5, 2]], dtype=np.float32)
W = np.array([[1, 0, -1, 2], [0.5, 1, 0, -2], [1, 1, 1, 1]], dtype=np.float32)
UP = np.array([[1], [2], [3], [4]], dtype=np.float32)  # [out, rank 1]
DOWN = np.array([[1, 0, -1]], dtype=np.float32)         # [rank 1, in]


def write_lora(path, tensors):
    header, data = {}, b""
    for name, a in tensors.items():
        raw = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


@pytest.fixture
def folder(tmp_path):
    W.tofile(tmp_path / "w.bin")
    write_lora(tmp_path / "lora.safetensors",
               {"lora_unet_mm.lora_up.weight": UP, "lora_unet_mm.lora_down.weight": DOWN})
    return tmp_path


def test_add_lora_changes_the_weight_from_the_next_run(folder):
    with onnxstream.Model.from_string(MODEL, folder, threads=1, provider="nocache") as model:
        np.testing.assert_allclose(model.run({"x": X})["y"], X @ W, rtol=1e-6)
        assert model.add_lora(folder / "lora.safetensors", scale=0.5, key_prefix="lora_unet_") == 1
        want = X @ (W + 0.5 * (UP @ DOWN).T)
        np.testing.assert_allclose(model.run({"x": X})["y"], want, rtol=1e-6)
        assert model.add_lora(folder / "lora.safetensors", key_prefix="other_") == 0


def test_add_lora_errors(folder):
    with onnxstream.Model.from_string(MODEL, folder, threads=1) as model:
        with pytest.raises(Error) as e:
            model.add_lora(folder / "missing.safetensors")
        assert e.value.status == Status.IO
        write_lora(folder / "bad.safetensors",
                   {"lora_unet_mm.lora_up.weight": UP, "lora_unet_mm.lora_down.weight": np.zeros((1, 5), np.float32)})
        with pytest.raises(Error) as e:
            model.add_lora(folder / "bad.safetensors")
        assert e.value.status == Status.INVALID_ARGUMENT and "lora_unet_mm" in str(e.value)
        with pytest.raises(Error) as e:
            model.add_lora(folder / "lora.safetensors", scale="big")
        assert e.value.status == Status.INVALID_ARGUMENT

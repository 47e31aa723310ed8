"""Shared fixtures: a tiny two-op model, the YOLOv8n reference data and comparison helpers.

The library is found like any user finds it: set ONNXSTREAM_LIBRARY to <build>/src/libonnxstream.so
(meson test does). ONNXSTREAM_SHARED_DIR overrides ../shared next to the repository; without it the
YOLOv8n tests skip, unless ONNXSTREAM_REQUIRE_SHARED is set (meson sets it when the data is there).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import onnxstream

REPO = Path(__file__).resolve().parents[3]

# y = (x + w) * v with x: (1,4) input and 4-element weights w and v.
TINY_MODEL = ("add:Add*input:x(1,4);w.bin(float32:4)*output:a(1,4)\n"
              "mul:Mul*input:a(1,4);v.bin(float32:4)*output:y(1,4)\n")
TINY_X = np.array([[1, 2, 3, 4]], dtype=np.float32)
TINY_W = np.array([10, 20, 30, 40], dtype=np.float32)
TINY_V = np.array([2, 2, 2, 2], dtype=np.float32)


def tiny_expected(x: np.ndarray) -> np.ndarray:
    """The tiny model's result computed by NumPy, independently of the engine."""
    return (x.astype(np.float32) + TINY_W) * TINY_V


def tiny_weights() -> dict:
    return {"w.bin": TINY_W.tobytes(), "v.bin": TINY_V.tobytes()}


@pytest.fixture
def tiny_dir(tmp_path: Path) -> Path:
    """A model folder with model.txt and its two weight files."""
    (tmp_path / "model.txt").write_text(TINY_MODEL)
    for name, data in tiny_weights().items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


class MemoryProvider:
    """Serves weights from a dict; counts calls; fails or raises on chosen files."""

    def __init__(self, weights: dict, fail_on: str = "", raise_on: str = ""):
        self.weights = weights
        self.fail_on = fail_on
        self.raise_on = raise_on
        self.reads = 0
        self.prefetches = 0
        self.closes = 0

    def read(self, request: onnxstream.WeightRequest, dst: memoryview):
        self.reads += 1
        if request.file == self.fail_on:
            return False
        if request.file == self.raise_on:
            raise OSError(f"disk on fire while reading {request.file}")
        dst[:] = self.weights[request.file]
        return None

    def prefetch(self, request: onnxstream.WeightRequest) -> None:
        self.prefetches += 1

    def close(self) -> None:
        self.closes += 1


def shared_dir() -> Path:
    env = os.environ.get("ONNXSTREAM_SHARED_DIR")
    d = Path(env) if env else REPO.parent / "shared"
    if not (d / "models" / "yolov8n" / "model.txt").is_file():
        if os.environ.get("ONNXSTREAM_REQUIRE_SHARED"):
            pytest.fail(f"{d} has no models/yolov8n (ONNXSTREAM_REQUIRE_SHARED is set)")
        pytest.skip(f"{d} has no models/yolov8n (set ONNXSTREAM_SHARED_DIR)")
    return d


class Yolo:
    """Paths and data of the YOLOv8n reference: ONNX Runtime's output on a real picture."""

    def __init__(self, shared: Path):
        self.shared = shared
        self.model_dir = shared / "models" / "yolov8n"
        data = shared / "data" / "yolov8n"
        self.input_path = data / "input_images_1x3x640x640_f32.bin"
        self.onnx_path = data / "yolov8n.onnx"
        self.input = np.fromfile(self.input_path, dtype="<f4").reshape(1, 3, 640, 640)
        self.expected = np.fromfile(data / "expected_output0_1x84x8400_f32.bin", dtype="<f4").reshape(1, 84, 8400)

    def check(self, outputs: dict, limit: float = 1e-4) -> float:
        """Assert output0 matches ONNX Runtime within rel L2 <= limit; returns the error."""
        y = outputs["output0"]
        assert y.shape == (1, 84, 8400) and y.dtype == np.float32
        err = rel_l2(y, self.expected)
        assert err <= limit, f"rel L2 vs ONNX Runtime {err:.3e} > {limit}"
        return err


@pytest.fixture(scope="session")
def yolo() -> Yolo:
    return Yolo(shared_dir())


def rel_l2(a: np.ndarray, b: np.ndarray) -> float:
    a = a.astype(np.float64).ravel()
    b = b.astype(np.float64).ravel()
    assert a.size == b.size
    return float(np.sqrt(np.sum((a - b) ** 2) / max(np.sum(b * b), 1e-30)))

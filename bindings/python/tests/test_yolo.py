"""YOLOv8n end to end against ONNX Runtime's reference output (rel L2 <= 1e-4).

ONNXSTREAM_RUN, when set to the onnxstream-run CLI, adds a bit-exact comparison of the Python
provider's result with the C tool's (meson sets it for native builds with tools). The weights packed
into one model.safetensors give the result of the .bin files, bit for bit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import onnxstream
from onnxstream import Error, Status

THREADS = 2


class FileProvider:
    """Serves every weight from the model folder, from Python, like the built-in nocache provider."""

    def __init__(self, model_dir: Path):
        self.model_dir = model_dir
        self.files = set()
        self.closes = 0

    def read(self, request, dst):
        self.files.add(request.file)
        with open(self.model_dir / request.file, "rb") as f:
            return f.readinto(dst)

    def close(self):
        self.closes += 1


class ArrayLender:
    """Lends each weight file as a NumPy array read once (zero-copy into the engine)."""

    def __init__(self, model_dir: Path):
        self.model_dir = model_dir
        self.cache = {}
        self.lent = self.released = 0

    def lend(self, request):
        if request.file not in self.cache:
            self.cache[request.file] = np.fromfile(self.model_dir / request.file, dtype=np.uint8)
        self.lent += 1
        return self.cache[request.file]

    def release(self, buffer):
        self.released += 1


def provider_model(yolo, provider, **kwargs) -> onnxstream.Model:
    # Only model.txt comes from disk: every weight comes from the provider.
    text = (yolo.model_dir / "model.txt").read_text()
    return onnxstream.Model.from_string(text, None, threads=THREADS, weights_provider=provider, **kwargs)


def test_builtin_provider_matches_reference(yolo):
    with onnxstream.Model(yolo.model_dir, threads=THREADS) as model:
        assert model.inputs == [onnxstream.TensorInfo("images", (1, 3, 640, 640), onnxstream.DType.FLOAT32)]
        yolo.check(model.run({"images": yolo.input}))
        stats = model.run_stats()
        assert stats.run_us > 0 and stats.weight_bytes_read > 1_000_000
        assert model.memory_stats().peak_bytes > yolo.input.nbytes


@pytest.fixture(scope="module")
def provider_output(yolo):
    """output0 of a run whose every weight came from FileProvider."""
    provider = FileProvider(yolo.model_dir)
    with provider_model(yolo, provider) as model:
        y = model.run({"images": yolo.input})["output0"]
    assert provider.closes == 1 and len(provider.files) > 100
    return y


def test_python_provider_matches_reference(yolo, provider_output):
    yolo.check({"output0": provider_output})


def test_python_provider_matches_cli_bit_for_bit(yolo, provider_output, tmp_path):
    cli = os.environ.get("ONNXSTREAM_RUN")
    if not cli:
        pytest.skip("ONNXSTREAM_RUN is not set: no comparison with the C CLI")
    subprocess.run([cli, str(yolo.model_dir), "--input", f"images={yolo.input_path}", "--threads", str(THREADS),
                    "--provider", "nocache", "--output-dir", str(tmp_path)], check=True, capture_output=True)
    ref = np.load(tmp_path / "output0.npy")
    assert ref.shape == provider_output.shape
    diff = float(np.max(np.abs(ref.astype(np.float64) - provider_output)))
    assert diff == 0, f"the Python provider changed the result: max |diff| {diff}"


def test_zero_copy_lender_matches_reference(yolo):
    lender = ArrayLender(yolo.model_dir)
    with provider_model(yolo, lender) as model:
        yolo.check(model.run({"images": yolo.input}))
        assert lender.lent > 100 and lender.released == lender.lent


@pytest.mark.parametrize("mode", ["fail", "raise"])
def test_failing_provider_mid_network(yolo, mode):
    target = "model_2E_9_2E_cv2_2E_conv_2E_bias.bin"  # the SPPF block, halfway through the network
    files = FileProvider(yolo.model_dir)

    def read(request, dst):
        if request.file == target:
            if mode == "fail":
                return False
            raise PermissionError(f"no access to {request.file}")
        return files.read(request, dst)

    with provider_model(yolo, read) as model:
        with pytest.raises(Error) as e:
            model.run({"images": yolo.input})
        assert e.value.status == Status.CALLBACK and f"'{target}'" in e.value.message
        if mode == "fail":
            assert "read returned False" in e.value.message
        else:
            assert f"PermissionError: no access to {target}" in e.value.message
            assert isinstance(e.value.__cause__, PermissionError)
        assert len(files.files) > 10  # it failed halfway, not at the first weight


def test_cancel_through_progress_then_run_again(yolo):
    seen = []

    def progress(p):
        seen.append(p)
        return p.op_index < 10  # False after op 10 cancels

    with onnxstream.Model(yolo.model_dir, threads=THREADS, progress=progress) as model:
        with pytest.raises(Error) as e:
            model.run({"images": yolo.input})
        assert e.value.status == Status.CANCELLED
        assert [p.op_index for p in seen] == list(range(11))
        assert seen[0].op_count > 100 and all(p.peak_bytes >= p.current_bytes for p in seen)
        model.set_progress_callback(None)
        yolo.check(model.run())  # the model stays usable, with its inputs still pushed


def test_bad_input_shape_and_dtype(yolo):
    with onnxstream.Model(yolo.model_dir, threads=THREADS) as model:
        for bad in (yolo.input[:, :, :320], yolo.input.reshape(3, 640, 640)):
            with pytest.raises(Error) as e:
                model.push("images", bad)
            assert e.value.status == Status.INVALID_ARGUMENT
        # float64 is an engine dtype, so the push is taken; the float32 convolution refuses it at run.
        with pytest.raises(Error) as e:
            model.run({"images": yolo.input.astype(np.float64)})
        assert e.value.status == Status.UNSUPPORTED and "float64" in e.value.message
        # A non-contiguous view of the right shape is made contiguous, not rejected.
        wide = np.zeros((1, 3, 640, 1280), dtype=np.float32)
        wide[..., ::2] = yolo.input
        view = wide[..., ::2]
        assert not view.flags.c_contiguous
        yolo.check(model.run({"images": view}))


def copy_model(src: Path, dst: Path) -> Path:
    """Copy the files of a model folder (not their read-only modes) into dst."""
    dst.mkdir()
    for f in src.iterdir():
        if f.is_file():
            shutil.copyfile(f, dst / f.name)
    return dst


def bin_files(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".bin")


def run_folder(yolo, folder: Path, provider) -> np.ndarray:
    with onnxstream.Model(folder, threads=THREADS, provider=provider) as model:
        return model.run({"images": yolo.input})["output0"]


def assert_bit_equal(a: np.ndarray, b: np.ndarray, what: str):
    assert a.shape == b.shape and a.dtype == b.dtype == np.float32, what
    differ = int(np.count_nonzero(a.view(np.uint32) != b.view(np.uint32)))
    assert differ == 0, f"{what}: {differ} of {a.size} values differ"


def test_packed_weights_give_the_same_output(yolo, provider_output, tmp_path):
    files = bin_files(yolo.model_dir)
    assert len(files) > 100

    # The loose .bin files: the reference's output, and the Python provider's bit for bit.
    bins = copy_model(yolo.model_dir, tmp_path / "bins")
    from_files = run_folder(yolo, bins, "nocache")
    yolo.check({"output0": from_files})
    assert_bit_equal(from_files, provider_output, ".bin files vs Python provider")

    # Packed, the .bin files removed: the same output with every way of reading the store.
    packed = copy_model(yolo.model_dir, tmp_path / "packed")
    onnxstream.pack_weights(packed, remove_files=True)
    store = packed / "model.safetensors"
    assert store.is_file() and (packed / "model.txt").is_file()
    assert bin_files(packed) == []
    assert store.stat().st_size > sum((yolo.model_dir / f).stat().st_size for f in files)
    for provider in ("nocache", "mmap", "ram"):
        assert_bit_equal(run_folder(yolo, packed, provider), from_files,
                         f"model.safetensors ({provider}) vs .bin files")

    # Packed, the .bin files kept; packing it again is refused with the library's message.
    kept = copy_model(yolo.model_dir, tmp_path / "kept")
    onnxstream.pack_weights(kept)
    assert bin_files(kept) == files
    data = (kept / "model.safetensors").read_bytes()
    assert data == store.read_bytes()
    with pytest.raises(Error) as e:
        onnxstream.pack_weights(kept, remove_files=True)
    assert e.value.status == Status.INVALID_ARGUMENT
    assert str(kept) in e.value.message and "model.safetensors" in e.value.message
    assert bin_files(kept) == files and (kept / "model.safetensors").read_bytes() == data
    assert_bit_equal(run_folder(yolo, kept, "nocache"), from_files, "kept vs .bin files")

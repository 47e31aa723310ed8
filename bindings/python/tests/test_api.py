"""Model lifecycle, inputs, outputs, options and argument checking on a tiny two-op model."""

from __future__ import annotations

import json

import numpy as np
import pytest

import onnxstream
from onnxstream import Error, Status
from conftest import TINY_MODEL, TINY_X, tiny_expected, tiny_weights


def open_tiny(tiny_dir, **kwargs) -> onnxstream.Model:
    return onnxstream.Model(tiny_dir, threads=1, **kwargs)


def test_version_and_library():
    assert onnxstream.__version__ == "0.26.0"
    major, minor, _ = (int(p) for p in onnxstream.library_version().split("."))
    assert (major, minor) >= (0, 7)
    assert "XNNPACK" in onnxstream.kernel_library()


def test_status_and_dtype_enums_match_the_library():
    api = onnxstream._capi.api()
    for s in Status:
        expected = "ONNXSTREAM_OK" if s == Status.OK else f"ONNXSTREAM_ERR_{s.name}"
        assert api.status_name(s).decode() == expected
    # A status the library knows but this binding does not would show up here.
    assert api.status_name(len(Status)).decode() == "ONNXSTREAM_UNKNOWN_STATUS"
    for d in onnxstream.DType:
        assert api.dtype_size(d) == onnxstream.tensors.numpy_dtype(d).itemsize
    assert api.dtype_size(len(onnxstream.DType) + 1) == 0
    assert Status(42).name == "UNKNOWN_42" and Error(42, "x").status == 42


def test_run_returns_reference_values(tiny_dir):
    with open_tiny(tiny_dir) as model:
        assert model.inputs == [onnxstream.TensorInfo("x", (1, 4), onnxstream.DType.FLOAT32)]
        out = model.run({"x": TINY_X})
        assert list(out) == ["y"]
        np.testing.assert_array_equal(out["y"], tiny_expected(TINY_X))
        np.testing.assert_array_equal(model.output("y"), out["y"])
        np.testing.assert_array_equal(model.output(0), out["y"])
        np.testing.assert_array_equal(model.outputs()["y"], out["y"])


def test_outputs_are_copies_that_outlive_runs_and_close(tiny_dir):
    model = open_tiny(tiny_dir)
    first = model.run({"x": TINY_X})["y"]
    assert first.flags.owndata and first.flags.writeable
    second_x = TINY_X * 10
    second = model.run({"x": second_x})["y"]
    model.close()
    np.testing.assert_array_equal(first, tiny_expected(TINY_X))
    np.testing.assert_array_equal(second, tiny_expected(second_x))


def test_pushed_inputs_stay_for_later_runs(tiny_dir):
    with open_tiny(tiny_dir) as model:
        model.push("x", TINY_X)
        model.run()
        np.testing.assert_array_equal(model.run()["y"], tiny_expected(TINY_X))


def test_non_contiguous_and_big_endian_inputs(tiny_dir):
    with open_tiny(tiny_dir) as model:
        strided = np.arange(8, dtype=np.float32)[::2].reshape(1, 4)
        transposed = np.arange(8, dtype=np.float32).reshape(4, 2).T[:1]
        for x in (strided, transposed):
            assert x.shape == (1, 4) and not x.flags.c_contiguous
            np.testing.assert_array_equal(model.run({"x": x})["y"], tiny_expected(x))
        big = TINY_X.astype(">f4")
        np.testing.assert_array_equal(model.run({"x": big})["y"], tiny_expected(TINY_X))


def test_values_are_never_cast(tiny_dir):
    with open_tiny(tiny_dir) as model:
        with pytest.raises(Error) as e:
            model.run({"x": [[1.0, 2.0, 3.0, 4.0]]})  # a list of Python floats is float64
        # float64 is an engine dtype: the push is taken, and the float32 weight beside it refuses it.
        assert e.value.status == Status.INVALID_MODEL and "float64" in e.value.message
        y = model.run({"x": np.asarray([[1.0, 2.0, 3.0, 4.0]], dtype=np.float32)})["y"]
        np.testing.assert_array_equal(y, tiny_expected(TINY_X))


@pytest.mark.parametrize("value, fragment", [
    (TINY_X.astype(np.complex128), "complex128 is not supported"),
    (TINY_X.astype(np.complex64), "complex64 is not supported"),
    (np.array([[object()] * 4]), "Python objects"),
    (TINY_X.reshape(4, 1), "shape"),
    (np.zeros((1, 5), np.float32), "shape"),
])
def test_bad_inputs_raise_invalid_argument(tiny_dir, value, fragment):
    with open_tiny(tiny_dir) as model:
        with pytest.raises(Error) as e:
            model.run({"x": value})
        assert e.value.status == Status.INVALID_ARGUMENT
        assert fragment in e.value.message
        np.testing.assert_array_equal(model.run({"x": TINY_X})["y"], tiny_expected(TINY_X))


def test_bad_names_and_types(tiny_dir):
    with open_tiny(tiny_dir) as model:
        with pytest.raises(Error) as e:
            model.run({"nope": TINY_X})
        assert e.value.status == Status.INVALID_ARGUMENT and "nope" in e.value.message
        with pytest.raises(Error) as e:
            model.push("x\0y", TINY_X)
        assert e.value.status == Status.INVALID_ARGUMENT and "NUL" in e.value.message
        with pytest.raises(Error) as e:
            model.push(17, TINY_X)
        assert e.value.status == Status.INVALID_ARGUMENT
        with pytest.raises(TypeError):
            model.run([TINY_X])
        with pytest.raises(Error) as e:
            model.output("missing")
        assert e.value.status == Status.INVALID_ARGUMENT
        with pytest.raises(Error) as e:
            model.output(-1)
        assert e.value.status == Status.INVALID_ARGUMENT


def test_none_arguments_never_reach_c_as_null(tiny_dir):
    with onnxstream.Model(threads=1) as model:
        for call in (lambda: model.load(None), lambda: model.load_string(None),
                     lambda: model.read_range_data(None), lambda: model.write_range_data(None)):
            with pytest.raises(Error) as e:
                call()
            assert e.value.status == Status.INVALID_ARGUMENT
        model.load(tiny_dir)
        for call in (lambda: model.push(None, TINY_X), lambda: model.add_output(None), lambda: model.push("x", None)):
            with pytest.raises(Error) as e:
                call()
            assert e.value.status == Status.INVALID_ARGUMENT
    with pytest.raises(Error) as e:
        onnxstream.convert(None, tiny_dir / "out")
    assert e.value.status in (Status.INVALID_ARGUMENT, Status.UNSUPPORTED)
    with pytest.raises(Error) as e:
        onnxstream.pack_weights(None)
    assert e.value.status == Status.INVALID_ARGUMENT


def test_run_before_load_and_missing_input(tiny_dir):
    with onnxstream.Model(threads=1) as model:
        with pytest.raises(Error) as e:
            model.run()
        assert e.value.status == Status.BAD_STATE
        assert model.run_stats().run_us == 0
        model.load(tiny_dir)
        with pytest.raises(Error) as e:
            model.run()  # x was never pushed
        assert e.value.status == Status.BAD_STATE and "x" in e.value.message


def test_load_errors(tmp_path, tiny_dir):
    with pytest.raises(Error) as e:
        onnxstream.Model(tmp_path / "does-not-exist")
    assert e.value.status == Status.IO
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "model.txt").write_text("this is not model.txt\n")
    with pytest.raises(Error) as e:
        onnxstream.Model(tmp_path / "broken")
    assert e.value.status == Status.INVALID_MODEL
    with open_tiny(tiny_dir) as model:
        with pytest.raises(Error) as e:
            model.load(tiny_dir)
        assert e.value.status == Status.BAD_STATE


def test_load_string_with_weights_dir(tiny_dir):
    with onnxstream.Model.from_string(TINY_MODEL, tiny_dir, threads=1) as model:
        np.testing.assert_array_equal(model.run({"x": TINY_X})["y"], tiny_expected(TINY_X))


def test_closed_model_raises_bad_state(tiny_dir):
    model = open_tiny(tiny_dir)
    model.close()
    model.close()  # idempotent
    assert model.closed
    for call in (lambda: model.run({"x": TINY_X}), model.memory_stats, lambda: model.inputs):
        with pytest.raises(Error) as e:
            call()
        assert e.value.status == Status.BAD_STATE and "closed" in e.value.message


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(threads=1 << 40), "threads"),
    (dict(threads=-5), "threads"),
    (dict(threads=True), "bool"),
    (dict(threads="2"), "threads"),
    (dict(memory_mode="huge"), "memory_mode"),
    (dict(memory_mode=99), "memory"),
    (dict(provider=42), "provider"),
    (dict(max_bytes=-1), "max_bytes"),
    (dict(cache_path="a\0b"), "NUL"),
    (dict(flags=onnxstream.Flag.KEEP_ALL_OUTPUTS), "flag"),
])
def test_bad_options_raise_invalid_argument(kwargs, fragment):
    with pytest.raises(Error) as e:
        onnxstream.Model(**kwargs)
    assert e.value.status == Status.INVALID_ARGUMENT
    assert fragment.lower() in e.value.message.lower()


def test_every_option_is_accepted(tiny_dir, tmp_path):
    opts = onnxstream.ModelOptions(threads=1, provider="nocache", flags=onnxstream.Flag.NCHW_ONLY,
                                   prefetch_bytes=1 << 20, memory_mode=onnxstream.MemoryMode.MIN,
                                   attention="sliced", attention_slices=2, weight_chunk_bytes=onnxstream.NO_CHUNKING,
                                   cache_path=tmp_path / "cache.bin", max_bytes=1 << 30, arithmetic="fp32")
    with onnxstream.Model(tiny_dir, options=opts, memory_mode="max-speed") as model:
        np.testing.assert_array_equal(model.run({"x": TINY_X})["y"], tiny_expected(TINY_X))
        assert model.run_stats().arithmetic == onnxstream.Arithmetic.FP32


def test_max_bytes_limits_and_can_be_lifted(tiny_dir):
    with open_tiny(tiny_dir, max_bytes=8) as model:
        with pytest.raises(Error) as e:
            model.run({"x": TINY_X})
        assert e.value.status == Status.OUT_OF_MEMORY
        model.set_max_bytes(0)
        np.testing.assert_array_equal(model.run({"x": TINY_X})["y"], tiny_expected(TINY_X))
        with pytest.raises(Error):
            model.set_max_bytes(1 << 64)


def test_memory_and_run_stats(tiny_dir):
    with open_tiny(tiny_dir, provider="nocache") as model:
        model.run({"x": TINY_X})
        stats = model.run_stats()
        assert stats.weight_bytes_read == 32  # w.bin + v.bin, 16 bytes each
        # No cache_path: nothing is mapped from or stored to a packed-weights file.
        assert stats.packed_weights_mapped == 0 and stats.packed_weights_stored == 0
        assert stats.kept_kernels == 0 and stats.kept_kernel_bytes == 0  # no Conv to keep
        mem = model.memory_stats(reset_peak=True)
        assert mem.peak_bytes >= mem.current_bytes >= 16  # at least the output y
        assert model.memory_stats().peak_bytes == mem.current_bytes


def test_add_output_keeps_an_intermediate(tiny_dir):
    with open_tiny(tiny_dir) as model:
        model.add_output("a")
        out = model.run({"x": TINY_X})
        np.testing.assert_array_equal(out["a"], TINY_X + np.array([10, 20, 30, 40], np.float32))


def test_error_formatting():
    e = Error(Status.IO, "model.txt: no such file")
    assert e.status is Status.IO and e.message == "model.txt: no such file"
    assert str(e) == "ONNXSTREAM_ERR_IO: model.txt: no such file"
    assert isinstance(e, Exception)
    import pickle
    again = pickle.loads(pickle.dumps(e))
    assert again.status == Status.IO and again.message == e.message


def bin_files(folder) -> list:
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".bin")


def run_tiny(folder, **kwargs) -> np.ndarray:
    with onnxstream.Model(folder, threads=1, **kwargs) as model:
        return model.run({"x": TINY_X})["y"]


def test_pack_weights_into_model_safetensors(tiny_dir, tmp_path):
    store = tiny_dir / "model.safetensors"
    assert onnxstream.pack_weights(tiny_dir, remove_files=True) is None
    assert store.is_file() and bin_files(tiny_dir) == []
    assert (tiny_dir / "model.txt").read_text() == TINY_MODEL
    # 8-byte header length, the JSON header naming both tensors as F32, then their 32 bytes of data.
    data = store.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    assert {k: (v["dtype"], v["shape"]) for k, v in header.items() if k != "__metadata__"} == {
        "w": ("F32", [4]), "v": ("F32", [4])}
    assert len(data) == 8 + n + 32
    for provider in onnxstream.Provider:
        np.testing.assert_array_equal(run_tiny(tiny_dir, provider=provider), tiny_expected(TINY_X))

    # A folder that already has its store is refused with the library's message, and left as it was.
    with pytest.raises(Error) as e:
        onnxstream.pack_weights(tiny_dir, remove_files=True)
    assert e.value.status == Status.INVALID_ARGUMENT
    assert str(tiny_dir) in e.value.message and "model.safetensors" in e.value.message
    assert store.read_bytes() == data

    # Without remove_files (the default) the .bin files stay next to the store.
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "model.txt").write_text(TINY_MODEL)
    for name, content in tiny_weights().items():
        (kept / name).write_bytes(content)
    onnxstream.pack_weights(str(kept).encode())
    assert (kept / "model.safetensors").read_bytes() == data
    assert bin_files(kept) == ["v.bin", "w.bin"]
    np.testing.assert_array_equal(run_tiny(kept), tiny_expected(TINY_X))
    with pytest.raises(Error) as e:
        onnxstream.pack_weights(kept)
    assert e.value.status == Status.INVALID_ARGUMENT


def test_pack_weights_errors(tmp_path):
    with pytest.raises(Error) as e:
        onnxstream.pack_weights(tmp_path / "missing", remove_files=True)
    assert e.value.status == Status.IO and "missing" in e.value.message
    (tmp_path / "model.txt").write_text("this is not model.txt\n")
    with pytest.raises(Error) as e:
        onnxstream.pack_weights(tmp_path, remove_files=True)
    assert e.value.status == Status.INVALID_MODEL
    # A weight file is missing: nothing is written.
    (tmp_path / "model.txt").write_text(TINY_MODEL)
    (tmp_path / "w.bin").write_bytes(tiny_weights()["w.bin"])
    with pytest.raises(Error) as e:
        onnxstream.pack_weights(tmp_path, remove_files=True)
    assert e.value.status == Status.IO and "v.bin" in e.value.message
    assert not (tmp_path / "model.safetensors").exists() and bin_files(tmp_path) == ["w.bin"]
    for bad, fragment in (("a\0b", "NUL"), (42, "must be a path")):
        with pytest.raises(Error) as e:
            onnxstream.pack_weights(bad)
        assert e.value.status == Status.INVALID_ARGUMENT and fragment in e.value.message


class _OldLibrary:
    """A stand-in for a libonnxstream 0.6: its functions, without onnxstream_pack_weights."""

    def __init__(self):
        def fn(result):
            return lambda *args: result
        for name in onnxstream._capi._PROTOTYPES:
            if name != "onnxstream_pack_weights":
                setattr(self, name, fn(0))
        self.onnxstream_version = fn(600)
        self.onnxstream_version_string = fn(b"0.6.0")


def test_an_older_library_is_refused_by_version():
    with pytest.raises(onnxstream.LibraryError) as e:
        onnxstream._capi._API(_OldLibrary(), "libold.so")
    assert "libonnxstream 0.6.0" in str(e.value) and "0.26.x" in str(e.value)


def test_float64_and_wide_integer_inputs_are_computed_in_their_own_types(tmp_path):
    text = ("t:Add*input:x(3);y(3)*output:t(3)\n"
            "s:Sub*input:x(3);y(3)*output:s(3)\n"
            "u:Cast*input:s(3)*output:u(3)*to:13\n"
            "m:Max*input:a(2);b(2)*output:m(2)\n")
    x = np.array([2.0 ** 40 + 0.5, 2.5, -3.0])  # 2^40 + 0.5 needs float64's mantissa
    y = np.array([1.0, -2.0 ** 40, -4.0])
    a = np.array([2 ** 63 + 1, 7], np.uint64)  # beyond int64
    b = np.array([5, 2 ** 64 - 1], np.uint64)
    with onnxstream.Model.from_string(text, tmp_path, threads=1) as model:
        out = model.run({"x": x, "y": y, "a": a, "b": b})
    assert out["t"].dtype == np.float64 and out["u"].dtype == np.uint64 and out["m"].dtype == np.uint64
    np.testing.assert_array_equal(out["t"], x + y)
    np.testing.assert_array_equal(out["u"], (x - y).astype(np.uint64))
    np.testing.assert_array_equal(out["m"], np.maximum(a, b))


def test_float8_and_int4_outputs_are_bit_patterns_and_bytes(tmp_path):
    text = ("f:Cast*input:x(5)*output:f(5)*to:17\n"  # float8e4m3fn
            "g:Cast*input:f(5)*output:g(5)*to:1\n"
            "h:Cast*input:x(5)*output:h(5)*to:22\n")  # int4
    x = np.array([1.0, 0.3, 500.0, -0.017, -9.5], np.float32)
    with onnxstream.Model.from_string(text, tmp_path, threads=1) as model:
        model.add_output("f")  # read by g, so not an output by itself
        out = model.run({"x": x})
    assert out["f"].dtype == np.uint8 and out["h"].dtype == np.int8
    # float8e4m3fn by its definition: sign, 4-bit exponent (bias 7), 3-bit mantissa; S.1111.111 is NaN.
    codes = np.arange(0x7F)
    e, m = codes >> 3, codes & 7
    values = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e - 7))

    def nearest_code(v):  # saturating at 448, ties to the even code
        d = np.abs(values - min(abs(v), 448.0))
        ties = np.flatnonzero(d == d.min())
        return ties[ties % 2 == 0][0] if len(ties) > 1 else ties[0]

    codes = [nearest_code(v) for v in x.astype(np.float64)]
    np.testing.assert_array_equal(out["f"] & 0x7F, codes)
    np.testing.assert_array_equal(out["g"], (np.sign(x) * values[codes]).astype(np.float32))
    np.testing.assert_array_equal(out["h"], np.rint(np.clip(x, -8, 7)).astype(np.int8))

"""Weights providers, progress and log callbacks, and the one-thread-at-a-time rule, on the tiny model."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import onnxstream
from onnxstream import Error, Status
from conftest import TINY_MODEL, TINY_X, MemoryProvider, tiny_expected, tiny_weights


def tiny(provider, **kwargs) -> onnxstream.Model:
    return onnxstream.Model.from_string(TINY_MODEL, None, threads=1, weights_provider=provider, **kwargs)


def test_provider_object_serves_every_weight_and_is_closed_once():
    p = MemoryProvider(tiny_weights())
    with tiny(p) as model:
        np.testing.assert_array_equal(model.run({"x": TINY_X})["y"], tiny_expected(TINY_X))
        assert p.reads == 2 and p.prefetches == 2 and p.closes == 0
    assert p.closes == 1


def test_plain_function_and_readinto_style_provider(tiny_dir):
    def read(request, dst):
        with open(tiny_dir / request.file, "rb") as f:
            return f.readinto(dst)  # an int: the number of bytes produced

    with tiny(read) as model:
        np.testing.assert_array_equal(model.run({"x": TINY_X})["y"], tiny_expected(TINY_X))


def test_request_describes_the_weight():
    seen = []

    def read(request, dst):
        seen.append(request)
        assert isinstance(dst, memoryview) and len(dst) == request.byte_size and not dst.readonly
        dst[:] = tiny_weights()[request.file]

    with tiny(read) as model:
        model.run({"x": TINY_X})
    assert seen == [onnxstream.WeightRequest("w.bin", onnxstream.DType.FLOAT32, (4,), 16),
                    onnxstream.WeightRequest("v.bin", onnxstream.DType.FLOAT32, (4,), 16)]


def test_dst_cannot_be_used_after_the_call():
    kept = []

    def read(request, dst):
        kept.append(dst)
        dst[:] = tiny_weights()[request.file]

    with tiny(read) as model:
        model.run({"x": TINY_X})
    with pytest.raises(ValueError):
        kept[0][0] = 1  # released: the engine's buffer is gone


def test_provider_returning_false_fails_with_callback():
    p = MemoryProvider(tiny_weights(), fail_on="v.bin")
    with tiny(p) as model:
        with pytest.raises(Error) as e:
            model.run({"x": TINY_X})
        assert e.value.status == Status.CALLBACK
        assert "'v.bin'" in e.value.message and "read returned False" in e.value.message
        assert e.value.__cause__ is None
        p.fail_on = ""
        np.testing.assert_array_equal(model.run()["y"], tiny_expected(TINY_X))  # still usable


def test_provider_raising_fails_with_callback_and_the_python_message():
    p = MemoryProvider(tiny_weights(), raise_on="w.bin")
    with tiny(p) as model:
        with pytest.raises(Error) as e:
            model.run({"x": TINY_X})
        assert e.value.status == Status.CALLBACK
        assert "'w.bin'" in e.value.message
        assert "OSError: disk on fire while reading w.bin" in e.value.message
        assert isinstance(e.value.__cause__, OSError)
        p.raise_on = ""
        np.testing.assert_array_equal(model.run()["y"], tiny_expected(TINY_X))


@pytest.mark.parametrize("read, fragment", [
    (lambda r, d: 3, "produced 3 bytes"),  # a short read
    (lambda r, d: d.__setitem__(slice(None), b"\0" * 3), "ValueError"),  # wrong length
    (lambda r, d: "yes", "TypeError"),  # not a byte count
])
def test_bad_provider_results(read, fragment):
    with tiny(read) as model:
        with pytest.raises(Error) as e:
            model.run({"x": TINY_X})
        assert e.value.status == Status.CALLBACK and fragment in e.value.message


def test_long_messages_are_cut_on_a_character_boundary():
    def read(request, dst):
        raise RuntimeError("é" * 2000)

    with tiny(read) as model:
        with pytest.raises(Error) as e:
            model.run({"x": TINY_X})
    assert "RuntimeError: éé" in e.value.message and "\ufffd" not in e.value.message


def test_keyboard_interrupt_in_a_callback_is_reraised():
    def read(request, dst):
        raise KeyboardInterrupt

    with tiny(read) as model:
        with pytest.raises(KeyboardInterrupt):
            model.run({"x": TINY_X})


class Lender:
    """Zero-copy provider: lends NumPy arrays (aligned) and counts releases."""

    def __init__(self, misalign: bool = False, short: bool = False):
        self.arrays = {k: np.frombuffer(v, np.uint8).copy() for k, v in tiny_weights().items()}
        self.misalign, self.short = misalign, short
        self.lent, self.released, self.closes = 0, [], 0

    def lend(self, request):
        self.lent += 1
        a = self.arrays[request.file]
        if self.misalign:
            return memoryview(np.concatenate([[0], a]).astype(np.uint8))[1:]
        return a[:-1] if self.short else a

    def read(self, request, dst):
        raise AssertionError("read must not be used when lend exists")

    def release(self, buffer):
        self.released.append(buffer)

    def close(self):
        self.closes += 1


def test_lender_is_zero_copy_and_every_lease_is_released():
    p = Lender()
    with tiny(p) as model:
        for _ in range(2):
            np.testing.assert_array_equal(model.run({"x": TINY_X})["y"], tiny_expected(TINY_X))
        assert p.lent == 4 and len(p.released) == 4
        assert all(any(b is a for a in p.arrays.values()) for b in p.released)
    assert p.closes == 1


@pytest.mark.parametrize("kwargs, fragment", [(dict(misalign=True), "not aligned"), (dict(short=True), "15")])
def test_bad_leases_fail_and_are_released(kwargs, fragment):
    p = Lender(**kwargs)
    with tiny(p) as model:
        with pytest.raises(Error) as e:
            model.run({"x": TINY_X})
        assert e.value.status == Status.CALLBACK and fragment in e.value.message
    assert p.lent > 0 and len(p.released) == p.lent


def test_replacing_a_provider_closes_the_old_one():
    first, second = MemoryProvider(tiny_weights()), MemoryProvider(tiny_weights())
    model = tiny(first)
    model.set_weights_provider(second)
    assert first.closes == 1 and second.closes == 0
    model.run({"x": TINY_X})
    assert first.reads == 0 and second.reads == 2
    del model  # a forgotten model is released by its finalizer
    gc.collect()
    assert second.closes == 1


def test_bad_provider_objects():
    with onnxstream.Model(threads=1) as model:
        with pytest.raises(TypeError):
            model.set_weights_provider(42)
        with pytest.raises(TypeError):
            model.set_progress_callback("not callable")


def test_progress_reports_every_op_and_cancels():
    seen = []
    with tiny(MemoryProvider(tiny_weights()), progress=seen.append) as model:
        model.run({"x": TINY_X})
        assert [(p.op_index, p.op_count, p.op_name, p.op_type) for p in seen] == [(0, 2, "add", "Add"),
                                                                                (1, 2, "mul", "Mul")]
        model.set_progress_callback(lambda p: False)
        with pytest.raises(Error) as e:
            model.run()
        assert e.value.status == Status.CANCELLED
        model.set_progress_callback(None)
        np.testing.assert_array_equal(model.run()["y"], tiny_expected(TINY_X))


def test_progress_raising_cancels_with_callback():
    def progress(p):
        raise ValueError(f"stop at {p.op_name}")

    with tiny(MemoryProvider(tiny_weights()), progress=progress) as model:
        with pytest.raises(Error) as e:
            model.run({"x": TINY_X})
    assert e.value.status == Status.CALLBACK and "ValueError: stop at add" in e.value.message
    assert isinstance(e.value.__cause__, ValueError)


def test_callbacks_may_read_but_not_change_or_close_the_model():
    results = {}

    def progress(p):
        results["stats"] = model.memory_stats()
        try:
            model.push("x", TINY_X)
        except Error as e:
            results["push"] = e.status
        try:
            model.close()
        except Error as e:
            results["close"] = e.status
        try:
            model.run()
        except Error as e:
            results["run"] = e.status

    model = tiny(MemoryProvider(tiny_weights()), progress=progress)
    with model:
        model.run({"x": TINY_X})
    assert results["stats"].current_bytes > 0
    assert results["push"] == results["close"] == results["run"] == Status.BAD_STATE


def test_another_thread_is_refused_while_a_run_is_in_progress():
    results = []

    def progress(p):
        def other():
            for call in (model.memory_stats, model.close):
                try:
                    call()
                    results.append("ok")
                except Error as e:
                    results.append(e.status)
        t = threading.Thread(target=other)
        t.start()
        t.join()

    with tiny(MemoryProvider(tiny_weights()), progress=progress) as model:
        model.run({"x": TINY_X})
        assert results[:2] == [Status.BAD_STATE, Status.BAD_STATE]
        assert not model.closed


def test_log_callback_receives_diagnostics():
    lines = []
    with tiny(MemoryProvider(tiny_weights()), log=lambda level, m: lines.append((level, m)),
              log_level=onnxstream.LogLevel.INFO) as model:
        model.run({"x": TINY_X})
        assert any(level == onnxstream.LogLevel.INFO and m.startswith("loaded") for level, m in lines)
        assert any(m.startswith("run:") for _, m in lines)
        model.set_log_callback(None)
        n = len(lines)
        model.run()
        assert len(lines) == n


def test_models_are_independent_across_threads(tiny_dir):
    errors = []

    def work(scale):
        try:
            with onnxstream.Model(tiny_dir, threads=1) as m:
                for _ in range(20):
                    x = TINY_X * scale
                    np.testing.assert_array_equal(m.run({"x": x})["y"], tiny_expected(x))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors

"""The ctypes mirror (onnxstream/_capi.py) against the C compiler's view of include/onnxstream.h.

A C program generated from the ctypes classes prints sizeof, every offsetof and every constant; a
field added to the header changes a size, a renamed or moved one fails to compile or to match.
Skipped without a C compiler or without the header (ONNXSTREAM_INCLUDE_DIR overrides <repo>/include).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import onnxstream
from onnxstream import _capi
from conftest import REPO

STRUCTS = {
    "onnxstream_model_options_t": _capi.ModelOptions,
    "onnxstream_weight_request_t": _capi.WeightRequest,
    "onnxstream_weights_provider_t": _capi.WeightsProvider,
    "onnxstream_progress_t": _capi.Progress,
    "onnxstream_tensor_view_t": _capi.TensorView,
    "onnxstream_memory_stats_t": _capi.MemoryStats,
    "onnxstream_run_stats_t": _capi.RunStats,
    "onnxstream_op_profile_t": _capi.OpProfile,
    "onnxstream_roofline_t": _capi.Roofline,
    "onnxstream_convert_options_t": _capi.ConvertOptions,
}

# Python enum -> the C prefix of its constants.
ENUMS = {
    onnxstream.Status: "ONNXSTREAM_ERR_",
    onnxstream.DType: "ONNXSTREAM_DTYPE_",
    onnxstream.Provider: "ONNXSTREAM_PROVIDER_",
    onnxstream.MemoryMode: "ONNXSTREAM_MEMORY_",
    onnxstream.Attention: "ONNXSTREAM_ATTENTION_",
    onnxstream.Arithmetic: "ONNXSTREAM_ARITHMETIC_",
    onnxstream.LogLevel: "ONNXSTREAM_LOG_",
    onnxstream.Flag: "ONNXSTREAM_FLAG_",
    onnxstream.ProfileFormat: "ONNXSTREAM_PROFILE_",
    onnxstream.WeightsFormat: "ONNXSTREAM_WEIGHTS_",
}


def expected_rows() -> dict:
    rows = {}
    for c_name, cls in STRUCTS.items():
        rows[f"{c_name} sizeof"] = ctypes.sizeof(cls)
        for field, _ in cls._fields_:
            rows[f"{c_name} {field}"] = getattr(cls, field).offset
    for cls, prefix in ENUMS.items():
        for m in cls:
            if cls is onnxstream.Status and m == onnxstream.Status.OK:
                rows["const ONNXSTREAM_OK"] = 0
            elif not (cls is onnxstream.Flag and m == onnxstream.Flag.NONE):
                rows[f"const {prefix}{m.name}"] = int(m)
    rows["const ONNXSTREAM_VERSION"] = _capi.HEADER_VERSION
    for name in ("onnxstream_status_t", "onnxstream_dtype_t", "onnxstream_log_level_t",
                 "onnxstream_profile_format_t"):
        rows[f"{name} sizeof"] = ctypes.sizeof(_capi.c_status)
    return rows


def probe_source(rows: dict) -> str:
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "onnxstream.h"', "int main(void) {"]
    for key in rows:
        a, b = key.split(" ")
        if a == "const":
            lines.append(f'    printf("{key} %lld\\n", (long long)({b}));')
        elif b == "sizeof":
            lines.append(f'    printf("{key} %lu\\n", (unsigned long)sizeof({a}));')
        else:
            lines.append(f'    printf("{key} %lu\\n", (unsigned long)offsetof({a}, {b}));')
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


def test_ctypes_layout_matches_the_header(tmp_path: Path):
    include = Path(os.environ.get("ONNXSTREAM_INCLUDE_DIR", REPO / "include"))
    if not (include / "onnxstream.h").is_file():
        pytest.skip(f"no onnxstream.h in {include}")
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    rows = expected_rows()
    (tmp_path / "probe.c").write_text(probe_source(rows))
    subprocess.run([cc, "-std=c99", "-I", str(include), "-o", str(tmp_path / "probe"), str(tmp_path / "probe.c")],
                   check=True)
    out = subprocess.run([str(tmp_path / "probe")], check=True, capture_output=True, text=True).stdout
    got = {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in out.splitlines()}
    mismatches = {k: (v, got.get(k)) for k, v in rows.items() if got.get(k) != v}
    assert not mismatches, f"ctypes value vs C value: {mismatches}"


@pytest.mark.parametrize("init, cls", [("model_options_init", _capi.ModelOptions),
                                       ("convert_options_init", _capi.ConvertOptions)])
def test_the_library_agrees_on_the_option_sizes(init, cls):
    api = _capi.api()
    fn = getattr(api, init)
    if fn is None:
        pytest.skip(f"the library has no onnxstream_{init}")
    scratch = (ctypes.c_ubyte * 4096)()
    fn(ctypes.addressof(scratch))
    lib_size = ctypes.c_uint32.from_buffer(scratch).value
    if api.version == _capi.HEADER_VERSION:
        assert lib_size == ctypes.sizeof(cls)
    else:  # a newer library appends fields
        assert lib_size >= ctypes.sizeof(cls)

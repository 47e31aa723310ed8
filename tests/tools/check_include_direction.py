#!/usr/bin/env python3
"""Checks that every #include "folder/..." in src/ points down the layer order of the library.

A folder may include its own headers and those of folders below it, never those above: otherwise two
layers depend on each other and neither can be understood, tested or replaced alone. "onnxstream.h" (the
public C header, include/) is the ABI's vocabulary and allowed everywhere.

usage: check_include_direction.py [SRC_DIR]   (default: src/ beside this file's tests/ folder)
Prints each violation as "file:line: ..." and exits 1 if there is any.
"""
import pathlib
import re
import sys

# Highest first. tools/ holds the command-line programs, which sit on top of the library.
ORDER = ["tools", "capi", "onnx", "exec", "weights", "graph", "ops", "xnnpack", "tensor", "util"]
PUBLIC_HEADERS = {"onnxstream.h"}
SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".h", ".hpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def check(src: pathlib.Path) -> list:
    rank = {folder: i for i, folder in enumerate(ORDER)}
    problems = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(src)
        if len(rel.parts) < 2:
            continue  # files at the top of src/ belong to no layer
        here = rel.parts[0]
        if here not in rank:
            problems.append(f"{rel}: folder '{here}' is not in the layer order {ORDER}")
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            if target in PUBLIC_HEADERS:
                continue
            there = target.split("/")[0] if "/" in target else None
            if there not in rank:
                problems.append(f"{rel}:{lineno}: #include \"{target}\" names no layer folder "
                                f"(write it as \"<folder>/<file>\")")
            elif rank[there] < rank[here]:
                problems.append(f"{rel}:{lineno}: #include \"{target}\" points up ({here} -> {there}; "
                                f"order: {' > '.join(ORDER)})")
    return problems


def main() -> int:
    default = pathlib.Path(__file__).resolve().parents[2] / "src"
    src = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else default
    if not src.is_dir():
        print(f"{src}: not a folder", file=sys.stderr)
        return 2
    problems = check(src)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) against the layer order", file=sys.stderr)
        return 1
    print(f"includes in {src} point down the layer order: {' > '.join(ORDER)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The scripted tests' checks: each prints "ok" or "FAIL" with what it checked and the run carries on, so
one failure does not hide the others; finish() turns any failure into the exit status."""
import sys

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def finish():
    if failures:
        sys.exit("%d check(s) failed" % len(failures))

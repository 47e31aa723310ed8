"""The scripted tests' checks: each prints "ok" or "FAIL" with what it checked and the run carries on, so
one failure does not hide the others; finish() turns any failure into the exit status."""
import sys

failures = []
passes = 0


def check(ok, what):
    global passes
    print(("ok   " if ok else "FAIL ") + what)
    if ok:
        passes += 1
    else:
        failures.append(what)


def rel_l2(got, want):
    """||got - want|| / ||want|| in float64."""
    import numpy as np  # only the scripts that compare arrays need NumPy
    got, want = np.asarray(got, np.float64).ravel(), np.asarray(want, np.float64).ravel()
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def finish():
    print(f"{passes} passed, {len(failures)} failed")
    if failures:
        sys.exit("%d check(s) failed" % len(failures))

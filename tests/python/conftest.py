"""Shared helpers of the `gt` pytest suite.

Run from the repository root (scripts/test.sh does this):

    PYTHONPATH=build/python /usr/bin/python3 -m pytest -q tests/python

The tests share one process-wide GT session (the embedded default unless GT_ADDRESS is set);
tests that need their own session (other worker counts, a failing worker, GT_CONFIG at import)
run a /usr/bin/python3 subprocess.
"""
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import gt

ROOT = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def bin_dir():
    """Where gt-dispatcherd / gt-workerd are: $GT_BIN_DIR, else the build tree the package was
    built in (<build>/python/gt/_gt*.so -> <build>/bin)."""
    env = os.environ.get("GT_BIN_DIR")
    if env:
        return Path(env)
    return Path(gt._gt.__file__).resolve().parents[2] / "bin"


def assert_close(actual, expected, rtol=1e-5, atol=1e-5):
    a = actual.numpy() if isinstance(actual, gt.Tensor) else np.asarray(actual)
    np.testing.assert_allclose(a, np.asarray(expected), rtol=rtol, atol=atol)


def numeric_grad(f, x, eps=1e-3):
    """Central finite differences of the scalar numpy function f at float64 array x."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        hi = f(x)
        x[i] = old - eps
        lo = f(x)
        x[i] = old
        g[i] = (hi - lo) / (2 * eps)
    return g


def run_python(code=None, script=None, args=(), env=None, timeout=60):
    """Runs /usr/bin/python3 (-c code, or a script) with this package on PYTHONPATH; returns the
    CompletedProcess (text output)."""
    e = dict(os.environ)
    pkg = str(Path(gt.__file__).resolve().parents[1])
    e["PYTHONPATH"] = pkg + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    if env:
        e.update(env)
    cmd = [PYTHON] + (["-c", code] if code is not None else [str(script)]) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def stop_processes(procs):
    """Terminates daemons started by a test (the last started first), killing any that lingers."""
    for p in reversed(procs):
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.fixture(scope="session")
def limited_dispatcher():
    """A dispatcher with one CPU worker limited to 1 MiB of tensors, on a private Unix socket:
    yields its address ("unix:/path"). For worker-error and gt.connect tests (subprocesses)."""
    bins = bin_dir()
    d = tempfile.mkdtemp(prefix="gt-pytest-")
    sock = os.path.join(d, "dispatcher.sock")
    address = "unix:" + sock
    procs = []
    try:
        procs.append(subprocess.Popen(
            [str(bins / "gt-dispatcherd"), "--listen-address=", "--unix-socket", sock,
             "--unix-socket-mode", "0600", "--log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.time() + 20
        while not os.path.exists(sock):
            if time.time() > deadline or procs[0].poll() is not None:
                pytest.fail("gt-dispatcherd did not start")
            time.sleep(0.02)
        procs.append(subprocess.Popen(
            [str(bins / "gt-workerd"), "--dispatcher", address, "--device", "cpu",
             "--max-memory-bytes", str(1 << 20), "--blas-threads", "1", "--reconnect-ms", "20",
             "--log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        yield address
    finally:
        stop_processes(procs)
        import shutil

        shutil.rmtree(d, ignore_errors=True)

"""Sessions and errors: shape errors at the call site, worker errors at sync points,
gt.connect, gt.gpu_workers, worker stats (subprocesses for anything needing its own session)."""
import pytest

import gt
from conftest import run_python


def test_shape_errors_raise_at_the_call_site():
    a, b = gt.randn(2, 3), gt.randn(4, 5)
    with pytest.raises(gt.ShapeError) as e:
        a + b
    assert isinstance(e.value, ValueError) and isinstance(e.value, gt.GTError)
    assert isinstance(e.value, RuntimeError)
    assert "add" in str(e.value)
    with pytest.raises(ValueError, match="sum"):
        a.sum(axis=5)
    assert issubclass(gt.WorkerError, gt.GTError) and not issubclass(gt.WorkerError, ValueError)


def test_worker_stats():
    gt.randn(4).numpy()
    stats = gt.debug.get_worker_stats()
    assert len(stats) >= 1
    s = stats[0]
    for key in ("worker_id", "device", "tensors", "bytes", "ops_executed", "errors",
                "peak_bytes", "sessions"):
        assert key in s
    assert s["ops_executed"] > 0


WORKER_ERROR = r"""
import gt
big = gt.zeros(1024, 1024)          # 4 MiB on a worker limited to 1 MiB: fails on the worker
dep = big + 1                       # inherits the failure
ok = gt.tensor([1.0, 2.0]) * 3      # unaffected
try:
    gt.synchronize()
except gt.WorkerError as e:
    print("sync:", e)
try:
    dep.numpy()
except gt.WorkerError as e:
    print("fetch:", e)
print("ok:", ok.numpy().tolist())
"""


def test_worker_errors_raise_at_sync_points(limited_dispatcher):
    r = run_python(WORKER_ERROR, env={"GT_ADDRESS": limited_dispatcher})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("sync:") and "zeros" in lines[0] and "memory" in lines[0]
    assert lines[1].startswith("fetch:") and "zeros" in lines[1]
    assert lines[2] == "ok: [3.0, 6.0]"


def test_connect(limited_dispatcher):
    code = (f"import gt; gt.connect({limited_dispatcher!r}); "
            "print((gt.ones(3) * 2).sum().item())\n"
            "try:\n    gt.connect('127.0.0.1:1')\nexcept gt.GTError as e:\n    print('late')")
    r = run_python(code, env={"GT_ADDRESS": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["6.0", "late"]


def test_gpu_workers_starts_n_embedded_workers():
    # The session starts once a first worker registered; the second may join a moment later.
    code = ("import gt, time; gt.gpu_workers(2); x = gt.randn(3); print(x.shape)\n"
            "deadline = time.time() + 20\n"
            "while len(gt.debug.get_worker_stats()) < 2 and time.time() < deadline:\n"
            "    time.sleep(0.02)\n"
            "print(len(gt.debug.get_worker_stats()))\n"
            "try:\n    gt.gpu_workers(3)\nexcept gt.GTError:\n    print('too late')")
    r = run_python(code, env={"GT_ADDRESS": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[1:3] == ["2", "too late"]
    with pytest.raises(ValueError):
        gt.gpu_workers(0)

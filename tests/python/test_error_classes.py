"""Python's exception classes come from the error's status code (gt::Error::code(), carried on
the wire from the worker or dispatcher that found the failure), never from its message: each
class below is checked with its .code and its place in the hierarchy."""
import pytest

import gt
from conftest import run_python

CLASSES = r"""
import gt
def report(name, f):
    try:
        f()
        print(name, "none")
    except gt.GTError as e:
        print(name, type(e).__name__, e.code)

a = gt.ones(2, 3)
report("shape", lambda: a @ gt.ones(4, 5))
report("oom", lambda: gt.zeros(1024, 1024).sum().item())      # 4 MiB on a 1 MiB worker
report("index", lambda: a.index_select(1, gt.tensor([0, 7], dtype=gt.int64)).sum().item())
report("after", lambda: a.sum().item())
"""


def lines(out):
    return dict(line.split(" ", 1) for line in out.strip().splitlines())


def test_classes_follow_codes(limited_dispatcher):
    r = run_python(CLASSES, env={"GT_ADDRESS": limited_dispatcher})
    assert r.returncode == 0, r.stderr
    got = lines(r.stdout)
    assert got["shape"] == "ShapeError INVALID_ARGUMENT"
    assert got["oom"] == "OutOfMemoryError RESOURCE_EXHAUSTED"
    assert got["index"] == "WorkerError OUT_OF_RANGE"
    assert got["after"] == "none"


def test_unreachable_dispatcher_is_unavailable():
    r = run_python("import gt\ntry:\n    gt.zeros(1).sum().item()\n"
                   "except gt.UnavailableError as e:\n    print(type(e).__name__, e.code)",
                   env={"GT_ADDRESS": "127.0.0.1:1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "UnavailableError UNAVAILABLE"


def test_hierarchy():
    assert issubclass(gt.OutOfMemoryError, gt.WorkerError)
    assert issubclass(gt.UnavailableError, gt.WorkerError)
    assert issubclass(gt.WorkerError, gt.GTError) and issubclass(gt.GTError, RuntimeError)
    assert issubclass(gt.ShapeError, ValueError) and not issubclass(gt.ShapeError, gt.WorkerError)
    assert issubclass(gt.PermissionDeniedError, PermissionError)


def test_call_site_error_has_code():
    with pytest.raises(gt.ShapeError) as e:
        gt.ones(2, 3) @ gt.ones(4, 5)
    assert e.value.code == "INVALID_ARGUMENT"

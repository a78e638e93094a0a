"""Issue item 11 from Python, with PyTorch's semantics: empty tensors with huge dims in either
order, int ** negative int, non-finite fills into integer dtypes, and an error raised by .item()
not raised again by gt.synchronize(). The expectations are written out (they are what
python3-torch does); where torch is installed the same calls are also checked against it."""
import math

import numpy as np
import pytest

import gt
from conftest import run_python

try:
    import torch
except ImportError:  # the expectations below still hold without it
    torch = None

BIG = 2**63 - 1


@pytest.mark.parametrize("shape", [(BIG, 0), (0, BIG), (0, BIG, BIG)])
def test_empty_tensors_with_huge_dims(shape):
    t = gt.zeros(*shape)
    assert t.shape == shape
    assert t.sum().item() == 0.0
    assert (t + 1).shape == shape
    assert t.reshape(0).numpy().shape == (0,)
    assert gt.full(shape, 3, dtype=gt.int64).reshape(0).numpy().tolist() == []
    gt.synchronize()
    if torch is not None:
        assert torch.zeros(*shape).sum().item() == 0.0


def test_empty_tensor_reduced_to_huge_is_an_error_either_way():
    with pytest.raises(gt.ShapeError):
        gt.zeros(BIG, 0).sum(axis=1)
    with pytest.raises(gt.ShapeError):
        gt.zeros(0, BIG).sum(axis=0)


NEG_POW = "Integers to negative integer powers are not allowed."


@pytest.mark.parametrize("exp", [-1, -2])
def test_int_tensor_to_negative_int_power_raises_like_torch(exp):
    x = gt.tensor([2, 3], dtype=gt.int64)
    with pytest.raises(RuntimeError, match=NEG_POW):
        x ** exp
    with pytest.raises(RuntimeError, match=NEG_POW):
        x.pow(exp)
    if torch is not None:
        with pytest.raises(RuntimeError, match=NEG_POW):
            torch.tensor([2, 3]) ** exp


def test_what_torch_allows_for_integer_pow():
    x = gt.tensor([2, 3, -1, 1], dtype=gt.int64)
    assert (x ** 0).numpy().tolist() == [1, 1, 1, 1]
    np.testing.assert_allclose((x ** -1.0).numpy(), [0.5, 1 / 3, -1.0, 1.0], rtol=1e-6)
    assert (x ** gt.tensor([-1, -1, -1, -1], dtype=gt.int64)).numpy().tolist() == [0, 0, -1, 1]
    assert (2 ** gt.tensor([-1, 3], dtype=gt.int64)).numpy().tolist() == [0, 8]
    np.testing.assert_allclose((gt.tensor([2.0]) ** -1).numpy(), [0.5])
    if torch is not None:
        assert (torch.tensor([2, 3, -1, 1]) ** torch.tensor([-1, -1, -1, -1])).tolist() == [0, 0, -1, 1]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 1e30])
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_unrepresentable_fill_into_integer_dtype_raises(value, dtype):
    with pytest.raises(RuntimeError, match="full"):
        gt.full((2,), value, dtype=dtype)
    if torch is not None:
        with pytest.raises(RuntimeError):
            torch.full((2,), value, dtype=getattr(torch, dtype))


def test_fills_torch_accepts():
    assert gt.full((2,), 2.7, dtype="int64").numpy().tolist() == [2, 2]
    assert gt.full((2,), -2.7, dtype="int64").numpy().tolist() == [-2, -2]
    assert math.isnan(gt.full((1,), math.nan).item())
    assert gt.full((2,), math.nan, dtype="bool").numpy().tolist() == [True, True]
    if torch is not None:
        assert torch.full((2,), 2.7, dtype=torch.int64).tolist() == [2, 2]
        assert torch.full((2,), math.nan, dtype=torch.bool).tolist() == [True, True]


ERROR_ONCE = r"""
import gt
big = gt.zeros(1024, 1024)          # 4 MiB on a worker limited to 1 MiB: fails on the worker
try:
    big.sum().item()
except gt.WorkerError as e:
    print("item:", "zeros" in str(e))
gt.synchronize()                     # already raised by .item(): not again
print("sync 1: clean")
again = gt.zeros(1024, 1024)         # a new failure with the same text: raised at sync, once
try:
    gt.synchronize()
except gt.WorkerError as e:
    print("sync 2:", "zeros" in str(e))
gt.synchronize()
print("sync 3: clean")
for i in range(3):                   # each step's failure raised by its own .item()
    try:                             # (sizes differ from each other and from `big`/`again`:
                                     # identical texts can be ambiguous to the error ledger)
        (gt.zeros(1025 + i, 1024) * 2).mean().item()
    except gt.WorkerError:
        print("step", i)
gt.synchronize()
print("sync 4: clean")
print("ok:", (gt.tensor([1.0, 2.0]) * 3).numpy().tolist())
"""


def test_an_error_raised_by_item_is_not_raised_again_at_synchronize(limited_dispatcher):
    r = run_python(ERROR_ONCE, env={"GT_ADDRESS": limited_dispatcher})
    assert r.returncode == 0, r.stderr + r.stdout
    assert r.stdout.splitlines() == [
        "item: True", "sync 1: clean", "sync 2: True", "sync 3: clean",
        "step 0", "step 1", "step 2", "sync 4: clean", "ok: [3.0, 6.0]"]

"""In-place idioms (issue 13): x.relu_() and the unary table's other in-place forms, clamp_,
masked_fill_, pow_ / **=, add_/sub_ with alpha, against python3-torch (values, dtypes, errors,
aliasing through views and gradients through a non-leaf)."""
import numpy as np
import pytest

import gt
from conftest import assert_close

torch = pytest.importorskip("torch")

UNARY = ["neg_", "exp_", "log_", "sqrt_", "abs_", "relu_", "sigmoid_", "tanh_", "erf_"]
VALUES = np.array([[-2.0, -0.5, 0.0], [0.25, 1.0, 3.0]], dtype=np.float32)


@pytest.mark.parametrize("op", UNARY)
def test_unary_in_place_as_torch(op):
    t, r = gt.from_numpy(VALUES.copy()), torch.from_numpy(VALUES.copy())
    view = t[1]
    out = getattr(t, op)()
    getattr(r, op)()
    assert out is t
    np.testing.assert_allclose(t.numpy(), r.numpy(), rtol=1e-6, atol=1e-7, equal_nan=True)
    np.testing.assert_allclose(view.numpy(), r[1].numpy(), rtol=1e-6, atol=1e-7, equal_nan=True)


@pytest.mark.parametrize("op", UNARY)
def test_unary_in_place_on_integers_as_torch(op):
    a = np.array([-2, 0, 5], dtype=np.int64)
    t, r = gt.from_numpy(a.copy()), torch.from_numpy(a.copy())
    try:
        getattr(r, op)()
    except RuntimeError:
        with pytest.raises((ValueError, RuntimeError)):
            getattr(t, op)()
        np.testing.assert_array_equal(t.numpy(), a)  # unchanged
        return
    getattr(t, op)()
    np.testing.assert_array_equal(t.numpy(), r.numpy())


def test_clamp_masked_fill_pow_alpha_as_torch():
    a = np.array([-3.0, -1.0, 2.0, 5.0], dtype=np.float32)
    t, r = gt.from_numpy(a.copy()), torch.from_numpy(a.copy())
    t.clamp_(-2, 3)
    r.clamp_(-2, 3)
    t.clamp_(max=0.5)
    r.clamp_(max=0.5)
    np.testing.assert_array_equal(t.numpy(), r.numpy())
    mask = np.array([True, False, True, False])
    t.masked_fill_(gt.from_numpy(mask), 9)
    r.masked_fill_(torch.from_numpy(mask), 9)
    np.testing.assert_array_equal(t.numpy(), r.numpy())
    t.pow_(2)
    r.pow_(2)
    t **= 0.5
    r **= 0.5
    np.testing.assert_allclose(t.numpy(), r.numpy(), rtol=1e-6)
    o = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    t.add_(gt.from_numpy(o), alpha=-2)
    r.add_(torch.from_numpy(o), alpha=-2)
    t.sub_(gt.from_numpy(o), alpha=0.5)
    r.sub_(torch.from_numpy(o), alpha=0.5)
    np.testing.assert_allclose(t.numpy(), r.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="boolean alpha"):  # torch: Boolean alpha only ...
        t.add_(gt.from_numpy(o), alpha=True)
    b = gt.tensor([True, False], dtype=gt.bool)
    b.add_(gt.tensor([False, True], dtype=gt.bool), alpha=True)
    assert b.tolist() == [True, True]
    i = gt.tensor([1, 2], dtype=gt.int64)
    with pytest.raises(ValueError, match="alpha must not be a floating point"):
        i.add_(gt.tensor([1, 1], dtype=gt.int64), alpha=0.5)
    bt = gt.tensor([True, False], dtype=gt.bool)
    bt.add_(gt.tensor([True, True], dtype=gt.bool), alpha=-1)  # alpha becomes True, as torch
    assert bt.tolist() == [True, True]
    with pytest.raises(ValueError, match="can't be cast"):
        i.clamp_(min=0.5)
    with pytest.raises(ValueError, match="can't be cast"):
        i **= 0.5
    i **= 2
    assert i.tolist() == [1, 4]


def test_in_place_forms_and_autograd():
    a = np.array([-1.5, -0.5, 0.5, 2.0], dtype=np.float32)
    x, rx = gt.from_numpy(a).requires_grad_(), torch.from_numpy(a).requires_grad_()
    y, ry = x * 2, rx * 2
    # (torch refuses relu_().tanh_(): tanh_ overwrites the output relu saved.)
    y.neg_().exp_()
    ry.neg_().exp_()
    y.sum().backward()
    ry.sum().backward()
    assert_close(x.grad, rx.grad.numpy(), rtol=1e-6)
    w = gt.ones(3, requires_grad=True)
    with pytest.raises((RuntimeError, ValueError), match="with gt.no_grad"):
        w.relu_()
    with pytest.raises((RuntimeError, ValueError), match="requires grad"):
        w **= 2
    with gt.no_grad():
        w.clamp_(max=0.5)
    assert w.is_leaf and w.tolist() == [0.5, 0.5, 0.5]


def test_add_alpha_computes_in_opmath_as_torch():
    # alpha * other overflows float16 (65504) but not the float32 torch computes it in.
    a = np.array([1.0, -2.0], dtype=np.float32)
    o = np.array([3.0, 2.0], dtype=np.float16)
    t, r = gt.from_numpy(a.copy()).to(gt.bfloat16), torch.from_numpy(a.copy()).bfloat16()
    t.add_(gt.from_numpy(o), alpha=-100000)
    r.add_(torch.from_numpy(o), alpha=-100000)
    assert t.dtype == gt.bfloat16
    np.testing.assert_array_equal(t.float().numpy(), r.float().numpy())
    assert np.isfinite(t.float().numpy()).all()
    # sub_ with alpha = -2**63 subtracts (torch 1.13 negates alpha in int64 and wraps: not copied).
    z = gt.zeros(1)
    z.sub_(gt.tensor([0.5]), alpha=-2**63)
    assert z.item() == pytest.approx(2.0**62)


def test_alpha_checks_as_torch():
    i = gt.tensor(2, dtype=gt.int32)
    with pytest.raises(ValueError, match="alpha 2147483648 cannot be converted to int32"):
        i.add_(gt.tensor(7, dtype=gt.int32), alpha=2**31)
    i.add_(gt.tensor(7, dtype=gt.int32), alpha=2**31 - 1)  # fits: wraps like torch's int32
    r = torch.tensor(2, dtype=torch.int32)
    r.add_(torch.tensor(7, dtype=torch.int32), alpha=2**31 - 1)
    assert i.item() == r.item()
    b = gt.tensor(True, dtype=gt.bool)
    with pytest.raises(ValueError, match="bool"):  # torch: `-` with a bool tensor
        b.sub_(gt.tensor(8, dtype=gt.int64), alpha=3.0)
    assert b.item() is True

"""PyTorch idioms (issue 13): any / all / isclose / allclose / equal / std, and the factories
randint / empty / eye / linspace / empty_like, against numpy and torch (python3-torch, CPU)."""
import numpy as np
import pytest

import gt
from conftest import assert_close

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")


@pytest.fixture
def x():
    return np.array([[0.0, 1.0, NAN], [0.0, 0.0, 0.0], [2.0, -1.0, 0.5]], dtype=np.float32)


@pytest.mark.parametrize("name", ["any", "all"])
def test_any_all_as_torch(x, name):
    t, r = gt.from_numpy(x), torch.from_numpy(x)
    assert getattr(t, name)().item() == getattr(r, name)().item()
    for dim in (0, 1, -1):
        for keep in (False, True):
            got = getattr(t, name)(dim=dim, keepdim=keep)
            want = getattr(r, name)(dim=dim, keepdim=keep)
            assert got.dtype == gt.bool and tuple(got.shape) == tuple(want.shape)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    # numpy's axis and the free form; several dims compose.
    np.testing.assert_array_equal(getattr(gt, name)(t, 1).numpy(), getattr(np, name)(x != 0, 1))
    assert getattr(t, name)(dim=(0, 1)).item() == getattr(r, name)().item()
    # int and bool inputs, empty tensors.
    for arr in (np.array([[0, 3], [0, 0]], dtype=np.int64), np.array([True, False])):
        assert getattr(gt.from_numpy(arr), name)().item() == getattr(torch.from_numpy(arr), name)().item()
    assert getattr(gt.zeros(0, 2), name)().item() == getattr(torch.zeros(0, 2), name)().item()


def test_std_as_torch_with_its_arguments(rng):
    a = rng.standard_normal((4, 5, 3)).astype(np.float32)
    t, r = gt.from_numpy(a), torch.from_numpy(a)
    assert_close(t.std(), r.std().numpy(), rtol=1e-5)
    assert_close(t.std(1), r.std(1).numpy(), rtol=1e-5)
    assert_close(t.std(dim=(0, 2), keepdim=True), r.std(dim=(0, 2), keepdim=True).numpy(), rtol=1e-5)
    assert_close(t.std(0, unbiased=False), r.std(0, unbiased=False).numpy(), rtol=1e-5)
    assert_close(t.std(2, correction=0), np.std(a, axis=2), rtol=1e-5)
    assert_close(gt.std(t, axis=1, ddof=1), np.std(a, axis=1, ddof=1), rtol=1e-5)
    # Values whose variance overflows float32 (torch accumulates in double): std stays finite.
    big = np.array([[3.4e38, -0.75, 1e30], [1.0, 2.0, 0.0]], dtype=np.float32)
    for kw in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}):
        got = gt.from_numpy(big).std(**kw).numpy()
        want = torch.from_numpy(big).std(**kw).numpy()
        assert np.isfinite(want).all()
        np.testing.assert_allclose(got, want, rtol=1e-5)
    # The gradient, by finite differences' closed form: (x - mean) / ((n - 1) std).
    w = gt.from_numpy(a[0, 0]).requires_grad_()
    w.std().backward()
    v = a[0, 0].astype(np.float64)
    assert_close(w.grad, (v - v.mean()) / ((v.size - 1) * v.std(ddof=1)), rtol=1e-4)


def test_isclose_allclose_equal_as_torch():
    a = np.array([1, 1, 0, INF, INF, NAN, 1, -2], dtype=np.float32)
    b = np.array([1 + 5e-6, 1 + 2e-5, 1e-9, INF, -INF, NAN, INF, -2.00001], dtype=np.float32)
    ta, tb, ra, rb = gt.from_numpy(a), gt.from_numpy(b), torch.from_numpy(a), torch.from_numpy(b)
    for kw in ({}, {"equal_nan": True}, {"rtol": 1e-4}, {"rtol": 0, "atol": 0}, {"atol": 1e-3}):
        np.testing.assert_array_equal(ta.isclose(tb, **kw).numpy(), ra.isclose(rb, **kw).numpy())
        assert gt.allclose(ta[:2], tb[:2], **kw) == torch.allclose(ra[:2], rb[:2], **kw)
        assert ta.allclose(ta, **kw) == ra.allclose(ra, **kw)
    np.testing.assert_array_equal(gt.isclose(gt.arange(4), gt.tensor([2], dtype=gt.int64)).numpy(),
                                  torch.isclose(torch.arange(4), torch.tensor([2])).numpy())
    with pytest.raises(ValueError, match="one dtype"):
        ta.isclose(tb.to(gt.float16))
    assert isinstance(gt.allclose(ta, ta), bool)
    for p, q in [(gt.arange(3), gt.arange(3)), (gt.arange(3), gt.arange(3).float()),
                 (gt.arange(3), gt.arange(2)), (ta, ta), (gt.ones(2, 2), gt.ones(1, 2)),
                 (gt.zeros(0), gt.zeros(0))]:
        want = torch.equal(torch.from_numpy(p.numpy()), torch.from_numpy(q.numpy()))
        assert gt.equal(p, q) is want and p.equal(q) is want


def test_eye_linspace_empty_as_torch():
    for args in ((3,), (2, 4), (0,), (3, 1)):
        np.testing.assert_array_equal(gt.eye(*args).numpy(), torch.eye(*args).numpy())
    assert gt.eye(2, dtype=gt.int64).dtype == gt.int64
    with pytest.raises(ValueError, match="non-negative"):
        gt.eye(-2)
    for s, e, n in ((0, 1, 7), (-3.3, 5.1, 100), (1e6, -2.5, 1001), (2, 2, 3), (5, -5, 1), (0, 1, 0)):
        got = gt.linspace(s, e, n).numpy()
        assert got.dtype == np.float32 and got.shape == (n,)
        np.testing.assert_allclose(got, np.linspace(s, e, n), rtol=1e-6, atol=3e-7 * max(abs(s), abs(e)))
        np.testing.assert_allclose(got, torch.linspace(s, e, n).numpy(), rtol=1e-6, atol=1e-6 * abs(e - s))
        if n:
            assert got[0] == np.float32(s) and got[-1] == np.float32(e if n > 1 else s)
    np.testing.assert_array_equal(gt.linspace(0, 10, 5, dtype=gt.int64).numpy(),
                                  torch.linspace(0, 10, 5, dtype=torch.int64).numpy())
    e = gt.empty(2, 3)
    assert tuple(e.shape) == (2, 3) and e.dtype == gt.float32
    assert gt.empty_like(gt.ones(4, dtype=gt.int32)).dtype == gt.int32
    assert gt.empty(2, requires_grad=True).requires_grad


def test_randint_forms_range_and_seed():
    gt.manual_seed(3)
    a = gt.randint(10, (4000,))
    assert a.dtype == gt.int64 and tuple(a.shape) == (4000,)
    counts = np.bincount(a.numpy(), minlength=10)
    assert len(counts) == 10 and counts.min() > 300  # each of 0..9 about 400 times
    b = gt.randint(-5, 5, (3, 4))
    assert tuple(b.shape) == (3, 4) and -5 <= b.numpy().min() and b.numpy().max() < 5
    assert gt.randint(0, 2, size=(5,), dtype=gt.int32).dtype == gt.int32
    gt.manual_seed(3)
    np.testing.assert_array_equal(gt.randint(10, (4000,)).numpy(), a.numpy())
    with pytest.raises(ValueError, match="greater than low"):
        gt.randint(3, 3, (2,))
    with pytest.raises(TypeError, match="randint"):
        gt.randint(5)


def test_sum_mean_over_several_dims_reduce_at_once_as_torch():
    # Two rows of -3.4e38: torch's mean over both dims overflows its float32 sum; a mean of
    # row means would not.
    x = np.array([[-1.75, 1e30, -3.4028234e38]] * 2, dtype=np.float32)
    for dims in ((0, 1), (-2, 1), (1, 0)):
        got = gt.from_numpy(x).mean(dim=dims).item()
        want = torch.from_numpy(x).mean(dim=dims).item()
        assert got == want and got == float("-inf")
    y = np.random.default_rng(5).standard_normal((3, 4, 5)).astype(np.float32)
    for dims in ((0, 2), (2, 0), (0, 1, 2)):
        for keep in (False, True):
            np.testing.assert_allclose(gt.from_numpy(y).mean(dim=dims, keepdim=keep).numpy(),
                                       torch.from_numpy(y).mean(dim=dims, keepdim=keep).numpy(),
                                       rtol=1e-6)
            np.testing.assert_allclose(gt.from_numpy(y).sum(dims, keepdims=keep).numpy(),
                                       np.sum(y, axis=dims, keepdims=keep), rtol=1e-5)

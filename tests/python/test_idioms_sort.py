"""sort / argsort / topk / msort (issue 13) against python3-torch: values, indices (stable
order, ties, NaN), named-tuple results, gradients and errors."""
import numpy as np
import pytest

import gt

torch = pytest.importorskip("torch")


def tied(shape, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return np.round(rng.standard_normal(shape) * 2).astype(dtype)  # few values: many ties


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32, np.float16])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 6), -1), ((3, 6), 0), ((2, 4, 5), 1)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_as_torch_stable(dtype, shape, dim, descending):
    a = tied(shape, sum(shape) + dim, dtype)
    g, t = gt.from_numpy(a), torch.from_numpy(a)
    gv, gi = g.sort(dim=dim, descending=descending)
    tv, ti = torch.sort(t, dim=dim, descending=descending, stable=True)
    np.testing.assert_array_equal(gv.numpy(), tv.numpy())
    np.testing.assert_array_equal(gi.numpy(), ti.numpy())
    assert gi.dtype == gt.int64
    np.testing.assert_array_equal(gt.argsort(g, dim, descending=descending).numpy(),
                                  ti.numpy())
    r = gt.sort(g, dim, descending)
    assert type(r).__name__ == "sort" and r.values.shape == r.indices.shape == g.shape


def test_nan_sorts_above_infinity():
    a = np.array([np.nan, 1, -np.inf, 0.0, np.inf, -0.0, np.nan, -1], np.float32)
    for desc in (False, True):
        gv, gi = gt.from_numpy(a).sort(descending=desc)
        tv, ti = torch.from_numpy(a).sort(descending=desc, stable=True)
        np.testing.assert_array_equal(gi.numpy(), ti.numpy())
        np.testing.assert_array_equal(gv.numpy(), tv.numpy())


@pytest.mark.parametrize("k", [0, 1, 3, 6])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_as_torch(k, largest):
    a = np.random.default_rng(k).standard_normal((4, 6)).astype(np.float32)  # distinct values
    gv, gi = gt.from_numpy(a).topk(k, largest=largest)
    tv, ti = torch.from_numpy(a).topk(k, largest=largest)
    np.testing.assert_array_equal(gv.numpy(), tv.numpy())
    np.testing.assert_array_equal(gi.numpy(), ti.numpy())
    kc = min(k, 4)
    v, i = gt.topk(gt.from_numpy(a), kc, dim=0)
    np.testing.assert_array_equal(i.numpy(), torch.topk(torch.from_numpy(a), kc, dim=0).indices.numpy())
    assert type(gt.from_numpy(a).topk(k)).__name__ == "topk"


def test_topk_and_sort_gradients_as_torch():
    a = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    w = np.random.default_rng(4).standard_normal((3, 2)).astype(np.float32)
    g, t = gt.from_numpy(a).requires_grad_(), torch.from_numpy(a).requires_grad_()
    (g.topk(2).values * gt.from_numpy(w)).sum().backward()
    (t.topk(2).values * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy())
    g2, t2 = gt.from_numpy(a).requires_grad_(), torch.from_numpy(a).requires_grad_()
    (g2.sort(0, descending=True).values.cumsum(0) ** 2).sum().backward()
    (t2.sort(0, descending=True).values.cumsum(0) ** 2).sum().backward()
    np.testing.assert_allclose(g2.grad.numpy(), t2.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_msort_and_0d():
    a = tied((5, 3), 9)
    np.testing.assert_array_equal(gt.msort(gt.from_numpy(a)).numpy(),
                                  torch.msort(torch.from_numpy(a)).numpy())
    v, i = gt.tensor(2.5).sort()
    assert v.item() == 2.5 and i.item() == 0


def test_sort_errors():
    t = gt.zeros(2, 3)
    with pytest.raises(gt.GTError, match="out of range"):
        t.topk(4)
    with pytest.raises(gt.GTError):
        t.sort(dim=2)
    with pytest.raises(gt.GTError):
        t.argsort(-3)

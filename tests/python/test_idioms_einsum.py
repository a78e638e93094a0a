"""bmm, repeat and einsum (issue 13) against python3-torch: values, shapes, gradients, errors."""
import numpy as np
import pytest

import gt

torch = pytest.importorskip("torch")

EQUATIONS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]), ("i,i->", [(5,), (5,)]), ("ij", [(3, 4)]), ("ij,kj", [(3, 4), (5, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("ij->", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]), ("ijk,ik->j", [(2, 3, 4), (2, 4)]),
    ("abc,cd->dba", [(2, 3, 4), (4, 5)]), ("ij->j", [(0, 3)]), ("i,i", [(0,), (0,)]),
    # diagonals, "...", three or more operands, size-1 broadcasting
    ("ii->i", [(3, 3)]), ("ii", [(4, 4)]), ("iij->j", [(2, 2, 3)]), ("bii->bi", [(2, 3, 3)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]), ("b...,b->...", [(2, 3, 4), (2,)]),
    ("...", [(2, 3)]), ("i...->...", [(3, 2, 2)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,ij,j", [(3,), (3, 4), (4,)]), ("ab,bc,cd,de->ae", [(2, 3), (3, 2), (2, 4), (4, 2)]),
    ("ij,ij->ij", [(1, 4), (3, 4)]), ("bij,bjk->bik", [(1, 2, 3), (4, 3, 5)]),
]


@pytest.mark.parametrize("eq,shapes", EQUATIONS)
def test_einsum_values_and_gradients_as_torch(eq, shapes):
    rng = np.random.default_rng(len(eq))
    arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    gs = [gt.from_numpy(a).requires_grad_() for a in arrs]
    ts = [torch.from_numpy(a).requires_grad_() for a in arrs]
    g, t = gt.einsum(eq, *gs), torch.einsum(eq, *ts)
    assert tuple(g.shape) == tuple(t.shape)
    np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)
    w = rng.standard_normal(tuple(t.shape)).astype(np.float32)
    (g * gt.from_numpy(w)).sum().backward()
    (t * torch.from_numpy(w)).sum().backward()
    for a, b in zip(gs, ts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5)
    # The list form.
    np.testing.assert_allclose(gt.einsum(eq, gs).detach().numpy(), t.detach().numpy(),
                               rtol=1e-5, atol=1e-5)


def test_einsum_errors():
    a = gt.zeros(3, 4)
    for eq, ops, match in [("ij,jk->ik", [a, gt.zeros(5, 2)], "sizes 4 and 5"),
                           ("ii->i", [gt.zeros(3, 4)], "different sizes"),
                           ("ij->k", [a], "output letters"), ("ijk", [a], "dims"),
                           ("...i...->i", [a], "twice"), ("i.j", [a], "'.' outside"),
                           ("i1", [a], "letters"), ("ij,jk", [a], "operand")]:
        with pytest.raises(ValueError, match=match):
            gt.einsum(eq, *ops)


def test_bmm_and_repeat_as_torch():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 2, 3)).astype(np.float32)
    b = rng.standard_normal((4, 3, 5)).astype(np.float32)
    np.testing.assert_allclose(gt.bmm(gt.from_numpy(a), gt.from_numpy(b)).numpy(),
                               torch.bmm(torch.from_numpy(a), torch.from_numpy(b)).numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gt.from_numpy(a).bmm(gt.from_numpy(b)).numpy(),
                               torch.from_numpy(a).bmm(torch.from_numpy(b)).numpy(),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="3-d"):
        gt.bmm(gt.zeros(2, 3), gt.zeros(3, 2))
    with pytest.raises(ValueError, match="batch sizes"):
        gt.bmm(gt.zeros(2, 2, 3), gt.zeros(3, 3, 2))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for sizes in ((1, 1), (2, 1), (2, 3), (3, 1, 2), (0, 2)):
        tg = gt.from_numpy(x).requires_grad_()
        tt = torch.from_numpy(x).requires_grad_()
        g, t = tg.repeat(*sizes), tt.repeat(*sizes)
        np.testing.assert_array_equal(g.detach().numpy(), t.detach().numpy())
        g.sum().backward()
        t.sum().backward()
        np.testing.assert_array_equal(tg.grad.numpy(), tt.grad.numpy())
    with pytest.raises(ValueError, match="can not be smaller"):
        gt.from_numpy(x).repeat(2)

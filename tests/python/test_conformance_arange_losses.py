"""PyTorch semantics of arange's bounds and the element-wise loss weights (issue 18, found by the
differential tester): python3-torch is the oracle."""
import numpy as np
import pytest

import gt

torch = pytest.importorskip("torch")


def outcome(m, fn):
    try:
        return fn(m).tolist()
    except RuntimeError:  # gt.ShapeError is a RuntimeError too (gt.GTError)
        return "raises"


@pytest.mark.parametrize("args", [
    (-1.25, 5, 1, "int64"), (-3.5, -10, -1.5, "int32"), (2.9, -0.5, -1, "int64"),
    (0, 10, 0.5, "int64"), (0, -4, 1, None), (3, 0, 1, None), (0.0, 1.0, -0.25, None),
    (5, 5, -1, None), (10, 2, -3, "int64"), (0, 1, 0.3, None)])
def test_arange_bounds_as_torch(args):
    start, end, step, dtype = args

    def fn(m):
        kw = {} if dtype is None else {"dtype": getattr(m, dtype)}
        return m.arange(start, end, step, **kw)
    assert outcome(gt, fn) == outcome(torch, fn)


@pytest.mark.parametrize("loss", ["bce", "bce_logits_weight", "bce_logits_pos_weight"])
@pytest.mark.parametrize("wshape", [(3,), (1,), (2, 3), (1, 3)])
def test_loss_weights_must_broadcast_to_the_input(loss, wshape):
    x = np.array([0.25, 0.5, 0.75], np.float32)
    y = np.array([0.0, 1.0, 1.0], np.float32)
    w = np.linspace(0.5, 1.5, int(np.prod(wshape)), dtype=np.float32).reshape(wshape)

    def fn(m):
        F = m.nn.functional
        xt, yt, wt = m.tensor(x.tolist()), m.tensor(y.tolist()), m.tensor(w.tolist())
        if loss == "bce":
            return F.binary_cross_entropy(xt, yt, weight=wt)
        if loss == "bce_logits_weight":
            return F.binary_cross_entropy_with_logits(xt, yt, weight=wt)
        return F.binary_cross_entropy_with_logits(xt, yt, pos_weight=wt)
    got, want = outcome(gt, fn), outcome(torch, fn)
    if want == "raises":
        assert got == "raises"
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5)

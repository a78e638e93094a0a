"""Conformance with PyTorch at the extremes (issue 18's last causes), torch as the oracle where its
answer does not depend on the tensor's length, closed forms where it does:

- silu and gelu are one op each with torch's forward and backward formulas, so their gradients
  at |x| ~ 3e38 and with an infinite upstream gradient at 0 are torch's (as composites, g * x
  overflowed before the vanishing factor, and inf * 0 gave NaN at silu'(0));
- sigmoid is torch's 1 / (1 + e^-x): 0 below ~-88, not a subnormal tail;
- mse_loss's gradient is torch's (norm d) g, one product with the upstream gradient in torch's
  order (a composite with its own backward node), so an overflowed 2 d times a zero gradient is
  NaN and (2 / n) d stays finite, as in torch;
- binary_cross_entropy_with_logits' gradient multiplies the upstream gradient once, so an
  infinite one gives +-inf, not inf - inf;
- x ** n with an integer n float32 cannot hold keeps n exact (its parity decides the sign);
- pow(a, b)'s gradient computes b - 1 in b's dtype (an int64 exponent stays exact).

Skipped where torch (python3-torch) is not installed.
"""
import numpy as np
import pytest

import gt
from test_conformance_grad_numerics import INF, NAN, _grads, _same

torch = pytest.importorskip("torch")

BIG = 3.4028234663852886e+38  # float32's largest


def _functional(m):
    return gt.nn.functional if m is gt else torch.nn.functional


ACTIVATIONS = {
    "silu": lambda m, x: _functional(m).silu(x),
    "gelu": lambda m, x: _functional(m).gelu(x),
    "gelu_tanh": lambda m, x: _functional(m).gelu(x, approximate="tanh"),
}
# Points where torch's vectorized and scalar loops agree (its gelu backward does not at -10:
# 0 in the vectorized loop, -7.7e-22 in the scalar one).
POINTS = [-INF, -BIG, -100.0, -3.0, -0.5, 0.0, 0.5, 3.0, 100.0, BIG, INF, NAN]


@pytest.mark.parametrize("seed", [1.0, -1.875, INF, -INF, 0.0], ids=str)
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_values_and_gradients_at_the_extremes(name, seed):
    gy, ty, gg, tg = _grads(ACTIVATIONS[name], [POINTS], seed)
    # atol: 1 + erf(x / sqrt 2) cancels near x = -3, where torch's vectorized erf is 4e-5 off
    # in relative terms (gelu(-3) = -0.00404969, torch -0.00404987)
    _same(gy, ty, rtol=1e-5, atol=1e-6)
    _same(gg[0], tg[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_activations_of_half_types_compute_in_float32_and_round_once(name, dtype):
    x = np.array([-6.0, -1.5, -0.25, 0.0, 0.75, 2.0, 60.0], dtype=np.float32)
    g = gt.from_numpy(x).to(getattr(gt, dtype)).requires_grad_()
    y = ACTIVATIONS[name](gt, g)
    assert y.dtype == getattr(gt, dtype)
    y.sum().backward()
    assert g.grad.dtype == getattr(gt, dtype)
    # The reference: torch in float32, rounded once to the 16-bit dtype.
    t = torch.tensor(x).to(getattr(torch, dtype)).float().requires_grad_()
    ty = ACTIVATIONS[name](torch, t)
    ty.sum().backward()
    want_y = ty.detach().to(getattr(torch, dtype)).float().numpy()
    want_g = t.grad.to(getattr(torch, dtype)).float().numpy()
    np.testing.assert_array_equal(y.float().numpy(), want_y)
    np.testing.assert_allclose(g.grad.float().numpy(), want_g, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activations_refuse_integer_inputs_as_torch(name):
    with pytest.raises((TypeError, RuntimeError, ValueError), match="gelu|silu"):
        ACTIVATIONS[name](gt, gt.tensor([1, 2], dtype=gt.int64))


def test_sigmoid_underflows_to_zero_as_torch():
    x = [-200.0, -100.0, -88.0, -87.0, -20.0, 0.0, 20.0, 100.0]
    got = gt.tensor(x).sigmoid().numpy()
    want = torch.tensor(x).sigmoid().numpy()
    assert got[1] == 0.0  # 1 / (1 + inf), where e^x / (1 + e^x) gives 3.7e-44
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


@pytest.mark.parametrize("far", [BIG, 2e19])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_mse_loss_gradient_is_torchs_product_order(reduction, far):
    # erf' of an overflowed square is 0: torch's (norm (x - t)) * 0 is NaN where norm (x - t)
    # overflows (norm 2, or 2 / n for "mean": with n = 2 it is 1, so x - t = -BIG stays finite
    # there), -0 where it does not (x - t = -2e19, whose square alone overflows).
    def fn(m, x, t):
        return _functional(m).mse_loss(x, t, reduction=reduction).erf()
    gy, ty, gg, tg = _grads(fn, [[1.5, 0.5], [far, 0.25]])
    _same(gy, ty, rtol=1e-6)
    for g, t in zip(gg, tg):
        _same(g, t, rtol=1e-6)
    assert np.isnan(gg[0].numpy()[0]) == (far == BIG and reduction != "mean")


@pytest.mark.parametrize("pos_weight", [None, [1.5, 2.5, 0.5, 1.0]])
@pytest.mark.parametrize("seed", [INF, -INF, 1.0])
def test_bce_with_logits_gradient_multiplies_the_upstream_gradient_once(pos_weight, seed):
    target = [0.75, 0.0, 1.0, 0.5]

    def fn(m, x):
        pw = None if pos_weight is None else m.tensor(pos_weight)
        return _functional(m).binary_cross_entropy_with_logits(
            x, m.tensor(target), pos_weight=pw, reduction="none")
    gy, ty, gg, tg = _grads(fn, [[-0.625, 1.25, 0.0, 3.0]], seed)
    _same(gy, ty, rtol=1e-6)
    _same(gg[0], tg[0], rtol=1e-5)
    if seed == INF:
        assert np.isinf(gg[0].numpy()).all()


@pytest.mark.parametrize("n", [-2147483649, 2147483647, 16777217, -16777219, 2**40 + 1])
def test_pow_keeps_an_integer_exponent_float32_cannot_hold(n):
    # A closed form: (-1) ** n is -1 for odd n (float32 would round n to an even number).
    x = gt.tensor([-1.0, 1.0, -1.0] * 4)  # 12 elements: torch's own vectorized loop rounds n
    assert x.pow(n).numpy().tolist() == [-1.0, 1.0, -1.0] * 4
    # Short tensors: torch's scalar loop keeps n exact too; values and gradients as torch's.
    gy, ty, gg, tg = _grads(lambda m, a: a ** n, [[-1.0, -0.875, 1.0625]])
    _same(gy, ty, rtol=1e-6)
    _same(gg[0], tg[0], rtol=1e-6)


def test_pow_gradient_takes_the_exponent_minus_one_in_its_dtype():
    # b - 1 in int64 is exact; converted to float16 by pow it is -inf, so b * a^(b-1) is
    # -inf * 0 = NaN, as torch (where b - 1.0 in float32 gave a finite -0).
    a = gt.tensor([2.5, -5.06640625], dtype=gt.float16).requires_grad_()
    b = gt.tensor([6, -2147483649], dtype=gt.int64)
    a.pow(b).backward(gt.tensor([1.0, 1.0], dtype=gt.float16))
    got = a.grad.float().numpy()
    assert got[0] == pytest.approx(6 * 2.5 ** 5, rel=1e-3)
    assert np.isnan(got[1])


def test_mse_loss_has_one_backward_node_that_checks_its_saved_inputs():
    x = gt.tensor([1.0, 2.0, 3.0]).requires_grad_()
    y = gt.tensor([0.5, 0.5, 0.5])
    loss = gt.nn.functional.mse_loss(x * 1.0, y)
    assert "MseLoss" in str(loss.grad_fn)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 / 3.0 * (np.array([1.0, 2.0, 3.0]) - 0.5),
                               rtol=1e-6)
    # As torch: the target it saved was modified in place before backward.
    t = gt.tensor([0.5, 0.5, 0.5])
    loss = gt.nn.functional.mse_loss(x * 1.0, t)
    t.add_(1.0)
    with pytest.raises((RuntimeError, ValueError), match="modified by an in-place operation"):
        loss.backward()

"""PyTorch semantics found by the differential tester (issue 18): float16/bfloat16 composites
computed in float32 (softmax, log_softmax, layer_norm, gelu), pow with a scalar base, float-only
losses. python3-torch is the oracle."""
import numpy as np
import pytest

import gt

torch = pytest.importorskip("torch")

ROW = [[2.63671875, -0.875, -1.25, 0.92138671875], [65504.0, -60000.0, 3.0, -0.5]]


def outcome(m, fn):
    try:
        r = fn(m)
        return r.float().tolist() if hasattr(r, "float") else r
    except RuntimeError:
        return "raises"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layer_norm"])
def test_half_composites_round_once(op, dtype):
    def fn(m):
        x = m.tensor(ROW, dtype=getattr(m, dtype))
        F = m.nn.functional
        if op == "layer_norm":
            return F.layer_norm(x, [4], m.tensor([1.0, 0.5, -1.0, 2.0], dtype=x.dtype),
                                m.tensor([0.0, 0.25, 0.5, -0.5], dtype=x.dtype))
        return getattr(F, op)(x, dim=-1)
    got = outcome(gt, fn)
    if dtype == "float16":  # torch 1.13's CPU build has no float16 kernel: float32, rounded
        want = _float16_via_float32(fn)
    else:
        want = outcome(torch, fn)
    # One rounding at the end: equal up to that rounding (computed stepwise in float16, the
    # row with 65504 overflows).
    tol = 1e-2 if dtype == "bfloat16" else 2e-3
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _float16_via_float32(fn):
    """What a float16 kernel computing in float32 gives: fn on float32 inputs, rounded."""
    class Float32Torch:
        def __getattr__(self, name):
            return torch.float32 if name == "float16" else getattr(torch, name)
    return fn(Float32Torch()).to(torch.float16).float().tolist()


def test_pow_with_a_scalar_base():
    def half(m):  # the base is converted to float16 first: 70000. is inf there
        return 70000.0 ** m.tensor([0.25, 0.5], dtype=m.float16)

    def int32_range(m):  # an int32 power's integer base must fit int32
        return (-2 ** 63) ** m.tensor([1, 2], dtype=m.int32)

    def int32_ok(m):
        return 3 ** m.tensor([1, 2], dtype=m.int32)

    for fn in (half, int32_range, int32_ok):
        assert outcome(gt, fn) == outcome(torch, fn), fn.__name__


def test_pow_of_false_takes_the_general_gradient():
    def fn(m):
        x = m.tensor([0.0, -0.375, 2.0], requires_grad=True)
        m.pow(x, False).sum().backward()
        return x.grad
    got, want = outcome(gt, fn), outcome(torch, fn)
    np.testing.assert_array_equal(np.array(got), np.array(want))  # NaN at 0, -0. and 0.


@pytest.mark.parametrize("loss", ["nll_loss", "silu", "bce_with_logits_int"])
def test_float_only_functions_refuse_integers(loss):
    def fn(m):
        F = m.nn.functional
        if loss == "nll_loss":
            return F.nll_loss(m.tensor([[6, 2, 0]], dtype=m.int64), m.tensor([0], dtype=m.int64))
        if loss == "silu":
            return F.silu(m.tensor([1, 0], dtype=m.int32))
        return F.binary_cross_entropy_with_logits(m.tensor([1, 0], dtype=m.int64),
                                                  m.tensor([1.0, 0.0]))
    assert outcome(torch, fn) == "raises"
    assert outcome(gt, fn) == "raises"

"""float64, int8 and uint8 (issue 13), against torch: values computed in double precision (not
float32 with a float64 label), numpy round trips that keep the dtype, torch's promotion and cast
rules, and float64 gradients checked with finite differences at double precision."""
import numpy as np
import pytest

import gt
from conftest import assert_close

torch = pytest.importorskip("torch")


def both(arr):
    return gt.from_numpy(arr), torch.from_numpy(arr.copy())


def test_dtype_objects_and_numpy_round_trips(rng):
    assert gt.float64 is gt.double and gt.float64.itemsize == 8 and gt.float64.is_floating_point
    assert gt.int8.itemsize == 1 and gt.uint8.itemsize == 1 and not gt.uint8.is_floating_point
    for npdt, gdt in [(np.float64, gt.float64), (np.int8, gt.int8), (np.uint8, gt.uint8),
                      (np.float32, gt.float32), (np.int16, gt.int32)]:
        a = (rng.standard_normal(7) * 50).astype(npdt)
        t = gt.from_numpy(a)
        assert t.dtype == gdt, npdt
        back = t.numpy()
        assert back.dtype == np.dtype(gdt.name)
        np.testing.assert_array_equal(back, a.astype(back.dtype))
    assert gt.tensor([1.5, 2.0]).dtype == gt.float32  # Python floats: torch's default dtype
    assert gt.tensor(np.array([1.5])).dtype == gt.float64  # an array keeps its dtype
    assert gt.tensor([1, 2], dtype=gt.uint8).dtype == gt.uint8
    assert gt.zeros(2, dtype="float64").dtype == gt.float64
    assert gt.ones(2).double().dtype == gt.float64
    assert gt.ones(2).byte().dtype == gt.uint8 and gt.ones(2).char().dtype == gt.int8
    assert repr(gt.tensor([1, 2], dtype=gt.uint8)) == "tensor([1, 2], dtype=gt.uint8)"


def test_float64_is_computed_in_double(rng):
    a = rng.standard_normal((33, 17))
    b = rng.standard_normal((17, 9))
    ga, ta = both(a)
    gb, tb = both(b)
    cases = {
        "affine": (ga * 3.0 + 1e-9, ta * 3.0 + 1e-9),
        "exp": (ga.exp(), ta.exp()), "log": (ga.abs().log(), ta.abs().log()),
        "tanh": (ga.tanh(), ta.tanh()), "sigmoid": (ga.sigmoid(), ta.sigmoid()),
        "sqrt": (ga.abs().sqrt(), ta.abs().sqrt()), "neg": (-ga, -ta),
        "matmul": (ga @ gb, ta @ tb), "sum": (ga.sum(1), ta.sum(1)), "mean": (ga.mean(), ta.mean()),
        "var": (ga.var(0), ta.var(0)), "max": (ga.max(1)[0], ta.max(1)[0]),
        "softmax": (ga.softmax(1), ta.softmax(1)), "cumsum": (ga.cumsum(0), ta.cumsum(0)),
        "pow": (ga ** 2, ta ** 2), "div": (ga / 7.0, ta / 7.0),
    }
    for name, (g, t) in cases.items():
        assert g.dtype == gt.float64, name
        # 1e-12: float32 arithmetic would be off by ~1e-7
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)
    # A difference float32 cannot hold: 1 + 1e-10.
    x = gt.tensor(np.array([1.0])) + 1e-10
    assert x.item() - 1.0 == pytest.approx(1e-10, rel=1e-6)


def test_promotion_as_torch():
    f64 = gt.tensor(np.array([1.5]))
    f32 = gt.tensor([2.0])
    i8 = gt.tensor([3], dtype=gt.int8)
    u8 = gt.tensor([200], dtype=gt.uint8)
    t = {"f64": torch.tensor([1.5], dtype=torch.float64), "f32": torch.tensor([2.0]),
         "i8": torch.tensor([3], dtype=torch.int8), "u8": torch.tensor([200], dtype=torch.uint8)}
    g = {"f64": f64, "f32": f32, "i8": i8, "u8": u8}
    for x in g:
        for y in g:
            want = (t[x] + t[y]).dtype
            got = (g[x] + g[y]).dtype
            if {x, y} == {"i8", "u8"}:
                assert want == torch.int16 and got == gt.int32  # GT has no int16
                continue
            assert str(got) == str(want).replace("torch.", ""), (x, y)
    assert (f32 + gt.tensor(np.float64(2.0))).dtype == gt.float32  # a 0-d float64 does not lift
    assert (u8 + 100).dtype == gt.uint8 and (u8 + 100).item() == 44  # wraps as torch
    assert (u8 * 2.5).dtype == gt.float32
    assert (-u8).item() == 56
    assert i8.sum().dtype == gt.int64 and u8.sum().dtype == gt.int64
    assert (i8 / 2).dtype == gt.float32
    assert (u8 // 3).item() == 66


def test_casts_to_small_integers_match_torch():
    v = [300.0, -1.0, float("nan"), 1e10, -129.0, 255.9, float("inf"), 3.7, -3.7]
    for dt, tdt in [(gt.uint8, torch.uint8), (gt.int8, torch.int8)]:
        got = gt.tensor(v).to(dt)
        want = torch.tensor(v).to(tdt)
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=str(dt))
        got64 = gt.tensor(np.array(v)).to(dt)
        np.testing.assert_array_equal(got64.numpy(), torch.tensor(v, dtype=torch.float64).to(tdt).numpy())
    with pytest.raises(gt.GTError):
        gt.full((2,), 300, dtype=gt.uint8)  # torch: value cannot be converted without overflow


def test_small_integer_ops(rng):
    a = rng.integers(0, 256, 50).astype(np.uint8)
    b = rng.integers(1, 256, 50).astype(np.uint8)
    ga, ta = both(a)
    gb, tb = both(b)
    for name, g, t in [("add", ga + gb, ta + tb), ("mul", ga * gb, ta * tb), ("sub", ga - gb, ta - tb),
                       ("max", ga.max(), ta.max()), ("lt", ga < gb, ta < tb),
                       ("floordiv", ga // gb, ta // tb), ("rem", ga % gb, ta % tb),
                       ("where", gt.where(ga > 100, ga, gb), torch.where(ta > 100, ta, tb)),
                       ("float", ga.float() / 255, ta.float() / 255)]:
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-6, err_msg=name)
    c = (rng.integers(-128, 128, (6, 5))).astype(np.int8)
    d = (rng.integers(-128, 128, (5, 4))).astype(np.int8)
    gc, tc = both(c)
    gd, td = both(d)
    np.testing.assert_array_equal((gc @ gd).numpy(), (tc @ td).numpy())  # wraps in int8 as torch
    np.testing.assert_array_equal(gc.abs().numpy(), tc.abs().numpy())


def test_float64_gradients_match_finite_differences(rng):
    x0 = rng.standard_normal((4, 3))
    w0 = rng.standard_normal((3, 2))

    def f(x, w):
        return np.sum(np.tanh(x @ w) ** 2) + np.sum(np.exp(x) * 0.1)

    x = gt.tensor(x0, requires_grad=True)
    w = gt.tensor(w0, requires_grad=True)
    assert x.dtype == gt.float64
    loss = ((x @ w).tanh() ** 2).sum() + (x.exp() * 0.1).sum()
    loss.backward()
    assert x.grad.dtype == gt.float64
    eps = 1e-6
    for t, v, other in [(x, x0, w0), (w, w0, x0)]:
        num = np.zeros_like(v)
        for i in np.ndindex(v.shape):
            hi, lo = v.copy(), v.copy()
            hi[i] += eps
            lo[i] -= eps
            fh = f(hi, other) if t is x else f(other, hi)
            fl = f(lo, other) if t is x else f(other, lo)
            num[i] = (fh - fl) / (2 * eps)
        np.testing.assert_allclose(t.grad.numpy(), num, rtol=1e-7, atol=1e-8)


def test_float64_training_step_matches_torch(rng):
    x = rng.standard_normal((16, 5))
    y = rng.standard_normal((16, 1))
    for lib in (gt, torch):
        lib.manual_seed(0)
    gm = gt.nn.Linear(5, 1).double()
    tm = torch.nn.Linear(5, 1).double()
    with torch.no_grad():
        tm.weight.copy_(torch.from_numpy(gm.weight.numpy()))
        tm.bias.copy_(torch.from_numpy(gm.bias.numpy()))
    assert gm.weight.dtype == gt.float64
    gopt = gt.optim.SGD(gm.parameters(), lr=0.1)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    for _ in range(5):
        for m, opt, lib in [(gm, gopt, gt), (tm, topt, torch)]:
            opt.zero_grad()
            loss = ((m(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
            loss.backward()
            opt.step()
    np.testing.assert_allclose(gm.weight.numpy(), tm.weight.detach().numpy(), rtol=1e-12, atol=1e-13)

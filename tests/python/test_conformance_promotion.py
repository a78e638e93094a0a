"""Issue 18 items 5, 7, 8 and 9 against python3-torch, the reference for op semantics:

- type promotion by PyTorch's categories (torch.result_type): tensors with dims > zero-dim
  tensors > Python scalars, bool < integer < floating;
- scalar operands converted to the op's dtype first (an int32 op wraps a Python int, a float16
  op rounds a Python float: 70000. is inf), fill values and clamp bounds exact for int64;
- the errors PyTorch raises (in-place results that cannot be cast back, mixed-dtype matmul,
  float-only ops on integers, out-of-range scalars, bool subtraction, ...).

Every expectation is what torch does, computed here by torch itself; skipped without torch.
"""
import math

import numpy as np
import pytest

import gt

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float16", "bfloat16", "int32", "int64", "bool"]
SAMPLE = {"float32": [1.5, -2.0], "float16": [0.5, 3.0], "bfloat16": [2.0, -0.5],
          "int32": [3, -7], "int64": [5, 2], "bool": [True, False]}


def make(values, dtype, zero_dim=False):
    """The same tensor in gt and in torch: a 0-d one holding values[0] when zero_dim."""
    if zero_dim:
        values = values[0]
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    g = gt.from_numpy(np.asarray(t.float().numpy() if dtype == "bfloat16" else t.numpy())).to(dtype)
    assert g.shape == tuple(t.shape)
    return g, t


def name(dtype):
    """A dtype's name, gt's or torch's ("float32", "int64", ...)."""
    return str(dtype).replace("torch.", "").replace("gt.", "")


def check_same(g, t, rtol=1e-6):
    """gt's result has torch's dtype, shape and values (exactly: the same conversions happen)."""
    assert name(g.dtype) == name(t.dtype)
    assert g.shape == tuple(t.shape)
    want = (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    got = g.numpy()
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=0, equal_nan=True)
    else:
        assert got.tolist() == want.tolist()


def raises_both(gt_call, torch_call):
    """torch raises, and gt raises at the call site too (an ordinary exception, not a crash)."""
    with pytest.raises((RuntimeError, TypeError, ValueError, IndexError)):
        torch_call()
    with pytest.raises(gt.GTError):
        gt_call()


# ---- item 7: zero-dim tensors take part in promotion below tensors with dims -------------------

BINARY = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "lt": lambda a, b: a < b,
    "eq": lambda a, b: a == b,
}


@pytest.mark.parametrize("ranks", [(False, True), (True, False), (True, True)],
                         ids=["dim-0d", "0d-dim", "0d-0d"])
@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", DTYPES)
def test_zero_dim_tensor_promotion_matches_torch(da, db, ranks):
    ga, ta = make(SAMPLE[da], da, ranks[0])
    gb, tb = make(SAMPLE[db], db, ranks[1])
    assert name((ga + gb).dtype) == name(torch.result_type(ta, tb))
    for op in BINARY.values():
        check_same(op(ga, gb), op(ta, tb))
    check_same(gt.maximum(ga, gb), torch.maximum(ta, tb))
    cond_g, cond_t = make([True, False], "bool")
    check_same(gt.where(cond_g, ga, gb), torch.where(cond_t, ta, tb))
    if da == "bool" or db == "bool":
        raises_both(lambda: ga - gb, lambda: ta - tb)
    else:
        check_same(ga - gb, ta - tb)


def test_zero_dim_examples_from_the_issue():
    g, t = make([1, -10], "int32")
    g0, t0 = make([2**40 + 3], "int64", zero_dim=True)
    check_same(g + g0, t + t0)  # int32: the int64 0-d tensor wraps into it
    assert name((g + g0).dtype) == "int32"
    h, th = make([0.5, 2.0], "float16")
    f0, tf0 = make([1e5], "float32", zero_dim=True)
    check_same(h * f0, th * tf0)  # float16: 1e5 is inf there
    assert name((h * f0).dtype) == "float16"


# ---- item 5 / 8: Python scalars -----------------------------------------------------------------

SCALARS = [True, False, 3, -2, 2**40 + 1, 2.5, -0.75, 70000.0, 1e-8]


@pytest.mark.parametrize("zero_dim", [False, True], ids=["dim", "0d"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("s", SCALARS, ids=repr)
def test_python_scalar_promotion_and_conversion_match_torch(dtype, s, zero_dim):
    g, t = make(SAMPLE[dtype], dtype, zero_dim)
    assert name((g + s).dtype) == name(torch.result_type(t, s))
    for op_name, op in BINARY.items():
        check_same(op(g, s), op(t, s))
        # torch computes `s / t` as reciprocal(t) * s, rounding twice in a 16-bit dtype; gt
        # divides (rounding once): one ulp apart at most.
        rtol = {"float16": 2**-10, "bfloat16": 2**-7}.get(dtype, 1e-6) if op_name == "div" else 1e-6
        check_same(op(s, g), op(s, t), rtol=rtol)
    if dtype == "bool" or isinstance(s, bool):
        raises_both(lambda: g - s, lambda: t - s)
        raises_both(lambda: s - g, lambda: s - t)
    else:
        check_same(g - s, t - s)
        check_same(s - g, s - t)


def test_scalar_conversion_examples_from_the_issue():
    g, t = make([-10, 7], "int32")
    check_same(g + 2**40, t + 2**40)          # the scalar wraps into int32: [-10, 7]
    check_same(g * 2**40, t * 2**40)
    check_same(g == 2**40 + 7, t == 2**40 + 7)  # compared in int32 too
    check_same(g < 2**40, t < 2**40)
    h, th = make([0.5, 1.0], "float16")
    check_same(h * 70000.0, th * 70000.0)     # 70000. rounds to inf in float16: inf, not 35008
    check_same(h * 65519.0, th * 65519.0)
    check_same(h - 70000.0, th - 70000.0)
    m, tm = make([65504.0], "float16")
    check_same(m == 65520.0, tm == 65520.0)   # 65520. is inf in float16
    check_same(m < 65519.0, tm < 65519.0)     # 65519. is 65504 in float16
    b, tb = make([1.0e38], "bfloat16")
    check_same(b * 1e39, tb * 1e39)
    big, tbig = make([1, -3], "int64")
    check_same(big + (2**62 + 1), tbig + (2**62 + 1))
    check_same(big * (2**63 - 1), tbig * (2**63 - 1))  # wraps like torch
    check_same(big == 2**53 + 1, tbig == 2**53 + 1)


def test_bool_with_python_bool_stays_bool():
    g, t = make([True, False], "bool")
    check_same(g + True, t + True)
    check_same(g * False, t * False)
    check_same(g + 1, t + 1)         # an int scalar: int64
    check_same(g * 2.5, t * 2.5)     # a float scalar: float32
    i, ti = make([3, 4], "int32")
    check_same(i + True, ti + True)  # a bool scalar never lifts the dtype
    check_same(i ** True, ti ** True)


def test_int64_masked_fill_and_clamp_are_exact():
    g, t = make([1, 2, 3], "int64")
    mg, mt = make([True, False, True], "bool")
    check_same(g.masked_fill(mg, 2**62 + 1), t.masked_fill(mt, 2**62 + 1))
    check_same(g.masked_fill(mg, -(2**63)), t.masked_fill(mt, -(2**63)))
    check_same(g.clamp(2**62 + 1), t.clamp(2**62 + 1))
    check_same(g.clamp(max=-(2**62) - 1), t.clamp(max=-(2**62) - 1))
    check_same(g.clamp(2, 2**62 + 1), t.clamp(2, 2**62 + 1))
    check_same(gt.nn.functional.clamp(g, 2**62 + 1), torch.clamp(t, 2**62 + 1))


def test_masked_fill_conversions_torch_accepts():
    mg, mt = make([True, False], "bool")
    for dtype, value in [("int64", 2.7), ("int64", -2.7), ("int32", -(2**31)), ("bool", 2),
                         ("bool", 2.5), ("int64", True), ("float16", 65504.0),
                         ("float16", math.inf), ("bfloat16", 2**62), ("float32", 2**62 + 1),
                         ("float16", 1e-30), ("float32", math.nan)]:
        g, t = make([1, 0], dtype)
        check_same(g.masked_fill(mg, value), t.masked_fill(mt, value))


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float16", "bool"])
@pytest.mark.parametrize("bounds", [(1, None), (None, 1), (0, 1), (1.5, None), (None, 2.5),
                                    (1, 2.5), (True, None), (-(2**31), 2**31 - 1)], ids=repr)
def test_clamp_dtype_and_values_match_torch(dtype, bounds):
    g, t = make([-3, 0, 2] if dtype != "bool" else [True, False, True], dtype)
    lo, hi = bounds
    kinds = [type(b) for b in bounds if b is not None]
    if dtype == "bool" and all(k is bool for k in kinds):
        raises_both(lambda: g.clamp(lo, hi), lambda: t.clamp(lo, hi))  # a bool result
        return
    if dtype == "float16":
        # torch 1.13's CPU clamp has no float16 kernel. Its bfloat16 one (and float16 in later
        # releases) converts each bound to the dtype with a check: a bound beyond float16 raises.
        if any(abs(b) > 65504 for b in bounds if b is not None):
            with pytest.raises(gt.ShapeError, match="float16"):
                g.clamp(lo, hi)
            with pytest.raises(RuntimeError, match="without overflow"):  # the bfloat16 analogue
                torch.ones(2, dtype=torch.bfloat16).clamp(-1e39)
            return
        want = t.float().clamp(lo, hi).half()
    else:
        want = t.clamp(lo, hi)
    check_same(g.clamp(lo, hi), want)
    check_same(g.clamp(min=lo, max=hi), want)
    check_same(gt.nn.functional.clamp(g, lo, hi), want)


def test_where_with_python_scalars_matches_torch():
    cg, ct = make([True, False], "bool")
    for dtype in DTYPES:
        for s in [True, 2, 2.5]:
            for zero_dim in [False, True]:
                g, t = make(SAMPLE[dtype], dtype, zero_dim)
                check_same(gt.where(cg, g, s), torch.where(ct, t, s))
                check_same(gt.where(cg, s, g), torch.where(ct, s, t))
    for a, b in [(2, 3), (2.0, 3), (True, False), (True, 2)]:
        check_same(gt.where(cg, a, b), torch.where(ct, a, b))


# ---- item 9: errors torch raises ----------------------------------------------------------------

def test_in_place_results_that_cannot_be_cast_back_raise():
    cases = [("int64", "__itruediv__", 2), ("int64", "__iadd__", 2.7), ("int64", "div_", 2),
             ("int32", "mul_", 0.5), ("bool", "__iadd__", 1), ("int64", "__isub__", 2.5),
             ("bool", "add_", 2.5)]
    for dtype, method, value in cases:
        g, t = make([1, 2], dtype)
        raises_both(lambda: getattr(g, method)(value), lambda: getattr(t, method)(value))
        f, tf = make([1.5, 2.5], "float32")
        raises_both(lambda: getattr(g, method)(f), lambda: getattr(t, method)(tf))
    with pytest.raises(gt.ShapeError, match="can't be cast"):
        a = gt.tensor([1, 2], dtype=gt.int64)
        a /= 2


def test_in_place_results_torch_accepts():
    for dtype, other in [("int32", 2**40), ("int64", True), ("bool", True), ("float16", 1e5),
                         ("int32", 3)]:
        g, t = make([1, 0], dtype)
        g += other
        t += other
        check_same(g, t)
    g, t = make([1, 2], "int32")
    o, to = make([3, 4], "int64")
    g += o
    t += to
    check_same(g, t)
    h, th = make([1, 2], "float16")
    f, tf = make([0.5, 0.25], "float32")
    h *= f
    th *= tf
    check_same(h, th)


@pytest.mark.parametrize("da,db", [("float32", "float16"), ("int64", "float32"),
                                   ("int32", "int64"), ("bfloat16", "float32")])
def test_mixed_dtype_matmul_raises(da, db):
    ga, ta = make([[1, 2], [3, 4]], da)
    gb, tb = make([[1, 0], [0, 1]], db)
    raises_both(lambda: ga @ gb, lambda: ta @ tb)
    raises_both(lambda: gt.matmul(gb, ga), lambda: torch.matmul(tb, ta))


F_OPS = {
    "mean": (lambda x: x.mean(), lambda x: x.mean()),
    "mean dim": (lambda x: x.mean(0), lambda x: x.mean(0)),
    "var": (lambda x: x.var(), lambda x: x.var()),
    "softmax": (lambda x: x.softmax(0), lambda x: x.softmax(0)),
    "log_softmax": (lambda x: gt.nn.functional.log_softmax(x, 0),
                    lambda x: torch.nn.functional.log_softmax(x, 0)),
    "layer_norm": (lambda x: gt.nn.functional.layer_norm(x, (2,)),
                   lambda x: torch.nn.functional.layer_norm(x, (2,))),
    "gelu": (lambda x: gt.nn.functional.gelu(x), lambda x: torch.nn.functional.gelu(x)),
    "mse_loss": (lambda x: gt.nn.functional.mse_loss(x, x),
                 lambda x: torch.nn.functional.mse_loss(x, x)),
    "binary_cross_entropy": (lambda x: gt.nn.functional.binary_cross_entropy(x, x),
                             lambda x: torch.nn.functional.binary_cross_entropy(x, x)),
}


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
@pytest.mark.parametrize("op", F_OPS, ids=str)
def test_float_only_ops_refuse_integer_and_bool(op, dtype):
    g, t = make([[1, 0], [1, 1]], dtype)
    fg, ft = F_OPS[op]
    raises_both(lambda: fg(g), lambda: ft(t))


def test_float_only_ops_torch_accepts_on_integers():
    g, t = make([[1, 0], [2, 1]], "int64")
    check_same(g.logsumexp(0), torch.logsumexp(t, 0))  # float32, like torch
    f, tf = make([[0.5, 1.0], [2.0, 1.0]], "float32")
    check_same(gt.nn.functional.mse_loss(f, g), torch.nn.functional.mse_loss(tf, t))
    b, tb = make([[True, False], [True, True]], "bool")
    check_same(gt.nn.functional.mse_loss(f, b), torch.nn.functional.mse_loss(tf, tb))
    check_same(b.max(), tb.max())
    check_same(g.abs(), t.abs())


def test_bool_abs_argmax_neg_raise():
    g, t = make([True, False], "bool")
    raises_both(lambda: g.abs(), lambda: t.abs())
    raises_both(lambda: abs(g), lambda: abs(t))
    raises_both(lambda: g.argmax(), lambda: t.argmax())
    raises_both(lambda: g.argmin(), lambda: t.argmin())
    raises_both(lambda: -g, lambda: -t)
    raises_both(lambda: g - g, lambda: t - t)
    raises_both(lambda: g.relu(), lambda: t.relu())


@pytest.mark.parametrize("dtype,value", [("int32", 2**40), ("int32", 2**31), ("int32", 2**31 + 0.5),
                                         ("float16", 1e5), ("float16", 65519.0),
                                         ("float16", -70000), ("bfloat16", 1e39),
                                         ("float32", 1e39), ("int64", math.nan),
                                         ("int64", 1e19), ("int32", math.inf)], ids=repr)
def test_out_of_range_fill_values_raise(dtype, value):
    g, t = make([1, 2], dtype)
    mg, mt = make([True, False], "bool")
    raises_both(lambda: g.masked_fill(mg, value), lambda: t.masked_fill(mt, value))
    raises_both(lambda: gt.full((2,), value, dtype=dtype),
                lambda: torch.full((2,), value, dtype=getattr(torch, dtype)))
    raises_both(lambda: g.fill_(value), lambda: t.fill_(value))


@pytest.mark.parametrize("dtype,bounds", [("int32", (2**40, None)), ("int32", (None, -(2**40))),
                                          ("int32", (2**31, None)), ("bfloat16", (1e39, None)),
                                          ("float32", (1e39, None)), ("float32", (None, -1e39))],
                         ids=repr)
def test_out_of_range_clamp_bounds_raise(dtype, bounds):
    g, t = make([1, 2], dtype)
    raises_both(lambda: g.clamp(*bounds), lambda: t.clamp(*bounds))


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32"])
def test_python_ints_beyond_int64_raise(dtype):
    g, t = make([1, 2], dtype)
    mg, mt = make([True, False], "bool")
    for big in [2**63, -(2**63) - 1, 2**64, 10**30]:
        raises_both(lambda: g + big, lambda: t + big)
        raises_both(lambda: big * g, lambda: big * t)
        raises_both(lambda: g == big, lambda: t == big)
        raises_both(lambda: g.masked_fill(mg, big), lambda: t.masked_fill(mt, big))
        raises_both(lambda: g.clamp(0, big), lambda: t.clamp(0, big))


def test_where_scalar_must_fit_the_result_dtype():
    cg, ct = make([True, False], "bool")
    i, ti = make([1, 2], "int32")
    h, th = make([1, 2], "float16")
    raises_both(lambda: gt.where(cg, i, 2**40), lambda: torch.where(ct, ti, 2**40))
    raises_both(lambda: gt.where(cg, 2**40, i), lambda: torch.where(ct, 2**40, ti))
    raises_both(lambda: gt.where(cg, h, 70000.0), lambda: torch.where(ct, th, 70000.0))


def test_pow_scalar_exponents():
    for dtype in ["int32", "int64"]:
        g, t = make([2, 3], dtype)
        for e in [-1, -2]:
            raises_both(lambda: g ** e, lambda: t ** e)
            raises_both(lambda: g.pow(e), lambda: t.pow(e))
            raises_both(lambda: gt.pow(g, e), lambda: torch.pow(t, e))
        check_same(g ** -1.0, t ** -1.0)
        check_same(2 ** make([-1, 3], dtype)[0], 2 ** make([-1, 3], dtype)[1])
        e0g, e0t = make([-1], "int64", zero_dim=True)
        check_same(g ** e0g, t ** e0t)
    i, ti = make([2, 3], "int32")
    raises_both(lambda: i ** 2**40, lambda: ti ** 2**40)
    h, th = make([2, 3], "float16")
    raises_both(lambda: h ** 70000.0, lambda: th ** 70000.0)
    raises_both(lambda: h ** 2**40, lambda: th ** 2**40)
    check_same(70000.0 ** h, 70000.0 ** th)
    f, tf = make([2, 3], "float32")
    check_same(f ** 1e39, tf ** 1e39)
    b, tb = make([True, False], "bool")
    check_same(b ** 2, tb ** 2)
    raises_both(lambda: b ** True, lambda: tb ** True)


def test_one_hot_of_an_empty_tensor_needs_num_classes():
    g = gt.zeros(0, dtype=gt.int64)
    t = torch.zeros(0, dtype=torch.int64)
    raises_both(lambda: gt.nn.functional.one_hot(g, -1), lambda: torch.nn.functional.one_hot(t, -1))
    raises_both(lambda: gt.nn.functional.one_hot(g), lambda: torch.nn.functional.one_hot(t))
    check_same(gt.nn.functional.one_hot(g, 3), torch.nn.functional.one_hot(t, 3))


def test_cross_entropy_targets():
    x, tx = make([[0.5, 1.0, -1.0], [2.0, 0.0, 1.0]], "float32")
    fl, tfl = make([0.0, 1.0], "float32")  # float class indices: torch raises, and so does
    raises_both(lambda: gt._gt.functional.cross_entropy(x, fl),  # libgtclient's cross_entropy
                lambda: torch.nn.functional.cross_entropy(tx, tfl))
    with pytest.raises(gt.ShapeError, match="class probabilities"):
        gt._gt.functional.cross_entropy(x, fl)
    # gt.nn.functional keeps the original GT's float labels (gt.tensor([0, 1]) is float32 there):
    # a float target that is not of the input's shape is taken as class indices.
    np.testing.assert_allclose(gt.nn.functional.cross_entropy(x, fl).item(),
                               torch.nn.functional.cross_entropy(tx, tfl.long()).item(), rtol=1e-6)
    bo, tbo = make([[True, False, False], [False, True, False]], "bool")
    raises_both(lambda: gt.nn.functional.cross_entropy(x, bo),
                lambda: torch.nn.functional.cross_entropy(tx, tbo))
    p, tp = make([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]], "float32")  # probabilities: supported
    np.testing.assert_allclose(gt.nn.functional.cross_entropy(x, p).item(),
                               torch.nn.functional.cross_entropy(tx, tp).item(), rtol=1e-5)

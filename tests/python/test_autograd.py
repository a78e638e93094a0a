"""Gradients against finite differences of numpy references and closed forms, grad modes,
accumulation, retain_graph, autograd.grad."""
import numpy as np
import pytest

import gt
from conftest import assert_close, numeric_grad

# (name, gt function of tensors, numpy function of float64 arrays, input shapes, positive inputs)
CASES = [
    ("add_broadcast", lambda a, b: a + b, lambda a, b: a + b, [(3, 4), (4,)], False),
    ("sub_scalar_left", lambda a: 2.0 - a, lambda a: 2.0 - a, [(3, 4)], False),
    ("mul", lambda a, b: a * b, lambda a, b: a * b, [(3, 4), (3, 1)], False),
    ("div", lambda a, b: a / b, lambda a, b: a / b, [(3, 4), (3, 4)], True),
    ("rdiv", lambda a: 1.0 / a, lambda a: 1.0 / a, [(5,)], True),
    ("pow_scalar", lambda a: a ** 3, lambda a: a ** 3, [(2, 3)], False),
    ("pow_tensor", lambda a, b: a ** b, lambda a, b: a ** b, [(2, 3), (2, 3)], True),
    ("rpow", lambda a: 2.0 ** a, lambda a: 2.0 ** a, [(4,)], False),
    ("exp", lambda a: a.exp(), np.exp, [(2, 3)], False),
    ("log", lambda a: a.log(), np.log, [(2, 3)], True),
    ("sqrt", lambda a: a.sqrt(), np.sqrt, [(2, 3)], True),
    ("tanh", lambda a: a.tanh(), np.tanh, [(2, 3)], False),
    ("sigmoid", lambda a: a.sigmoid(), lambda a: 1 / (1 + np.exp(-a)), [(2, 3)], False),
    ("relu", lambda a: a.relu(), lambda a: np.maximum(a, 0), [(3, 3)], False),
    ("abs", lambda a: a.abs(), np.abs, [(3, 3)], False),
    ("neg", lambda a: -a, lambda a: -a, [(3,)], False),
    ("matmul", lambda a, b: a @ b, lambda a, b: a @ b, [(3, 4), (4, 2)], False),
    ("batched_matmul", lambda a, b: a @ b, lambda a, b: a @ b, [(2, 3, 4), (4, 2)], False),
    ("sum_axis", lambda a: a.sum(axis=1), lambda a: a.sum(axis=1), [(3, 4)], False),
    ("mean_keepdims", lambda a: a.mean(axis=0, keepdims=True) * a,
     lambda a: a.mean(axis=0, keepdims=True) * a, [(3, 4)], False),
    ("max_axis", lambda a: a.max(axis=1).values, lambda a: a.max(axis=1), [(3, 4)], False),
    ("reshape_T", lambda a: a.reshape(4, 3).T * 2, lambda a: a.reshape(4, 3).T * 2, [(3, 4)],
     False),
    ("permute", lambda a: a.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), [(2, 3, 4)], False),
    ("index", lambda a: a[1:, ::2], lambda a: a[1:, ::2], [(3, 4)], False),
    ("index_int_none", lambda a: a[0, None] * a[-1], lambda a: a[0, None] * a[-1], [(3, 4)],
     False),
    ("cat", lambda a, b: gt.cat([a, b], axis=1), lambda a, b: np.concatenate([a, b], axis=1),
     [(2, 3), (2, 2)], False),
    ("split", lambda a: a.split(2, dim=1)[1] * 3, lambda a: a[:, 2:] * 3, [(2, 4)], False),
    ("softmax", lambda a: a.softmax(-1), lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True),
     [(2, 5)], False),
    ("unsqueeze_squeeze", lambda a: a.unsqueeze(0).squeeze(0) * a,
     lambda a: a * a, [(3,)], False),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_finite_differences(case, rng):
    _, f_gt, f_np, shapes, positive = case
    xs = [rng.standard_normal(s) for s in shapes]
    if positive:
        xs = [np.abs(x) + 0.5 for x in xs]
    ts = [gt.from_numpy(x.astype(np.float32), requires_grad=True) for x in xs]
    out = f_gt(*ts)
    w = rng.standard_normal(out.shape)  # a random weighting of the outputs
    (out * gt.from_numpy(w.astype(np.float32))).sum().backward()
    for i, (t, x) in enumerate(zip(ts, xs)):
        def scalar(xi, i=i):
            args = list(xs)
            args[i] = xi
            return float((f_np(*args) * w).sum())

        expected = numeric_grad(scalar, x)
        assert t.grad is not None and t.grad.shape == t.shape
        assert_close(t.grad, expected, rtol=2e-3, atol=2e-3)


def test_matmul_gradient_closed_form(rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    ta, tb = gt.from_numpy(a, requires_grad=True), gt.from_numpy(b, requires_grad=True)
    (ta @ tb).sum().backward()
    assert_close(ta.grad, np.ones((4, 3)) @ b.T, rtol=1e-5)
    assert_close(tb.grad, a.T @ np.ones((4, 3)), rtol=1e-5)


def test_accumulation_zero_and_none():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    assert_close(x.grad, [6, 6])
    x.grad.zero_()
    assert_close(x.grad, [0, 0])
    x.grad = None
    assert x.grad is None
    (x * x).sum().backward()
    assert_close(x.grad, [2, 4])


def test_backward_with_gradient_and_retain_graph():
    x = gt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.backward(gt.tensor([1.0, 0.0, 2.0]), retain_graph=True)
    assert_close(x.grad, [2, 0, 12])
    y.backward(np.array([1.0, 1.0, 1.0], np.float32))
    assert_close(x.grad, [4, 4, 18])
    with pytest.raises(RuntimeError):
        y.sum().backward()  # the graph was freed
    with pytest.raises(ValueError):
        (x * 2).backward()  # not a scalar: needs a gradient


def test_no_grad_and_enable_grad():
    x = gt.randn(3, requires_grad=True)
    with gt.no_grad():
        y = x * 2
        assert not gt.is_grad_enabled()
        with gt.enable_grad():
            z = x * 2
    assert gt.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None

    @gt.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad


def test_detach_clone_requires_grad_():
    x = gt.randn(3, requires_grad=True)
    d = (x * 2).detach()
    assert not d.requires_grad and d.is_leaf
    c = x.clone()
    c.sum().backward()
    assert_close(x.grad, [1, 1, 1])
    y = gt.randn(2)
    assert y.requires_grad_() is y and y.requires_grad
    y.requires_grad = False
    assert not y.requires_grad
    with pytest.raises(ValueError):
        gt.tensor([1, 2], dtype="int64").requires_grad_()


def test_autograd_grad_function():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    z = gt.tensor([5.0], requires_grad=True)
    y = (x ** 2).sum()
    (gx,) = gt.autograd.grad(y, [x], retain_graph=True)
    assert_close(gx, [2, 4])
    assert x.grad is None
    gx, gz = gt.autograd.grad(y, [x, z], allow_unused=True)
    assert gz is None
    a = gt.tensor([1.0], requires_grad=True)
    b = gt.tensor([2.0], requires_grad=True)
    gt.autograd.backward([(a * 3).sum(), (b * b).sum()])
    assert_close(a.grad, [3])
    assert_close(b.grad, [4])


def test_retain_grad_on_non_leaf():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    h.retain_grad()
    (h * h).sum().backward()
    assert_close(h.grad, [6, 12])
    assert_close(x.grad, [18, 36])


def test_print_tape(capsys):
    x = gt.randn(2, 2, requires_grad=True)
    loss = ((x @ x).relu() + 1).sum()
    gt.debug.print_tape(loss)
    out = capsys.readouterr().out
    assert "sum" in out and "relu" in out and "matmul" in out
    assert gt.debug.tape(loss)[0] == "sum"
    gt.debug.print_tape()
    assert "live node" in capsys.readouterr().out

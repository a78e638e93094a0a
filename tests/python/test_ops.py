"""Tensor arithmetic, comparisons, unary math, reductions, cumsum and matmul against numpy."""
import operator

import numpy as np
import pytest

import gt
from conftest import assert_close

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv]


@pytest.fixture
def ab(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = (rng.random((3, 4)) + 0.5).astype(np.float32)
    return a, b


@pytest.mark.parametrize("op", BINARY + [operator.pow])
def test_binary_tensor_tensor(op, ab):
    a, b = ab
    if op is operator.pow:
        a = np.abs(a) + 0.1
    assert_close(op(gt.from_numpy(a), gt.from_numpy(b)), op(a, b), rtol=1e-5)


@pytest.mark.parametrize("op", BINARY + [operator.pow])
@pytest.mark.parametrize("scalar", [2, 0.5, -3])
def test_binary_with_python_scalars_both_sides(op, scalar, ab):
    a, _ = ab
    a = np.abs(a) + 0.5
    t = gt.from_numpy(a)
    assert_close(op(t, scalar), op(a, np.float32(scalar)), rtol=1e-5)
    if not (op is operator.pow and scalar < 0):  # (-3) ** 0.7 is nan
        assert_close(op(scalar, t), op(np.float32(scalar), a), rtol=1e-5)


def test_numpy_scalars_and_arrays_as_operands(ab):
    a, b = ab
    t = gt.from_numpy(a)
    assert_close(t * np.float32(2), a * 2)
    assert_close(np.float64(3) + t, a + 3)
    assert_close(t + b, a + b)
    assert isinstance(b + t, gt.Tensor)  # numpy defers to the tensor's reflected operator
    assert_close(b - t, b - a)
    assert_close(t @ b.T, a @ b.T, rtol=1e-5)
    assert_close(b.T @ t, b.T @ a, rtol=1e-5)


def test_broadcasting(rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    row = rng.standard_normal(4).astype(np.float32)
    col = rng.standard_normal((3, 1)).astype(np.float32)
    assert_close(gt.from_numpy(a) + gt.from_numpy(row), a + row)
    assert_close(gt.from_numpy(a) * gt.from_numpy(col), a * col)
    with pytest.raises(ValueError):
        gt.from_numpy(a) + gt.randn(5)


def test_integer_promotion():
    i = gt.tensor([1, 2, 3], dtype="int64")
    assert (i + 2).dtype == gt.int64
    assert (i * 2.5).dtype == gt.float32
    assert_close(i * 2.5, [2.5, 5.0, 7.5])
    assert (i / 2).dtype == gt.float32  # true division
    assert_close(i / 2, [0.5, 1.0, 1.5])
    assert (i + gt.tensor([1.0, 1.0, 1.0])).dtype == gt.float32


def test_int64_scalars_beyond_2_53_are_exact():
    big = 2**60 + 1  # a double would round it to 2**60
    assert gt.full((2,), big).numpy().tolist() == [big, big]
    assert (gt.zeros(2, dtype=gt.int64) + big).numpy().tolist() == [big, big]
    assert (gt.full((1,), 3) * 2**61 - 1).item() == 3 * 2**61 - 1
    assert (gt.tensor([big], dtype="int64") == big).item() is True
    assert (gt.tensor([big], dtype="int64") == 2**60).item() is False
    assert (big - gt.tensor([1], dtype="int64")).item() == 2**60


def test_unary_ops(rng):
    a = rng.standard_normal((3, 5)).astype(np.float32)
    p = np.abs(a) + 0.1
    t, tp = gt.from_numpy(a), gt.from_numpy(p)
    assert_close(t.exp(), np.exp(a), rtol=1e-5)
    assert_close(tp.log(), np.log(p), rtol=1e-5)
    assert_close(tp.sqrt(), np.sqrt(p), rtol=1e-5)
    assert_close(t.relu(), np.maximum(a, 0))
    assert_close(t.sigmoid(), 1 / (1 + np.exp(-a)), rtol=1e-5)
    assert_close(t.tanh(), np.tanh(a), rtol=1e-5)
    assert_close(t.abs(), np.abs(a))
    assert_close(abs(t), np.abs(a))
    assert_close(-t, -a)
    assert_close(+t, a)
    assert_close(gt.exp(t), np.exp(a), rtol=1e-5)
    assert_close(t.softmax(-1), np.exp(a) / np.exp(a).sum(-1, keepdims=True), rtol=1e-5)
    assert_close(t.clamp(-0.5, 0.5), np.clip(a, -0.5, 0.5))
    assert_close(t.maximum(0.2), np.maximum(a, 0.2))


@pytest.mark.parametrize("name,ref", [("__gt__", np.greater), ("__lt__", np.less),
                                      ("__ge__", np.greater_equal), ("__le__", np.less_equal),
                                      ("__eq__", np.equal), ("__ne__", np.not_equal)])
def test_comparisons(name, ref):
    a = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    b = np.array([[3, 2, 1], [4, 0, 7]], np.float32)
    ta, tb = gt.from_numpy(a), gt.from_numpy(b)
    out = getattr(ta, name)(tb)
    assert out.dtype == gt.bool
    np.testing.assert_array_equal(out.numpy(), ref(a, b))
    np.testing.assert_array_equal(getattr(ta, name)(3).numpy(), ref(a, 3))


def test_reflected_comparisons_and_invert():
    t = gt.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal((2 < t).numpy(), [False, False, True])
    np.testing.assert_array_equal((2 >= t).numpy(), [True, True, False])
    np.testing.assert_array_equal((~(t > 1)).numpy(), [True, False, False])
    assert (t == None) is False  # noqa: E711 (falls back to identity)
    with pytest.raises(ValueError):
        ~t


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
def test_reductions(name, rng):
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    t = gt.from_numpy(a)
    ref = getattr(np, {"sum": "sum", "mean": "mean", "max": "max", "min": "min"}[name])
    indexed = name in ("max", "min")  # over a dim: (values, indices), like PyTorch

    def reduce(*args, **kwargs):
        r = getattr(t, name)(*args, **kwargs)
        return r.values if indexed else r

    out = getattr(t, name)()
    assert out.shape == ()
    assert_close(out, ref(a), rtol=1e-5)
    for axis in (0, 1, -1):
        assert_close(reduce(axis=axis), ref(a, axis=axis), rtol=1e-5)
        assert_close(reduce(axis, keepdims=True), ref(a, axis=axis, keepdims=True), rtol=1e-5)
        assert_close(reduce(dim=axis, keepdim=True), ref(a, axis=axis, keepdims=True), rtol=1e-5)
    if indexed:  # one int dim only (torch's TypeError)
        with pytest.raises(TypeError):
            getattr(t, name)(axis=(0, 2))
    else:
        assert_close(reduce(axis=(0, 2)), ref(a, axis=(0, 2)), rtol=1e-5)
        assert_close(reduce(axis=(0, 2), keepdims=True), ref(a, axis=(0, 2), keepdims=True),
                     rtol=1e-5)
    assert getattr(t, name)(keepdims=True).shape == (1, 1, 1)
    with pytest.raises(ValueError):
        getattr(t, name)(axis=3)


def test_argmax_argmin_var(rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    t = gt.from_numpy(a)
    np.testing.assert_array_equal(t.argmax(axis=1).numpy(), a.argmax(axis=1))
    np.testing.assert_array_equal(t.argmin(axis=0).numpy(), a.argmin(axis=0))
    assert t.argmax().item() == a.argmax()
    assert_close(t.var(), a.var(ddof=1), rtol=1e-4)
    assert_close(t.var(axis=1), a.var(axis=1, ddof=1), rtol=1e-4)


def test_cumsum(rng):
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    t = gt.from_numpy(a)
    for dim in (0, 1, 2, -1, -3):
        assert_close(t.cumsum(dim), np.cumsum(a, axis=dim), rtol=1e-5)
        assert_close(gt.cumsum(t, dim=dim), np.cumsum(a, axis=dim), rtol=1e-5)
    i = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    out = gt.from_numpy(i).cumsum(1)
    assert out.dtype == gt.int64
    np.testing.assert_array_equal(out.numpy(), np.cumsum(i, axis=1))
    b = np.array([[True, False, True], [True, True, False]])
    out = gt.from_numpy(b).cumsum(0)
    assert out.dtype == gt.int64
    np.testing.assert_array_equal(out.numpy(), np.cumsum(b, axis=0))
    assert gt.tensor(2.5).cumsum(-1).item() == 2.5
    assert gt.zeros((0, 3)).cumsum(1).shape == (0, 3)
    with pytest.raises(ValueError):
        t.cumsum(3)


def test_matmul(rng):
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal((7, 3)).astype(np.float32)
    assert_close(gt.from_numpy(a) @ gt.from_numpy(b), a @ b, rtol=1e-4, atol=1e-5)
    assert_close(gt.matmul(gt.from_numpy(a), gt.from_numpy(b)), a @ b, rtol=1e-4, atol=1e-5)
    x = rng.standard_normal((2, 5, 7)).astype(np.float32)
    assert_close(gt.from_numpy(x) @ gt.from_numpy(b), x @ b, rtol=1e-4, atol=1e-5)
    with pytest.raises(gt.ShapeError, match="matmul"):
        gt.from_numpy(a) @ gt.from_numpy(a)


def test_big_matmul_fetch(rng):
    a = rng.standard_normal((300, 200)).astype(np.float32)
    b = rng.standard_normal((200, 100)).astype(np.float32)
    assert_close(gt.from_numpy(a) @ gt.from_numpy(b), a @ b, rtol=1e-3, atol=1e-3)


def test_dtype_conversions():
    t = gt.tensor([1.7, -2.2, 0.0])
    assert t.long().dtype == gt.int64
    np.testing.assert_array_equal(t.long().numpy(), [1, -2, 0])
    assert t.int().dtype == gt.int32
    assert t.bool().numpy().tolist() == [True, True, False]
    assert t.to("float16").dtype == gt.float16
    assert t.half().float().dtype == gt.float32
    assert t.to(gt.bfloat16).dtype == gt.bfloat16

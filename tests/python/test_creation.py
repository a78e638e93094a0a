"""Creation: randn / rand / zeros / ones / full / arange / tensor / from_numpy / cat / stack,
dtypes and their names."""
import numpy as np
import pytest

import gt
from conftest import assert_close


@pytest.mark.parametrize("make", [gt.zeros, gt.ones, gt.randn, gt.rand])
def test_shape_forms(make):
    for args, shape in [((2, 3), (2, 3)), (((2, 3),), (2, 3)), (([4],), (4,)), ((5,), (5,)),
                        ((), ())]:
        t = make(*args)
        assert t.shape == shape
        assert isinstance(t.shape, tuple)
        assert t.dtype == gt.float32
        assert t.numpy().shape == shape


def test_zeros_ones_values():
    assert_close(gt.zeros(2, 3), np.zeros((2, 3)))
    assert_close(gt.ones(3), np.ones(3))
    assert gt.ones(2, dtype=gt.int64).numpy().dtype == np.int64
    assert gt.zeros(2, dtype="bool").numpy().dtype == np.bool_


def test_random_statistics_and_seed():
    gt.manual_seed(7)
    a = gt.randn(200, 50).numpy()
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05
    u = gt.rand(100, 100).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    gt.manual_seed(7)
    b = gt.randn(200, 50).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(gt.randn(200, 50).numpy(), a)


def test_requires_grad_flag():
    assert gt.randn(2, requires_grad=True).requires_grad
    assert not gt.randn(2).requires_grad
    assert gt.zeros(3, requires_grad=True).is_leaf


def test_tensor_infers_dtypes_as_torch():
    torch = pytest.importorskip("torch")
    for data in ([[1, 2], [3, 4]], [1.5, 2], [True, False], 3, 3.5, True, [], [[1], [2.5]],
                 np.array([1, 2], np.int32), [-2 ** 40]):
        g, t = gt.tensor(data), torch.tensor(data)
        assert str(g.dtype) == str(t.dtype).replace("torch.", ""), data
        assert tuple(g.shape) == tuple(t.shape)
        np.testing.assert_array_equal(g.numpy(), t.numpy())
    # Integer data that must require grad becomes float32, as the original GT's gt.tensor did
    # (torch raises: only floating tensors can require gradients).
    w = gt.tensor([[1, 2], [3, 4]], requires_grad=True)
    assert w.dtype == gt.float32 and w.requires_grad
    assert gt.tensor([1, 2], dtype="float32").dtype == gt.float32
    assert gt.tensor(np.array([1.0])).dtype == gt.float64  # an array keeps its dtype, as torch
    assert gt.tensor([1.0]).dtype == gt.float32  # Python floats: the default dtype


@pytest.mark.parametrize("name,np_dtype", [("float32", np.float32), ("int32", np.int32),
                                           ("int64", np.int64), ("bool", np.bool_),
                                           ("float16", np.float16)])
def test_tensor_dtypes(name, np_dtype):
    data = [[0, 1, 2], [3, 0, 5]]
    for spec in (name, getattr(gt, name), np_dtype):
        t = gt.tensor(data, dtype=spec)
        assert t.dtype == name
        assert str(t.dtype) == name
        out = t.numpy()
        assert out.dtype == np_dtype
        np.testing.assert_array_equal(out, np.array(data).astype(np_dtype))


def test_bfloat16_round_trip():
    t = gt.tensor([1.0, 2.5, -3.0], dtype="bfloat16")
    assert t.dtype == gt.bfloat16
    assert_close(t, [1.0, 2.5, -3.0])  # comes back as float32


def test_dtype_objects():
    assert gt.float32 == "float32" and gt.float32 != "int64"
    assert gt.int64 == gt.long and gt.float32 == gt.float
    assert repr(gt.int32) == "gt.int32" and str(gt.bool) == "bool"
    assert gt.float32.is_floating_point and not gt.int64.is_floating_point
    assert gt.float16.itemsize == 2
    assert len({gt.float32, gt.float32, gt.int64}) == 2
    import pickle

    assert pickle.loads(pickle.dumps(gt.int64)) == gt.int64
    assert gt.zeros(2, dtype="float64").dtype == gt.float64
    assert gt.zeros(2, dtype=float).dtype == gt.float64  # torch: Python float is float64
    with pytest.raises(ValueError):
        gt.zeros(2, dtype="int16")
    with pytest.raises(ValueError):
        gt.zeros(2, dtype="complex")
    with pytest.raises(TypeError):
        gt.zeros(2, dtype=3.5)


def test_from_numpy_keeps_dtype(rng):
    f64 = rng.standard_normal((3, 4))
    t = gt.from_numpy(f64)
    assert t.dtype == gt.float64
    np.testing.assert_array_equal(t.numpy(), f64)
    for arr, dt in [(np.arange(6, dtype=np.int64).reshape(2, 3), gt.int64),
                    (np.arange(6, dtype=np.int32), gt.int32),
                    (np.array([True, False]), gt.bool),
                    (np.arange(4, dtype=np.uint8), gt.uint8),
                    (np.arange(4, dtype=np.int8), gt.int8),
                    (np.arange(4, dtype=np.int16), gt.int32),
                    (np.ones(3, dtype=np.float16), gt.float16)]:
        t = gt.from_numpy(arr)
        assert t.dtype == dt
        np.testing.assert_array_equal(t.numpy(), arr)
    # Non-contiguous input.
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    assert_close(gt.from_numpy(a), a)
    assert gt.from_numpy(f64, requires_grad=True).requires_grad


def test_large_upload_is_chunked(rng):
    a = rng.standard_normal((1200, 1000)).astype(np.float32)  # 4.8 MB: several chunks
    t = gt.from_numpy(a)
    np.testing.assert_array_equal(t.numpy(), a)


def test_full_arange_like():
    assert_close(gt.full((2, 2), 3.5), np.full((2, 2), 3.5))
    assert gt.full((2,), 3).dtype == gt.int64
    assert_close(gt.arange(5), np.arange(5))
    assert gt.arange(5).dtype == gt.int64
    assert_close(gt.arange(1, 2, 0.25), np.arange(1, 2, 0.25))
    assert gt.arange(1, 2, 0.25).dtype == gt.float32
    x = gt.randn(2, 3)
    assert gt.zeros_like(x).shape == (2, 3)
    assert_close(gt.ones_like(x), np.ones((2, 3)))
    assert gt.full_like(x, 7, dtype=gt.int32).dtype == gt.int32
    assert gt.randn_like(x).shape == (2, 3) and gt.rand_like(x).shape == (2, 3)


def test_cat_and_stack(rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((4, 3))
    assert_close(gt.cat([gt.from_numpy(a), gt.from_numpy(b)]), np.concatenate([a, b]),
                 rtol=1e-6)
    c = rng.standard_normal((2, 5))
    assert_close(gt.cat((gt.from_numpy(a), gt.from_numpy(c)), axis=1),
                 np.concatenate([a, c], axis=1), rtol=1e-6)
    assert_close(gt.cat([gt.from_numpy(a), gt.from_numpy(c)], dim=-1),
                 np.concatenate([a, c], axis=-1), rtol=1e-6)
    assert_close(gt.stack([gt.from_numpy(a), gt.from_numpy(a)], axis=1),
                 np.stack([a, a], axis=1), rtol=1e-6)
    with pytest.raises(gt.ShapeError):
        gt.cat([gt.from_numpy(a), gt.from_numpy(c)], axis=0)
    with pytest.raises(TypeError):
        gt.cat([gt.from_numpy(a), a])

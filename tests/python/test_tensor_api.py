"""In-place ops, .data, sync points (item, numpy, __array__, print), Python protocols."""
import threading
import time

import numpy as np
import pytest

import gt
from conftest import assert_close


def test_in_place_operators_keep_identity():
    t = gt.tensor([1.0, 2.0, 3.0])
    same = t
    t += 1
    t *= 2
    t -= gt.tensor([1.0, 1.0, 1.0])
    t /= 2
    assert t is same
    assert_close(t, [1.5, 2.5, 3.5])
    assert t.add_(1) is same and t.sub_(1) is same and t.mul_(2) is same and t.div_(2) is same
    assert_close(t, [1.5, 2.5, 3.5])
    assert t.zero_() is same
    assert_close(t, [0, 0, 0])
    t.fill_(4)
    assert_close(t, [4, 4, 4])
    t.copy_(gt.tensor([7.0, 8.0, 9.0]))
    assert_close(t, [7, 8, 9])
    i = gt.tensor([1, 2], dtype="int64")
    i += 3
    assert i.dtype == gt.int64 and i.numpy().tolist() == [4, 5]


def test_in_place_on_leaf_requiring_grad_is_refused():
    w = gt.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        w -= 1
    with gt.no_grad():
        w -= 1  # allowed, like PyTorch
    assert w.requires_grad and w.is_leaf


def test_data_view():
    w = gt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (w * w).sum().backward()
    before = w.data.numpy()
    np.testing.assert_array_equal(np.asarray(w.data), before)
    w.data -= 0.5 * w.grad  # in place on w, outside the tape
    assert_close(w, before - before)  # w - 0.5 * 2w = 0
    assert w.requires_grad and w.is_leaf
    d = w.data + 1
    assert isinstance(d, gt.Tensor) and not d.requires_grad
    assert w.data.shape == (3,) and w.data.dtype == gt.float32
    w.data = gt.tensor([5.0, 6.0, 7.0])
    assert_close(w, [5, 6, 7])
    with pytest.raises(ValueError):
        w.data = gt.zeros(2)
    w.data.zero_()
    assert_close(w, [0, 0, 0])
    assert "tensor(" in repr(w.data)


def test_item_and_python_numbers():
    assert gt.tensor(2.5).item() == 2.5
    assert isinstance(gt.tensor([3], dtype="int64").item(), int)
    assert gt.tensor([True], dtype="bool").item() is True
    assert float(gt.tensor([1.5])) == 1.5
    assert int(gt.tensor([7], dtype="int32")) == 7
    assert bool(gt.tensor(1.0)) and not bool(gt.tensor(0.0))
    with pytest.raises(ValueError):
        gt.randn(3).item()
    with pytest.raises(ValueError):
        bool(gt.randn(3))


def test_numpy_and_array_protocol(rng):
    a = rng.standard_normal((3, 2)).astype(np.float32)
    t = gt.from_numpy(a)
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(np.asarray(t), a)
    np.testing.assert_array_equal(np.asarray(t.data), a)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert t.data.numpy().dtype == np.float32
    assert t.tolist() == a.tolist()
    out = t.numpy()
    out[0, 0] = 100  # a copy: the tensor is unchanged
    assert t.numpy()[0, 0] == a[0, 0]
    assert gt.zeros(0, 3).numpy().shape == (0, 3)


def test_print_uses_pytorch_format(capsys):
    t = gt.tensor([[1.0, 2.5], [-3.0, 4.0]])
    print(t)
    out = capsys.readouterr().out
    assert out.startswith("tensor([[ 1.0000,  2.5000],") or out.startswith("tensor([[ 1.0,")
    assert str(gt.tensor([1, 2], dtype="int64")) == "tensor([1, 2], dtype=gt.int64)"
    assert repr(gt.zeros(2, requires_grad=True)).endswith("requires_grad=True)")
    x = gt.ones(2, requires_grad=True)
    assert "grad_fn=<" in repr(x * 2)


def test_size_ndim_numel_hash():
    t = gt.zeros(2, 3, 4)
    assert t.ndim == 3 and t.dim() == 3 and t.numel() == 24
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert len({t, t, gt.zeros(1)}) == 2  # hashable (by identity)


def test_sync_points_release_the_gil(rng):
    """While the main thread waits for a big matmul + fetch, another Python thread runs."""
    a = gt.randn(800, 800)
    (a @ a).numpy()  # warm up
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    th = threading.Thread(target=spin)
    th.start()
    try:
        time.sleep(0.01)
        start = counter[0]
        waits = 0
        for _ in range(3):
            b = a @ a
            b.numpy()
            waits += 1
        progressed = counter[0] - start
    finally:
        stop.set()
        th.join()
    assert waits == 3
    assert progressed > 1000, "another Python thread could not run during sync points"


def test_threads_issue_ops_concurrently():
    results = {}

    def work(k):
        x = gt.full((100,), float(k))
        for _ in range(50):
            x = x + 1
        results[k] = x.sum().item()

    ths = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    assert results == {k: 100.0 * (k + 50) for k in range(4)}


def test_synchronize():
    x = gt.randn(10)
    for _ in range(100):
        x = x * 1.0
    gt.synchronize()

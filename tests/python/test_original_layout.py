"""The original GT's module layout and helpers (issue 13, drop-in part): gt.client.tensor / .nn /
.autograd as real modules, Tensor.split by keyword, Tensor.id, t.data as a numpy array for numpy's
functions, gt.debug.get_worker_stats() keyed by worker id, gt.signal.exit(name), and in-place
errors on leaves that say what to do."""
import importlib
import io
import sys

import numpy as np
import pytest

import gt
from conftest import assert_close


# ---- modules ---------------------------------------------------------------------------------------
def test_client_modules_are_real_modules_with_the_flat_api_objects():
    for name in ("gt.client", "gt.client.tensor", "gt.client.nn", "gt.client.autograd"):
        mod = importlib.import_module(name)
        assert sys.modules[name] is mod and type(mod).__name__ == "module"
    from gt.client.tensor import Tensor, from_numpy, ones, randn, tensor, zeros
    from gt.client.nn import SGD, Linear, Module, ReLU, cross_entropy_loss, mse_loss
    from gt.client.autograd import backward, grad, no_grad
    assert randn is gt.randn and zeros is gt.zeros and ones is gt.ones and tensor is gt.tensor
    assert from_numpy is gt.from_numpy and Tensor is gt.Tensor
    assert Module is gt.nn.Module and Linear is gt.nn.Linear and ReLU is gt.nn.ReLU
    assert mse_loss is gt.nn.mse_loss and cross_entropy_loss is gt.nn.cross_entropy_loss
    assert SGD is gt.nn.SGD and backward is gt.autograd.backward and grad is gt.autograd.grad
    assert no_grad is gt.no_grad
    # Every name a module lists is there.
    for mod in (gt.client.tensor, gt.client.nn, gt.client.autograd):
        missing = [n for n in mod.__all__ if not hasattr(mod, n)]
        assert not missing, (mod.__name__, missing)


def test_a_script_in_the_original_layout_trains():
    from gt.client import nn
    from gt.client.tensor import from_numpy

    rng = np.random.default_rng(3)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    w_true = rng.standard_normal((4, 1)).astype(np.float32)
    y = x @ w_true

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 1)

        def forward(self, t):
            return self.fc(t)

    model = Model()
    opt = nn.SGD(model.parameters(), lr=0.1)
    xs, ys = from_numpy(x), from_numpy(y)
    first = None
    for _ in range(60):
        loss = nn.mse_loss(model(xs), ys)
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05 * first


# ---- Tensor.split, Tensor.id -----------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda t: t.split(2, 0), lambda t: t.split(2, dim=0), lambda t: t.split(split_size=2, dim=0),
    lambda t: t.split(split_size_or_sections=2), lambda t: gt.split(t, 2, 0),
    lambda t: gt.split(t, split_size_or_sections=2, dim=0)])
def test_split_positionally_and_by_keyword(call):
    a = np.arange(15, dtype=np.float32).reshape(5, 3)
    parts = call(gt.from_numpy(a))
    assert isinstance(parts, tuple) and len(parts) == 3
    for got, want in zip(parts, (a[0:2], a[2:4], a[4:5])):
        assert_close(got, want)


def test_split_sections_by_keyword_along_a_dim():
    a = np.arange(12, dtype=np.float32).reshape(2, 6)
    parts = gt.from_numpy(a).split(split_size=[1, 5], dim=1)
    assert [tuple(p.shape) for p in parts] == [(2, 1), (2, 5)]
    assert_close(parts[1], a[:, 1:])
    with pytest.raises(TypeError):
        gt.from_numpy(a).split(size=2)


def test_tensor_id_is_unique_in_the_session():
    ts = [gt.zeros(2) for _ in range(5)]
    ids = [t.id for t in ts]
    assert all(isinstance(i, int) and i > 0 for i in ids)
    assert len(set(ids)) == 5
    assert ts[0].id == ts[0]._id
    t = ts[0]
    before = t.id
    t.add_(1)  # in place: the same tensor
    assert t.id == before


# ---- t.data as an array ----------------------------------------------------------------------------
def test_data_is_an_array_for_numpy():
    a = np.array([[1.0, 2.0], [3.0, 6.0]], dtype=np.float32)
    t = gt.from_numpy(a)
    assert t.data.dtype == np.float32 and t.data.dtype == np.dtype("float32")
    assert t.data.dtype != np.float64 and not (t.data.dtype == np.int32)
    assert gt.int64 == np.int64 and gt.int64 != np.float32 and gt.bool == np.bool_
    assert np.mean(t.data) == pytest.approx(3.0)
    assert np.sum(t.data, axis=0).tolist() == [4.0, 8.0]
    assert np.allclose(t.data, a)
    got = np.asarray(t.data)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    np.testing.assert_array_equal(got, a)
    np.testing.assert_array_equal(np.concatenate([t.data, t.data]), np.concatenate([a, a]))
    np.testing.assert_array_equal(np.exp(t.data), np.exp(a))
    np.testing.assert_array_equal(t.data.numpy(), a)
    assert np.argmax(t.data) == 3 and np.linalg.norm(t.data) == pytest.approx(np.linalg.norm(a))


def test_data_of_a_parameter_follows_its_updates():
    w = gt.zeros(3, requires_grad=True)
    with gt.no_grad():
        w += 2
    assert np.mean(w.data) == pytest.approx(2.0)
    w.data -= 0.5
    assert np.asarray(w.data).tolist() == [1.5, 1.5, 1.5]


# ---- gt.debug ----------------------------------------------------------------------------------------
def test_worker_stats_keyed_by_worker_id_and_printed():
    gt.randn(8).numpy()
    stats = gt.debug.get_worker_stats()
    assert isinstance(stats, dict) and stats
    for wid, s in stats.items():
        assert isinstance(wid, int) and s["worker_id"] == wid
    # Iterating gives the per-worker dicts in id order (the list form earlier releases returned).
    assert [w["worker_id"] for w in stats] == sorted(stats.keys())
    assert sum(w["tensors"] for w in stats) == sum(s["tensors"] for s in stats.values())
    buf = io.StringIO()
    gt.debug.print_worker_stats(file=buf)
    lines = buf.getvalue().splitlines()
    assert lines[0].split()[:3] == ["worker", "device", "sessions"]
    assert len(lines) == 1 + len(stats)
    for line, (wid, s) in zip(lines[1:], sorted(stats.items())):
        assert line.split()[0] == str(wid) and s["device"] in line
        assert all(c.isdigit() for c in line.split()[-2:])  # ops, errors (may move meanwhile)


# ---- gt.signal.exit(name) ----------------------------------------------------------------------------
def test_signal_exit_checks_the_name():
    gt.signal.enter("outer")
    gt.signal.enter("inner")
    try:
        with pytest.raises(ValueError, match="innermost signal scope is 'inner'"):
            gt.signal.exit("outer")
        assert gt.signal.current() == "inner"  # nothing was left
        gt.signal.exit("inner")
        assert gt.signal.current() == "outer"
        gt.signal.exit("outer")
        assert gt.signal.current() is None
    finally:
        while gt.signal.current() is not None:
            gt.signal.exit()
    with pytest.raises(RuntimeError, match="no signal scope"):
        gt.signal.exit("outer")


# ---- in-place on a leaf: the error says what to do ---------------------------------------------------
@pytest.mark.parametrize("update", [
    lambda w: w.add_(1), lambda w: w.mul_(2), lambda w: w.zero_(), lambda w: w.__iadd__(1),
    lambda w: w[0].fill_(3)])
def test_in_place_on_a_leaf_that_requires_grad_says_what_to_do(update):
    w = gt.ones(3, requires_grad=True)
    with pytest.raises((RuntimeError, ValueError)) as e:
        update(w)
    msg = str(e.value)
    assert "requires grad" in msg and "with gt.no_grad():" in msg and ".data" in msg
    with gt.no_grad():
        update(w)  # the remedy it names works
    w.data.add_(1)  # and so does the other
    assert w.requires_grad and w.grad_fn is None

"""Indexing idioms (issue 13): boolean-mask reads t[mask] (a sync point), masked_select, and
assignment through masks and integer index tensors (t[mask] = v, t[idx] = v, t[idx] += 1,
index_copy_), against python3-torch: values, shapes, gradients and errors."""
import numpy as np
import pytest

import gt

torch = pytest.importorskip("torch")


def pair(a):
    return gt.from_numpy(a.copy()), torch.from_numpy(a.copy())


def same(t, r):
    assert tuple(t.shape) == tuple(r.shape)
    np.testing.assert_array_equal(t.numpy(), r.detach().numpy())


@pytest.fixture
def a():
    return np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7


def test_mask_reads_as_torch(a):
    t, r = pair(a)
    same(t[t > 3], r[r > 3])                        # a mask of the whole shape: 1-d
    m2 = np.array([[True, False, True], [False, False, True]])
    same(t[gt.from_numpy(m2)], r[torch.from_numpy(m2)])  # leading dims: rows of the rest
    m1 = np.array([False, True])
    same(t[gt.from_numpy(m1)], r[torch.from_numpy(m1)])
    same(t[m1], r[torch.from_numpy(m1)])                 # a numpy mask
    none = np.zeros((2, 3), dtype=bool)
    same(t[gt.from_numpy(none)], r[torch.from_numpy(none)])  # nothing selected: (0, 4)
    ints = np.array([[1, 0], [0, 5]], dtype=np.int64)
    ti, ri = pair(ints)
    same(ti[ti > 0], ri[ri > 0])
    with pytest.raises(IndexError, match="shape of the mask"):  # torch's error class
        t[gt.from_numpy(np.array([True, False, True]))]
    with pytest.raises(IndexError, match="shape of the mask"):
        r[torch.from_numpy(np.array([True, False, True]))]
    # masked_select broadcasts.
    mb = np.array([True, False, False, True])
    same(t.masked_select(gt.from_numpy(mb)), r.masked_select(torch.from_numpy(mb)))
    same(gt.masked_select(t, t < 0), torch.masked_select(r, r < 0))


def test_mask_read_gradient_as_torch(a):
    t, r = pair(a)
    t.requires_grad_()
    r.requires_grad_()
    (t[t > 0] * 3).sum().backward()
    (r[r > 0] * 3).sum().backward()
    same(t.grad, r.grad)


def test_mask_assignment_as_torch(a):
    t, r = pair(a)
    t[t > 5] = 0
    r[r > 5] = 0
    same(t, r)
    m = np.array([[True, False, True], [False, True, False]])
    t[gt.from_numpy(m)] = gt.tensor([1.0, 2.0, 3.0, 4.0])          # one row, broadcast
    r[torch.from_numpy(m)] = torch.tensor([1.0, 2.0, 3.0, 4.0])
    same(t, r)
    rows = np.arange(12, dtype=np.float32).reshape(3, 4) * -1
    t[gt.from_numpy(m)] = gt.from_numpy(rows)                      # one value row per true
    r[torch.from_numpy(m)] = torch.from_numpy(rows)
    same(t, r)
    flat = t < -5
    t[flat] = gt.arange(int((r < -5).sum()), dtype=gt.float32)     # element by element
    r[r < -5] = torch.arange(int((r < -5).sum()), dtype=torch.float32)
    same(t, r)
    with pytest.raises(ValueError, match="shape mismatch"):
        t[gt.from_numpy(m)] = gt.ones(2, 4)
    same(t, r)  # a refused assignment changes nothing


def test_index_tensor_assignment_as_torch(a):
    t, r = pair(a)
    t[gt.tensor([1], dtype=gt.int64)] = 5
    r[torch.tensor([1])] = 5
    same(t, r)
    t2, r2 = pair(a[0])
    idx = np.array([2, -3], dtype=np.int64)
    t2[gt.from_numpy(idx)] = gt.tensor([[1.0, 2, 3, 4], [5, 6, 7, 8]])
    r2[torch.from_numpy(idx)] = torch.tensor([[1.0, 2, 3, 4], [5, 6, 7, 8]])
    same(t2, r2)
    t2[[0, 2]] += 1
    r2[[0, 2]] += 1
    same(t2, r2)
    t2[gt.tensor([1, 1], dtype=gt.int64)] += 10   # repeated: each row once, as torch
    r2[torch.tensor([1, 1])] += 10
    same(t2, r2)
    t2[np.array([[0], [2]])] = -1.0                # an index of any shape
    r2[torch.tensor([[0], [2]])] = -1.0
    same(t2, r2)
    with pytest.raises(ValueError, match="shape mismatch"):
        t2[gt.tensor([0, 1], dtype=gt.int64)] = gt.ones(3, 4)


def test_index_copy_and_gradient_as_torch(a):
    t, r = pair(a[0])
    src = np.array([[10.0], [20.0], [30.0]], dtype=np.float32)
    t.index_copy_(1, gt.tensor([2], dtype=gt.int64), gt.from_numpy(src))
    r.index_copy_(1, torch.tensor([2]), torch.from_numpy(src))
    same(t, r)
    with pytest.raises(ValueError, match="does not match"):
        t.index_copy_(0, gt.tensor([0], dtype=gt.int64), gt.ones(2, 4))
    # Gradients flow to the written values and to what was kept.
    base = np.ones((3, 2), dtype=np.float32)
    tb, rb = pair(base)
    tv, rv = pair(np.array([[2.0, 3.0]], dtype=np.float32))
    for x in (tb, rb, tv, rv):
        x.requires_grad_()
    yt, yr = tb * 1, rb * 1
    yt[gt.tensor([1], dtype=gt.int64)] = tv
    yr[torch.tensor([1])] = rv
    (yt * yt).sum().backward()
    (yr * yr).sum().backward()
    same(tb.grad, rb.grad)
    same(tv.grad, rv.grad)


# ---- an index tensor inside a tuple (torch's advanced indexing) ------------------------------------
TUPLE_READS = [
    lambda i: (i, slice(1, None)), lambda i: (slice(None), i), lambda i: (Ellipsis, i),
    lambda i: (1, i), lambda i: (i, 2), lambda i: (1, slice(None), i),  # ints are basic in torch
    lambda i: (None, i, slice(None, None, 2)), lambda i: (slice(0, 2), i, 0),
]


@pytest.mark.parametrize("make", TUPLE_READS)
@pytest.mark.parametrize("index", [[2, 0, -1], [[0, 1], [2, 2]]])
def test_tuple_index_reads_as_torch(make, index):
    a = np.arange(3 * 3 * 4, dtype=np.float32).reshape(3, 3, 4)
    key_t = make(torch.tensor(index))
    key_g = make(gt.tensor(index, dtype=gt.int64))
    want = torch.from_numpy(a)[key_t]
    got = gt.from_numpy(a)[key_g]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    # A list works as the tensor it makes.
    np.testing.assert_array_equal(gt.from_numpy(a)[make(index)].numpy(), want.numpy())


@pytest.mark.parametrize("key", [
    lambda i: (i, slice(1, None)), lambda i: (slice(None), i), lambda i: (slice(None), i, 0),
    lambda i: (i,) + (Ellipsis,),
])
def test_tuple_index_writes_as_torch(key):
    a = np.arange(3 * 3 * 4, dtype=np.float32).reshape(3, 3, 4)
    g, t = gt.from_numpy(a.copy()), torch.from_numpy(a.copy())
    idx = [2, 0]
    shape = tuple(t[key(torch.tensor(idx))].shape)
    v = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    g[key(gt.tensor(idx, dtype=gt.int64))] = gt.from_numpy(v)
    t[key(torch.tensor(idx))] = torch.from_numpy(v)
    np.testing.assert_array_equal(g.numpy(), t.numpy())
    g[key(gt.tensor(idx, dtype=gt.int64))] = 7.0
    t[key(torch.tensor(idx))] = 7.0
    np.testing.assert_array_equal(g.numpy(), t.numpy())


# ---- several index tensors / masks in one tuple (torch's full advanced indexing) ---------------
I = np.array([2, 0, -2])
J = np.array([[1], [3]])          # broadcasts with I to (2, 3)
M3 = np.array([True, False, True])
MULTI_KEYS = [
    lambda ix: (ix(I), ix(np.array([0, 2, 1]))),                  # zip: one entry per pair
    lambda ix: (ix(I), slice(None), ix(np.array([0, 3, 1]))),     # apart: picked dims go first
    lambda ix: (slice(None), ix(I), ix(J)),                       # adjacent: picked dims stay
    lambda ix: (ix(I), 1, ix(J)),                                 # the int drops its dim first
    lambda ix: (1, ix(I), ix(np.array([0, 3, 1]))),
    lambda ix: (ix(I), None, ix(np.array([0, 1, 2]))),            # None between: apart
    lambda ix: (Ellipsis, ix(I), ix(J)),
    lambda ix: (ix(M3), slice(1, None), ix(np.array([0, 3]))),    # a mask in a tuple
    lambda ix: (ix(M3), ix(np.array([0, 2]))),
    lambda ix: (slice(None), ix(np.array([[True, False, True, False]] * 3))),  # a 2-d mask
    lambda ix: (ix(np.array(1)), ix(I)),                          # 0-d and 1-d broadcast
]


def gt_ix(x):
    x = np.asarray(x)
    return gt.from_numpy(x) if x.dtype == bool else gt.tensor(x.tolist(), dtype=gt.int64)


@pytest.mark.parametrize("key", MULTI_KEYS)
def test_several_index_tensors_read_as_torch(key):
    a = np.arange(3 * 3 * 4, dtype=np.float32).reshape(3, 3, 4)
    want = torch.from_numpy(a)[key(lambda x: torch.from_numpy(np.asarray(x)))]
    got = gt.from_numpy(a)[key(gt_ix)]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    # Lists and numpy arrays index as the tensors they make.
    np.testing.assert_array_equal(gt.from_numpy(a)[key(np.asarray)].numpy(), want.numpy())


@pytest.mark.parametrize("key", MULTI_KEYS)
def test_several_index_tensors_write_as_torch(key):
    a = np.arange(3 * 3 * 4, dtype=np.float32).reshape(3, 3, 4)
    g, t = gt.from_numpy(a.copy()), torch.from_numpy(a.copy())
    tkey = key(lambda x: torch.from_numpy(np.asarray(x)))
    shape = tuple(t[tkey].shape)
    # No key repeats a position (with repeats, which value lands is unspecified, as in torch).
    v = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    g[key(gt_ix)] = gt.from_numpy(v)
    t[tkey] = torch.from_numpy(v)
    np.testing.assert_array_equal(g.numpy(), t.numpy())
    g[key(gt_ix)] = -5.0                               # a number
    t[tkey] = -5.0
    np.testing.assert_array_equal(g.numpy(), t.numpy())
    g[key(gt_ix)] += 1                                 # read, add, write back
    t[tkey] += 1
    np.testing.assert_array_equal(g.numpy(), t.numpy())


def test_several_index_tensors_through_a_view_write_the_base():
    a = np.arange(4 * 5, dtype=np.float32).reshape(4, 5)
    g, t = gt.from_numpy(a.copy()), torch.from_numpy(a.copy())
    gv, tv = g.t()[1:], t.t()[1:]                      # a non-contiguous view of the base
    gv[gt.tensor([0, 2]), gt.tensor([3, 1])] = 100.0
    tv[torch.tensor([0, 2]), torch.tensor([3, 1])] = 100.0
    np.testing.assert_array_equal(g.numpy(), t.numpy())


def test_picking_one_entry_per_row_and_its_gradient():
    """logp[arange(n), labels]: the negative log-likelihood idiom, with its gradient."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    labels = np.array([3, 0, 1, 1, 2])
    g = gt.from_numpy(x).requires_grad_()
    r = torch.from_numpy(x).requires_grad_()
    gl = -g.log_softmax(1)[gt.arange(5), gt.tensor(labels.tolist())].mean()
    rl = -r.log_softmax(1)[torch.arange(5), torch.from_numpy(labels)].mean()
    np.testing.assert_allclose(gl.item(), rl.item(), rtol=1e-6)
    gl.backward()
    rl.backward()
    np.testing.assert_allclose(g.grad.numpy(), r.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_several_index_tensors_errors():
    t = gt.zeros(3, 4)
    with pytest.raises((IndexError, ValueError), match="could not be broadcast"):
        t[gt.tensor([0, 1]), gt.tensor([0, 1, 2])]
    with pytest.raises((IndexError, ValueError), match="too many indices"):
        t[gt.tensor([0]), gt.tensor([0]), gt.tensor([0])]
    with pytest.raises(IndexError, match="shape of the mask"):
        t[1:, gt.tensor([True, False], dtype=gt.bool)]
    with pytest.raises((RuntimeError, ValueError), match="shape mismatch"):
        t[gt.tensor([0, 1]), gt.tensor([0, 1])] = gt.zeros(3)
    # An index out of range in either tensor fails where the value is read, naming the value.
    with pytest.raises(gt.GTError, match="7"):
        t[gt.tensor([0, 1]), gt.tensor([0, 7])].numpy()
    with pytest.raises(gt.GTError, match="5"):
        t[gt.tensor([5, 1]), gt.tensor([0, 1])].numpy()
    bad = gt.zeros(3, 4)
    bad[gt.tensor([0, 1]), gt.tensor([0, 9])] = 1.0     # queued; the write poisons t
    with pytest.raises(gt.GTError, match="9"):
        bad.numpy()
    one = gt.zeros(3, 4)
    one[gt.tensor([0, 5])] = 1.0
    with pytest.raises(gt.GTError, match="5"):
        one.numpy()
    # Each failure is raised once: the fetches took them (tensors written in place are dated
    # by their write, and a bad index has one root however many ops use it).
    gt.synchronize()

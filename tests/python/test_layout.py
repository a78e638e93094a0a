"""Layout (reshape/view, unsqueeze/squeeze, transposes, permute, split/chunk) and indexing."""
import numpy as np
import pytest

import gt
from conftest import assert_close


@pytest.fixture
def a(rng):
    return rng.standard_normal((2, 3, 4)).astype(np.float32)


def test_reshape_view(a):
    t = gt.from_numpy(a)
    assert_close(t.reshape(6, 4), a.reshape(6, 4))
    assert_close(t.reshape((4, 6)), a.reshape(4, 6))
    assert_close(t.reshape(-1), a.reshape(-1))
    assert_close(t.view(2, -1), a.reshape(2, -1))
    assert_close(t.view([3, 8]), a.reshape(3, 8))
    assert gt.reshape(t, (24,)).shape == (24,)
    assert t.flatten().shape == (24,)
    assert t.flatten(1).shape == (2, 12)
    with pytest.raises(gt.ShapeError):
        t.reshape(5, -1)
    with pytest.raises(ValueError):
        t.reshape(-1, -1)


def test_unsqueeze_squeeze(a):
    t = gt.from_numpy(a)
    assert t.unsqueeze(0).shape == (1, 2, 3, 4)
    assert t.unsqueeze(-1).shape == (2, 3, 4, 1)
    assert t.unsqueeze(1).squeeze(1).shape == (2, 3, 4)
    u = gt.zeros(1, 3, 1)
    assert u.squeeze().shape == (3,)
    assert u.squeeze(0).shape == (3, 1)
    assert u.squeeze(1).shape == (1, 3, 1)  # not size 1: unchanged, like PyTorch


def test_transposes_and_permute(a):
    t = gt.from_numpy(a)
    m = a[0]
    assert_close(gt.from_numpy(m).T, m.T)
    assert_close(gt.from_numpy(m).transpose(), m.T)
    assert_close(t.transpose(), np.swapaxes(a, -1, -2))  # last two dims
    with pytest.warns(UserWarning, match="deprecated"):  # PyTorch's: .T beyond 2-D reverses all
        assert_close(t.T, a.T)
    assert_close(t.mT, np.swapaxes(a, -1, -2))
    assert_close(t.transpose(0, 2), np.swapaxes(a, 0, 2))
    assert_close(t.permute(2, 0, 1), a.transpose(2, 0, 1))
    assert_close(t.permute((1, 2, 0)), a.transpose(1, 2, 0))
    assert gt.randn(5).T.shape == (5,)
    with pytest.raises(ValueError):
        t.permute(0, 1)


def test_split_chunk(a):
    t = gt.from_numpy(a)
    parts = t.split(2, dim=2)
    assert isinstance(parts, tuple) and len(parts) == 2
    for p, r in zip(parts, np.split(a, 2, axis=2)):
        assert_close(p, r)
    parts = t.split([1, 2], dim=1)
    assert [p.shape for p in parts] == [(2, 1, 4), (2, 2, 4)]
    assert_close(parts[1], a[:, 1:])
    chunks = t.chunk(3, 1)
    assert len(chunks) == 3
    assert_close(chunks[2], a[:, 2:3])
    assert len(gt.randn(5).chunk(2)) == 2  # sizes 3 and 2
    assert [c.shape for c in gt.randn(5).chunk(2)] == [(3,), (2,)]


INDICES = [
    0, -1, 1,
    slice(None), slice(1, None), slice(None, None, 2), slice(None, None, -1), slice(-2, None),
    (0, 1), (0, slice(None), 2), (-1, -1, -1),
    (slice(None), None, 1), (None, 0), (Ellipsis, 0), (0, Ellipsis), (Ellipsis, None),
    (slice(None), slice(None, None, 2), slice(3, 0, -1)), (1, slice(0, 3, 2), slice(None, 2)),
    (slice(5, 10),), (slice(None), slice(-100, 100)),
]


@pytest.mark.parametrize("idx", INDICES, ids=repr)
def test_getitem_matches_numpy(idx, a):
    assert_close(gt.from_numpy(a)[idx], a[idx])


def test_index_errors(a):
    t = gt.from_numpy(a)
    with pytest.raises(IndexError):
        t[2]
    with pytest.raises(IndexError):
        t[0, -4]
    with pytest.raises(TypeError):
        t[gt.tensor([0.0])]  # float index tensor
    with pytest.raises(IndexError, match="shape of the mask"):
        t[gt.tensor([True, False, True], dtype="bool")]  # a mask must match the leading dims
    with pytest.raises(IndexError, match="shape of the mask"):
        t[[True, False, True]]
    with pytest.raises(TypeError, match="int64, int32 or bool"):
        t[0, gt.tensor([0.5])]  # a float index tensor inside a tuple
    with pytest.raises(TypeError):
        t[0.5]
    with pytest.raises(TypeError, match="int64, int32 or bool"):
        t[gt.tensor([0.0])] = 1  # a float32 index tensor
    with pytest.raises(ValueError):
        t[0, 0, 0, 0]
    with pytest.raises(ValueError):
        t[::0]


def test_index_tensors(a):
    t = gt.from_numpy(a)
    idx = np.array([1, 0, 1])
    assert_close(t[gt.from_numpy(idx)], a[idx])
    assert_close(t[[1, 0]], a[[1, 0]])
    assert_close(t[gt.tensor(1, dtype="int64")], a[1])  # 0-d index: the dim is dropped
    assert_close(t[idx], a[idx])
    idx2 = np.array([[0, 1], [1, 1]])
    assert_close(t[gt.from_numpy(idx2)], a[idx2])
    m = a[0]
    assert_close(gt.from_numpy(m).index_select(1, gt.tensor([3, 0], dtype="int64")), m[:, [3, 0]])
    g = np.array([[0, 2], [1, 1], [3, 0]])
    assert_close(gt.from_numpy(m).gather(1, gt.from_numpy(g)), np.take_along_axis(m, g, 1))
    mask = m > 0
    assert_close(gt.from_numpy(m).masked_fill(gt.from_numpy(mask), 0.0), np.where(mask, 0, m))
    assert_close(gt.from_numpy(m[:1]).expand(3, 4), np.broadcast_to(m[:1], (3, 4)))
    assert_close(gt.from_numpy(m).logsumexp(1), np.log(np.exp(m).sum(1)), rtol=1e-5)


def test_len_iter_numpy_int_index(a):
    t = gt.from_numpy(a)
    assert len(t) == 2
    rows = list(t)
    assert len(rows) == 2
    assert_close(rows[1], a[1])
    assert_close(t[np.int64(1)], a[1])
    with pytest.raises(TypeError):
        len(gt.tensor(1.0))

"""gt.utils.data: Dataset, TensorDataset and DataLoader in torch.utils.data's form::

    ds = gt.utils.data.TensorDataset(x, y)
    for xb, yb in gt.utils.data.DataLoader(ds, batch_size=64, shuffle=True, generator=0):
        ...

A TensorDataset batch is one gather per tensor (``t[index_tensor]``, queued like any op: no
round trip per sample); other datasets are indexed item by item and their items stacked.
``shuffle`` draws a new order every epoch from ``generator`` (an int seed or a
numpy.random.Generator; without one, GT's host generator, which gt.manual_seed seeds as
torch.manual_seed seeds torch's), so a seed makes epochs reproducible.
"""
import math

import numpy as np

from .. import _gt, _host_random

__all__ = ["Dataset", "TensorDataset", "DataLoader", "random_split", "Subset"]


class Dataset:
    """A map-style dataset: ``__getitem__(i)`` and ``__len__()``."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class TensorDataset(Dataset):
    """Samples are the rows of the given tensors (all of one length along dim 0)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor")
        n = len(tensors[0])
        for t in tensors:
            if not isinstance(t, _gt.Tensor):
                raise TypeError(f"TensorDataset: expected gt.Tensor, got {type(t).__name__}")
            if t.ndim == 0 or t.shape[0] != n:
                raise ValueError("TensorDataset: size mismatch between tensors (dim 0: "
                                 f"{[tuple(x.shape)[:1] for x in tensors]})")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = list(indices)

    def __getitem__(self, index):
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def _rng(generator):
    if generator is None:
        return _host_random.generator()
    if isinstance(generator, (int, np.integer)):
        return np.random.default_rng(int(generator))
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError("generator: an int seed or a numpy.random.Generator, got "
                    f"{type(generator).__name__}")


def random_split(dataset, lengths, generator=None):
    """Splits into non-overlapping Subsets of the given lengths (or fractions summing to 1)."""
    n = len(dataset)
    if all(isinstance(x, float) for x in lengths) and math.isclose(sum(lengths), 1.0):
        sizes = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
    else:
        sizes = [int(x) for x in lengths]
    if sum(sizes) != n:
        raise ValueError(f"random_split: lengths sum to {sum(sizes)}, the dataset has {n}")
    order = _rng(generator).permutation(n)
    out, start = [], 0
    for s in sizes:
        out.append(Subset(dataset, order[start:start + s].tolist()))
        start += s
    return out


def _collate(items):
    first = items[0]
    if isinstance(first, _gt.Tensor):
        return _gt.stack(list(items))
    if isinstance(first, (tuple, list)):
        return type(first)(_collate([it[i] for it in items]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _collate([it[k] for it in items]) for k in first}
    if isinstance(first, (bool, int, float, np.number)):
        return _gt.tensor(list(items), dtype=_gt.int64 if isinstance(first, (int, np.integer))
                          and not isinstance(first, bool) else None)
    return list(items)


class DataLoader:
    """Batches of a dataset: ``batch_size`` samples each (the last one shorter unless
    ``drop_last``), in order or, with ``shuffle``, in a new random order every epoch."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, generator=None,
                 collate_fn=None):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.collate_fn = collate_fn
        self._rng = None if generator is None else _rng(generator)

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        n = len(self.dataset)
        # Without a generator, each epoch draws from the host generator as it is then (after a
        # gt.manual_seed made after this loader, as torch's DataLoader does).
        rng = self._rng if self._rng is not None else _rng(None)
        order = rng.permutation(n) if self.shuffle else np.arange(n)
        for b in range(len(self)):
            idx = order[b * self.batch_size:(b + 1) * self.batch_size]
            if isinstance(self.dataset, TensorDataset) and self.collate_fn is None:
                index = _gt.from_numpy(np.ascontiguousarray(idx, dtype=np.int64))
                yield tuple(t[index] for t in self.dataset.tensors)
            else:
                items = [self.dataset[int(i)] for i in idx]
                yield (self.collate_fn or _collate)(items)

"""Index-tensor families: index_select, gather, index_add, scatter_add, masked_fill, one_hot and
embedding. Index values are in range except now and then (then both libraries must raise; gt
raises at the next sync point)."""
import math

import numpy as np

from . import dtypes as D
from . import scalars as S
from . import values as V
from .ops_reduce import rand_dim


def _indices(b, shape, size, p_bad=0.03, negative=False):
    n = math.prod(shape)
    hi = size + (1 if b.p(p_bad) else 0)
    lo = -size if negative else 0
    if hi <= lo:
        vals = np.zeros(n, dtype=np.int64)
    else:
        vals = b.rng.integers(lo, hi, n)
    return b.add_input(np.asarray(vals, dtype=np.int64).reshape(shape), "int64")


def _dim_size(t, d):
    if t.dim() == 0:
        return 1
    if -t.dim() <= d < t.dim():
        return t.shape[d]
    return 1


def _oob_on_empty(b, t, idx, size):
    """Facts: an index out of range into a tensor with no elements (torch reads nothing, so it
    does not check)."""
    i = b.t(idx)
    if t.numel() == 0 and i.numel() and bool(((i >= size) | (i < -size)).any()):
        return {"index-out-of-range-on-empty"}
    return set()


def index_select(b):
    x = b.operand()
    t = b.t(x)
    d = rand_dim(b, x)
    k = int(b.rng.integers(0, 4)) if b.p(0.9) else 0
    if t.dim() == 0:  # torch 1.13 answers a 0-d input's empty index with uninitialized
        k = 1          # memory, and fails the backward of a longer one
    shape = (k,) if b.p(0.9) else ()
    idx = _indices(b, shape, _dim_size(t, d))
    tags = {"index-on-0d"} if t.dim() == 0 else set()
    tags |= _oob_on_empty(b, t, idx, _dim_size(t, d))
    b.emit(f"{x}.index_select({d}, {idx})",
           "index_select", [x, idx], exact=True, tags=tags)


def gather(b):
    x = b.operand()
    t = b.t(x)
    d = rand_dim(b, x)
    shape = [min(s, int(b.rng.integers(0, 3))) if i != (d % max(t.dim(), 1)) else int(b.rng.integers(0, 4))
             for i, s in enumerate(t.shape)]
    tags = set()
    if 0 in shape or (t.dim() and 0 in t.shape):
        tags.add("empty-index")
    idx = _indices(b, tuple(shape), _dim_size(t, d))
    tags |= _oob_on_empty(b, t, idx, _dim_size(t, d))
    b.emit(f"{x}.gather({d}, {idx})", "gather",
           [x, idx], exact=True, tags=tags)


def index_add(b):
    x = b.operand(pred=lambda t: not t.requires_grad or t.grad_fn is not None)
    t = b.t(x)
    d = rand_dim(b, x)
    size = _dim_size(t, d)
    op = "index_add" if b.p(0.6) else "scatter_add"
    tags = set()
    if t.dim() == 0:
        tags.add("index-on-0d")
    if op == "index_add":
        k = int(b.rng.integers(0, 4))
        idx = _indices(b, (k,) if t.dim() else (k,) if b.p(0.5) else (), size)
        src_shape = list(t.shape)
        if t.dim() and -t.dim() <= d < t.dim():
            src_shape[d] = k
        elif b.t(idx).dim():
            src_shape = [k] if b.p(0.5) else []
        if k == 0:
            tags.add("empty-index")
        src = b.new_input(tuple(src_shape), b.dtype(x))
        expr = f"{x}.index_add({d}, {idx}, {src})"
    else:
        shape = tuple(min(s, int(b.rng.integers(0, 3))) for s in t.shape)
        if 0 in shape:
            tags.add("empty-index")
        idx = _indices(b, shape, size)
        src = b.new_input(shape, b.dtype(x))
        expr = f"{x}.scatter_add({d}, {idx}, {src})"
    b.emit(expr, op, [x, idx, src], exact=not D.is_float(b.dtype(x)), tags=tags)


def masked_fill(b):
    x = b.operand()
    t = b.t(x)
    mshape = V.broadcast_partner(b.rng, tuple(t.shape), p_incompatible=0.01)
    mask = b.new_input(mshape, "bool") if b.p(0.9) else b.operand(
        pred=lambda m: str(m.dtype) == "torch.bool", exact=True,
        make=lambda: b.new_input(mshape, "bool"))
    lit, v, tags = S.draw(b, b.dtype(x), p_special=0.3)
    dt = b.dtype(x)
    tags = {"masked-fill-" + t_ for t_ in tags}
    if dt == "int64" and (b.max_abs(x) > 2**53 or (isinstance(v, int) and abs(v) > 2**53)):
        tags.add("int-beyond-2^53")
    if D.is_int(dt) and isinstance(v, int) and not isinstance(v, bool):
        lo, hi = D.INT_LIMITS[dt]
        if not lo <= v <= hi:
            tags.add("masked-fill-value-out-of-range")
    if D.is_float(dt) and isinstance(v, (int, float)) and not isinstance(v, bool) \
            and math.isfinite(v) and abs(v) > D.FLOAT_MAX[dt]:
        tags.add("masked-fill-value-out-of-range")
    if D.is_int(dt) and isinstance(v, float):
        tags.add("masked-fill-float-into-int")
    if b.has_nonfinite(x):
        tags.add("nonfinite-under-mask")
    b.emit(f"{x}.masked_fill({mask}, {lit})", "masked_fill", [x, mask], exact=True, tags=tags)


def one_hot(b):
    n = int(b.rng.integers(1, 5))
    shape = V.rand_shape(b.rng, 0, 2) if b.p(0.9) else b.choice([(0,), (2, 0)])
    num = b.choice([-1, n, n, n + 1])
    idx = _indices(b, shape, n, p_bad=0.02)
    tags = {"one-hot-empty-neg"} if (math.prod(shape) == 0 and num == -1) else set()
    b.emit(f"F.one_hot({idx}, {num})", "one_hot", [idx], exact=True, tags=tags)


def embedding(b):
    n = int(b.rng.integers(1, 5))
    w = b.new_input((n, int(b.rng.integers(1, 4))), b.choice(["float32", "float32", "float16"]))
    idx = _indices(b, V.rand_shape(b.rng, 0, 2), n, p_bad=0.02)
    b.emit(f"F.embedding({idx}, {w})", "embedding", [idx, w], exact=True)

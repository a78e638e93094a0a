"""Random shapes and values for the cases, and the Python literals that recreate them.

Values are chosen so the same literal means the same tensor in both libraries: floats are
rounded into the target dtype before they are written (so no library rounds a Python float
differently), and most are small dyadic fractions (k/8: exact in every float dtype, short to read,
and they make ties, which exercise max/argmax tie rules). Special values (NaN, +-inf, -0.0, the
dtype's largest finite and smallest subnormal numbers, integer limits) are mixed in now and then.
"""
import math

import numpy as np

from . import dtypes as D

MAX_NUMEL = 48


def rand_dim(rng, allow_zero=True):
    r = rng.random()
    if allow_zero and r < 0.06:
        return 0
    if r < 0.3:
        return 1
    return int(rng.integers(2, 6))


def rand_shape(rng, min_rank=0, max_rank=3, allow_zero=True):
    """A shape of rank min_rank..max_rank (rank 4 rarely), with 0- and 1-size dims now and then."""
    hi = max_rank + (1 if max_rank >= 3 and rng.random() < 0.05 else 0)
    rank = int(rng.integers(min_rank, hi + 1))
    for _ in range(20):
        shape = tuple(rand_dim(rng, allow_zero) for _ in range(rank))
        if math.prod(shape) <= MAX_NUMEL:
            return shape
    return tuple(1 for _ in range(rank))


def broadcast_partner(rng, shape, p_incompatible=0.03):
    """Another shape that broadcasts with `shape` (leading dims dropped or added, dims set to 1),
    or rarely one that does not (error behaviour is compared too)."""
    s = list(shape)
    r = rng.random()
    if r < 0.35:
        return tuple(s)
    if r < 0.5 and s:
        s = s[int(rng.integers(0, len(s) + 1)):]  # drop leading dims (0-d when all dropped)
    elif r < 0.6 and len(s) < 4:
        s = [int(rng.integers(1, 3))] + s
    s = [1 if (d and rng.random() < 0.4) else d for d in s]
    if rng.random() < p_incompatible and s:
        i = int(rng.integers(0, len(s)))
        s[i] += 2  # incompatible, unless that dim of `shape` is 1 (or missing)
    if math.prod(s) > MAX_NUMEL:
        return tuple(shape)
    return tuple(s)


def _specials(name):
    if D.is_float(name):
        mx = D.FLOAT_MAX[name]
        return [math.nan, math.inf, -math.inf, -0.0, 0.0, mx, -mx, D.FLOAT_TINY[name], 1e30, -1e30]
    if D.is_int(name):
        lo, hi = D.INT_LIMITS[name]
        extra = ([2**53 + 1, -(2**53) - 1, 2**31, -(2**31) - 1] if name == "int64"
                 else [2**24 + 1] if name == "int32" else [])
        return [v for v in [lo, hi, 0, -1, 1] + extra if lo <= v <= hi]
    return [True, False]


def rand_values(rng, shape, name, kind="any", p_special=0.12):
    """A numpy array of the shape holding values for dtype `name` (float64 for float dtypes,
    int64 for integer dtypes, bool): kind 'any', 'positive' (> 0), 'prob' (in [0, 1]),
    'unit' (moderate, no specials), 'label' (0 or 1)."""
    n = math.prod(shape)
    if name == "bool":
        return rng.random(n).reshape(shape) < 0.5
    if D.is_int(name):
        lo, hi = (0, 2) if kind == "label" else ((1, 10) if kind == "positive" else (-9, 10))
        if name == "uint8":
            lo = max(lo, 0)
        v = rng.integers(lo, hi, n).astype(object)
        if kind == "any" and n and rng.random() < p_special:
            sp = _specials(name)
            for i in rng.integers(0, n, int(rng.integers(1, 3))):
                v[i] = sp[int(rng.integers(0, len(sp)))]
        return np.array([int(x) for x in v], dtype=np.int64).reshape(shape)
    if kind == "prob":
        v = rng.integers(0, 9, n) / 8.0
        mixed = rng.random(n) < 0.4
        v = np.where(mixed, rng.random(n), v)
    elif kind == "label":
        v = rng.integers(0, 2, n).astype(np.float64)
    else:
        v = rng.integers(-24, 25, n) / 8.0
        mixed = rng.random(n) < 0.3
        v = np.where(mixed, rng.normal(0, 2, n), v)
        if kind == "positive":
            v = np.abs(v) + 0.25
    if kind == "any" and n and rng.random() < p_special:
        sp = _specials(name)
        for i in rng.integers(0, n, int(rng.integers(1, 3))):
            v[i] = sp[int(rng.integers(0, len(sp)))]
    return D.round_to(v, name).reshape(shape)


def scalar_literal(v):
    """Python source for a number: floats keep NaN/inf/-0.0 spelled out."""
    if isinstance(v, (bool, np.bool_)):
        return repr(bool(v))
    if isinstance(v, (int, np.integer)):
        return repr(int(v))
    v = float(v)
    if math.isnan(v):
        return "float('nan')"
    if math.isinf(v):
        return "float('inf')" if v > 0 else "-float('inf')"
    return repr(v)


def _nested(a):
    if a.ndim == 0:
        return scalar_literal(a.item() if a.dtype != object else a[()])
    return "[" + ", ".join(_nested(x) for x in a) + "]"


def tensor_literal(values, name, requires_grad=False):
    """Source that builds the tensor in either library (M is gt or torch). Shapes holding a 0-size
    dim cannot be written as nested lists, so they are built from a flat list and reshaped."""
    a = np.asarray(values)
    dt = f"dtype=M.{name}"
    if 0 in a.shape and a.ndim > 1:
        shape = ", ".join(str(d) for d in a.shape)
        src = f"M.tensor([], {dt}).reshape({shape})"
        return src + (".requires_grad_()" if requires_grad else "")
    rg = ", requires_grad=True" if requires_grad else ""
    return f"M.tensor({_nested(a)}, {dt}{rg})"

"""Makes the case for a seed: a short chain (1-3 steps, a step building on the last result most
of the time) of op families drawn by weight, then a backward pass when the result has a history.
The same seed always gives the same case (numpy's PCG64 seeded by the case number)."""
import numpy as np

from . import ops_elementwise as E
from . import ops_index as I
from . import ops_inplace as P
from . import ops_layout as L
from . import ops_misc as X
from . import ops_nn as N
from . import ops_reduce as R
from .builder import Builder

# (family, weight). Weights follow how much surface each family has.
FAMILIES = [
    (E.unary, 8), (E.binary, 12), (E.compare, 4), (E.clamp, 3), (E.where, 3),
    (E.int_operators, 1),
    (R.table_reduce, 8), (R.var, 2), (R.logical, 1), (R.logsumexp, 2), (R.cumsum, 2),
    (R.sort, 1),
    (L.reshape, 3), (L.transpose, 3), (L.squeeze, 3), (L.expand, 1), (L.split, 2), (L.cat, 3),
    (L.detach_clone, 1), (L.index, 4),
    (I.index_select, 2), (I.gather, 2), (I.index_add, 1), (I.masked_fill, 3), (I.one_hot, 1),
    (I.embedding, 1),
    (N.softmax, 3), (N.activation, 2), (N.layer_norm, 2), (N.linear, 1), (N.dropout, 1),
    (N.mse, 2), (N.bce, 3), (N.cross_entropy, 2),
    (X.matmul, 3), (X.cast, 3), (X.to_python, 1), (X.creation, 2),
    (P.inplace, 6),
]
_FN = [f for f, _ in FAMILIES]
_W = np.array([w for _, w in FAMILIES], dtype=np.float64)
_W /= _W.sum()


def family_names():
    return [f"{f.__module__.rsplit('.', 1)[-1]}.{f.__name__}" for f in _FN]


def make_case(seed, families=None):
    """The case of this seed (families: an optional subset of FAMILIES' functions to draw from)."""
    rng = np.random.default_rng([seed, 18])
    fns, w = _FN, _W
    if families is not None:
        fns = list(families)
        w = np.full(len(fns), 1.0 / len(fns))
    b = Builder(rng, seed)
    steps = 1 + int(rng.random() < 0.45) + int(rng.random() < 0.2)
    for _ in range(steps):
        fns[int(rng.choice(len(fns), p=w))](b)
        if b.failed:
            break
    b.maybe_backward()
    case = b.finish()
    case.unusable = b.unusable
    return case

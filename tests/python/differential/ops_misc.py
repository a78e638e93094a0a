"""Matmul, dtype casts and Python-number conversions."""
import math

import torch

from . import dtypes as D
from . import values as V


def matmul(b):
    kind = b.rng.random()
    k = int(b.rng.integers(0 if b.p(0.05) else 1, 5))
    m, n = int(b.rng.integers(1, 5)), int(b.rng.integers(1, 5))
    if kind < 0.5:
        sa, sb = (m, k), (k, n)
    elif kind < 0.65:
        sa, sb = (k,), (k,)
    elif kind < 0.75:
        sa, sb = (k,), (k, n)
    elif kind < 0.85:
        sa, sb = (m, k), (k,)
    else:
        bt = int(b.rng.integers(1, 3))
        sa, sb = (bt, m, k), ((bt, k, n) if b.p(0.7) else (k, n))
    if b.p(0.03):
        sb = tuple(d + 1 if i == 0 else d for i, d in enumerate(sb))  # inner sizes differ
    dt = b.rand_dtype(D.FLOATS) if b.p(0.85) else b.rand_dtype()
    a = b.operand(pred=lambda t: tuple(t.shape) == sa, make=lambda: b.new_input(sa, dt))
    c = b.new_input(sb, b.dtype(a) if b.p(0.9) else b.rand_dtype())
    tags = set()
    if b.dtype(a) != b.dtype(c):
        tags.add("matmul-mixed-dtype")
    form = b.choice([f"{a} @ {c}", f"M.matmul({a}, {c})", f"{a}.matmul({c})"]
                    + ([f"{a}.mm({c})"] if len(sa) == len(sb) == 2 else []))
    b.emit(form, "matmul", [a, c], exact=False, tags=tags)


CAST_METHODS = {"float32": "float", "float16": "half", "bfloat16": "bfloat16", "int32": "int",
                "int64": "long", "bool": "bool"}


def cast(b):
    dst = b.rand_dtype()
    # To an integer or bool dtype only exact values: truncating two float results that differ
    # in the last place can give integers that differ by one.
    x = b.operand(exact=not D.is_float(dst))
    src = b.dtype(x)
    form = b.choice([f"{x}.to(M.{dst})", f"{x}.{CAST_METHODS[dst]}()", f"{x}.type(M.{dst})"])
    tags = set()
    if D.is_float(src) and D.is_int(dst):
        t = b.t(x).detach().double()
        if b.has_nonfinite(x):
            tags.add("cast-nonfinite-to-int")
        lo, hi = D.INT_LIMITS[dst]
        fin = t[t.isfinite()]
        if fin.numel() and bool(((fin < lo) | (fin > hi)).any()):
            tags.add("cast-out-of-range-to-int")
    if D.is_float(src) and D.is_float(dst) and src != dst:
        tags.add("cast-float-narrowing" if D.FLOAT_MAX[dst] < D.FLOAT_MAX[src] else "cast-float")
    # exact unless float -> int of an inexact value near an integer boundary: still exact
    # (truncation of the same value), since the operand itself is compared first.
    b.emit(form, "cast", [x], exact=True, tags=tags)


def to_python(b):
    x = b.operand(pred=lambda t: t.numel() == 1, exact=True,
                  make=lambda: b.new_input(b.choice([(), (1,), (1, 1)])))
    conv = b.choice(["item", "int", "float", "bool"])
    expr = f"{x}.item()" if conv == "item" else f"{conv}({x})"
    tags = set()
    if conv == "int" and b.t(x).dtype.is_floating_point:
        tags.add("int-of-float-tensor")
        if b.has_nonfinite(x):
            tags.add("cast-nonfinite-to-int")
        elif abs(b.max_abs(x)) >= 2**63:
            tags.add("cast-out-of-range-to-int")
    b.emit(expr, "to-python-" + conv, [x], exact=True, tags=tags)

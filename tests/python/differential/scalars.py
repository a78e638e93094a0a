"""Python scalar operands (the second half of "Python-style scalar promotion").

A scalar is drawn for a tensor of a given dtype; the facts it records say how it relates to that
dtype: outside int32's range, not exactly representable in float16/bfloat16, outside the
dtype's finite range, a bool, ...
"""
import math

import numpy as np

from . import dtypes as D
from . import values as V

_PLAIN = [2, -3, 1, 0, 0.5, -1.25, 2.5, 3.0, True, False]
_SPECIAL = [float("nan"), float("inf"), -float("inf"), -0.0, 0.1, 1e-3, 1e5, 70000.0, 2**31,
            -(2**31) - 1, 2**40, 2**62, 2**63 - 1, -(2**63), 2**63, 1e30]


def draw(b, like_dtype, p_special=0.25, allow_bool=True):
    """(literal, value, tags) for a scalar operand next to a tensor of dtype like_dtype."""
    pool = _SPECIAL if b.p(p_special) else _PLAIN
    v = b.choice(pool)
    if not allow_bool and isinstance(v, bool):
        v = int(v) + 2
    return V.scalar_literal(v), v, facts(v, like_dtype)


def facts(v, dt):
    tags = set()
    if isinstance(v, bool):
        tags.add("scalar:bool")
        return tags
    if isinstance(v, int):
        tags.add("scalar:int")
        if dt == "int32" and not -2**31 <= v < 2**31:
            tags.add("scalar:int-outside-int32")
        if not -2**63 <= v < 2**63:
            tags.add("scalar:int-outside-int64")
        if D.is_float(dt) and abs(v) > 2**24:
            tags.add("scalar:int-inexact-float")
        if D.is_float(dt) and float(D.round_to(np.array([float(v)]), dt)[0]) != v:
            tags.add("scalar:inexact-in-dtype")
        if dt in ("float16", "bfloat16") and abs(v) > D.FLOAT_MAX[dt]:
            tags.add("scalar:outside-lowp")
        return tags
    tags.add("scalar:float")
    if math.isnan(v) or math.isinf(v):
        tags.add("scalar:nonfinite")
    elif D.is_float(dt):
        r = float(D.round_to(np.array([v]), dt)[0])
        if r != v:
            tags.add("scalar:inexact-in-dtype")
        if abs(v) > D.FLOAT_MAX[dt]:
            tags.add("scalar:outside-lowp")
    return tags

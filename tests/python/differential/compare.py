"""Compares gt's run of a case with torch's into a list of Mismatch records.

What is compared, per output variable and per gradient: the structure (tensor, tuple, Python
number), dtype, shape and values. Values: NaN positions must be equal, infinities equal with
their sign, finite values within |gt - torch| <= atol + rtol * |torch| with the result dtype's
tolerances (dtypes.TOL). atol grows with the magnitudes in the case (eps * largest finite
magnitude among torch's values * sqrt(largest tensor size)), because the two libraries may sum
in different orders. Signed zeros compare equal. Integers and bools compare exactly.

Errors: whether each side raised (messages are not compared), and gt raising something other
than its documented classes (gt.GTError and subclasses, ValueError, TypeError, IndexError).
"""
import math
from dataclasses import dataclass, field

import numpy as np

import gt

from . import dtypes as D

# The classes a gt error may have; anything else (a crash inside the bindings) is a mismatch.
# OverflowError is Python's own for int(inf), which torch raises as well.
GT_ERROR_CLASSES = (gt.GTError, ValueError, TypeError, IndexError, OverflowError)


@dataclass
class Mismatch:
    kind: str        # raise | error-class | structure | type | dtype | shape | value | grad-*
    var: str = None  # the variable (or the leaf, for grad-*); None for raise
    detail: str = ""
    facts: set = field(default_factory=set)
    gt_dtype: str = None
    torch_dtype: str = None
    line: int = None  # raise: the line the raising side stopped at (None: a gt sync point)


def _scale(torch_res):
    """(largest finite magnitude, largest numel) among torch's values and gradients."""
    mag, n = 1.0, 1
    for snap in list(torch_res.values.values()) + list(torch_res.grads.values()):
        for s in (snap[1] if snap[0] == "tuple" else [snap]):
            if s[0] == "tensor" and s[3].size and s[1] != "bool":
                a = s[3].astype(np.float64)
                f = np.abs(a[np.isfinite(a)])
                if f.size:
                    mag = max(mag, float(f.max()))
                n = max(n, a.size)
    return mag, n


def _loosest_float(case):
    """The least precise float dtype anywhere in the case: a float32 result computed from
    float16 operands (pow's gradient takes log of a float16 base in float16) is only as
    precise as they are."""
    fl = [d for d in D.FLOATS if f"dtype:{d}" in case.tags]
    return max(fl, key=lambda d: D.TOL[d][0]) if fl else None


def _tol(dt_a, dt_b, scale, loosest=None):
    if dt_a not in D.TOL and dt_b not in D.TOL:
        return None
    tols = [D.TOL[d] for d in (dt_a, dt_b, loosest) if d in D.TOL]
    rtol, atol, eps = max(tols)
    mag, n = scale
    return rtol, max(atol, 2 * eps * mag * math.sqrt(n))


def compare_values(g, t, tol, overflow_slack=None):
    """(ok, facts, detail) for two same-shape numpy arrays; tol None means exact.
    overflow_slack: an infinity on one side matches a same-signed finite value beyond it on the
    other (gradients: the order of a backward formula's products is not specified, and near the
    dtype's largest value one order overflows where another does not)."""
    if tol is None or g.dtype == bool or t.dtype == bool:
        bad = g != t
        if not bad.any():
            return True, set(), ""
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        return False, {"exact-value"}, f"at {i}: gt {g[i]!r} torch {t[i]!r} ({int(bad.sum())} differ)"
    g = g.astype(np.float64)
    t = t.astype(np.float64)
    facts = set()
    gn, tn = np.isnan(g), np.isnan(t)
    if (gn & ~tn).any():
        facts.add("gt-nan-torch-not")
    if (tn & ~gn).any():
        facts.add("torch-nan-gt-not")
    gi, ti = np.isinf(g), np.isinf(t)
    if overflow_slack is not None:
        with np.errstate(invalid="ignore"):
            near = (np.sign(g) == np.sign(t)) & (np.abs(np.where(gi, t, g)) >= overflow_slack)
        g = np.where(gi & ~ti & near, t, g)
        t = np.where(ti & ~gi & near, g, t)
        gi, ti = np.isinf(g), np.isinf(t)
    both_inf = gi & ti
    if (gi & ~ti & ~tn).any():
        facts.add("gt-inf-torch-finite")
    if (ti & ~gi & ~gn).any():
        facts.add("torch-inf-gt-finite")
    if (both_inf & (np.sign(g) != np.sign(t))).any():
        facts.add("inf-sign")
    fin = np.isfinite(g) & np.isfinite(t)
    rtol, atol = tol
    with np.errstate(invalid="ignore", over="ignore"):
        far = fin & (np.abs(g - t) > atol + rtol * np.abs(t))
    if far.any():
        facts.add("finite-differs")
    if not facts:
        return True, set(), ""
    bad = far | (gn != tn) | (gi & ~both_inf) | (ti & ~both_inf) | (both_inf & (np.sign(g) != np.sign(t)))
    i = tuple(int(k) for k in np.argwhere(bad)[0])
    if facts & {"gt-nan-torch-not", "gt-inf-torch-finite"}:
        facts.add("gt-nonfinite-torch-finite")
    return False, facts, (f"at {i}: gt {g[i]!r} torch {t[i]!r} ({int(bad.sum())} of {g.size} differ,"
                          f" rtol {rtol:g} atol {atol:g})")


def compare_snap(var, g, t, scale, grad=False, loosest=None, boost=1.0, exact=False):
    """Mismatches between gt's and torch's snapshot of one variable (or gradient)."""
    pre = "grad-" if grad else ""
    out = []
    if g[0] == "tensor" and t[0] == "tuple" and len(t[1]) == 2:
        out.append(Mismatch(pre + "structure", var, "gt returned a tensor, torch a (values, "
                            "indices) pair", {"torch-pair-gt-tensor"}))
        t = t[1][0]
    if g[0] != t[0]:
        out.append(Mismatch(pre + "structure", var, f"gt {g[0]} torch {t[0]}",
                            {f"gt-{g[0]}-torch-{t[0]}"}))
        return out
    kind = g[0]
    if kind == "tuple":
        if len(g[1]) != len(t[1]):
            out.append(Mismatch(pre + "structure", var, f"gt {len(g[1])} parts, torch "
                                f"{len(t[1])}", {"tuple-length"}))
            return out
        for i, (gi, ti) in enumerate(zip(g[1], t[1])):
            out += compare_snap(f"{var}[{i}]", gi, ti, scale, grad, loosest, boost, exact)
        return out
    if kind == "py":
        if g[1] != t[1]:
            out.append(Mismatch(pre + "type", var, f"gt {g[1]} torch {t[1]}"))
        ga, ta = np.array([g[2]]), np.array([t[2]])
        ok, facts, detail = compare_values(ga, ta, (1e-6, 1e-6) if "float" in (g[1], t[1]) else None)
        if not ok:
            out.append(Mismatch(pre + "value", var, detail, facts))
        return out
    if kind in ("none", "other"):
        if g != t:
            out.append(Mismatch(pre + "structure", var, f"gt {g} torch {t}"))
        return out
    _, gdt, gshape, gv = g
    _, tdt, tshape, tv = t
    if gdt != tdt:
        out.append(Mismatch(pre + "dtype", var, f"gt {gdt} torch {tdt}", gt_dtype=gdt,
                            torch_dtype=tdt))
    if gshape != tshape:
        out.append(Mismatch(pre + "shape", var, f"gt {gshape} torch {tshape}",
                            gt_dtype=gdt, torch_dtype=tdt))
        return out
    tol = _tol(gdt, tdt, scale, loosest) if (D.is_float(gdt) or D.is_float(tdt)) else None
    if tol is not None and boost != 1.0:
        tol = (tol[0], tol[1] * boost)
    if tol is not None and exact and gdt == tdt:
        tol = (0.0, 0.0)
    slack = D.FLOAT_MAX[tdt] / 8 if grad and tdt in D.FLOAT_MAX else None
    ok, facts, detail = compare_values(gv, tv, tol, slack)
    if not ok:
        out.append(Mismatch(pre + "value", var, detail, facts, gt_dtype=gdt, torch_dtype=tdt))
    return out


def compare(case, gt_res, torch_res):
    """Every mismatch between the two runs of the case."""
    out = []
    if gt_res.raised and not isinstance(gt_res.error, GT_ERROR_CLASSES):
        out.append(Mismatch("error-class", None, f"gt raised {type(gt_res.error).__name__}: "
                            f"{str(gt_res.error)[:160]}", {type(gt_res.error).__name__},
                            line=gt_res.error_line))
    if gt_res.raised != torch_res.raised:
        side = "gt" if gt_res.raised else "torch"
        err = gt_res.error if gt_res.raised else torch_res.error
        res = gt_res if gt_res.raised else torch_res
        facts = {f"{side}-raised"}
        if res.error_line is not None and ".backward(" in case.lines[res.error_line]:
            facts.add(f"{side}-raised-at-backward")
        out.append(Mismatch("raise", None, f"only {side} raised {type(err).__name__}: "
                            f"{str(err).splitlines()[0][:160] if str(err) else ''}", facts,
                            line=res.error_line))
        return out
    if gt_res.raised:
        return out
    scale = _scale(torch_res)
    low = _loosest_float(case)
    amplified = False
    for var in case.outputs:
        boost = max([case.tol_boost.get(a, 1.0) for a in case.ancestors(var) | {var}])
        ms = compare_snap(var, gt_res.values[var], torch_res.values[var], scale, loosest=low,
                          boost=boost, exact=var in case.exact)
        if ms and var not in case.exact and all(m.kind == "value" for m in ms):
            from .recheck import torch_value_from_gt_inputs

            again = torch_value_from_gt_inputs(case, var, gt_res.values)
            if again is not None and not compare_snap(var, gt_res.values[var], again, scale,
                                                      loosest=low, boost=boost):
                ms = []  # torch, given gt's inputs, gives gt's result: upstream rounding
                amplified = True
        out += ms
    gboost = max(case.tol_boost.values(), default=1.0)
    for var in case.grad_inputs:
        ms = compare_snap(var, gt_res.grads[var], torch_res.grads[var], scale, grad=True,
                          loosest=low, boost=gboost)
        if amplified:  # the backward of an amplifying op amplifies the same rounding
            ms = [m for m in ms if not (m.kind == "grad-value" and m.facts == {"finite-differs"})]
        out += ms
    return out

"""Mismatch -> DELIBERATE / OPEN / UNEXPLAINED, and the signature of an unexplained one.

Order: a DELIBERATE entry, then an OPEN entry, then inheritance: a mismatch downstream of an
explained one (a variable computed from a mismatching variable, a gradient of a case whose
forward values already differ, an error raised after an explained difference) has that cause,
since one wrong value spreads through a chain. Whatever is left is UNEXPLAINED.
"""
from dataclasses import dataclass

from . import gt_run
from . import torch_ref
from .causes import base_var, op_of
from .compare import compare_snap
from .known_differences import DELIBERATE
from .open_causes import OPEN
from .reference_limits import LIMITS

ORDER = {"OK": 0, "SKIPPED": 1, "DELIBERATE": 2, "OPEN": 3, "UNEXPLAINED": 4}


@dataclass
class Verdict:
    mismatch: object
    status: str          # SKIPPED (reference_limits) | DELIBERATE | OPEN | UNEXPLAINED
    cause: object = None  # the Cause, when explained
    inherited: bool = False


def _direct(case, m):
    for c in LIMITS:
        if c.match(case, m):
            return Verdict(m, "SKIPPED", c)
    for c in DELIBERATE:
        if c.match(case, m):
            return Verdict(m, "DELIBERATE", c)
    for c in OPEN:
        if c.match(case, m):
            return Verdict(m, "OPEN", c)
    return None


def _prefix_mismatches(case, gt_res, torch_res):
    """When one side raised, the variables both sides still have (set before the raising line)
    compared: an explained difference there explains the error."""
    lines = [r.error_line for r in (gt_res, torch_res) if r.raised and r.error_line is not None]
    stop = min(lines) if lines else len(case.lines)
    out = []
    scale = (1.0, 1)
    for var in case.outputs:
        if case.defined_at.get(var, stop) >= stop:
            continue
        try:
            g = gt_run.snapshot(gt_res.ns.get(var))
            t = torch_ref.snapshot(torch_res.ns.get(var))
        except Exception:  # noqa: BLE001 - a poisoned gt tensor: nothing to compare
            continue
        out += compare_snap(var, g, t, scale)
    return out


def _upstream(case, m, pool):
    """The first verdict in pool that m can be downstream of."""
    others = [e for e in pool if e.mismatch is not m]
    if m.kind.startswith("grad-"):
        fwd = [e for e in others if not e.mismatch.kind.startswith("grad-")
               and e.mismatch.kind not in ("raise", "error-class")]
        return (fwd or [e for e in others if e.mismatch.kind.startswith("grad-")] or [None])[0]
    v = base_var(m)
    if v is not None:
        up = case.ancestors(v) | {v}
        return next((e for e in others if e.mismatch.var is not None
                     and not e.mismatch.kind.startswith("grad-")
                     and base_var(e.mismatch) in up), None)
    return others[0] if others else None


def classify(case, mismatches, gt_res=None, torch_res=None):
    """A Verdict per mismatch. UNEXPLAINED verdicts downstream of another UNEXPLAINED one are
    marked inherited, so only root mismatches get a signature."""
    verdicts = [_direct(case, m) for m in mismatches]
    explained = [v for v in verdicts if v is not None]
    for i, m in enumerate(mismatches):
        if verdicts[i] is not None:
            continue
        src = _upstream(case, m, explained)
        if src is None and m.kind in ("raise", "error-class") and gt_res is not None \
                and gt_res.ns is not None and torch_res is not None:
            src = next((d for d in (_direct(case, pm) for pm in
                                    _prefix_mismatches(case, gt_res, torch_res)) if d), None)
        verdicts[i] = (Verdict(m, src.status, src.cause, inherited=True) if src is not None
                       else Verdict(m, "UNEXPLAINED"))
    unexplained = [v for v in verdicts if v.status == "UNEXPLAINED"]
    for v in unexplained:
        src = _upstream(case, v.mismatch, [u for u in unexplained if not u.inherited])
        if src is not None and src is not v and _before(case, src.mismatch, v.mismatch):
            v.inherited = True
    return verdicts


def _before(case, a, b):
    """Whether mismatch a is upstream of b (forward before gradients, earlier variables first)."""
    if a.kind.startswith("grad-") != b.kind.startswith("grad-"):
        return not a.kind.startswith("grad-")
    da = case.defined_at.get(base_var(a), -1) if a.var else -1
    db = case.defined_at.get(base_var(b), -1) if b.var else -1
    return da < db or (da == db and a.kind in ("dtype", "structure") and b.kind == "value")


def case_status(verdicts):
    return max((v.status for v in verdicts), key=ORDER.get, default="OK")


def signature(case, m):
    """What makes two unexplained mismatches 'the same': kind, side, op, dtypes, facts."""
    if m.kind in ("raise", "error-class"):
        side = sorted(m.facts)[0] if m.facts else ""
        ops = ",".join(case.ops())
        return f"{m.kind}|{side}|{ops}"
    op = op_of(case, m) or "?"
    dts = ",".join(case.producer.get(base_var(m), (None, ()))[1])
    facts = ",".join(sorted(f for f in m.facts if f != "gt-nonfinite-torch-finite"))
    return f"{m.kind}|{op}|{dts}|{facts}"

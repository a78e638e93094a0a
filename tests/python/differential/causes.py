"""The record type of the two tables (known_differences.py, open_causes.py) and predicate helpers.

A predicate sees the case (its facts: tags, which variables an in-place op reached through a
view, what produced each variable) and one mismatch (its kind, variable, facts), and says whether
this cause explains it. Predicates are narrow on purpose: an entry that explained too much would
hide new bugs, so each names the mismatch kinds and the facts of its cause.
"""
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Cause:
    key: str                       # short stable name, used in reports
    item: object                   # issue 18 item (1..11), "new", or None for DELIBERATE
    description: str               # what differs (OPEN) / the decision and why (DELIBERATE)
    match: Callable                # (case, mismatch) -> bool


VALUE_KINDS = ("value", "dtype", "shape", "structure", "type")
GRAD_KINDS = ("grad-value", "grad-dtype", "grad-shape", "grad-structure")


def base_var(m):
    """The variable a mismatch is about, without a tuple index (v3[1] -> v3)."""
    return m.var.split("[")[0] if m.var else None


def op_of(case, m):
    """The op that produced the mismatching variable (for in-place targets: the in-place op)."""
    v = base_var(m)
    return case.producer.get(v, (None, ()))[0] if v else None


def wrote(case, m, *ops):
    """Whether one of the ops wrote the mismatching variable (made it, or changed it in place)."""
    v = base_var(m)
    return bool(v) and any(o in ops for o in case.writers.get(v, ()))


def dtypes_of(case, m):
    v = base_var(m)
    return case.producer.get(v, (None, ()))[1] if v else ()


def step_tags(case, m):
    """The facts of the step a raise happened at (all the case's facts when the line is not
    known: gt reports errors of queued work at a sync point)."""
    if m.line is None:
        return case.tags
    return case.line_tags.get(m.line, set())


def at_step(case, m, *tags):
    """Whether the raising step has one of the facts."""
    st = step_tags(case, m)
    return any(t in st for t in tags)


def gt_raised(m):
    return m.kind == "raise" and "gt-raised" in m.facts


def torch_raised(m):
    return m.kind == "raise" and "torch-raised" in m.facts


def forward(m):
    return m.kind in VALUE_KINDS


def grad(m):
    return m.kind in GRAD_KINDS

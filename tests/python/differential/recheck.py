"""Local re-check of a value mismatch: is it only upstream rounding, amplified?

A chain like `v0 = F.cross_entropy(x0, ...)  (bfloat16);  v1 = x2 / v0` can differ a lot in v1
although v0 agreed within tolerance: v0 is a small difference of larger numbers, and dividing by
it amplifies the last-place difference. So before a value mismatch of a computed (not exact)
variable is reported, its own line is run again on torch with gt's values of its operands: if
torch then gives gt's result (within the same tolerance), the op is right and the difference
came from upstream rounding, which was judged where it arose.

Only a plain `name = expr` line whose operands (and itself) were never changed in place is
re-run: otherwise the final values are not the ones the line saw.
"""
import warnings

import numpy as np
import torch

from . import torch_ref


def _tensor(snap):
    _, dtype, shape, values = snap
    return torch.tensor(np.asarray(values).tolist(), dtype=getattr(torch, dtype)).reshape(shape)


def torch_value_from_gt_inputs(case, var, gt_values):
    """torch's snapshot of var recomputed from gt's operand values, or None when it cannot be."""
    if var not in case.defined_at or len(case.writers.get(var, ())) != 1:
        return None
    line = case.lines[case.defined_at[var]]
    if not line.startswith(f"{var} = "):
        return None
    ns = torch_ref.namespace()
    for o in case.deps.get(var, ()):
        snap = gt_values.get(o)
        if snap is None or snap[0] != "tensor" or len(case.writers.get(o, ())) != 1:
            return None
        ns[o] = _tensor(snap)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            if case.torch_emulated:
                with torch_ref.LowPrecisionEmulation():
                    exec(line, ns)
            else:
                exec(line, ns)
        return torch_ref.snapshot(ns[var])
    except Exception:  # noqa: BLE001 - cannot tell: keep the mismatch
        return None

"""Mismatches the reference cannot judge: artefacts of how torch is run here, not differences
between gt and PyTorch. Their cases count as SKIPPED (reported, never failing). Keep this list
short; every entry is a blind spot of the tester.
"""
from .causes import Cause

LIMITS = [
    Cause(
        "emulated-saved-tensors", None,
        "torch ran with float16/bfloat16 emulation (torch_ref.py: its CPU build lacks the "
        "kernel), so its autograd graph saved float32 copies, not the tensors real torch saves: "
        "whether a backward after an in-place op must raise cannot be told (gt raised).",
        lambda c, m: c.torch_emulated and "gt-raised-at-backward" in m.facts),
]

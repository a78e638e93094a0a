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
    Cause(
        "floor-divide-overflow-vectorized", None,
        "x // y or x % y whose quotient overflows float: torch 1.13's vectorized CPU loop gives "
        "NaN (it computes through a / b), its scalar loop (short tensors, 0-d) follows fmod as "
        "gt does; which one torch takes depends on the tensor's length, so the value cannot be "
        "judged.",
        lambda c, m: (m.kind == "value" and "torch-nan-gt-not" in m.facts
                      and c.producer.get(m.var.split("[")[0], (None,))[0]
                      in ("floor_divide", "remainder"))),
    Cause(
        "matmul-fused-multiply-add", None,
        "A float16/bfloat16 matmul whose float32 dot product adds an infinity to a product that "
        "overflows float32: OpenBLAS's fused multiply-add keeps the product exact (inf + "
        "finite = inf), torch's own CPU kernel rounds it to inf first (inf - inf = NaN). Both "
        "are float32 accumulation; which one a backend takes is not a PyTorch semantic.",
        lambda c, m: (m.kind in ("value", "grad-value")
                      and m.facts & {"torch-nan-gt-not", "gt-nan-torch-not"}
                      and c.has("op:matmul")
                      and any(d in ("float16", "bfloat16")
                              for d in c.producer.get(m.var.split("[")[0], (None, ()))[1]))),
]

"""Mismatches the reference cannot judge: artefacts of how torch is run here, not differences
between gt and PyTorch. Their cases count as SKIPPED (reported, never failing). Keep this list
short; every entry is a blind spot of the tester.
"""
from .causes import Cause, wrote

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
        "pow-exponent-rounded-vectorized", None,
        "x ** n with a Python int n float32 cannot hold (|n| >= 2**24): gt keeps n exact (the "
        "power is computed in double), so an odd n gives a negative base's power its sign; "
        "torch 1.13's scalar CPU loop (short tensors) does the same, but its vectorized loop "
        "(8 elements and more) rounds n to float32 first, making (-1) ** -2147483649 1 there. "
        "Which one torch takes depends on the tensor's length, so the value cannot be judged.",
        lambda c, m: (c.has("op:pow", "scalar:int-inexact-float")
                      and (m.kind == "value" and wrote(c, m, "pow") or m.kind == "grad-value"))),
    Cause(
        "emulated-pow-exponent-rounding", None,
        "float16/bfloat16 pow run in emulation (torch_ref.py): torch's backward computes "
        "exponent - 1 on the float32 copy, where a native 16-bit kernel (gt's, torch's CUDA "
        "one) rounds it to the dtype (5.96e-08 - 1 is -1.0 in float16): whether a negative "
        "base's power is NaN or finite there cannot be told.",
        lambda c, m: (c.torch_emulated and m.kind == "grad-value" and c.has("op:pow")
                      and m.facts & {"torch-nan-gt-not", "gt-nan-torch-not"})),
    Cause(
        "emulated-scalar-rounding", None,
        "A float16/bfloat16 op torch's CPU build lacks (torch_ref.py emulates it in float32) "
        "with a Python scalar the low-precision dtype cannot hold (0.1, 2**63): the emulation "
        "uses the scalar unrounded, so whether torch would round it first, as its own mul "
        "does, cannot be told.",
        lambda c, m: (c.torch_emulated and m.kind in ("value", "grad-value")
                      and c.has_any("scalar:inexact-in-dtype", "scalar:int-outside-int32",
                                    "scalar:int-outside-int64", "scalar:outside-lowp",
                                    "scalar:int-inexact-float"))),
    Cause(
        "emulated-zero-dim-operand", None,
        "A case torch_ref.py replays under its float16/bfloat16 emulation (torch's CPU build lacks "
        "one of its kernels) in which a 0-d tensor of a wider float dtype meets a low-precision "
        "one: the emulation computes with the 0-d value unrounded, torch itself rounds it to the "
        "low-precision dtype first (as gt does), so the emulated value is not torch's.",
        lambda c, m: (c.torch_emulated and m.kind in ("value", "grad-value")
                      and c.has("0d-promotion")
                      and c.has_any("dtype:float16", "dtype:bfloat16"))),
    Cause(
        "rdiv-reciprocal-overflow", None,
        "number / x with a subnormal x: torch 1.13's Tensor.__rdiv__ is x.reciprocal() * number, "
        "and 1 / x overflows to inf where the quotient is finite (0 / 1e-45 is NaN there, "
        "1e-10 / 1e-39 inf); gt divides. The artefact is torch's Python operator, not a value "
        "to compare with.",
        lambda c, m: (c.has("rdiv-subnormal")
                      and (m.kind == "value" and wrote(c, m, "div") or m.kind == "grad-value"))),
    Cause(
        "sub-alpha-int64-min", None,
        "x.sub_(y, alpha=-2**63): torch 1.13 calls add with -alpha, and -(-2**63) wraps to "
        "-2**63 in int64, so it adds where it should subtract; gt subtracts. A wrapped scalar "
        "is torch's artefact, not a value to compare with.",
        lambda c, m: c.has("sub-alpha-int64-min") and m.kind in ("value", "grad-value")),
    Cause(
        "var-empty-dims-backward", None,
        "var / std over dim=() (all elements, as in gt): torch 1.13's forward reduces "
        "everything but its backward counts the elements over no dims (1), so it divides by "
        "1 - correction = 0 and gives +-inf. A torch bug, not a value to compare with.",
        lambda c, m: (c.has("reduce-empty-dims") and c.has_any("op:var", "op:std")
                      and m.kind == "grad-value")),
    Cause(
        "layer-norm-welford-overflow", None,
        "layer_norm of a row whose mean exceeds ~1.8e19 in magnitude: torch 1.13's CPU kernel "
        "combines its Welford chunks with m2 += delta * delta * c * m0, and on the first "
        "chunk (m0 = 0) delta * delta overflows float32, so inf * 0 makes the whole row NaN. "
        "That NaN is an artefact of the kernel, not a value to compare with.",
        lambda c, m: ("layer-norm-large" in c.tags and "torch-nan-gt-not" in m.facts
                      and m.kind in ("value", "grad-value"))),
    Cause(
        "matmul-accumulation-order", None,
        "A matmul whose dot products overflow float32 part way (an infinity met by a product "
        "or partial sum that overflows): whether the result is inf or NaN depends on the order "
        "and fusing of the accumulation (OpenBLAS's blocking and fused multiply-add for gt, "
        "torch's own kernel or BLAS build), not on PyTorch semantics.",
        lambda c, m: (m.kind in ("value", "grad-value")
                      and m.facts & {"torch-nan-gt-not", "gt-nan-torch-not"}
                      and c.has("op:matmul")
                      and (m.kind == "grad-value" or wrote(c, m, "matmul")))),
]

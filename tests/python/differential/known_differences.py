"""DELIBERATE differences from PyTorch: each a decision, with the reason.

This table is mirrored in README.md ("Known differences from PyTorch"); change both together.
Ops gt does not implement at all are not generated (so not listed here); an entry is a place
where gt implements the op and chose other semantics on purpose.
"""
from .causes import Cause, at_step, gt_raised, torch_raised

DELIBERATE = [
    Cause(
        "negative-slice-step", None,
        "t[::-1] (a negative slice step) reverses, as numpy and Python sequences do: gt's "
        "indexing takes slices with any step (python/src/indexing.cpp), and its views take "
        "negative strides (a write through t[::-1] reaches t). torch refuses negative steps "
        "because its strided views cannot have negative strides.",
        lambda c, m: torch_raised(m) and at_step(c, m, "negative-slice-step")),
    Cause(
        "int32-class-targets", None,
        "cross_entropy / nll_loss take int32 class indices as well as int64: gt takes int32 "
        "wherever it takes int64 indices (t[index], index_select, gather, embedding); torch's "
        "nll_loss insists on int64.",
        lambda c, m: torch_raised(m) and at_step(c, m, "int32-class-targets")),
    Cause(
        "float-class-targets", None,
        "cross_entropy / nll_loss take floating class indices ([N] labels against [N, C] "
        "logits, converted to int64): the original GT's gt.tensor made float32 labels and "
        "scripts written for it pass them, so they must work. torch insists on an integer "
        "dtype (expected scalar type Long). Floating targets of the input's shape are class "
        "probabilities in both.",
        lambda c, m: torch_raised(m) and at_step(c, m, "ce-float-class-targets")),
    Cause(
        "var-without-degrees-of-freedom-grad", None,
        "The gradient of a variance with no degrees of freedom (n - correction <= 0: the value "
        "is NaN) is NaN in gt for every shape. torch gives +-inf for a 0-d input and NaN for "
        "one element along a dim: the same math, two answers.",
        lambda c, m: (m.kind == "grad-value" and c.has("op:var")
                      and "gt-nan-torch-not" in m.facts)),
    Cause(
        "masked-fill-overlapping-view", None,
        "masked_fill_ into an expanded view (several elements sharing one memory location) "
        "raises in gt, as every in-place op does; torch 1.13's masked_fill_ alone skips that "
        "check and writes, so which of the aliased writes lands depends on its loop order.",
        lambda c, m: gt_raised(m) and at_step(c, m, "inplace-overlapping-view")
        and at_step(c, m, "op:masked_fill_")),
    Cause(
        "inplace-alpha-opmath-grad", None,
        "x.add_(y, alpha=a) / sub_ on a float16/bfloat16 x computes a * y in float32 (torch's "
        "opmath, as its forward does), and so does its backward: the gradient reaching y is "
        "a * grad in float32. torch's backward multiplies the float16 gradient by a first, "
        "which overflows to inf when |a * grad| > 65504. gt keeps the gradient of the math it "
        "ran.",
        lambda c, m: (m.kind == "grad-value" and c.has("inplace-alpha")
                      and "torch-inf-gt-finite" in m.facts)),
    Cause(
        "softmax-posinf-row-grad", None,
        "softmax / log_softmax of a row holding +inf: the row's values are NaN in both; the "
        "gradient reaching the row's finite elements is finite in gt (the limit of the "
        "formula) and NaN in torch (its backward multiplies by the NaN output). Propagating "
        "the NaN would cost extra ops in every softmax, the training path's hottest "
        "composite, for a loss that is NaN either way.",
        lambda c, m: (m.kind == "grad-value" and "softmax-posinf" in c.tags
                      and "torch-nan-gt-not" in m.facts)),
    Cause(
        "inplace-on-saved-tensor", None,
        "Which tensors an op saves for its backward is the implementation's choice. gt refuses, "
        "as torch does, a backward that needs a value an in-place op has since modified "
        "(version counters); but its composites (log_softmax = x - logsumexp, ...) save other "
        "tensors than torch's fused kernels, so some programs torch refuses at backward run in "
        "gt, with correct gradients. Refusing them too would mean saving tensors gt does not "
        "need.",
        lambda c, m: ("torch-raised-at-backward" in m.facts
                      and c.has_any("inplace-on-grad-history", "view-inplace"))),
    Cause(
        "bool-index-reduction-size-one", None,
        "argmax / argmin of a bool tensor always raise (torch: not implemented for Bool). torch "
        "skips its dtype check when the reduced dim has one element (no kernel runs), so there "
        "it answers; a program's validity should not depend on a size.",
        lambda c, m: (gt_raised(m) and "not supported for bool" in m.detail
                      and ("argmax" in m.detail or "argmin" in m.detail))),
    Cause(
        "floor-divide-no-gradient", None,
        "floor_divide is piecewise constant: its result does not require grad (its gradient "
        "is 0 almost everywhere), so a backward through it runs; torch marks the result as "
        "requiring grad and raises at backward (no derivative formula).",
        lambda c, m: (torch_raised(m) and "floor_divide" in m.detail
                      and "derivative" in m.detail)),
    Cause(
        "mixed-dtype-matmul-when-empty", None,
        "matmul of two dtypes (or of bool operands) raises whatever the sizes; torch skips "
        "its dtype check when an operand has no elements. A program's validity should not "
        "depend on a size.",
        lambda c, m: (gt_raised(m) and "matmul" in m.detail
                      and ("same dtype" in m.detail or "bool operands" in m.detail))),
    Cause(
        "int8-uint8-promote-int32", None,
        "int8 with uint8 promotes to int32 in gt, int16 in torch: gt has no int16. int32 holds "
        "every such sum and product exactly where int16 would wrap.",
        lambda c, m: m.kind == "dtype" and "gt int32 torch int16" in m.detail),
    Cause(
        "bad-matmul-precision-raises", None,
        "gt.set_float32_matmul_precision of anything but 'highest', 'high' or 'medium' raises "
        "ValueError and changes nothing; torch warns and changes nothing. A typo in a numerics "
        "setting should stop the program. (Not generated by the tester: a setting, not an op; "
        "tests/python/test_matmul_precision.py checks it.)",
        lambda c, m: False),
    Cause(
        "index-range-on-empty", None,
        "An index out of range is an error even when the indexed tensor has no elements "
        "(t[idx], index_select, gather on a 0-size dim): the program is wrong whatever the "
        "sizes. torch skips the check there because it reads nothing.",
        lambda c, m: gt_raised(m) and at_step(c, m, "index-out-of-range-on-empty")),
]

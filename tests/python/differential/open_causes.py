"""OPEN causes: known bugs tracked by issue 18, each with its item number and a predicate.

Mismatches they explain are counted and reported but do not fail the test. The team deletes an
entry when its fix lands; from then on the same mismatch is UNEXPLAINED and fails. Entries with
item "new" were found by this tester and are not in issue 18's list yet.
"""
from .causes import Cause, at_step, dtypes_of, forward, grad, gt_raised, torch_raised, wrote


def _bce_grad(c, m):
    return grad(m) and (
        (c.has("op:binary_cross_entropy_with_logits")
         and c.has_any("bce-logits-zero", "bce-logits-pos-weight"))
        or c.has("op:binary_cross_entropy", "bce-prob-0-or-1"))


def _scalar_rounding(c, m):
    if "int-beyond-2^53" in c.tags and (
            (wrote(c, m, "masked_fill", "clamp") and forward(m))
            or (gt_raised(m) and at_step(c, m, "op:masked_fill", "op:clamp"))):
        return True
    if c.has_any("scalar:int-outside-int32", "masked-fill-scalar:int-outside-int32") \
            and (forward(m) or grad(m)):
        return True
    return (c.has_any("scalar:inexact-in-dtype", "masked-fill-scalar:inexact-in-dtype")
            and any(d in ("float16", "bfloat16") for d in dtypes_of(c, m) + (m.gt_dtype,))
            and m.kind in ("value", "grad-value"))


def _nonfinite_edges(c, m):
    softmax_like = ("softmax", "log_softmax", "logsumexp", "cross_entropy")
    if "softmax-posinf" in c.tags and (wrote(c, m, *softmax_like) or grad(m)):
        return m.kind in ("value", "grad-value")
    if "layer-norm-large" in c.tags and (wrote(c, m, "layer_norm") or grad(m)):
        return m.kind in ("value", "grad-value")
    if "clamp-nan-bound" in c.tags and (wrote(c, m, "clamp") or grad(m)):
        return m.kind in ("value", "grad-value")
    if "reduce-large-f32" in c.tags and m.kind in ("value", "grad-value"):
        return True
    return (c.has_any("cast-nonfinite-to-int", "cast-out-of-range-to-int")
            and m.kind == "value" and wrote(c, m, "cast", "to-python-int", "to-python-item"))


MISSING_ERROR_TAGS = (
    "inplace-cast-back", "matmul-mixed-dtype", "float-only-on-int", "argmax-bool", "abs-bool",
    "masked-fill-value-out-of-range", "scalar:int-outside-int64", "bool-sub", "int-pow-negative",
    "one-hot-empty-neg", "masked-fill-scalar:int-outside-int64",
    "scalar:outside-lowp", "scalar:int-outside-int32", "scalar:int-outside-int64")


def _missing_errors(c, m):
    return torch_raised(m) and at_step(c, m, *MISSING_ERROR_TAGS)


SPURIOUS_ERROR_TAGS = (
    "negative-index-tensor", "var-multi-dim", "logsumexp-multi-dim",
    "index-on-0d", "cat-legacy-empty", "empty-index")


def _spurious_errors(c, m):
    return (gt_raised(m) or m.kind == "error-class") and at_step(c, m, *SPURIOUS_ERROR_TAGS)


OPEN = [
    Cause("bce-gradients", 2,
          "binary_cross_entropy_with_logits gradient wrong at logit 0 (also with pos_weight); "
          "binary_cross_entropy gradient NaN at p = 0 or 1", _bce_grad),
    Cause("scalar-and-int-rounding", 5,
          "int64 masked_fill/clamp go through double; int32 tensor with a Python int outside "
          "int32 saturates; Python scalars are not rounded to float16/bfloat16 first (torch: "
          "x_f16 > 2**62 compares with inf)",
          _scalar_rounding),
    Cause("nonfinite-edge-cases", 6,
          "softmax/log_softmax/logsumexp with +inf in a row, layer_norm with overflowing variance, "
          "clamp(min=nan), overflow in float32 reductions, NaN/out-of-range float->int casts",
          _nonfinite_edges),
    Cause("missing-errors", 9,
          "accepted where torch raises: in-place results that cannot be cast back, mixed-dtype "
          "matmul, float-only ops on int/bool, abs/argmax on bool, out-of-range scalars, - with "
          "bool, int ** negative int, one_hot(empty, -1)", _missing_errors),
    Cause("spurious-errors", 10,
          "raises where torch does not: negative values in t[index_tensor], int(float tensor), "
          "var/logsumexp over a tuple of dims, index_select/index_add on 0-d, cat with a legacy "
          "empty 1-d tensor, empty-index gather/index_add shapes", _spurious_errors),
    # ---- found by this tester, not in issue 18's list yet --------------------------------------
    Cause("extreme-magnitude-grads", "new",
          "gradient formulas overflow or underflow at extreme inputs where torch's do not (gelu "
          "and silu at |x| ~ 3e38 give NaN: g * x before the vanishing factor; div backward "
          "x / (y * y) underflows for a tiny float16 y: torch (x / y) / y)",
          lambda c, m: (m.kind == "grad-value" and "extreme-input" in c.tags and m.facts & {
              "gt-nan-torch-not", "torch-nan-gt-not", "gt-inf-torch-finite",
              "torch-inf-gt-finite", "inf-sign"})),
    Cause("silu-grad-inf-at-zero", "new",
          "silu backward with an infinite incoming gradient at x = 0 is NaN (inf * 0 inside the "
          "composite; torch: inf * silu'(0) = inf)",
          lambda c, m: (m.kind == "grad-value" and "gt-nan-torch-not" in m.facts
                        and c.has("op:silu"))),
    Cause("pow-int-exponent-rounded", "new",
          "x.pow(n) on a float tensor with a Python int n beyond 2**24 rounds n to float32 first, "
          "so an odd n can become even (torch keeps n exact: (-1) ** -2147483649 is -1)",
          lambda c, m: (c.has("op:pow", "scalar:int-inexact-float")
                        and (m.kind == "value" and wrote(c, m, "pow") or m.kind == "grad-value"))),
    Cause("pow-zero-base-grad", "new",
          "the gradient of 0 ** x with respect to a negative x is 0 (torch: -inf, from "
          "0 ** x * log(0))",
          lambda c, m: (m.kind == "grad-value" and "torch-inf-gt-finite" in m.facts
                        and c.has("pow-zero-base"))),
]

"""OPEN causes: known bugs tracked by issue 18, each with its item number and a predicate.

Mismatches they explain are counted and reported but do not fail the test. The team deletes an
entry when its fix lands; from then on the same mismatch is UNEXPLAINED and fails. Entries with
item "new" were found by this tester and are not in issue 18's list yet.
"""
from .causes import Cause, grad, wrote


def _bce_grad(c, m):
    return grad(m) and (
        (c.has("op:binary_cross_entropy_with_logits")
         and c.has_any("bce-logits-zero", "bce-logits-pos-weight"))
        or c.has("op:binary_cross_entropy", "bce-prob-0-or-1"))


OPEN = [
    Cause("bce-gradients", 2,
          "what is left of item 2 (the gradients at logit 0, with pos_weight, and at p = 0 or 1 "
          "are fixed): an infinite upstream gradient into binary_cross_entropy_with_logits "
          "gives NaN (inf - inf between the composite's terms; torch's fused formula: inf)",
          _bce_grad),
    Cause("extreme-magnitude-grads", "new",
          "gradient formulas overflow or underflow at extreme inputs where torch's do not (gelu "
          "and silu at |x| ~ 3e38 give NaN: g * x before the vanishing factor; mse_loss and "
          "pow near float32's limits: torch's fused formulas order the products otherwise)",
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

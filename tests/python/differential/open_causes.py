"""OPEN causes: known bugs, each with its item number (issue 18's, or "new" for one this tester
found) and a predicate.

Mismatches they explain are counted and reported but do not fail the test. The team deletes an
entry when its fix lands; from then on the same mismatch is UNEXPLAINED and fails. The table is
empty: issue 18's last causes were fixed (silu and gelu became ops with torch's gradients,
mse_loss and binary_cross_entropy_with_logits multiply the upstream gradient once, pow keeps
integer exponents exact) or found to be the reference's own inconsistency (reference_limits.py).
A new bug gets an entry here until it is fixed.
"""
from .causes import Cause  # noqa: F401 - the type of an entry

OPEN = []

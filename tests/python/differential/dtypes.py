"""The dtypes gt supports (gt.float32/float64/float16/bfloat16/int32/int64/int8/uint8/bool) and what the tester needs
to know about each: category, limits, how to round a value into it, comparison tolerances.

Tolerances are per dtype of the *result*: rtol is a few units in the last place of the dtype;
atol is the floor for results near zero and is scaled per case by the magnitudes involved
(compare.py), since summation order differs between the two libraries.
"""
import numpy as np

FLOATS = ("float32", "float16", "bfloat16", "float64")
INTS = ("int32", "int64", "int8", "uint8")
ALL = FLOATS + INTS + ("bool",)

# Weights for drawing an input dtype: float32 dominates (the common case), the rest are covered.
WEIGHTS = {"float32": 0.38, "float16": 0.1, "bfloat16": 0.1, "float64": 0.07, "int32": 0.09,
           "int64": 0.12, "int8": 0.03, "uint8": 0.03, "bool": 0.08}

# (rtol, atol, eps) per float dtype. eps scales atol with the case's magnitudes in compare.py.
TOL = {
    "float32": (1e-5, 1e-6, 1.2e-7),
    "float16": (2e-3, 1e-5, 9.8e-4),
    "bfloat16": (1.6e-2, 1e-4, 7.9e-3),
    "float64": (1e-12, 1e-14, 2.3e-16),
}

INT_LIMITS = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1), "int8": (-128, 127),
              "uint8": (0, 255)}
FLOAT_MAX = {"float32": float(np.finfo(np.float32).max), "float16": 65504.0,
             "bfloat16": 3.3895313892515355e38, "float64": float(np.finfo(np.float64).max)}
FLOAT_TINY = {"float32": 1e-45, "float16": 6e-08, "bfloat16": 9.2e-41,
              "float64": 5e-324}  # smallest subnormals


def is_float(name):
    return name in FLOATS


def is_int(name):
    return name in INTS


def category(name):
    """torch's promotion category: 0 bool, 1 integer, 2 floating."""
    return 2 if name in FLOATS else (1 if name in INTS else 0)


def bf16_round(x):
    """float64 values rounded to bfloat16 (round to nearest even), returned as float64."""
    f = np.asarray(x, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = bits.astype(np.uint32).view(np.float32).astype(np.float64)
    return np.where(np.isnan(f), np.nan, out)


def round_to(values, name):
    """Values (float64 array) as the nearest numbers the dtype holds, as float64 / int."""
    v = np.asarray(values, dtype=np.float64)
    if name == "float32":
        with np.errstate(over="ignore"):
            return v.astype(np.float32).astype(np.float64)
    if name == "float16":
        with np.errstate(over="ignore"):
            return v.astype(np.float16).astype(np.float64)
    if name == "bfloat16":
        return bf16_round(v)
    if name == "float64":
        return v
    raise ValueError(name)


def torch_dtype(torch, name):
    return getattr(torch, name)


def name_of(dtype):
    """The dtype name of a gt.dtype or torch.dtype ('float32', ...)."""
    s = str(dtype)
    for p in ("torch.", "gt."):
        if s.startswith(p):
            s = s[len(p):]
    return s

#!/usr/bin/python3
"""Fits the two polynomials of erf_f32 (workerd/kernels/fast_math.h) and prints them as float
literals: P(s) = erf(sqrt(s)) / sqrt(s) on s in [0, b^2] (degree 7), used as erf(x) = x P(x^2)
below |x| = b, and Q(u) = erfc(1/u) exp(1/u^2) on u in [1/4, 1/b] (degree 10), used as
erf(x) = 1 - exp(-x^2) Q(1/|x|) from b to 4. Least squares in relative error at Chebyshev nodes;
prints each fit's largest relative error on a dense grid (double precision; the float
evaluation's own rounding is what tests/unit/cpu/test_fast_math.cpp measures).

    /usr/bin/python3 tools/fit_fast_erf.py            # b = 0.9375, the header's
"""
import sys
from math import erf, erfc, exp, pi, sqrt

import numpy as np


def fit(f, lo, hi, deg, n=4000):
    k = np.arange(n)
    xs = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)
    ys = np.array([f(v) for v in xs])
    w = 1 / np.abs(ys)
    c, *_ = np.linalg.lstsq(np.vander(xs, deg + 1) * w[:, None], ys * w, rcond=None)
    dense = np.linspace(lo, hi, 200001)
    err = np.max(np.abs(np.polyval(c, dense) / np.array([f(v) for v in dense]) - 1))
    return c, err


def main():
    b = float(sys.argv[1]) if len(sys.argv) > 1 else 0.9375
    p, ep = fit(lambda s: erf(sqrt(s)) / sqrt(s) if s > 0 else 2 / sqrt(pi), 0, b * b, 7)
    q, eq = fit(lambda u: erfc(1 / u) * exp(1 / (u * u)), 0.25, 1 / b, 10)
    print(f"P (relative error {ep:.1e}):", ", ".join(f"{v:.9e}f" for v in p))
    print(f"Q (relative error {eq:.1e}):", ", ".join(f"{v:.9e}f" for v in q))


if __name__ == "__main__":
    main()

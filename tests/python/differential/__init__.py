"""Differential tester of `gt` against PyTorch (CPU), issue 18's proof of conformance.

Seeded random programs (short chains of gt/torch ops, optionally ending in a backward pass) are
written once as Python source over two names, ``M`` (the module: gt or torch) and ``F`` (its
nn.functional), run through both libraries, and compared: shapes, dtypes, values (NaN/inf
positions exact, per-dtype tolerances), gradients, and whether each raised. Every mismatch is
classified as DELIBERATE (known_differences.py, mirrored in README.md), OPEN (open_causes.py:
issue 18's known bugs, being fixed) or UNEXPLAINED (a failure, printed with a reproducer).

One responsibility per module:

    dtypes.py             dtype names, per-dtype limits and tolerances
    values.py             random shapes and values (special values, 0-/1-size dims), literals
    scalars.py            Python scalar operands and their facts
    program.py            a case: lines, outputs, facts ("tags"), dependencies, reproducer
    builder.py            grows a case step by step, tracking shapes with eager torch
    ops_*.py              the op families (elementwise, reduce, layout, index, nn, misc, inplace)
    generator.py          picks families and chains steps into a case from a seed
    execute.py            runs lines in a namespace and snapshots the results
    torch_ref.py          runs a case on torch, emulating CPU-missing float16 kernels
    gt_run.py             runs a case on gt
    compare.py            compares two runs into mismatches
    recheck.py            re-runs a mismatching line on gt's inputs (upstream rounding?)
    causes.py             the record type of the two tables, predicate helpers
    known_differences.py  DELIBERATE differences (each a decision with a reason; README.md)
    reference_limits.py   what the torch reference cannot judge (SKIPPED, never failing)
    open_causes.py        OPEN causes (issue 18's items, and new ones) with predicates
    classify.py           mismatch -> DELIBERATE / OPEN / UNEXPLAINED, signatures
    driver.py             runs a seed range and aggregates a report

Entry points: test_differential.py (pytest, a fixed seed budget) and bench/differential.py.
"""

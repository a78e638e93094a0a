"""Matmul, dtype casts, Python-number conversions and creation ops (zeros, ones, full, arange)."""
from . import dtypes as D
from . import values as V


def matmul(b):
    kind = b.rng.random()
    k = int(b.rng.integers(0 if b.p(0.05) else 1, 5))
    m, n = int(b.rng.integers(1, 5)), int(b.rng.integers(1, 5))
    if kind < 0.5:
        sa, sb = (m, k), (k, n)
    elif kind < 0.65:
        sa, sb = (k,), (k,)
    elif kind < 0.75:
        sa, sb = (k,), (k, n)
    elif kind < 0.85:
        sa, sb = (m, k), (k,)
    else:
        bt = int(b.rng.integers(1, 3))
        sa, sb = (bt, m, k), ((bt, k, n) if b.p(0.7) else (k, n))
    if b.p(0.03):
        sb = tuple(d + 1 if i == 0 else d for i, d in enumerate(sb))  # inner sizes differ
    dt = b.rand_dtype(D.FLOATS) if b.p(0.85) else b.rand_dtype()
    a = b.operand(pred=lambda t: tuple(t.shape) == sa, make=lambda: b.new_input(sa, dt))
    c = b.new_input(sb, b.dtype(a) if b.p(0.9) else b.rand_dtype())
    tags = set()
    if b.dtype(a) != b.dtype(c):
        tags.add("matmul-mixed-dtype")
    if "float32" in (b.dtype(a), b.dtype(c)) and max(b.max_abs(a), b.max_abs(c)) > 1e18:
        tags.add("reduce-large-f32")  # products overflow float32 (and a sum of them)
    form = b.choice([f"{a} @ {c}", f"M.matmul({a}, {c})", f"{a}.matmul({c})"]
                    + ([f"{a}.mm({c})"] if len(sa) == len(sb) == 2 else []))
    b.emit(form, "matmul", [a, c], exact=False, tags=tags)


CAST_METHODS = {"float32": "float", "float16": "half", "bfloat16": "bfloat16", "int32": "int",
                "int64": "long", "bool": "bool", "float64": "double", "int8": "char",
                "uint8": "byte"}


def cast(b):
    dst = b.rand_dtype()
    # To an integer or bool dtype only exact values: truncating two float results that differ
    # in the last place can give integers that differ by one.
    x = b.operand(exact=not D.is_float(dst))
    src = b.dtype(x)
    form = b.choice([f"{x}.to(M.{dst})", f"{x}.{CAST_METHODS[dst]}()", f"{x}.type(M.{dst})"])
    tags = set()
    if D.is_float(src) and D.is_int(dst):
        t = b.t(x).detach().double()
        if b.has_nonfinite(x):
            tags.add("cast-nonfinite-to-int")
        lo, hi = D.INT_LIMITS[dst]
        fin = t[t.isfinite()]
        if fin.numel() and bool(((fin < lo) | (fin > hi)).any()):
            tags.add("cast-out-of-range-to-int")
    if D.is_float(src) and D.is_float(dst) and src != dst:
        tags.add("cast-float-narrowing" if D.FLOAT_MAX[dst] < D.FLOAT_MAX[src] else "cast-float")
    # exact unless float -> int of an inexact value near an integer boundary: still exact
    # (truncation of the same value), since the operand itself is compared first.
    b.emit(form, "cast", [x], exact=True, tags=tags)


def to_python(b):
    x = b.operand(pred=lambda t: t.numel() == 1, exact=True,
                  make=lambda: b.new_input(b.choice([(), (1,), (1, 1)])))
    conv = b.choice(["item", "int", "float", "bool"])
    expr = f"{x}.item()" if conv == "item" else f"{conv}({x})"
    tags = set()
    if conv == "int" and b.t(x).dtype.is_floating_point:
        tags.add("int-of-float-tensor")
        if b.has_nonfinite(x):
            tags.add("cast-nonfinite-to-int")
        elif abs(b.max_abs(x)) >= 2**63:
            tags.add("cast-out-of-range-to-int")
    b.emit(expr, "to-python-" + conv, [x], exact=True, tags=tags)


def creation(b):
    """zeros/ones/full/arange and the *_like forms: dtype inference from the fill value and the
    arange bounds (torch: bool -> bool, int -> int64, float -> float32)."""
    r = b.rng.random()
    shape = V.rand_shape(b.rng, 1, 3)
    dims = ", ".join(str(d) for d in shape)
    dt = f", dtype=M.{b.rand_dtype()}" if b.p(0.4) else ""
    tags = set()
    if r < 0.2:
        fn = b.choice(["zeros", "ones"])
        b.emit(f"M.{fn}({dims}{dt})", fn, [], exact=True)
    elif r < 0.45:
        v = b.choice([2, -3, 1.5, True, False, 0.1, 2**40, float("inf"), float("nan"), -0.0])
        tags.add("full-" + type(v).__name__)
        b.emit(f"M.full(({dims},), {V.scalar_literal(v)}{dt})", "full", [], exact=True, tags=tags)
    elif r < 0.7:
        x = b.operand()
        fn = b.choice(["zeros_like", "ones_like"])
        b.emit(f"M.{fn}({x}{dt})", fn, [x], exact=True)
    else:
        start = b.choice([0, 1, -2, 0.5, -1.25])
        end = b.choice([3, 5, 2.5, -4, 7.75])
        step = b.choice([1, 2, 0.5, -1, -0.75, 3])
        if b.p(0.6):
            bounds = [start, end, step]
        elif b.p(0.3):
            bounds = [end]
            start, step = 0, 1
        else:
            bounds = [start, end]
            step = 1
        args = ", ".join(V.scalar_literal(v) for v in bounds)
        if dt and any(i in dt for i in ("int", "bool")) and any(
                isinstance(v, float) and v != int(v) for v in bounds):
            tags.add("arange-int-fractional")
        if (end - start) * step < 0:
            tags.add("arange-empty-range")
        b.emit(f"M.arange({args}{dt})", "arange", [], exact=True, tags=tags)

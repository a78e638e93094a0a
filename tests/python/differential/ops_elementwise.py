"""Elementwise op families: the op table's unary, binary and compare rows (gt._api), in their
method, free-function, operator and nn.functional spellings, with tensor or Python-scalar
operands, plus clamp, where and the integer operators (//, %, ~)."""
import gt

from . import dtypes as D
from . import scalars as S
from . import values as V

API = gt._gt._api
UNARY = list(API["unary"])
BINARY = list(API["binary"])
COMPARE = list(API["compare"])
FUNCTIONAL = set(API["functional"])
EXACT_UNARY = {"neg", "abs", "relu"}  # bit-for-bit the same in any correct implementation
EXACT_BINARY = {"add", "sub", "mul", "div", "maximum", "minimum"}  # IEEE: correctly rounded
OPERATOR = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**"}
CMP_OPERATOR = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _tensor_operand(b, exact=False):
    return b.operand(exact=exact)


def unary(b):
    op = b.choice(UNARY)
    x = _tensor_operand(b)
    forms = [f"{x}.{op}()", f"M.{op}({x})"]
    if op in FUNCTIONAL:
        forms.append(f"F.{op}({x})")
    if op == "neg":
        forms.append(f"-{x}")
    if op == "abs":
        forms.append(f"abs({x})")
    tags = {"abs-bool"} if op == "abs" and b.dtype(x) == "bool" else set()
    b.emit(b.choice(forms), op, [x], exact=op in EXACT_UNARY, tags=tags)


def _partner(b, x):
    """A second tensor operand broadcastable with x: same dtype mostly, sometimes another one;
    now and then 0-d (0-d tensors take part in promotion differently from dimensioned ones)."""
    shape = tuple(b.t(x).shape)
    if b.p(0.15):
        shape = ()
    else:
        shape = V.broadcast_partner(b.rng, shape)
    dt = b.dtype(x) if b.p(0.6) else b.rand_dtype()
    y = b.new_input(shape, dt)
    return (y, x) if b.p(0.3) else (x, y)


def promotion_facts(b, names):
    """Facts on how the operands' dtypes meet: a 0-d tensor beside a dimensioned one of another
    dtype ("0d-promotion": torch decides by category first, so a 0-d int64 does not widen an
    int32 tensor and a 0-d float32 does not widen a float16 one)."""
    ts = [b.t(n) for n in names if b.is_tensor(n)]
    dims = [t for t in ts if t.dim() > 0]
    zero = [t for t in ts if t.dim() == 0]
    tags = set()
    if dims and zero and any(z.dtype != d.dtype for z in zero for d in dims):
        tags.add("0d-promotion")
    if len({t.dtype for t in ts}) > 1:
        tags.add("mixed-dtypes")
    return tags


def binary(b):
    op = b.choice(BINARY)
    x = _tensor_operand(b)
    dt = b.dtype(x)
    if op in ("maximum", "minimum") or b.p(0.55):
        a, c = _partner(b, x)
        forms = [f"{a}.{op}({c})", f"M.{op}({a}, {c})"]
        if op in OPERATOR:
            forms.append(f"{a} {OPERATOR[op]} {c}")
        tags = promotion_facts(b, [a, c])
        if op in ("maximum", "minimum") and (b.has_nonfinite(a, "nan") or b.has_nonfinite(c, "nan")):
            tags.add("nan-in-maximum")
        if op == "pow" and b.dtype(a) == b.dtype(c) == "bool":
            tags.add("pow-bool")
        if op == "sub" and "bool" in (b.dtype(a), b.dtype(c)):
            tags.add("bool-sub")
        if op == "pow" and b.dtype(c) == "bool":
            b.no_backward = True  # torch 1.13's pow backward computes exponent - 1: fails on bool
        if op == "pow" and b.t(a).numel() and bool((b.t(a) == 0).any()):
            tags.add("pow-zero-base")
        b.emit(b.choice(forms), op, [a, c], exact=op in EXACT_BINARY, tags=tags)
        return
    lit, v, tags = S.draw(b, dt)
    forms = [f"{x}.{op}({lit})", f"M.{op}({x}, {lit})"]
    if op in OPERATOR:
        left = f"({lit})" if lit.startswith("-") else lit  # -2 ** x is -(2 ** x)
        forms += [f"{x} {OPERATOR[op]} {lit}", f"{left} {OPERATOR[op]} {x}"]
    if op == "sub" and (dt == "bool" or isinstance(v, bool)):
        tags.add("bool-sub")
    if dt == "bool" and isinstance(v, bool):
        tags.add("bool-with-pybool")
    if op == "pow" and D.is_int(dt) and isinstance(v, int) and not isinstance(v, bool) and v < 0:
        tags.add("int-pow-negative")
    if op == "pow" and dt == "bool" and isinstance(v, bool):
        tags.add("pow-bool")
    form = b.choice(forms)
    if op == "pow" and v == 0 and form.startswith(("0 ", "0.0 ", "(-0.0)", "False")):
        tags.add("pow-zero-base")
    # torch computes `number / tensor` as reciprocal(tensor) * number: not correctly rounded,
    # and 1 / a subnormal overflows to inf where the quotient is finite.
    exact = op in EXACT_BINARY and not form.endswith(f"/ {x}")
    if form.endswith(f"/ {x}") and b.has_subnormal(x):
        tags.add("rdiv-subnormal")
    b.emit(form, op, [x], exact=exact, tags=tags)


def compare(b):
    op = b.choice(COMPARE)
    x = b.operand(exact=True)
    forms = []
    if b.p(0.5):
        a, c = _partner(b, x)
        tags = promotion_facts(b, [a, c])
        operands = [a, c]
        forms.append(f"M.{op}({a}, {c})")
    else:
        c, v, tags = S.draw(b, b.dtype(x))
        a = x
        operands = [a]
    forms += [f"{a} {CMP_OPERATOR[op]} {c}", f"{a}.{op}({c})"]
    b.emit(b.choice(forms), op, operands, exact=True, tags=tags)


def clamp(b):
    x = b.operand()
    dt = b.dtype(x)

    def bound():
        r = b.rng.random()
        if r < 0.08:
            return "float('nan')"
        if r < 0.5 and D.is_int(dt):
            return str(int(b.rng.integers(-5, 6)))
        return V.scalar_literal(float(b.rng.integers(-16, 17)) / 4)

    lo, hi = (bound() if b.p(0.7) else None), (bound() if b.p(0.5) else None)
    if lo is None and hi is None:
        lo = bound()
    args = ", ".join(a for a in (f"min={lo}" if lo else "", f"max={hi}" if hi else "") if a)
    tags = set()
    if "nan" in args:
        tags.add("clamp-nan-bound")
    if dt == "bool":
        tags.add("clamp-bool")
    if D.is_int(dt):
        tags.add("clamp-int")
        if b.max_abs(x) > 2**53:
            tags.add("int-beyond-2^53")
    form = b.choice([f"{x}.clamp({args})", f"M.clamp({x}, {args})"])
    b.emit(form, "clamp", [x], exact=True, tags=tags)


def where(b):
    cond = b.operand(pred=lambda t: str(t.dtype) == "torch.bool", exact=True,
                     make=lambda: b.new_input(dtype="bool"))
    shape = tuple(b.t(cond).shape)
    x = b.new_input(V.broadcast_partner(b.rng, shape)) if b.p(0.5) else b.operand()
    tags = set()
    if b.p(0.3):
        lit, v, stags = S.draw(b, b.dtype(x), p_special=0.1)
        tags |= stags
        expr = b.choice([f"M.where({cond}, {x}, {lit})", f"M.where({cond}, {lit}, {x})"])
        ops = [cond, x]
    else:
        y = b.new_input(V.broadcast_partner(b.rng, shape) if b.p(0.8) else (),
                        b.dtype(x) if b.p(0.6) else None)
        expr = f"M.where({cond}, {x}, {y})"
        ops = [cond, x, y]
        tags |= promotion_facts(b, [x, y])
    b.emit(expr, "where", ops, exact=True, tags=tags)


def int_operators(b):
    """//, % and ~ (torch has them on integer tensors; // and % on floats too)."""
    kind = b.choice(["floordiv", "mod", "invert"])
    if kind == "invert":
        x = b.operand(pred=lambda t: not t.dtype.is_floating_point,
                      make=lambda: b.new_input(dtype=b.choice(["int32", "int64", "bool"])))
        tags = {"invert-int"} if b.dtype(x) != "bool" else set()
        b.emit(f"~{x}", "invert", [x], exact=True, tags=tags)
        return
    x = b.operand(exact=True)
    sym = "//" if kind == "floordiv" else "%"
    # Integer divisors are positive: torch 1.13's CPU kernels trap (SIGFPE, killing this
    # process) on an integer division by zero, and on INT_MIN // -1.
    int_div = not b.t(x).dtype.is_floating_point
    if b.p(0.5):
        if int_div:
            v = int(b.rng.integers(1, 5))
            lit, tags = str(v), S.facts(v, b.dtype(x))
        else:
            lit, v, tags = S.draw(b, b.dtype(x), p_special=0.1, allow_bool=False)
        b.emit(f"{x} {sym} {lit}", kind, [x], exact=False, tags=tags)
    else:
        dt = "int64" if b.dtype(x) == "bool" else b.dtype(x)
        y = b.new_input(V.broadcast_partner(b.rng, tuple(b.t(x).shape)), dt,
                        kind="positive" if int_div else "any")
        b.emit(f"{x} {sym} {y}", kind, [x, y], exact=False)


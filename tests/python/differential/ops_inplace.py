"""In-place families: add_/sub_/mul_/div_ (also with alpha), the augmented operators (**= too),
the unary table's in-place forms (relu_, exp_, ...), clamp_, masked_fill_, fill_/zero_/copy_, applied to
inputs, to results and to views of them (reshape/view, t/transpose/permute, squeeze/unsqueeze,
detach, basic indexing): in torch a view shares its base's storage, so an in-place op through it
changes the base too; the builder notes every variable that sees such a change."""
from . import dtypes as D
from . import scalars as S
from . import values as V

ARITH = {"add_": "+=", "sub_": "-=", "mul_": "*=", "div_": "/="}
UNARY_INPLACE = ["neg_", "exp_", "log_", "sqrt_", "abs_", "relu_", "sigmoid_", "tanh_", "erf_"]


def _view_of(b, x):
    """A view of x (a new variable) in one of torch's aliasing spellings."""
    t = b.t(x)
    forms = [f"{x}.detach()", f"{x}.reshape(-1)", f"{x}.view({', '.join(str(d) for d in t.shape) or '()'})",
             f"{x}.unsqueeze(0)", f"{x}.squeeze()"]
    if t.dim() >= 1:
        forms += [f"{x}[{int(b.rng.integers(0, t.shape[0]))}]" if t.shape[0] else f"{x}[:]",
                  f"{x}[1:]", f"{x}[..., :1]"]
    if t.dim() == 2:
        forms += [f"{x}.t()", f"{x}.T"]
    if t.dim() >= 2:
        forms += [f"{x}.transpose(0, 1)", f"{x}.permute({', '.join(str(i) for i in reversed(range(t.dim())))})"]
    form = b.choice(forms)
    tags = {"view-of-noncontiguous"} if ".view(" in form and not t.is_contiguous() else set()
    return b.emit(form, "view", [x], exact=True, tags=tags)


def _promotes_out_of(b, target, operand_dt=None, scalar=None, op=None):
    """Whether torch's result dtype of target <op> operand is wider than target's (then the
    in-place op must raise: the result cannot be cast back)."""
    dt = b.dtype(target)
    if op == "div_" and not D.is_float(dt):
        return True
    if scalar is not None:
        if isinstance(scalar, bool):
            return False
        if isinstance(scalar, float):
            return not D.is_float(dt)
        return dt == "bool"
    if operand_dt is None:
        return False
    return D.category(operand_dt) > D.category(dt) and b.t(target).dim() >= 0


def inplace(b):
    x = b.operand(pred=lambda t: not (t.requires_grad and t.grad_fn is None) or b.p(0.05),
                  make=lambda: b.new_input(grad=False))
    if b.p(0.45):
        v = _view_of(b, x)
        if v is None:
            return
        target = v if b.p(0.75) else x
    else:
        target = x
    t = b.t(target)
    kind = b.rng.random()
    tags = set()
    if kind < 0.75:
        op = b.choice(list(ARITH))
        if b.p(0.5):
            lit, val, tags = S.draw(b, b.dtype(target), p_special=0.15)
            other, odt = lit, None
            operands = []
        else:
            shape = V.broadcast_partner(b.rng, tuple(t.shape), p_incompatible=0.02)
            if len(shape) > t.dim():
                shape = shape[len(shape) - t.dim():]
            other = b.new_input(shape, b.dtype(target) if b.p(0.7) else None)
            odt, val, operands = b.dtype(other), None, [other]
        if _promotes_out_of(b, target, odt, val, op):
            tags.add("inplace-cast-back")
        if op == "sub_" and "bool" in (b.dtype(target), odt or ("bool" if isinstance(val, bool)
                                                                 else "")):
            tags.add("bool-sub")
        stmt = (f"{target}.{op}({other})" if b.p(0.5) else f"{target} {ARITH[op]} {other}")
        exact = True
        if op in ("add_", "sub_") and operands and b.p(0.2):
            alpha, aval, atags = S.draw(b, b.dtype(target), p_special=0.1)
            stmt = f"{target}.{op}({other}, alpha={alpha})"
            tags |= atags | {"inplace-alpha"}
            if _promotes_out_of(b, target, scalar=aval):
                tags.add("inplace-cast-back")
            exact = False  # torch fuses self + alpha * other (fused multiply-add): 1 ulp apart
            if op == "sub_" and not isinstance(aval, bool) and aval == -2**63:
                tags.add("sub-alpha-int64-min")
        b.emit_inplace(stmt, op, target, operands, exact=exact, tags=tags)
    elif kind < 0.80:
        _unary_inplace(b, target)
    elif kind < 0.85:
        lit, val, tags = S.draw(b, b.dtype(target), p_special=0.15)
        b.emit_inplace(f"{target}.fill_({lit})", "fill_", target, [], exact=True, tags=tags)
    elif kind < 0.92:
        b.emit_inplace(f"{target}.zero_()", "zero_", target, [], exact=True)
    else:
        src = b.new_input(V.broadcast_partner(b.rng, tuple(t.shape), 0.02)
                          if b.p(0.3) else tuple(t.shape), b.dtype(target) if b.p(0.7) else None)
        b.emit_inplace(f"{target}.copy_({src})", "copy_", target, [src], exact=True)


def _unary_inplace(b, target):
    """x.relu_() and the like, clamp_, masked_fill_ and pow_ / **=: the out-of-place op written
    back (a result that cannot be cast back to x's dtype raises in both)."""
    kind = b.rng.random()
    if kind < 0.55:
        op = b.choice(UNARY_INPLACE)
        b.emit_inplace(f"{target}.{op}()", op, target, [], tags={"inplace-unary"})
    elif kind < 0.75:
        lit, _, tags = S.draw(b, b.dtype(target), p_special=0.15, allow_bool=False)
        bound = "min" if b.p(0.5) else "max"
        b.emit_inplace(f"{target}.clamp_({bound}={lit})", "clamp_", target, [], exact=True,
                       tags=tags | {"inplace-unary"})
    elif kind < 0.9:
        t = b.t(target)
        mask = b.new_input(tuple(t.shape), "bool")
        lit, _, tags = S.draw(b, b.dtype(target), p_special=0.15)
        b.emit_inplace(f"{target}.masked_fill_({mask}, {lit})", "masked_fill_", target, [mask],
                       exact=True, tags=tags | {"inplace-unary"})
    else:
        e = b.choice([2, 3, 0.5, -1, 2.0])
        stmt = f"{target}.pow_({e})" if b.p(0.5) else f"{target} **= {e}"
        b.emit_inplace(stmt, "pow_", target, [], tags={"inplace-unary"})

"""Reduction families: the op table's reduce rows (sum, mean, max, min, argmax, argmin) with no
dim, one dim, a tuple of dims, an empty tuple and keepdim; var / std, logsumexp, cumsum and the
logical any / all."""
import torch

import gt


REDUCE = list(gt._gt._api["reduce"])
INDEX_RESULT = {"argmax", "argmin"}


# softmax-like backward is s * (g - sum(g * s)): a difference of nearly equal terms where one
# probability is close to 1, so its absolute rounding error is several times the usual.
SOFTMAX_BOOST = 8.0


def rand_dim(b, x, p_bad=0.03):
    """A dim of x in torch's range (negative half the time); rarely one out of range."""
    n = max(b.t(x).dim(), 1)
    if b.p(p_bad):
        return n
    d = int(b.rng.integers(0, n))
    return d - n if b.p(0.4) else d


def _dims_arg(b, x):
    """(source of the dim argument or None, facts)."""
    t = b.t(x)
    r = b.rng.random()
    if r < 0.3:
        return None, set()
    if r < 0.75 or t.dim() < 2:
        if r > 0.97:
            return b.choice(["()", "[]"]), {"reduce-empty-dims"}
        return str(rand_dim(b, x)), set()
    k = int(b.rng.integers(2, t.dim() + 1))
    dims = sorted(b.rng.choice(t.dim(), k, replace=False).tolist())
    dims = [d - t.dim() if b.p(0.3) else d for d in dims]
    return "(" + ", ".join(str(d) for d in dims) + ")", {"reduce-multi-dim"}


def _ties_along(t, dim):
    """Whether some slice along dim holds its max (or min) more than once."""
    if t.numel() == 0 or t.dim() == 0:
        return False
    t = t.detach().double()
    mx = t.amax(dim=dim, keepdim=True)
    mn = t.amin(dim=dim, keepdim=True)
    return bool(((t == mx).sum(dim) > 1).any() or ((t == mn).sum(dim) > 1).any())


def table_reduce(b):
    op = b.choice(REDUCE)
    x = b.operand(exact=op in INDEX_RESULT)
    t = b.t(x)
    dim, tags = _dims_arg(b, x)
    keep = b.p(0.3)
    if dim is None:
        expr = b.choice([f"{x}.{op}()", f"M.{op}({x})"])
    else:
        kw = f"dim={dim}" + (", keepdim=True" if keep else "")
        expr = b.choice([f"{x}.{op}({kw})", f"M.{op}({x}, {kw})"])
    if op in ("max", "min") and dim is not None and "reduce-multi-dim" not in tags \
            and "reduce-empty-dims" not in tags:
        tags.add("max-min-dim")
        try:
            if _ties_along(t, int(dim)):
                tags.add("max-min-dim-ties")
        except (IndexError, RuntimeError):
            pass
    if op in ("argmax", "argmin", "max", "min") and dim is not None and dim[0] in "([":
        tags.add("index-reduce-tuple-dims")  # torch takes one int dim for these
    if op == "mean" and not t.dtype.is_floating_point:
        tags.add("float-only-on-int")
    if op in INDEX_RESULT and t.dtype == torch.bool:
        tags.add("argmax-bool")
    if t.dtype == torch.float32 and b.max_abs(x) > 1e37:
        tags.add("reduce-large-f32")
    exact = op in ("max", "min", "argmax", "argmin") or not t.dtype.is_floating_point
    name = b.emit(expr, op, [x], exact=exact, tags=tags)
    if name is not None and "max-min-dim" in tags:
        # torch gives (values, indices), gt the values (issue 18 item 4): continue the chain on
        # the values in a spelling both libraries run.
        b.emit(f"{name} if isinstance({name}, M.Tensor) else {name}[0]", "values-of", [name],
               exact=True)


def var(b):
    x = b.operand(pred=lambda t: t.dtype.is_floating_point or b.p(0.1))
    t = b.t(x)
    tags = set()
    r = b.rng.random()
    if r < 0.25:
        args = ""
    elif r < 0.85:
        args = str(rand_dim(b, x))
        if b.p(0.4):
            args += ", " + b.choice(["True", "False"])
            if b.p(0.5):
                args += ", True"
    else:
        dims, dim_tags = _dims_arg(b, x)
        tags |= dim_tags
        args = dims or "0"
        if args[0] in "([":
            tags.add("var-multi-dim")
    if not t.dtype.is_floating_point:
        tags.add("float-only-on-int")
    if t.dtype == torch.float32 and b.max_abs(x) > 1e18:
        tags.add("reduce-large-f32")
    # The unbiased variance of one element is NaN; its gradient in torch 1.13 is inf (0-d) or a
    # failing backward ("VarBackward0 returned an invalid gradient") -- a torch bug, not
    # semantics, so such cases do not run backward.
    if "False" not in args and t.numel() and _reduced_size(t, args) <= 1:
        b.no_backward = True
    op = b.choice(["var", "var", "std"])
    if op == "std" and t.numel() and "False" in args:
        b.no_backward = True  # d sqrt at a zero deviation: torch 1.13's std backward differs
    b.emit(b.choice([f"{x}.{op}({args})", f"M.{op}({x}{', ' if args else ''}{args})"]), op, [x],
           tags=tags)


def logical(b):
    """any / all over everything or one dim (torch 1.13 takes one int dim)."""
    op = b.choice(["any", "all"])
    x = b.operand(exact=True)
    if b.p(0.4):
        expr = b.choice([f"{x}.{op}()", f"M.{op}({x})"])
    else:
        keep = ", keepdim=True" if b.p(0.3) else ""
        expr = b.choice([f"{x}.{op}(dim={rand_dim(b, x)}{keep})",
                         f"M.{op}({x}, {rand_dim(b, x)}{keep})"])
    b.emit(expr, op, [x], exact=True)


def _reduced_size(t, args):
    """How many elements each var() output reduces over (args: var's argument source)."""
    head = args.split(",")[0].strip() if args and not args.startswith("(") else ""
    if not args or args.startswith("("):
        return t.numel()
    try:
        d = int(head)
        return t.shape[d] if t.dim() else 1
    except (ValueError, IndexError):
        return 2


def logsumexp(b):
    x = b.operand(pred=lambda t: t.dtype.is_floating_point or b.p(0.1))
    tags = set()
    if b.p(0.15) and b.t(x).dim() >= 2:
        dim = "(0, 1)"
        tags.add("logsumexp-multi-dim")
    else:
        dim = str(rand_dim(b, x))
    keep = ", True" if b.p(0.3) else ""
    if not b.t(x).dtype.is_floating_point:
        tags.add("float-only-on-int")
    if b.has_nonfinite(x, "posinf"):
        tags.add("softmax-posinf")
    b.emit(f"{x}.logsumexp({dim}{keep})", "logsumexp", [x], tags=tags, tol_boost=SOFTMAX_BOOST)


def cumsum(b):
    x = b.operand()
    d = rand_dim(b, x)
    b.emit(b.choice([f"{x}.cumsum({d})", f"M.cumsum({x}, {d})"]), "cumsum", [x],
           exact=not b.t(x).dtype.is_floating_point)


def sort(b):
    """sort's values or indices (stable, so the permutation is defined on ties) and msort."""
    x = b.operand()
    d = rand_dim(b, x)
    desc = "True" if b.p(0.5) else "False"
    # An inexact operand may order two nearly equal values differently: only its values compare.
    part = b.choice(["values", "indices"]) if b.exact.get(x, True) else "values"
    form = b.choice([f"{x}.sort(stable=True, dim={d}, descending={desc}).{part}",
                     f"M.sort({x}, stable=True, dim={d}, descending={desc}).{part}"])
    if b.p(0.15) and b.t(x).dim() >= 1:
        form, part = f"M.msort({x})", "values"
    b.emit(form, "sort", [x], exact=True)

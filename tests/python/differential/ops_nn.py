"""nn.functional families: softmax / log_softmax, gelu, silu, layer_norm, linear, dropout (p=0)
and the losses (mse_loss, binary_cross_entropy(_with_logits), cross_entropy, nll_loss)."""
import numpy as np
import torch

from . import dtypes as D
from . import values as V
from .ops_reduce import SOFTMAX_BOOST, rand_dim

REDUCTIONS = ["mean", "sum", "none"]


def float_operand(b, p_other=0.1, pred=None, **kw):
    """An operand for a float-only op: a float tensor, or rarely a non-empty one of any dtype
    (error behaviour; torch does not refuse an empty integer tensor, having nothing to run)."""
    anyd = b.p(p_other)
    return b.operand(pred=lambda t: (t.dtype.is_floating_point or (anyd and t.numel() > 0))
                     and (pred is None or pred(t)), **kw)


def _float_only(b, x, tags):
    if not b.t(x).dtype.is_floating_point:
        tags.add("float-only-on-int")
    return tags


def softmax(b):
    x = float_operand(b)
    op = b.choice(["softmax", "log_softmax"])
    d = rand_dim(b, x)
    tags = _float_only(b, x, set())
    if b.has_nonfinite(x, "posinf"):
        tags.add("softmax-posinf")
    if b.t(x).dtype == torch.float32 and b.max_abs(x) > 1e37:
        tags.add("reduce-large-f32")
    expr = b.choice([f"{x}.{op}({d})", f"M.{op}({x}, {d})", f"F.{op}({x}, {d})",
                     f"F.{op}({x}, dim={d})"])
    b.emit(expr, op, [x], tags=tags, tol_boost=SOFTMAX_BOOST)


def activation(b):
    x = float_operand(b)
    op = b.choice(["gelu", "gelu-tanh", "silu"])
    tags = _float_only(b, x, set())
    if op == "gelu-tanh":
        expr = f"F.gelu({x}, approximate='tanh')"
    else:
        expr = f"F.{op}({x})"
    b.emit(expr, op.split("-")[0], [x], tags=tags)


def layer_norm(b):
    # At least two normalized elements: over one, x - mean is 0 exactly, which torch returns as
    # rounding noise that a later pow or division would blow up.
    x = float_operand(b, pred=lambda t: t.dim() >= 1 and t.shape[-1] >= 2)
    t = b.t(x)
    k = int(b.rng.integers(1, t.dim() + 1))
    shape = tuple(t.shape[t.dim() - k:])
    args = [x, str(list(shape)) if b.p(0.5) else str(shape)]
    ops = [x]
    dt = b.dtype(x)
    if b.p(0.5):
        w = b.new_input(shape, dt if D.is_float(dt) else "float32", kind="unit")
        args.append(w)
        ops.append(w)
        if b.p(0.7):
            bias = b.new_input(shape, b.dtype(w), kind="unit")
            args.append(bias)
            ops.append(bias)
    eps = 1e-5
    if b.p(0.3):
        eps = b.choice([1e-5, 1e-3, 0.1])
        args.append(f"eps={eps!r}")
    tags = _float_only(b, x, set())
    if b.max_abs(x) > 1e18:
        tags.add("layer-norm-large")
    # (x - mean) / sqrt(var + eps): an absolute error in x - mean grows by up to 1/sqrt(eps).
    b.emit(f"F.layer_norm({', '.join(args)})", "layer_norm", ops, tags=tags,
           tol_boost=min(1 / eps ** 0.5, 1e3))


def linear(b):
    x = b.operand(pred=lambda t: t.dim() >= 1 and t.dtype.is_floating_point)
    k = b.t(x).shape[-1] if b.t(x).dim() else 1
    n = int(b.rng.integers(1, 4))
    dt = b.dtype(x)
    w = b.new_input((n, k), dt, kind="unit")
    ops = [x, w]
    args = [x, w]
    if b.p(0.5):
        bias = b.new_input((n,), dt, kind="unit")
        ops.append(bias)
        args.append(bias)
    b.emit(f"F.linear({', '.join(args)})", "linear", ops)


def dropout(b):
    x = b.operand()
    expr = b.choice([f"F.dropout({x}, 0.0)", f"F.dropout({x}, 0.5, training=False)"])
    b.emit(expr, "dropout", [x], exact=True)


def mse(b):
    x = float_operand(b)
    shape = tuple(b.t(x).shape)
    # The target has the input's dtype: torch 1.13's mse_loss backward fails on mixed float
    # dtypes ("Found dtype Float but expected BFloat16"), a torch bug rather than semantics.
    y = b.new_input(V.broadcast_partner(b.rng, shape, 0.0) if b.p(0.2) else shape, b.dtype(x))
    r = b.choice(REDUCTIONS)
    tags = _float_only(b, x, set())
    tags |= _float_only(b, y, set())
    b.emit(f"F.mse_loss({x}, {y}, reduction='{r}')", "mse_loss", [x, y], tags=tags)


def bce(b):
    shape = V.rand_shape(b.rng)
    logits = b.p(0.5)
    dt = b.rand_dtype(D.FLOATS) if b.p(0.93) else b.rand_dtype()
    if logits:
        x = b.operand(pred=lambda t: t.dtype.is_floating_point, prefer_last=0.4,
                      make=lambda: b.new_input(shape, dt))
    else:
        x = b.new_input(shape, dt, kind="prob")
    shape = tuple(b.t(x).shape)
    y = b.new_input(shape, b.dtype(x) if D.is_float(b.dtype(x)) else "float32",
                    kind=b.choice(["prob", "label"]), grad=False)
    args = [x, y]
    ops = [x, y]
    tags = _float_only(b, x, set())
    if b.p(0.25):
        wshape = V.broadcast_partner(b.rng, shape, 0.0)
        w = b.new_input(wshape, b.dtype(y), kind="unit", grad=False)
        args.append(f"weight={w}")
        ops.append(w)
        if len(wshape) > len(shape) or any(
                ws > s for ws, s in zip(reversed(wshape), reversed(shape))):
            tags.add("loss-weight-broadcasts-up")
    if logits and b.p(0.3):
        pw = b.new_input(shape[-1:] if shape else (), b.dtype(y), kind="positive", grad=False)
        args.append(f"pos_weight={pw}")
        ops.append(pw)
        tags.add("bce-logits-pos-weight")
    args.append(f"reduction='{b.choice(REDUCTIONS)}'")
    t = b.t(x).detach()
    if logits:
        op = "binary_cross_entropy_with_logits"
        if t.numel() and bool((t == 0).any()):
            tags.add("bce-logits-zero")
    else:
        op = "binary_cross_entropy"
        if t.numel() and bool(((t == 0) | (t == 1)).any()):
            tags.add("bce-prob-0-or-1")
    b.emit(f"F.{op}({', '.join(args)})", op, ops, tags=tags)


def cross_entropy(b):
    n, c = int(b.rng.integers(0 if b.p(0.05) else 1, 5)), int(b.rng.integers(1, 5))
    batched = b.p(0.85)
    shape = (n, c) if batched else (c,)
    dt = b.choice(["float32", "float32", "float16", "bfloat16"])
    x = b.operand(pred=lambda t: tuple(t.shape) == shape, prefer_last=0.9,
                  make=lambda: b.new_input(shape, dt, kind="unit" if b.p(0.8) else "any"))
    op = "cross_entropy" if b.p(0.75) else "nll_loss"
    tags = _float_only(b, x, set())
    if op == "cross_entropy" and b.has_nonfinite(x, "posinf"):
        tags.add("softmax-posinf")  # its log_softmax meets a +inf
    if b.p(0.2) and op == "cross_entropy":
        y = b.new_input(shape, b.dtype(x), kind="prob", grad=False)
    else:
        tshape = (n,) if batched else ()
        vals = b.rng.integers(0, c, int(np.prod(tshape)) if tshape else 1)
        if b.p(0.15) and vals.size:
            vals[0] = -100 if b.p(0.7) else c
        tdt = "int64" if b.p(0.85) else b.choice(["int32", "float32"])
        y = b.add_input(np.asarray(vals if tshape else vals[0], dtype=np.int64).reshape(tshape),
                        tdt)
        if tdt == "float32":
            tags.add("ce-float-class-targets")
        if tdt == "int32":
            tags.add("int32-class-targets")
    args = [x, y]
    ops = [x, y]
    if b.p(0.2):
        w = b.new_input((c,), b.dtype(x), kind="positive", grad=False)
        args.append(f"weight={w}")
        ops.append(w)
    args.append(f"reduction='{b.choice(REDUCTIONS)}'")
    if op == "cross_entropy" and b.p(0.2):
        args.append(f"label_smoothing={b.choice(['0.1', '0.25'])}")
    b.emit(f"F.{op}({', '.join(args)})", op, ops, tags=tags)

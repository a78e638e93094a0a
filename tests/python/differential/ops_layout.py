"""Layout families: reshape/view, transpose/permute/t/.T, squeeze/unsqueeze/flatten, expand,
split/chunk, cat/stack, detach/clone, and basic indexing (ints, slices, None, ...) and t[index
tensor]. All are exact (they move values, never compute them)."""
import math

import numpy as np

from . import values as V
from .ops_reduce import rand_dim


def _factor_shape(b, n):
    """A random shape with n elements (n may be 0), sometimes with a -1."""
    if n == 0:
        shape = b.choice([[0], [0, 3], [2, 0], [1, 0, 2]])
    else:
        shape, left = [], n
        for _ in range(int(b.rng.integers(0, 3))):
            ds = [d for d in range(1, left + 1) if left % d == 0]
            d = b.choice(ds)
            shape.append(d)
            left //= d
        shape.append(left)
        if b.p(0.3):
            shape.insert(int(b.rng.integers(0, len(shape) + 1)), 1)
    if n and b.p(0.3):
        shape[int(b.rng.integers(0, len(shape)))] = -1
    return shape


def reshape(b):
    x = b.operand()
    t = b.t(x)
    shape = _factor_shape(b, t.numel()) if b.p(0.95) else [t.numel() + 1]
    args = ", ".join(str(d) for d in shape)
    method = b.choice(["reshape", "view", "reshape"])
    if len(shape) == 1 and b.p(0.3):
        args = f"({args},)"
    form = f"{x}.{method}({args})"
    if method == "reshape" and b.p(0.3):
        form = f"M.reshape({x}, ({', '.join(str(d) for d in shape)},))"
    tags = {"view-of-noncontiguous"} if method == "view" and not t.is_contiguous() else set()
    b.emit(form, method, [x], exact=True, tags=tags)


def transpose(b):
    x = b.operand()
    t = b.t(x)
    r = b.rng.random()
    tags = set()
    if r < 0.4:
        d0, d1 = rand_dim(b, x), rand_dim(b, x)
        expr = b.choice([f"{x}.transpose({d0}, {d1})", f"M.transpose({x}, {d0}, {d1})"])
        op = "transpose"
    elif r < 0.7 and t.dim() > 0:
        perm = [int(p) for p in b.rng.permutation(t.dim())]
        perm = [p - t.dim() if b.p(0.2) else p for p in perm]
        args = ", ".join(str(p) for p in perm)
        expr = b.choice([f"{x}.permute({args})", f"M.permute({x}, ({args}{',' if len(perm) == 1 else ''}))"])
        op = "permute"
    elif r < 0.85 and t.dim() <= 2:
        expr, op = f"{x}.t()", "t"
    else:
        expr, op = f"{x}.T", "T"
        if t.dim() > 2:
            tags.add("T-over-2d")
    b.emit(expr, op, [x], exact=True, tags=tags)


def squeeze(b):
    x = b.operand()
    t = b.t(x)
    r = b.rng.random()
    if r < 0.35:
        expr, op = b.choice([f"{x}.squeeze()", f"M.squeeze({x})"]), "squeeze"
    elif r < 0.6:
        expr, op = f"{x}.squeeze({rand_dim(b, x)})", "squeeze"
    elif r < 0.85:
        d = int(b.rng.integers(-t.dim() - 1, t.dim() + 1))
        expr, op = b.choice([f"{x}.unsqueeze({d})", f"M.unsqueeze({x}, {d})"]), "unsqueeze"
    else:
        if b.p(0.5) or t.dim() == 0:
            expr = b.choice([f"{x}.flatten()", f"M.flatten({x})"])
        else:
            s = rand_dim(b, x)
            e = rand_dim(b, x)
            expr = b.choice([f"{x}.flatten({s}, {e})", f"M.flatten({x}, {s}, {e})"])
        op = "flatten"
    b.emit(expr, op, [x], exact=True)


def expand(b):
    x = b.operand(pred=lambda t: t.dim() <= 3)
    t = b.t(x)
    shape = [d if d != 1 else int(b.rng.integers(1, 4)) for d in t.shape]
    if b.p(0.3):
        shape.insert(0, 2)
    if shape and b.p(0.3):
        shape[-1] = -1
    if math.prod(abs(d) for d in shape) > V.MAX_NUMEL:
        shape = list(t.shape)
    args = ", ".join(str(d) for d in shape) if shape else "()"
    b.emit(f"{x}.expand({args})", "expand", [x], exact=True)


def split(b):
    x = b.operand(pred=lambda t: t.dim() > 0)
    t = b.t(x)
    d = rand_dim(b, x, p_bad=0.01)
    size = t.shape[d] if -t.dim() <= d < t.dim() else 1
    tags = set()
    r = b.rng.random()
    if r < 0.4:
        n = int(b.rng.integers(1, 4))
        expr, op = b.choice([f"{x}.chunk({n}, {d})", f"M.chunk({x}, {n}, {d})"]), "chunk"
        if size == 0:
            tags.add("chunk-empty-dim")
    elif r < 0.75:
        k = int(b.rng.integers(1, 4))
        expr, op = b.choice([f"{x}.split({k}, {d})", f"M.split({x}, {k}, {d})"]), "split"
    else:
        parts, left = [], size
        while left > 0:
            p = int(b.rng.integers(0 if b.p(0.1) else 1, left + 1))
            parts.append(p)
            left -= p
            if len(parts) > 4:
                parts.append(left)
                break
        if b.p(0.05):
            parts.append(1)  # sections that do not add up: an error in both
        expr, op = f"{x}.split({parts}, {d})", "split"
    name = b.emit(expr, op, [x], exact=True, tags=tags)
    if name is not None and b.t(name) and b.p(0.7):
        i = int(b.rng.integers(0, len(b.t(name))))
        b.emit(f"{name}[{i}]", "tuple-item", [name], exact=True)


def cat(b):
    x = b.operand(pred=lambda t: t.dim() > 0 if b.p(0.9) else True)
    t = b.t(x)
    op = "stack" if b.p(0.3) else "cat"
    parts = [x]
    tags = set()
    d = rand_dim(b, x, p_bad=0.02) if t.dim() else 0
    if op == "stack":
        d = int(b.rng.integers(-t.dim() - 1, t.dim() + 1))
    for _ in range(int(b.rng.integers(1, 3))):
        shape = list(t.shape)
        if op == "cat" and shape and -len(shape) <= d < len(shape):
            shape[d] = int(b.rng.integers(0, 4))
        dt = b.dtype(x) if b.p(0.8) else None
        if op == "cat" and b.p(0.05):
            shape = [0]
            tags.add("cat-legacy-empty")
        parts.append(b.new_input(tuple(shape), dt))
    if len({b.dtype(p) for p in parts}) > 1:
        tags.add("mixed-dtypes")
    if b.p(0.5):
        parts = list(b.rng.permutation(parts))
    seq = "[" + ", ".join(parts) + "]"
    expr = b.choice([f"M.{op}({seq}, {d})", f"M.{op}({seq}, dim={d})"])
    b.emit(expr, op, parts, exact=True, tags=tags)


def detach_clone(b):
    x = b.operand()
    op = b.choice(["detach", "clone", "contiguous"])
    b.emit(f"{x}.{op}()", op, [x], exact=True)


def _slice(b, size):
    r = b.rng.random()
    if r < 0.25:
        return ":"
    lo = int(b.rng.integers(-size - 1, size + 2)) if b.p(0.7) else ""
    hi = int(b.rng.integers(-size - 1, size + 2)) if b.p(0.7) else ""
    s = f"{lo}:{hi}"
    if b.p(0.25):
        s += f":{int(b.rng.integers(1, 4))}"
    elif b.p(0.02):
        s += ":-1"
    return s


def index(b):
    x = b.operand(pred=lambda t: t.dim() > 0 or b.p(0.2))
    t = b.t(x)
    if t.dim() > 0 and b.p(0.25):
        return index_tensor(b, x)
    items, tags = [], set()
    for d in range(t.dim()):
        if b.p(0.2) and len(items) < 4:
            items.append("None")
        if b.p(0.3):
            continue  # trailing dims may be left out
        if b.p(0.35):
            n = t.shape[d]
            i = int(b.rng.integers(-n, n)) if n and b.p(0.97) else n
            items.append(str(i))
        else:
            items.append(_slice(b, t.shape[d]))
    if b.p(0.15):
        items.insert(int(b.rng.integers(0, len(items) + 1)), "...")
    if not items:
        items = [b.choice(["...", "None", ":"])]
    if any(s.endswith(":-1") for s in items):
        tags.add("negative-slice-step")
    b.emit(f"{x}[{', '.join(items)}]", "getitem", [x], exact=True, tags=tags)


def index_tensor(b, x):
    n = b.t(x).shape[0]
    shape = V.rand_shape(b.rng, 0, 2)

    hi = max(n, 1)
    vals = b.rng.integers(-hi if b.p(0.2) else 0, hi + (1 if b.p(0.03) else 0),
                          max(1, math.prod(shape)))[:math.prod(shape)].reshape(shape)
    tags = set()
    if (vals < 0).any():
        tags.add("negative-index-tensor")
    if b.t(x).numel() == 0 and ((vals >= n) | (vals < -n)).any():
        tags.add("index-out-of-range-on-empty")
    dt = "int64"  # (torch 1.13 refuses int32 index tensors here; later versions take them)
    name = b.add_input(np.asarray(vals, dtype=np.int64), dt)
    b.emit(f"{x}[{name}]", "getitem-tensor", [x, name], exact=True, tags=tags)

"""Runs a case on PyTorch (CPU), the reference.

torch's CPU build (1.13 in Debian) lacks many float16 kernels (exp, softmax, matmul, gelu, ...)
and a few bfloat16 ones (mse_loss, binary_cross_entropy). A case that hits one is re-run under
LowPrecisionEmulation: every computing op with a float16/bfloat16 operand runs on float32 copies
and its floating results are rounded to the dtype torch itself gives (found by a probe call), which
is what CUDA's kernels do (float32 "opmath", rounded per op). Views, casts and in-place ops run
natively, so aliasing behaves as in torch (an in-place op whose kernel is missing, x.exp_(), is
its emulated out-of-place op written back with copy_).
"""
import warnings

import torch
from torch.overrides import TorchFunctionMode

from . import execute

LOW = (torch.float16, torch.bfloat16)

# Run natively in emulation: they do not compute (views, casts, accessors, in-place, autograd).
DIRECT = {
    "view", "reshape", "transpose", "t", "permute", "squeeze", "unsqueeze", "flatten", "expand",
    "expand_as", "__getitem__", "__setitem__", "select", "narrow", "split", "chunk", "unbind",
    "detach", "contiguous", "clone", "cat", "stack", "index_select", "gather", "to", "type",
    "float", "half", "bfloat16", "int", "long", "bool", "double", "size", "dim", "numel", "item",
    "tolist", "numpy", "__len__", "__iter__", "__repr__", "__format__", "backward",
    "requires_grad_", "__get__", "__set__", "__bool__", "__float__", "__int__", "__index__",
    "where", "masked_fill", "eq", "ne", "lt", "le", "gt", "ge", "__eq__", "__ne__", "__lt__",
    "__le__", "__gt__", "__ge__", "neg", "__neg__", "abs", "__abs__", "retain_grad",
}


class NeedsEmulation(Exception):
    pass


class MixedLowPrecision(Exception):
    """float16 and bfloat16 in one emulated call: the probe cannot tell torch's dtype."""


def missing_kernel(e):
    s = str(e)
    return "not implemented for 'Half'" in s or "not implemented for 'BFloat16'" in s


def _map(obj, f):
    if isinstance(obj, torch.Tensor):
        return f(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(o, f) for o in obj) if type(obj) in (list, tuple) else obj
    if isinstance(obj, dict):
        return {k: _map(v, f) for k, v in obj.items()}
    return obj


def _lows(obj, acc):
    if isinstance(obj, torch.Tensor):
        if obj.dtype in LOW:
            acc.add(obj.dtype)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _lows(o, acc)
    elif isinstance(obj, dict):
        for o in obj.values():
            _lows(o, acc)
    return acc


def _restore(up, probe, low):
    """up's floating results cast to the probe's dtypes (or `low` without a probe)."""
    if isinstance(up, torch.Tensor):
        want = probe.dtype if isinstance(probe, torch.Tensor) else low
        return up.to(want) if up.dtype.is_floating_point and up.dtype != want else up
    if isinstance(up, tuple):
        ps = probe if isinstance(probe, tuple) and len(probe) == len(up) else [None] * len(up)
        items = [_restore(u, p, low) for u, p in zip(up, ps)]
        try:
            return type(up)(items)
        except TypeError:
            return tuple(items)
    return up


class LowPrecisionEmulation(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        in_place = name.endswith("_") and not name.startswith("__") or name.startswith("__i")
        lows = _lows((args, kwargs), set())
        if lows and in_place and not name.startswith("__"):
            try:
                return func(*args, **kwargs)
            except Exception as e:  # noqa: BLE001
                out_of_place = getattr(torch.Tensor, name[:-1], None)
                if not missing_kernel(e) or out_of_place is None:
                    raise
                # x.exp_() on float16 and the like: the out-of-place op, emulated, written back
                # (as gt and torch's CUDA kernels compute it).
                return args[0].copy_(self.__torch_function__(out_of_place, types, args, kwargs))
        if not lows or in_place or name in DIRECT:
            return func(*args, **kwargs)
        if len(lows) > 1:
            raise MixedLowPrecision(name)
        low = next(iter(lows))
        detach = lambda t: t.detach()  # noqa: E731
        try:
            with torch.no_grad():
                probe = func(*_map(args, detach), **_map(kwargs, detach))
        except Exception as e:  # noqa: BLE001
            if not missing_kernel(e):
                raise
            sub = lambda t: t.detach().to(torch.bfloat16) if t.dtype in LOW else t.detach()  # noqa: E731
            try:
                with torch.no_grad():
                    probe = func(*_map(args, sub), **_map(kwargs, sub))
                probe = _map(probe, lambda t: t.to(low) if t.dtype == torch.bfloat16 else t)
            except Exception as e2:  # noqa: BLE001
                if not missing_kernel(e2):
                    raise
                probe = None
        up = lambda t: t.float() if t.dtype in LOW else t  # noqa: E731
        return _restore(func(*_map(args, up), **_map(kwargs, up)), probe, low)


def _to_numpy(t):
    t = t.detach()
    name = str(t.dtype).replace("torch.", "")
    if t.dtype == torch.bfloat16:
        t = t.float()
    return name, t.numpy()


def snapshot(obj):
    return execute.snapshot(obj, _to_numpy, torch.Tensor)


def namespace():
    import torch.nn.functional as F

    return {"M": torch, "F": F}


def _attempt(case, emulate):
    ns = namespace()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if emulate:
            with LowPrecisionEmulation():
                err, line = execute.run_lines(case, ns)
        else:
            err, line = execute.run_lines(case, ns)
        if err is not None and missing_kernel(err) and not emulate:
            raise NeedsEmulation()
        if isinstance(err, MixedLowPrecision):
            raise err
        if err is not None:
            return execute.Result(error=err, error_line=line, ns=ns), ns
        values, grads = execute.collect(case, ns, _to_numpy, torch.Tensor)
        return execute.Result(values=values, grads=grads, ns=ns), ns


def run(case):
    """The case's Result on torch (emulating missing float16/bfloat16 kernels when needed; sets
    case.torch_emulated). Raises MixedLowPrecision when emulation cannot decide a dtype."""
    try:
        return _attempt(case, False)[0]
    except NeedsEmulation:
        case.torch_emulated = True
        return _attempt(case, True)[0]

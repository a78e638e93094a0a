"""Signal scopes: named regions of a program whose meaning (sharding, backward signal, compile)
comes from configs (gt.load_config / gt.register_config, see gt.config)::

    with gt.signal.context("forward_layer1", backward="backward_layer1"):
        h = (x @ w1).relu()
    w1 = gt.signal.tensor(w1, "forward_layer1")   # place one tensor as the signal says

STATUS: scopes are tracked client-side (per thread, nested) and validated, but they do not
change placement yet: the dispatcher side of signal-based sharding (issue 5) does not exist.
Programs using them run unchanged, every tensor on the session's home worker, with the same
results they will give once sharding is active (random ops are counter-based, so sharded
creation reproduces the unsharded values).
"""
import threading

from . import config as _config

__all__ = ["context", "enter", "exit", "current", "stack", "tensor"]

_local = threading.local()


def _stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def _check(name, backward):
    if not isinstance(name, str) or not name:
        raise ValueError(f"gt.signal: signal names are non-empty strings, got {name!r}")
    if backward is not None and (not isinstance(backward, str) or not backward):
        raise ValueError(f"gt.signal: backward must be a signal name or None, got {backward!r}")


def enter(name, backward=None):
    """Enters signal scope ``name`` (its gradient ops run under ``backward``, else under the
    config's backward_signal, else under ``name``)."""
    _check(name, backward)
    if backward is None:
        cfg = _config.get_config(name)
        backward = cfg.backward_signal if cfg is not None else None
    _stack().append((name, backward or name))


def exit():  # noqa: A001 (the original GT's name)
    """Leaves the innermost signal scope."""
    s = _stack()
    if not s:
        raise RuntimeError("gt.signal.exit: no signal scope is active")
    s.pop()


def current():
    """The innermost active signal name, or None."""
    s = _stack()
    return s[-1][0] if s else None


def stack():
    """The active scopes as (name, backward_name) pairs, outermost first."""
    return list(_stack())


class context:
    """``with gt.signal.context(name, backward=None):`` -- enter/exit as a context manager."""

    def __init__(self, name, backward=None):
        _check(name, backward)
        self.name = name
        self.backward = backward

    def __enter__(self):
        enter(self.name, self.backward)
        return self

    def __exit__(self, *exc):
        exit()
        return False


def tensor(t, name):
    """Returns ``t`` placed as signal ``name`` says (e.g. sharding a weight over its workers).

    Until signal-based sharding exists (issue 5) the tensor is returned unchanged."""
    from ._gt import Tensor

    if not isinstance(t, Tensor):
        raise TypeError(f"gt.signal.tensor: expected a gt.Tensor, got {type(t).__name__}")
    _check(name, None)
    return t

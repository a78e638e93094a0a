"""gt.compile(fn): mark a function as a hot path from its first call, as torch.compile marks one.

Each call runs ``fn`` inside a signal scope of its own whose config says ``compile: true``, so
the dispatcher makes the instructions ``fn`` sends a hot path at first sight instead of after
``hot_path_min_repeats`` repetitions (docs/ARCHITECTURE.md §7). Results are exactly ``fn``'s::

    @gt.compile
    def step(x):
        return model(x).relu().sum()

    eager = gt.compile(step_fn, enabled=False)   # the plain function

The scope's config is registered at the first call; calls come from the thread that runs the
program's other ops (signal scopes are per process).
"""
import functools
import itertools

from . import signal
from .config import SignalConfig, register_config

__all__ = ["compile"]

_next = itertools.count(1)


def compile(fn=None, *, enabled=True):  # noqa: A001 (torch.compile's name)
    """``gt.compile(fn)``, ``@gt.compile`` or ``@gt.compile(enabled=False)``."""
    if fn is None:
        return lambda f: compile(f, enabled=enabled)
    if not callable(fn):
        raise TypeError(f"gt.compile: expected a function, got {fn!r}")
    if not enabled:
        return fn
    name = f"gt.compile#{next(_next)}:{getattr(fn, '__qualname__', 'fn')}"[:256]
    registered = False

    @functools.wraps(fn)
    def compiled(*args, **kwargs):
        nonlocal registered
        if not registered:
            register_config(name, SignalConfig(compile=True))
            registered = True
        with signal.context(name):
            return fn(*args, **kwargs)

    compiled.signal_name = name
    return compiled

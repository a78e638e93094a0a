"""Signal scopes: named regions of a program whose meaning (sharding, backward signal, compile)
comes from configs (gt.load_config / gt.register_config / GT_CONFIG, see gt.config, or the
server-wide configs of a shared dispatcher)::

    gt.register_config("data", gt.SignalConfig(shard=gt.ShardConfig(axis=0, workers=[0, 1])))
    with gt.signal.context("data"):
        x = gt.randn(64, 784)             # created already sharded: rows 0-31 on worker 0, ...
        h = (x @ w1).relu()               # runs on both workers, each on its rows
    w1 = gt.signal.tensor(w1, "replica")  # place one tensor as a signal says

Entering and leaving a scope are annotations in the session's instruction stream (libgtclient's
``gt::signal::enter`` / ``exit``; no round trip): the dispatcher places every op issued inside
the scope by the innermost scope's config (docs/ARCHITECTURE.md §5) -- creations sharded or replicated over
the scope's workers (random values identical to the unsharded tensor's), compute ops by the
sharding rules, inputs living on other workers moved there worker to worker (pipeline stages).
Autograd records the scope of every forward op; its gradient ops run under that scope's backward
signal (the ``backward`` given here, else the config's ``backward_signal``, else the same
signal). Without a config a scope changes nothing, and results never depend on placement.

Threads: the scope stack belongs to the process (the session has one instruction stream), not
to a thread: every op issued while a scope is open -- from any thread -- is placed by it. Open
and close scopes from one thread at a time: entering a scope while another thread has scopes
open raises RuntimeError, as does leaving a scope another thread opened.
"""
import threading

from . import _gt
from . import config as _config

__all__ = ["context", "enter", "exit", "current", "stack", "tensor"]

_lock = threading.Lock()
_frames = []   # (name, backward) of the open scopes, outermost first (mirrors libgtclient's)
_owner = None  # the thread that opened them


def _check(name, backward):
    if not isinstance(name, str) or not name or len(name) > 256:
        raise ValueError("gt.signal: signal names are non-empty strings of at most 256 "
                         f"characters, got {name!r}")
    if backward is not None and (not isinstance(backward, str) or not backward
                                 or len(backward) > 256):
        raise ValueError(f"gt.signal: backward must be a signal name or None, got {backward!r}")


def _other_thread_error(what):
    owner = next((t.name for t in threading.enumerate() if t.ident == _owner), f"id {_owner}")
    return RuntimeError(
        f"gt.signal.{what}: thread {owner!r} has signal scopes open ({' > '.join(n for n, _ in _frames)}); "
        "scopes belong to the process (one instruction stream), so use them from one thread "
        "at a time")


def enter(name, backward=None):
    """Enters signal scope ``name``; its gradient ops run under ``backward`` (else under the
    config's backward_signal, else under ``name``). Starts the session if needed and sends the
    configs registered before it existed."""
    global _owner
    _check(name, backward)
    me = threading.get_ident()
    with _lock:
        if _frames and _owner != me:
            raise _other_thread_error("enter")
        _config._flush(start=True)
        # Only an explicit backward goes on the wire: the dispatcher resolves the config's (its
        # own registry also holds the server-wide configs this client does not know).
        _gt._signal_enter(name, backward or "")
        if backward is None:
            cfg = _config.get_config(name)
            backward = cfg.backward_signal if cfg is not None else None
        _frames.append((name, backward or name))
        _owner = me


def exit(name=None):  # noqa: A001 (the original GT's name)
    """Leaves the innermost signal scope; ``name``, when given, must be that scope's (the
    original GT's ``gt.signal.exit("data")``): a mismatch raises ValueError and leaves nothing."""
    global _owner
    with _lock:
        if not _frames:
            raise RuntimeError("gt.signal.exit: no signal scope is active")
        if _owner != threading.get_ident():
            raise _other_thread_error("exit")
        if name is not None and name != _frames[-1][0]:
            raise ValueError(f"gt.signal.exit({name!r}): the innermost signal scope is "
                             f"{_frames[-1][0]!r} (scopes are left innermost first)")
        _gt._signal_exit()
        _frames.pop()
        if not _frames:
            _owner = None


def current():
    """The innermost open signal name (process-wide), or None."""
    with _lock:
        return _frames[-1][0] if _frames else None


def stack():
    """The open scopes as (name, backward_name) pairs, outermost first (process-wide).
    backward_name is the explicit one, else the one this program's config gives, else name."""
    with _lock:
        return list(_frames)


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
        exit(self.name)
        return False


def tensor(t, name):
    """Returns a copy of ``t`` placed as signal ``name`` says (e.g. a weight replicated on the
    scope's workers, or a batch sharded over them); use it in ``t``'s stead.

    The copy is made inside ``with context(name)`` (one copy op, ``t.clone()``, which the
    dispatcher places by the scope's config; without a config it stays where ``t`` is). A leaf
    gives a new leaf with the same ``requires_grad`` (so it can be handed to an optimizer in
    place of ``t``); a tensor with history gives a differentiable copy whose gradient flows
    back to ``t``."""
    if not isinstance(t, _gt.Tensor):
        raise TypeError(f"gt.signal.tensor: expected a gt.Tensor, got {type(t).__name__}")
    _check(name, None)
    with context(name):
        if t.grad_fn is None:
            was = _gt.is_grad_enabled()
            _gt.set_grad_enabled(False)
            try:
                out = t.clone()
            finally:
                _gt.set_grad_enabled(was)
            if t.requires_grad:
                out.requires_grad_()
        else:
            out = t.clone()
    return out

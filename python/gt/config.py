"""Signal configs: what a named signal scope means (gt.load_config, gt.register_config,
gt.get_config, gt.SignalConfig, gt.ShardConfig), in the original GT's YAML schema::

    forward_layer1:            # a signal name
      shard:                   # optional: how tensors created / computed in the scope are placed
        axis: 0                #   the sharded axis (negative: counted from the last)
        workers: [0, 1]        #   the workers holding the shards (default: all)
        replicated: false      #   true: a full copy on every listed worker instead of shards
      backward: backward_layer1  # optional: the signal the gradient ops run under
      compile: true            # optional: true, a hot path at first sight; false, never one

Configs are sent to the dispatcher (libgtclient's ``gt::register_config``), which places the
ops of each scope by them (docs/ARCHITECTURE.md §5): creations inside a sharded scope are made already
sharded, compute ops follow the sharding rules, ops in a scope whose workers differ from where
their inputs live run on the scope's workers (pipeline stages), and gradient ops run under the
forward scope's ``backward`` signal. Without any config the same program runs unchanged.

Configs registered before the session exists (e.g. ``GT_CONFIG`` loaded at ``import gt``) are
kept here and sent when the first signal scope is entered or the next config is registered
once the session is up, so ``gt.gpu_workers(n)`` / ``gt.connect(...)`` may still follow them.

YAML is parsed by the dispatcher's own schema parser (libgtcore, through the extension): errors
name the file and the offending key (``ValueError``). Worker ids are checked against the running
workers when a scope uses them: an op in a scope naming a worker that does not exist fails with
``gt.WorkerError`` at the next sync point.
"""
import os
import threading

from . import _gt

__all__ = ["ShardConfig", "SignalConfig", "load_config", "register_config", "get_config",
           "parse_config", "clear_config"]

_lock = threading.RLock()
_registry = {}   # name -> SignalConfig: what this program registered (gt.get_config)
_pending = {}    # name -> SignalConfig registered before the session existed, not yet sent
_sent = set()    # names sent to the dispatcher

_MAX_AXIS = 7    # the dispatcher's range: -8 .. 7
_MAX_WORKER = 65535


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


class ShardConfig:
    """How a signal's tensors are placed: sharded along ``axis`` (-8..7; negative counts from the
    last axis) over ``workers`` (None: all workers), or a full copy on each of them when
    ``replicated``."""

    __slots__ = ("axis", "workers", "replicated")

    def __init__(self, axis=0, workers=None, replicated=False):
        if not _is_int(axis) or not -_MAX_AXIS - 1 <= axis <= _MAX_AXIS:
            raise ValueError(f"ShardConfig: axis must be an int in [{-_MAX_AXIS - 1}, "
                             f"{_MAX_AXIS}] (negative: from the last axis), got {axis!r}")
        if workers is not None:
            workers = list(workers)
            if not workers or not all(_is_int(w) and 0 <= w <= _MAX_WORKER for w in workers):
                raise ValueError("ShardConfig: workers must be a non-empty list of worker ids "
                                 f"(ints 0..{_MAX_WORKER}), or None for all workers, got "
                                 f"{workers!r}")
            if len(set(workers)) != len(workers):
                raise ValueError(f"ShardConfig: workers lists a worker twice: {workers!r}")
        if not isinstance(replicated, bool):
            raise ValueError(f"ShardConfig: replicated must be true/false, got {replicated!r}")
        self.axis = axis
        self.workers = workers
        self.replicated = replicated

    def __eq__(self, other):
        return (isinstance(other, ShardConfig) and self.axis == other.axis
                and self.workers == other.workers and self.replicated == other.replicated)

    def __repr__(self):
        return (f"ShardConfig(axis={self.axis}, workers={self.workers}, "
                f"replicated={self.replicated})")


class SignalConfig:
    """What a signal means: its ``shard`` placement (a ShardConfig, or None: the scope only
    groups ops), the signal its gradient ops run under (``backward_signal``; None: the same
    signal) and ``compile`` (None: hot paths detected as usual; True: what runs in the scope is a
    hot path at first sight, as gt.compile marks it; False: no hot-path detection inside)."""

    __slots__ = ("shard", "backward_signal", "compile")

    def __init__(self, shard=None, backward_signal=None, compile=None):
        if shard is not None and not isinstance(shard, ShardConfig):
            raise ValueError(f"SignalConfig: shard must be a gt.ShardConfig or None, got {shard!r}")
        if backward_signal is not None:
            _check_name(backward_signal, "SignalConfig: backward_signal")
        if compile is not None and not isinstance(compile, bool):
            raise ValueError(f"SignalConfig: compile must be true/false/None, got {compile!r}")
        self.shard = shard
        self.backward_signal = backward_signal
        self.compile = compile

    def __eq__(self, other):
        return (isinstance(other, SignalConfig) and self.shard == other.shard
                and self.backward_signal == other.backward_signal
                and self.compile == other.compile)

    def __repr__(self):
        return (f"SignalConfig(shard={self.shard!r}, backward_signal={self.backward_signal!r}, "
                f"compile={self.compile})")


def _check_name(name, what="signal name"):
    if not isinstance(name, str) or not name or len(name) > 256:
        raise ValueError(f"{what}: signal names are non-empty strings of at most 256 "
                         f"characters, got {name!r}")


# ---- sending to the dispatcher --------------------------------------------------------------------

def _send(name, cfg):
    s = cfg.shard
    shard = None if s is None else (s.axis, s.workers, s.replicated)
    _gt._register_config(name, shard, cfg.backward_signal or "", cfg.compile)
    _sent.add(name)


def _flush(start=False):
    """Sends the configs registered before the session existed. ``start``: even if that starts
    the session (gt.signal.enter does: a scope needs the session anyway)."""
    with _lock:
        if not _pending or not (start or _gt._session_alive()):
            return
        while _pending:
            name = next(iter(_pending))
            _send(name, _pending[name])
            del _pending[name]


def register_config(name, config):
    """Registers (or replaces) the config of signal ``name`` for this process's session and
    sends it to the dispatcher (ordered with the ops around it: ops already issued keep their
    placement). Before the session exists it is kept and sent when the first scope is entered."""
    _check_name(name, "register_config")
    if not isinstance(config, SignalConfig):
        raise ValueError(f"register_config: expected a gt.SignalConfig, got {config!r}")
    with _lock:
        _registry[name] = config
        _pending[name] = config
        _flush()


def get_config(name=None):
    """The configs this program registered: a dict {name: SignalConfig}, or one signal's config
    (None when it has none). Server-wide configs of a shared dispatcher are not listed."""
    with _lock:
        if name is None:
            return dict(_registry)
        return _registry.get(name)


def clear_config():
    """Forgets every registered config. Those already sent to the dispatcher are replaced there by
    empty configs (no sharding, no backward signal) -- which, for this session, also hides a
    server-wide config of the same name."""
    with _lock:
        _registry.clear()
        _pending.clear()
        for name in sorted(_sent):
            _gt._register_config(name, None, "", None)
        _sent.clear()


def _from_dict(d):
    s = d["shard"]
    shard = None if s is None else ShardConfig(axis=s["axis"], workers=s["workers"],
                                               replicated=s["replicated"])
    return SignalConfig(shard=shard, backward_signal=d["backward"], compile=d["compile"])


def parse_config(text, source="<string>"):
    """Parses YAML text in the schema above into {name: SignalConfig} (registers nothing).
    Raises ValueError naming ``source`` and the offending key."""
    parsed = _gt._parse_signal_configs(text, source)
    for name in parsed:
        _check_name(name, f"{source}: {name!r}")
    return {name: _from_dict(d) for name, d in parsed.items()}


def load_config(path):
    """Loads a YAML file of signal configs and registers every entry (all or none: a bad file
    registers nothing); returns them as a dict {name: SignalConfig}."""
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        configs = parse_config(f.read(), source=path)
    with _lock:
        for name, cfg in configs.items():
            _registry[name] = cfg
            _pending[name] = cfg
        _flush()
    return configs

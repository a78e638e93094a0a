"""Signal configs: what a named signal scope means (gt.load_config, gt.register_config,
gt.get_config, gt.SignalConfig, gt.ShardConfig), in the original GT's YAML schema::

    forward_layer1:            # a signal name
      shard:                   # optional: how tensors created / computed in the scope are placed
        axis: 0                #   the sharded axis
        workers: [0, 1]        #   the workers holding the shards (default: all)
        replicated: false      #   true: a full copy on every listed worker instead of shards
      backward: backward_layer1  # optional: the signal the gradient ops run under
      compile: false           # optional: mark the scope's hot path for compilation

(A top-level ``signals:`` mapping holding these entries is accepted too.) YAML is read with
PyYAML (python3-yaml) when it is installed, else with yaml-cpp through the extension.

STATUS: configs are parsed, validated and recorded client-side only. Placement according to
them is the dispatcher's job (signal-based sharding, issue 5), not available yet: a program with
configs and signal scopes runs unchanged, every tensor on its session's home worker, with the
same results it will have once sharding is active.
"""
import os
import threading

__all__ = ["ShardConfig", "SignalConfig", "load_config", "register_config", "get_config",
           "clear_config"]

_lock = threading.Lock()
_registry = {}


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


class ShardConfig:
    """How a signal's tensors are placed: sharded along ``axis`` over ``workers`` (None: all
    workers), or a full copy on each of them when ``replicated``."""

    __slots__ = ("axis", "workers", "replicated")

    def __init__(self, axis=0, workers=None, replicated=False):
        if not _is_int(axis) or axis < 0:
            raise ValueError(f"ShardConfig: axis must be a non-negative int, got {axis!r}")
        if workers is not None:
            workers = list(workers)
            if not workers or not all(_is_int(w) and w >= 0 for w in workers):
                raise ValueError("ShardConfig: workers must be a non-empty list of worker "
                                 f"indices (non-negative ints), got {workers!r}")
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
    """What a signal means: its ``shard`` placement (a ShardConfig or None), the signal its
    gradient ops run under (``backward_signal``; None: the same signal) and ``compile``."""

    __slots__ = ("shard", "backward_signal", "compile")

    def __init__(self, shard=None, backward_signal=None, compile=False):
        if shard is not None and not isinstance(shard, ShardConfig):
            raise ValueError(f"SignalConfig: shard must be a gt.ShardConfig or None, got {shard!r}")
        if backward_signal is not None and (not isinstance(backward_signal, str)
                                            or not backward_signal):
            raise ValueError("SignalConfig: backward_signal must be a signal name or None, got "
                             f"{backward_signal!r}")
        if not isinstance(compile, bool):
            raise ValueError(f"SignalConfig: compile must be true/false, got {compile!r}")
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


def _check_name(name):
    if not isinstance(name, str) or not name:
        raise ValueError(f"signal names are non-empty strings, got {name!r}")


def register_config(name, config):
    """Registers (or replaces) the config of signal ``name`` for this process's session."""
    _check_name(name)
    if not isinstance(config, SignalConfig):
        raise ValueError(f"register_config: expected a gt.SignalConfig, got {config!r}")
    with _lock:
        _registry[name] = config


def get_config(name=None):
    """The registered configs: a dict {name: SignalConfig}, or one signal's config (None when it
    has none)."""
    with _lock:
        if name is None:
            return dict(_registry)
        return _registry.get(name)


def clear_config():
    """Forgets every registered config."""
    with _lock:
        _registry.clear()


def _parse_shard(where, entry):
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a mapping with axis / workers / replicated")
    unknown = set(entry) - {"axis", "workers", "replicated"}
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)} (known: axis, workers, "
                         "replicated)")
    try:
        return ShardConfig(axis=entry.get("axis", 0), workers=entry.get("workers"),
                           replicated=entry.get("replicated", False))
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _parse_signal(where, entry):
    if entry is None:
        return SignalConfig()
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a mapping with shard / backward / compile")
    unknown = set(entry) - {"shard", "backward", "backward_signal", "compile"}
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)} (known: shard, backward, "
                         "compile)")
    shard = entry.get("shard")
    try:
        return SignalConfig(
            shard=None if shard is None else _parse_shard(f"{where}.shard", shard),
            backward_signal=entry.get("backward", entry.get("backward_signal")),
            compile=entry.get("compile", False))
    except ValueError as e:
        msg = str(e)
        raise ValueError(msg if msg.startswith(where) else f"{where}: {msg}") from None


def _yaml_load(text, source):
    """One YAML document: PyYAML (python3-yaml) when installed, else yaml-cpp via the extension."""
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None and not _FORCE_BUILTIN_YAML:
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ValueError(f"{source}: invalid YAML: {e}") from None
    from ._gt import _yaml_load as load

    try:
        return load(text)
    except ValueError as e:
        raise ValueError(f"{source}: invalid YAML: {e}") from None


_FORCE_BUILTIN_YAML = False  # tests: exercise the yaml-cpp path even with PyYAML installed


def parse_config(text, source="<string>"):
    """Parses YAML text in the schema above into {name: SignalConfig} (registers nothing)."""
    doc = _yaml_load(text, source)
    if doc is None:
        return {}
    if isinstance(doc, dict) and set(doc) == {"signals"}:
        doc = doc["signals"] or {}
    if not isinstance(doc, dict):
        raise ValueError(f"{source}: expected a mapping of signal names to configs")
    out = {}
    for name, entry in doc.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"{source}: signal names are non-empty strings, got {name!r}")
        out[name] = _parse_signal(f"{source}: {name}", entry)
    return out


def load_config(path):
    """Loads a YAML file of signal configs and registers every entry; returns them as a dict."""
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        configs = parse_config(f.read(), source=path)
    with _lock:
        _registry.update(configs)
    return configs

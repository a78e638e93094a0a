"""Debugging helpers: worker statistics and the autograd tape.

The instruction log of the embedded default is written where the environment variable
GT_INSTRUCTION_LOG points (set it before the first op); a shared dispatcher has its own
(--instruction-log, see etc/gt/dispatcher.yaml)."""
import json
import sys

from . import _gt
from . import signal as _signal

__all__ = ["WorkerStats", "get_worker_stats", "print_worker_stats", "print_tape", "status", "tape"]

# The columns print_worker_stats shows, in order, with their headers.
_STAT_COLUMNS = (("worker_id", "worker"), ("device", "device"), ("sessions", "sessions"),
                 ("tensors", "tensors"), ("bytes", "bytes"), ("peak_bytes", "peak bytes"),
                 ("reserved_bytes", "reserved"), ("ops_executed", "ops"), ("errors", "errors"))


class WorkerStats(dict):
    """The workers' statistics keyed by worker id (``stats[0]["bytes"]``, ``stats.items()``, the
    original GT's form). Iterating gives the per-worker dicts themselves, in worker-id order, as
    the list earlier gt releases returned did (``for w in stats: w["bytes"]``), so code written
    for either form keeps working; ``keys()`` gives the ids."""

    def __iter__(self):
        return iter([self[k] for k in sorted(self.keys())])


def get_worker_stats():
    """The dispatcher's workers as a WorkerStats (a dict keyed by worker id, iterating over the
    per-worker dicts), each a dict of worker_id, device, tensors, bytes, ops_executed, errors,
    peak_bytes, reserved_bytes and sessions. A sync point: waits for the dispatcher's answer."""
    return WorkerStats((s["worker_id"], s) for s in _gt._worker_stats())


def print_worker_stats(file=None):
    """Prints get_worker_stats() as a table, one row per worker."""
    out = file or sys.stdout
    stats = get_worker_stats()
    rows = [[h for _, h in _STAT_COLUMNS]]
    rows += [[str(s[k]) for k, _ in _STAT_COLUMNS] for _, s in sorted(stats.items())]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_STAT_COLUMNS))]
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)), file=out)
    if not stats:
        print("(no workers)", file=out)


def status():
    """The dispatcher's live status as a dict, as its /api/status prints it: ``workers``
    (memory, ops_per_s, busy_fraction, queue_depth, ...), ``sessions`` and ``users`` (ops_per_s,
    bytes held, errors, sync_latency with p50_s / p99_s), ``recent_errors``. An admin sees every
    session, other users only their own. 64-bit counters are strings in that JSON form; they are
    ints here. A sync point."""
    return _ints(json.loads(_gt._status_json()))


# The report's text fields; every other string of digits is a 64-bit counter.
_TEXT_FIELDS = frozenset(("version", "device_kind", "device_name", "user", "program", "name",
                          "op", "message"))


def _ints(v, key=None):
    # protobuf's JSON form writes 64-bit integers as strings; Python users expect numbers.
    if isinstance(v, dict):
        return {k: _ints(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [_ints(x, key) for x in v]
    if isinstance(v, str) and key not in _TEXT_FIELDS and v.isdigit():
        return int(v)
    return v


def tape(t):
    """The ops recorded for autograd that ``t`` depends on, most recent first."""
    return _gt._recorded_ops(t)


def print_tape(*tensors, file=None):
    """Prints the autograd tape: the recorded ops behind each tensor given (most recent first),
    or, with no argument, how many autograd nodes are alive and the active signal scopes.

    GT's tape is PyTorch-style (each result holds its node, freed with it), so there is no global
    list of ops to print: pass the tensors (e.g. the loss) whose history you want to see."""
    out = file or sys.stdout
    if not tensors:
        print(f"autograd: {_gt._live_nodes()} live node(s); grad mode "
              f"{'on' if _gt.is_grad_enabled() else 'off'}", file=out)
        scopes = _signal.stack()
        print("signal scopes: " + (" > ".join(n for n, _ in scopes) if scopes else "(none)"),
              file=out)
        return
    for i, t in enumerate(tensors):
        ops = _gt._recorded_ops(t)
        head = f"tape[{i}]: shape {tuple(t.shape)} {t.dtype}"
        head += f", grad_fn {t.grad_fn}" if t.grad_fn else " (leaf)"
        print(f"{head}, {len(ops)} recorded op(s)", file=out)
        for j, name in enumerate(ops):
            print(f"  {j:4d}  {name}", file=out)

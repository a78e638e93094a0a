"""Debugging helpers: worker statistics and the autograd tape.

The instruction log of the embedded default is written where the environment variable
GT_INSTRUCTION_LOG points (set it before the first op); a shared dispatcher has its own
(--instruction-log, see etc/gt/dispatcher.yaml)."""
import sys

from . import _gt
from . import signal as _signal

__all__ = ["get_worker_stats", "print_tape", "tape"]


def get_worker_stats():
    """One dict per worker: worker_id, device, tensors, bytes, ops_executed, errors, peak_bytes,
    reserved_bytes, sessions (a sync point: waits for the dispatcher's answer)."""
    return _gt._worker_stats()


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

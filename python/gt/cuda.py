"""gt.cuda: torch.cuda's queries, answered by the dispatcher. In GT a device names a worker
(``cuda:N`` is worker N, GPU or CPU), so scripts written for CUDA run unchanged on any GT."""
from . import _gt, _host_random


def device_count():
    """The workers GT can pin tensors to (asks the dispatcher)."""
    return _gt._cuda.device_count()


def is_available():
    """True when the dispatcher has at least one worker."""
    return _gt._cuda.is_available()


def synchronize(device=None):
    """Waits until everything queued so far has executed (every worker: ``device`` is ignored)."""
    _gt.synchronize()


def manual_seed(seed):
    """gt.manual_seed: GT's random streams are per session, not per device."""
    _host_random.manual_seed(seed)


manual_seed_all = manual_seed


def memory_allocated(device=None):
    """Bytes of tensors held by worker ``device`` (all workers when None), from its statistics."""
    return _worker_sum("bytes", device)


def max_memory_allocated(device=None):
    """The workers' peak bytes held (``device``: one worker)."""
    return _worker_sum("peak_bytes", device)


def memory_reserved(device=None):
    """Bytes the workers' caching allocators reserve (``device``: one worker)."""
    return _worker_sum("reserved_bytes", device)


def _worker_sum(key, device):
    from . import debug
    stats = debug.get_worker_stats()
    if device is None:
        return sum(s[key] for s in stats.values())
    index = _gt.device(device).index if not isinstance(device, int) else device
    if index is None or index not in stats:
        raise ValueError(f"gt.cuda: no worker {device!r} (GT has workers {sorted(stats)})")
    return stats[index][key]

"""gt: GT's Python API -- eager, PyTorch-style tensor code that runs on a shared GT dispatcher and
its GPU (or CPU) workers, compatible with the original GT's API::

    import gt
    a = gt.randn(1000, 1000)
    b = gt.randn(1000, 1000)
    c = (a @ b).relu()
    print(c.sum().item())

Every op returns at once and is pipelined to the workers; only sync points wait (``.item()``,
``.numpy()`` / ``.data.numpy()``, ``numpy.asarray(t)``, ``print(t)``, ``gt.synchronize()``,
``gt.debug.get_worker_stats()``, ``t[mask]`` and ``masked_select``, whose shapes depend on the
mask's values). They release the GIL while waiting.

Where ops run: ``gt.connect('host:port')`` (or ``'unix:/path'``) before the first op, else the
``GT_ADDRESS`` environment variable, else the embedded default: a private dispatcher and
``gt.gpu_workers(n)`` workers (default 1), spawned on first use and stopped at exit. The embedded
default runs ``gt-dispatcherd`` / ``gt-workerd`` from ``$GT_BIN_DIR``, else the ``bin`` of the prefix
this package is installed in, else (when the package is still in its build tree) that build
tree's ``bin``, else ``$PATH``.

Errors: ``gt.ShapeError`` (a ``ValueError``) where a shape/dtype/axis error is made;
``gt.WorkerError`` at the next sync point for failures of queued work, with the subclasses
``gt.OutOfMemoryError`` (a worker's memory or the user's quota) and ``gt.UnavailableError`` (the
dispatcher, a worker or the session gone); ``gt.PermissionDeniedError`` when the dispatcher
refuses the client. All are ``gt.GTError`` (a ``RuntimeError``) and carry ``.code``, the status
code's name (``"RESOURCE_EXHAUSTED"``, ...): the class is chosen by that code, never by the
message. A sync point with no answer from the dispatcher for ``GT_SYNC_TIMEOUT_S`` seconds
(default 900; ``gt.set_sync_timeout(s)``, 0 = no deadline) raises ``gt.UnavailableError`` and the
session is lost.

Signals and sharding (docs/ARCHITECTURE.md §5): ``gt.signal.context(name)`` scopes, given meaning by
configs (``gt.register_config``, ``gt.load_config``, ``GT_CONFIG`` -- a YAML file loaded at
import -- or the dispatcher's server-wide configs), make the dispatcher shard or replicate the
tensors created and computed inside them over several workers, run pipeline stages on their
workers and gradient ops under backward signals; see gt.signal and gt.config. Results do not
depend on placement, and a program runs unchanged without any config.
"""
import os as _os

from . import _gt
from ._gt import (GTError, OutOfMemoryError, PermissionDeniedError, ShapeError, Tensor,
                  UnavailableError, WorkerError, arange, bmm, cat, connect, device, dtype, einsum,
                  empty,
                  empty_like,
                  eye, from_numpy, full, full_like, get_float32_matmul_precision, gpu_workers,
                  is_grad_enabled, linspace, ones, ones_like, rand, rand_like,
                  randint, randn, randn_like, set_float32_matmul_precision, set_grad_enabled,
                  set_sync_timeout, stack, synchronize, tensor, where, zeros, zeros_like)
from ._gt import float32, float64, float16, bfloat16, int8, int32, int64, uint8  # noqa: F401
from ._host_random import manual_seed
from . import _tensor
from ._tensor import TensorData, enable_grad, no_grad
from . import autograd, config, cuda, debug, nn, optim, return_types, signal
from . import client  # noqa: E402 (the original GT's layout: gt.client.tensor, .nn, .autograd)
from . import utils
from ._serialization import load, save
from .config import ShardConfig, SignalConfig, get_config, load_config, register_config
from .compile import compile  # noqa: A001 (torch.compile's name)

# gt.exp, gt.add, gt.sum, ... (the free forms of the tensor methods; gt/tensor_api.def).
globals().update({_n: getattr(_tensor, _n) for _n in _tensor.FREE_FUNCTIONS})

bool = _gt.bool  # noqa: A001 (gt.bool is the dtype, like torch.bool)
float = float32  # noqa: A001
long = int64
half = float16
double = float64


__version__ = "0.1.0"


def _dtype_by_name(name):
    return _gt._dtype(name)


def _load_env_config():
    path = _os.environ.get("GT_CONFIG")
    if path:
        try:
            load_config(path)
        except (OSError, ValueError) as e:
            raise ImportError(f"gt: cannot load GT_CONFIG={path}: {e}") from e


_load_env_config()

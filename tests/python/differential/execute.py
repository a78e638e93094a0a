"""Runs a case's lines in one library and snapshots what is compared.

A run gives a Result: either the exception (and the line that raised it, when known) or a
snapshot per output variable and per gradient. Snapshots are plain numpy/Python data, so the two
libraries' results compare without either library's objects:

    ("tensor", dtype_name, shape, values)   values as float64 / int64 / bool numpy arrays
    ("tuple", [snapshot, ...])               split/chunk results, torch's (values, indices)
    ("py", type_name, value)                 Python numbers (item(), int(t), ...)
    ("none",)                                a .grad that is None
    ("other", type_name)                     anything else
"""
from dataclasses import dataclass, field

import warnings

import numpy as np

from . import dtypes as D

_CODE_CACHE = {}


def _compiled(line):
    code = _CODE_CACHE.get(line)
    if code is None:
        if len(_CODE_CACHE) > 50000:
            _CODE_CACHE.clear()
        code = _CODE_CACHE[line] = compile(line, "<case>", "exec")
    return code


@dataclass
class Result:
    error: BaseException = None
    error_line: int = None           # index of the raising line; None at a sync/fetch
    values: dict = field(default_factory=dict)
    grads: dict = field(default_factory=dict)
    ns: dict = field(default=None, repr=False)   # the run's namespace (for partial comparison)

    @property
    def raised(self):
        return self.error is not None


def run_lines(case, ns):
    """Executes the lines in namespace ns; returns (exception, line index) or (None, None)."""
    with warnings.catch_warnings():  # deprecation warnings both libraries give (x.T, ...)
        warnings.simplefilter("ignore")
        for i, line in enumerate(case.lines):
            try:
                exec(_compiled(line), ns)
            except Exception as e:  # noqa: BLE001 - any exception is the behaviour compared
                return e, i
    return None, None


def snapshot(obj, to_numpy, tensor_type):
    """A comparable snapshot of obj; to_numpy(tensor) -> (dtype_name, numpy array)."""
    if obj is None:
        return ("none",)
    if isinstance(obj, tensor_type):
        name, arr = to_numpy(obj)
        if D.is_float(name):
            arr = np.asarray(arr, dtype=np.float64)
        elif D.is_int(name):
            arr = np.asarray(arr, dtype=np.int64)
        return ("tensor", name, tuple(int(d) for d in arr.shape), arr)
    if isinstance(obj, (tuple, list)):
        return ("tuple", [snapshot(o, to_numpy, tensor_type) for o in obj])
    if isinstance(obj, (bool, int, float)):
        return ("py", type(obj).__name__, obj)
    return ("other", type(obj).__name__)


def collect(case, ns, to_numpy, tensor_type):
    """Snapshots of the case's outputs and gradients from namespace ns (may raise: fetching a
    gt tensor is a sync point)."""
    values = {n: snapshot(ns.get(n), to_numpy, tensor_type) for n in case.outputs}
    grads = {n: snapshot(ns[n].grad, to_numpy, tensor_type) for n in case.grad_inputs}
    return values, grads

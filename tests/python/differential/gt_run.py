"""Runs a case on gt.

gt reports errors of queued work at the next sync point (ARCHITECTURE §2), so after the lines run
the case ends with gt.synchronize() and the outputs are fetched inside the same guard: an error
anywhere in the case is this case's error and cannot leak into the next one.
"""
import gt

from . import execute


def _to_numpy(t):
    return t.dtype.name, t.numpy()  # bfloat16 arrives as float32 values


def namespace():
    return {"M": gt, "F": gt.nn.functional}


def run(case):
    ns = namespace()
    err, line = execute.run_lines(case, ns)
    if err is None:
        try:
            gt.synchronize()
            values, grads = execute.collect(case, ns, _to_numpy, gt.Tensor)
            return execute.Result(values=values, grads=grads, ns=ns)
        except Exception as e:  # noqa: BLE001
            err = e
    try:
        gt.synchronize()  # anything still pending belongs to this case
    except Exception:  # noqa: BLE001
        pass
    return execute.Result(error=err, error_line=line, ns=ns)


def snapshot(obj):
    return execute.snapshot(obj, _to_numpy, gt.Tensor)

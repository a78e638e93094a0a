"""gt.save / gt.load (torch.save / torch.load's form) and pickling of tensors.

A gt.Tensor pickles as its values (a numpy array, fetched: a sync point), dtype and
requires_grad, and unpickles as a new tensor of this session; so state dicts, optimizer-free
checkpoints and any container of tensors go through ``pickle`` and ``gt.save``. bfloat16 values
travel as float32 (numpy has no bfloat16) and are cast back, exactly. Autograd history is not
saved (as ``torch.save`` of a detached tensor). Only load files you trust: unpickling runs code.
"""
import pickle

from . import _gt

__all__ = ["save", "load"]


def _rebuild(values, dtype_name, requires_grad):
    t = _gt.from_numpy(values)
    dt = _gt._dtype(dtype_name)
    if t.dtype != dt:
        t = t.to(dt)
    if requires_grad:
        t.requires_grad_()
    return t


def _reduce(t):
    return _rebuild, (t.detach().numpy(), t.dtype.name, t.requires_grad and t.is_leaf)


_gt.Tensor.__reduce__ = _reduce


def save(obj, f):
    """Pickles ``obj`` (tensors, state dicts, lists/dicts of them) to a path or a binary file."""
    if hasattr(f, "write"):
        pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
        return
    with open(f, "wb") as out:
        pickle.dump(obj, out, protocol=pickle.HIGHEST_PROTOCOL)


def load(f):
    """The object ``save`` wrote (tensors uploaded to this session). Runs pickle: trusted files
    only."""
    if hasattr(f, "read"):
        return pickle.load(f)
    with open(f, "rb") as inp:
        return pickle.load(inp)

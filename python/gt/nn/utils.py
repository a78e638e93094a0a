"""gt.nn.utils: gradient clipping in torch.nn.utils' form. Everything stays on the workers (no
round trip): the total norm is a tensor, and the scale applied to each .grad is computed from it
there, as torch does."""
from .. import _gt
from .._tensor import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters):
    if isinstance(parameters, _gt.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0):
    """Scales the gradients in place so their joint norm is at most ``max_norm``; returns the
    norm before clipping (a 0-d tensor). ``norm_type`` may be ``float('inf')``."""
    grads = _grads(parameters)
    if not grads:
        return _gt.zeros(())
    norm_type = float(norm_type)
    with no_grad():
        if norm_type == float("inf"):
            total = _gt.stack([g.abs().max().float() for g in grads]).max()
        else:
            parts = [(g.float().abs() ** norm_type).sum() for g in grads]
            total = _gt.stack(parts).sum() ** (1.0 / norm_type)
        scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(scale.to(g.dtype))
    return total


def clip_grad_value_(parameters, clip_value):
    """Clamps every gradient element into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)

"""gt.autograd: backward / grad over several tensors, like torch.autograd."""
from . import _gt
from ._tensor import enable_grad, no_grad

__all__ = ["backward", "grad", "no_grad", "enable_grad"]


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Accumulates d(sum tensors * grad_tensors)/d(leaf) into each leaf's .grad."""
    _gt._backward(tensors, grad_tensors, retain_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=False, allow_unused=False):
    """The gradients of ``outputs`` with respect to ``inputs`` (a tuple), without touching any
    .grad; an unused input gives None with allow_unused=True (else an error)."""
    return _gt._grad(outputs, inputs, grad_outputs, retain_graph, allow_unused)

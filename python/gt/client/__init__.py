"""gt.client: the original GT's module layout, so scripts written for it import unchanged::

    from gt.client.tensor import randn, from_numpy
    from gt.client.nn import Module, Linear, mse_loss, SGD
    from gt.client import autograd

Each module is the same objects as the flat ``gt`` API (``gt.client.tensor.randn is gt.randn``):
one implementation, two import paths.
"""
from . import autograd, nn, tensor

__all__ = ["autograd", "nn", "tensor"]

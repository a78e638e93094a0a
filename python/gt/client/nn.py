"""gt.client.nn: modules, losses and optimizers (the original GT's module); the same objects as
gt.nn (Module, Linear, ReLU, mse_loss, cross_entropy_loss, SGD, ...)."""
from .. import nn as _nn

__all__ = list(_nn.__all__)
globals().update({_n: getattr(_nn, _n) for _n in __all__})

"""gt.client.autograd: backward, grad and the grad-mode switches (the original GT's module); the
same objects as gt.autograd plus gt.set_grad_enabled / gt.is_grad_enabled."""
from .. import _gt
from .. import autograd as _autograd

__all__ = list(_autograd.__all__) + ["set_grad_enabled", "is_grad_enabled"]
globals().update({_n: getattr(_autograd, _n) for _n in _autograd.__all__})
set_grad_enabled = _gt.set_grad_enabled
is_grad_enabled = _gt.is_grad_enabled

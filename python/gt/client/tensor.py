"""gt.client.tensor: the tensor class, its factories and conversions (the original GT's module);
the same objects as gt.randn, gt.from_numpy, gt.Tensor, ..."""
from .. import _gt, _tensor
from .._tensor import TensorData

Tensor = _gt.Tensor

__all__ = ["Tensor", "TensorData", "arange", "cat", "empty", "empty_like", "eye", "from_numpy",
           "full", "full_like", "linspace", "ones", "ones_like", "rand", "rand_like", "randint",
           "randn", "randn_like", "stack", "tensor", "where", "zeros", "zeros_like"]

globals().update({_n: getattr(_gt, _n) for _n in __all__ if hasattr(_gt, _n)})
# The free forms of the tensor methods (exp, sum, matmul, ...), as on gt itself.
globals().update({_n: getattr(_tensor, _n) for _n in _tensor.FREE_FUNCTIONS})
__all__ += list(_tensor.FREE_FUNCTIONS)

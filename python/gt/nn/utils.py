"""gt.nn.utils: gradient clipping in torch.nn.utils' form (libgtclient's gt::nn::utils).
Everything stays on the workers (no round trip): the total norm is a 0-d tensor, and the scale
applied to each .grad is computed from it there, as torch does."""
from .. import _gt

__all__ = ["clip_grad_norm_", "clip_grad_value_"]

# clip_grad_norm_(parameters, max_norm, norm_type=2.0) -> the norm before clipping; norm_type
# may be float('inf').
clip_grad_norm_ = _gt.nn.utils.clip_grad_norm_
# clip_grad_value_(parameters, clip_value): clamps every gradient element in place.
clip_grad_value_ = _gt.nn.utils.clip_grad_value_

"""Convolution, pooling and batch-norm modules (torch.nn's Conv2d, MaxPool2d, AvgPool2d,
BatchNorm1d/2d), computed by gt.nn.functional's composites."""
from .. import _gt
from .._tensor import no_grad
from . import Module
from . import functional as F


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


class Conv2d(Module):
    """2-d convolution of [N, C, H, W] (or [C, H, W]); weight [out, in / groups, kh, kw]. PyTorch's
    initialization: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups*kh*kw."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros"):
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f"Conv2d: padding_mode {padding_mode!r} is not supported (only 'zeros')")
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2d: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding = padding if isinstance(padding, str) else _pair(padding)
        self.dilation, self.groups = _pair(dilation), groups
        self.weight, self.bias = _gt.nn.conv2d_init(in_channels, out_channels, self.kernel_size,
                                                    groups, bias)

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _BatchNorm(Module):
    """Per-channel normalization with running statistics (torch.nn.BatchNorm*d): weight = 1,
    bias = 0; running_mean = 0, running_var = 1 and num_batches_tracked are buffers (state
    dict). momentum=None averages all batches seen (a cumulative moving average)."""

    _ranks = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = _gt.ones(num_features).requires_grad_() if affine else None
        self.bias = _gt.zeros(num_features).requires_grad_() if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", _gt.zeros(num_features))
            self.register_buffer("running_var", _gt.ones(num_features))
            self.register_buffer("num_batches_tracked", _gt.tensor(0, dtype=_gt.int64))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None
        self._batches = 0

    def forward(self, x):
        if x.dim() not in self._ranks:
            raise ValueError(f"{type(self).__name__}: expected a {' or '.join(map(str, self._ranks))}"
                             f"-d input, got shape {tuple(x.shape)}")
        use_batch = self.training or not self.track_running_stats
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self._batches += 1
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / self._batches
        update = self.training and self.track_running_stats
        return F.batch_norm(x, self.running_mean if update or not use_batch else None,
                            self.running_var if update or not use_batch else None,
                            self.weight, self.bias, use_batch, momentum, self.eps)

    def extra_repr(self):
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}"


class BatchNorm1d(_BatchNorm):
    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    _ranks = (4,)

"""gt.nn.functional: activations, layers and losses (libgtclient's gt::nn::functional; each is
built from primitive ops, so it has gradients and runs on every backend)."""
from .. import _gt

_F = _gt.functional

# The unary ops gt/tensor_api.def marks `functional` (relu, sigmoid, tanh, ...).
globals().update({_n: getattr(_F, _n) for _n in _gt._api["functional"]})
silu = _F.silu
gelu = _F.gelu  # gelu(x, approximate='none' | 'tanh')
softmax = _F.softmax  # softmax(x, dim=-1)
log_softmax = _F.log_softmax
logsumexp = _F.logsumexp  # logsumexp(x, dim, keepdim=False)
dropout = _F.dropout  # dropout(x, p=0.5, training=True)
linear = _F.linear  # linear(x, weight [out, in], bias=None)
layer_norm = _F.layer_norm  # layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5)
embedding = _F.embedding  # embedding(indices, weight)
conv2d = _F.conv2d  # conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)
max_pool2d = _F.max_pool2d  # max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1)
avg_pool2d = _F.avg_pool2d  # avg_pool2d(input, kernel_size, stride=None, padding=0, ...)
batch_norm = _F.batch_norm  # batch_norm(input, running_mean, running_var, weight, bias, training, ...)
one_hot = _F.one_hot  # one_hot(indices, num_classes=-1, dtype=int64)
clamp = _F.clamp
masked_fill = _F.masked_fill
var = _F.var
flatten = _F.flatten

mse_loss = _F.mse_loss  # mse_loss(input, target, reduction='mean')
binary_cross_entropy = _F.binary_cross_entropy  # (probabilities, target, weight=None, reduction='mean')
binary_cross_entropy_with_logits = _F.binary_cross_entropy_with_logits


def _class_targets(input, target):
    # The original GT's gt.tensor made float32 labels: float labels [N] against logits [N, C]
    # are class indices, not probabilities.
    if target.dtype.is_floating_point and tuple(target.shape) != tuple(input.shape):
        return target.long()
    return target


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of log-probabilities ``input`` [N, C] at class indices ``target``."""
    return _F.nll_loss(input, _class_targets(input, target), weight, ignore_index, reduction)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax + nll_loss of logits [N, C] against class indices [N] (int, or float labels),
    or against class probabilities of the input's shape."""
    return _F.cross_entropy(input, _class_targets(input, target), weight, ignore_index,
                            reduction, label_smoothing)


cross_entropy_loss = cross_entropy  # the original GT's name

__all__ = [n for n in dir() if not n.startswith("_")]

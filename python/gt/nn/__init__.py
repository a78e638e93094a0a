"""gt.nn: modules, losses and optimizers in the original GT's (and PyTorch's) form.

``Module`` collects its parameters recursively from its attributes: every gt.Tensor that requires
grad (a leaf) is a parameter, every Module (also inside lists, tuples and dicts) is a child::

    class MLP(gt.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = gt.nn.Linear(784, 256)
            self.fc2 = gt.nn.Linear(256, 10)

        def forward(self, x):
            return self.fc2(self.fc1(x).relu())

    model = MLP()
    opt = gt.nn.SGD(model.parameters(), lr=0.01)
    loss = gt.nn.cross_entropy_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()

The layers create their parameters with libgtclient's gt::nn initializations (PyTorch's) and
compute with its functional composites; the optimizers are gt::optim's.
"""
from collections import OrderedDict

from .. import _gt
from .._tensor import no_grad
from ..optim import SGD, Adam, AdamW, CosineAnnealingLR, Optimizer, StepLR
from . import functional, init, utils
from .functional import (avg_pool2d, batch_norm, binary_cross_entropy, conv2d, max_pool2d,
                         binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy,
                         cross_entropy_loss, dropout, embedding, gelu, layer_norm, linear,
                         log_softmax, mse_loss, nll_loss, one_hot, silu, softmax)

Tensor = _gt.Tensor

__all__ = [
    "Module", "Parameter", "Linear", "Sequential", "ModuleList", "ReLU", "GELU", "Tanh", "Sigmoid",
    "SiLU", "Softmax", "Identity", "Flatten", "Dropout", "LayerNorm", "Embedding", "MSELoss",
    "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss", "functional", "init", "utils", "mse_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy",
    "cross_entropy_loss", "nll_loss", "silu", "gelu", "softmax",
    "log_softmax", "dropout", "linear", "layer_norm", "embedding", "one_hot", "Optimizer", "SGD",
    "Adam", "AdamW", "StepLR", "CosineAnnealingLR", "Conv2d", "MaxPool2d", "AvgPool2d",
    "BatchNorm1d", "BatchNorm2d", "conv2d", "max_pool2d", "avg_pool2d", "batch_norm",
]
# gt.nn.relu, gt.nn.sigmoid, ...: the unary ops gt/tensor_api.def marks `functional`.
globals().update({_n: getattr(functional, _n) for _n in _gt._api["functional"]})
__all__ += list(_gt._api["functional"])


def Parameter(t, requires_grad=True):
    """Marks a tensor as a trainable leaf (returns a history-free tensor with requires_grad)."""
    if not isinstance(t, Tensor):
        t = _gt.tensor(t)
    if t.grad_fn is not None:
        t = t.detach()
    return t.requires_grad_(requires_grad)


class Module:
    """Base class of models. Subclasses set attributes in ``__init__`` and define ``forward``;
    calling the module calls ``forward``."""

    training = True  # per instance once train()/eval() is called

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_buffers", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ---- structure -------------------------------------------------------------------------
    def _attrs(self):
        d = self.__dict__
        return ((k, v) for k, v in d.items() if k not in ("training", "_buffers"))

    @staticmethod
    def _walk(prefix, value, seen, want_modules):
        """Yields (name, Tensor parameter) or (name, Module) found in one attribute value."""
        if isinstance(value, Module):
            if want_modules:
                if id(value) not in seen:
                    seen.add(id(value))
                    yield prefix, value
            else:
                yield from value._named_parameters(prefix + ".", seen)
        elif isinstance(value, Tensor):
            if not want_modules and value.requires_grad and value.is_leaf and id(value) not in seen:
                seen.add(id(value))
                yield prefix, value
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                yield from Module._walk(f"{prefix}.{i}", v, seen, want_modules)
        elif isinstance(value, dict):
            for k, v in value.items():
                yield from Module._walk(f"{prefix}.{k}", v, seen, want_modules)

    def _named_parameters(self, prefix, seen):
        for name, value in self._attrs():
            yield from Module._walk(prefix + name, value, seen, False)

    def named_parameters(self, prefix="", recurse=True):
        """(dotted name, tensor) for every parameter, children included (each tensor once)."""
        if not recurse:
            seen = set()
            return [(prefix + k, v) for k, v in self._attrs()
                    if isinstance(v, Tensor) and v.requires_grad and v.is_leaf
                    and not (id(v) in seen or seen.add(id(v)))]
        return list(self._named_parameters(prefix + "." if prefix else "", set()))

    def parameters(self, recurse=True):
        """The parameters (tensors that require grad), children included."""
        return [p for _, p in self.named_parameters(recurse=recurse)]

    def named_children(self):
        seen = set()
        out = []
        for name, value in self._attrs():
            out.extend(Module._walk(name, value, seen, True))
        return out

    def children(self):
        return [m for _, m in self.named_children()]

    def named_modules(self, prefix=""):
        out = [(prefix, self)]
        for name, child in self.named_children():
            out.extend(child.named_modules(f"{prefix}.{name}" if prefix else name))
        return out

    def modules(self):
        return [m for _, m in self.named_modules()]

    def register_buffer(self, name, tensor):
        """A non-trainable tensor saved in the state dict (e.g. running statistics)."""
        if "_buffers" not in self.__dict__:
            object.__setattr__(self, "_buffers", OrderedDict())
        self._buffers[name] = tensor
        object.__setattr__(self, name, tensor)

    def __setattr__(self, name, value):
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers:
            buffers[name] = value
        object.__setattr__(self, name, value)

    # ---- training ----------------------------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Clears (default) or zeroes every parameter's .grad."""
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                with no_grad():
                    p.grad.zero_()

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    # ---- devices and dtypes --------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """Moves every parameter and buffer to a device and/or converts the floating ones to a
        dtype, in place (``model.to('cuda:1')``, ``model.to(gt.float16)``, ``model.to(t)``): the
        same tensor objects follow, so an optimizer made before keeps working, as torch's."""
        device, dtype = _gt._parse_to(*args, **kwargs)
        for t in self._tensors():
            t._move_in_place_(device, dtype if t.dtype.is_floating_point else None)
        return self

    def cuda(self, device=None):
        """Pins the parameters to worker ``device`` (no device: they stay where they are)."""
        return self if device is None else self.to(device)

    def cpu(self):
        """The module itself: GT values reach the host from any worker."""
        return self

    def float(self):
        return self.to(_gt.float32)

    def half(self):
        return self.to(_gt.float16)

    def double(self):
        return self.to(_gt.float64)

    def bfloat16(self):
        return self.to(_gt.bfloat16)

    def _tensors(self):
        """Parameters and buffers, children included, each once."""
        seen = set()
        for t in list(self.parameters()) + [b for m in self.modules()
                                           for b in m.__dict__.get("_buffers", {}).values()]:
            if isinstance(t, Tensor) and id(t) not in seen:
                seen.add(id(t))
                yield t

    # ---- state -------------------------------------------------------------------------------
    def state_dict(self):
        """OrderedDict of dotted names -> tensors (parameters, then buffers, children included)."""
        out = OrderedDict(self.named_parameters())
        for prefix, m in self.named_modules():
            for k, b in m.__dict__.get("_buffers", {}).items():
                out[f"{prefix}.{k}" if prefix else k] = b
        return out

    def load_state_dict(self, state, strict=True):
        """Copies values into the existing tensors (shapes must match; outside the tape)."""
        own = self.state_dict()
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing {missing}, unexpected {unexpected}")
        with no_grad():
            for k, t in own.items():
                if k not in state:
                    continue
                v = state[k]
                if not isinstance(v, Tensor):
                    v = _gt.tensor(v, dtype=t.dtype)
                if tuple(v.shape) != tuple(t.shape):
                    raise _gt.ShapeError(f"load_state_dict: {k} has shape {tuple(v.shape)}, "
                                         f"the module's is {tuple(t.shape)}")
                t.copy_(v)
        return self

    def save(self, path):
        """Writes the state dict to a GTSD file (libgtclient's format; a sync point)."""
        _gt.nn.save_state_dict(list(self.state_dict().items()), str(path))

    def load(self, path, strict=True):
        return self.load_state_dict(OrderedDict(_gt.nn.load_state_dict_file(str(path))), strict)

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        kids = self.named_children()
        if not kids:
            return lines[0] + ")"
        for name, m in kids:
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {sub}")
        return "\n".join(lines) + "\n)"


# ---- layers --------------------------------------------------------------------------------------
class Linear(Module):
    """y = x W^T + b, W [out, in]; PyTorch's initialization U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight, self.bias = _gt.nn.linear_init(in_features, out_features, bias)

    def forward(self, x):
        return linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, " \
               f"bias={self.bias is not None}"


class Sequential(Module):
    """Applies its modules in order (children named 0, 1, ...)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], (list, tuple)):
            modules = tuple(modules[0])
        self.layers = list(modules)

    def named_children(self):
        return [(str(i), m) for i, m in enumerate(self.layers)]

    def _named_parameters(self, prefix, seen):
        for i, m in enumerate(self.layers):
            yield from Module._walk(f"{prefix}{i}", m, seen, False)

    def forward(self, x):
        for m in self.layers:
            x = m(x)
        return x

    def __getitem__(self, i):
        return self.layers[i]

    def __len__(self):
        return len(self.layers)

    def __iter__(self):
        return iter(self.layers)

    def append(self, m):
        self.layers.append(m)
        return self


class ModuleList(Module):
    """A list of modules whose parameters are collected."""

    def __init__(self, modules=()):
        super().__init__()
        self.items = list(modules)

    def named_children(self):
        return [(str(i), m) for i, m in enumerate(self.items)]

    def _named_parameters(self, prefix, seen):
        for i, m in enumerate(self.items):
            yield from Module._walk(f"{prefix}{i}", m, seen, False)

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def append(self, m):
        self.items.append(m)
        return self


class _Activation(Module):
    _fn = None

    def forward(self, x):
        return type(self)._fn(x)


class ReLU(_Activation):
    _fn = staticmethod(relu)


class Tanh(_Activation):
    _fn = staticmethod(tanh)


class Sigmoid(_Activation):
    _fn = staticmethod(sigmoid)


class SiLU(_Activation):
    _fn = staticmethod(silu)


class Identity(Module):
    def forward(self, x):
        return x


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return gelu(x, self.approximate)


class Softmax(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return softmax(x, self.dim)


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)


class Dropout(Module):
    """Zeroes elements with probability p while training (reproducible after gt.manual_seed)."""

    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"Dropout: p must be in [0, 1), got {p}")
        self.p = p

    def forward(self, x):
        return dropout(x, self.p, self.training)


class LayerNorm(Module):
    """Normalizes over the trailing ``normalized_shape``; weight = 1, bias = 0 initially."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.weight, self.bias = _gt.nn.layer_norm_init(self.normalized_shape, eps,
                                                       elementwise_affine)

    def forward(self, x):
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class Embedding(Module):
    """A lookup table [num_embeddings, embedding_dim] ~ N(0, 1); call it with integer indices."""

    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = _gt.nn.embedding_init(num_embeddings, embedding_dim)

    def forward(self, indices):
        if indices.dtype.is_floating_point:
            indices = indices.long()
        return embedding(indices, self.weight)


# ---- loss modules ----------------------------------------------------------------------------------
class MSELoss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return mse_loss(input, target, self.reduction)


class CrossEntropyLoss(Module):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__()
        self.weight, self.ignore_index = weight, ignore_index
        self.reduction, self.label_smoothing = reduction, label_smoothing

    def forward(self, input, target):
        return cross_entropy(input, target, self.weight, self.ignore_index, self.reduction,
                             self.label_smoothing)


class BCELoss(Module):
    def __init__(self, weight=None, reduction="mean"):
        super().__init__()
        self.weight, self.reduction = weight, reduction

    def forward(self, input, target):
        return binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(Module):
    def __init__(self, weight=None, pos_weight=None, reduction="mean"):
        super().__init__()
        self.weight, self.pos_weight, self.reduction = weight, pos_weight, reduction

    def forward(self, input, target):
        return binary_cross_entropy_with_logits(input, target, self.weight, self.pos_weight,
                                                self.reduction)


# Convolution, pooling and batch norm (conv.py needs Module, defined above).
from .conv import AvgPool2d, BatchNorm1d, BatchNorm2d, Conv2d, MaxPool2d  # noqa: E402

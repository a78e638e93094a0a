"""Python-level parts of gt.Tensor: grad-mode context managers, the ``t.data`` view and the
free-function forms of the tensor methods (gt.exp(t), gt.sum(t, axis=0), ...)."""
import functools

from . import _gt

Tensor = _gt.Tensor


# ---- grad mode -----------------------------------------------------------------------------------
class _GradMode:
    _enabled = None  # set by subclasses

    def __enter__(self):
        self._prev = _gt.is_grad_enabled()
        _gt.set_grad_enabled(self._enabled)
        return self

    def __exit__(self, *exc):
        _gt.set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    """``with gt.no_grad():`` (or ``@gt.no_grad()``): ops are not recorded for autograd.

    Per thread, nestable, like torch.no_grad()."""

    _enabled = False


class enable_grad(_GradMode):
    """``with gt.enable_grad():`` turns recording back on (e.g. inside no_grad)."""

    _enabled = True


# ---- t.data ----------------------------------------------------------------------------------------
def _plain(o):
    return o._t.detach() if isinstance(o, TensorData) else o


class TensorData:
    """``t.data``: t's values outside autograd, like PyTorch's ``.data``.

    Reading gives a history-free view (``t.data.numpy()``, ``numpy.asarray(t.data)``, arithmetic);
    in-place updates write into ``t`` itself without being recorded (``p.data -= lr * p.grad``),
    and ``t.data = values`` copies new values of the same shape into t."""

    __slots__ = ("_t",)
    __array_priority__ = 1000

    def __init__(self, t):
        self._t = t

    def numpy(self):
        return self._t.numpy()

    def __array__(self, dtype=None, copy=None):
        return self._t.__array__(dtype)

    def __array_function__(self, func, types, args, kwargs):
        # numpy's functions see t.data as the array it is in the original GT (np.mean(t.data),
        # np.concatenate([a.data, b.data]), np.allclose(t.data, ref)): its values, fetched.
        return func(*_fetched(args), **_fetched(kwargs))

    def tolist(self):
        return self._t.tolist()

    def item(self):
        return self._t.item()

    @property
    def shape(self):
        return self._t.shape

    @property
    def dtype(self):
        return self._t.dtype

    @property
    def ndim(self):
        return self._t.ndim

    def __len__(self):
        return len(self._t)

    def __repr__(self):
        return repr(self._t.detach())

    __str__ = __repr__

    def __getattr__(self, name):
        return getattr(self._t.detach(), name)

    def detach(self):
        return self._t.detach()

    # In place: written into the tensor itself, outside the tape.
    def _in_place(self, method, other):
        with no_grad():
            getattr(self._t, method)(_plain(other))
        return self

    def __iadd__(self, o):
        return self._in_place("add_", o)

    def __isub__(self, o):
        return self._in_place("sub_", o)

    def __imul__(self, o):
        return self._in_place("mul_", o)

    def __itruediv__(self, o):
        return self._in_place("div_", o)

    def add_(self, o):
        return self._in_place("add_", o)

    def sub_(self, o):
        return self._in_place("sub_", o)

    def mul_(self, o):
        return self._in_place("mul_", o)

    def div_(self, o):
        return self._in_place("div_", o)

    def copy_(self, o):
        return self._in_place("copy_", o)

    def fill_(self, v):
        return self._in_place("fill_", v)

    def zero_(self):
        with no_grad():
            self._t.zero_()
        return self


def _fetched(o):
    """``o`` with every TensorData in it (also inside lists, tuples, dicts) replaced by its values
    as a numpy array."""
    if isinstance(o, TensorData):
        return o.numpy()
    if isinstance(o, list):
        return [_fetched(x) for x in o]
    if isinstance(o, tuple):
        return tuple(_fetched(x) for x in o)
    if isinstance(o, dict):
        return {k: _fetched(v) for k, v in o.items()}
    return o


def _forward(name):
    def op(self, *args):
        return getattr(self._t.detach(), name)(*(_plain(a) for a in args))

    op.__name__ = name
    return op


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__",
              "__abs__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
              "__getitem__", "__iter__", "__float__", "__int__", "__bool__"):
    setattr(TensorData, _name, _forward(_name))
TensorData.__hash__ = object.__hash__


def _get_data(t):
    return TensorData(t)


def _set_data(t, value):
    if isinstance(value, TensorData) and value._t is t:
        return  # `t.data -= x` assigns the view back to itself
    value = _plain(value)
    if not isinstance(value, Tensor):
        value = _gt.tensor(value, dtype=t.dtype)
    if tuple(value.shape) != tuple(t.shape):
        raise _gt.ShapeError(
            f"data: cannot assign values of shape {tuple(value.shape)} to a tensor of shape "
            f"{tuple(t.shape)} (GT tensors keep their shape)")
    with no_grad():
        t.copy_(value)


Tensor.data = property(_get_data, _set_data, doc=TensorData.__doc__)


# ---- free functions ------------------------------------------------------------------------------
def _method(name, doc=None):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = doc or f"gt.{name}(t, ...) is t.{name}(...)."
    return fn


# The table-shaped ops (gt/tensor_api.def, exported as _gt._api): gt.exp(t), gt.add(a, b),
# gt.sum(t, axis=0), ...
_api = _gt._api
_TABLE_FUNCTIONS = tuple(_api["unary"] + _api["binary"] + _api["compare"] + _api["reduce"])
for _name in _TABLE_FUNCTIONS:
    globals()[_name] = _method(_name)
del _name

# Methods with bespoke signatures that also have a free form.
softmax = _method("softmax")
log_softmax = _method("log_softmax")
var = _method("var")
cumsum = _method("cumsum")
matmul = _method("matmul")
reshape = _method("reshape")
transpose = _method("transpose")
permute = _method("permute")
unsqueeze = _method("unsqueeze")
squeeze = _method("squeeze")
flatten = _method("flatten")
split = _method("split")
chunk = _method("chunk")
clamp = _method("clamp")
logsumexp = _method("logsumexp")
bitwise_not = _method("bitwise_not")
std = _method("std")
any = _method("any")  # noqa: A001 (torch.any)
all = _method("all")  # noqa: A001 (torch.all)
isclose = _method("isclose")
allclose = _method("allclose")
equal = _method("equal")
masked_select = _method("masked_select")
sort = _method("sort")
argsort = _method("argsort")
topk = _method("topk")
msort = _method("msort")

FREE_FUNCTIONS = _TABLE_FUNCTIONS + (
    "softmax", "log_softmax", "var", "cumsum", "matmul", "reshape", "transpose", "permute",
    "unsqueeze", "squeeze", "flatten", "split", "chunk", "clamp", "logsumexp", "bitwise_not",
    "std", "any", "all", "isclose", "allclose", "equal", "masked_select", "sort", "argsort",
    "topk", "msort")

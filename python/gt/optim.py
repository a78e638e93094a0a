"""gt.optim: optimizers and learning-rate schedules (libgtclient's gt::optim).

Updates run on the workers as ops outside the tape and write each parameter in place, so the
tensors held by modules see them::

    opt = gt.optim.Adam(model.parameters(), lr=1e-3)
    sched = gt.optim.CosineAnnealingLR(opt, T_max=100)
    for ...:
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()

Parameter groups as torch.optim: ``SGD([{"params": base}, {"params": head, "lr": 1e-3}],
lr=1e-2, momentum=0.9)`` gives each group its own gt::optim optimizer (the group's options over
the constructor's defaults); ``opt.param_groups`` lists them as dicts whose ``'lr'`` reads and
writes the group's live learning rate (the other options are fixed once made).
"""
from . import _gt

_C = _gt.optim

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "LRScheduler", "StepLR", "CosineAnnealingLR"]


class _ParamGroup(dict):
    """One parameter group, a dict as torch's: 'lr' is the group's optimizer's live value."""

    def __init__(self, impl, options):
        super().__init__(options)
        self._impl = impl

    def __getitem__(self, key):
        if key == "lr":
            return self._impl.lr
        return super().__getitem__(key)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def __setitem__(self, key, value):
        if key == "lr":
            self._impl.lr = float(value)
        elif key in self and super().__getitem__(key) == value:
            pass
        else:
            raise NotImplementedError(
                f"param_groups: only 'lr' can be changed on a live optimizer, not {key!r} "
                "(make a new optimizer with the option instead)")
        super().__setitem__(key, value)


class Optimizer:
    """Base of gt's optimizers: one gt::optim optimizer per parameter group."""

    _impl_cls = None  # the gt::optim class (set by subclasses)
    _option_names = ()

    def __init__(self, params, **defaults):
        if isinstance(params, _gt.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got a Tensor")
        params = list(params)
        groups = params if params and all(isinstance(g, dict) for g in params) else [
            {"params": params}]
        self.defaults = dict(defaults)
        self._groups = []
        for g in groups:
            if "params" not in g:
                raise ValueError("param_groups: each group needs a 'params' entry")
            unknown = set(g) - {"params"} - set(self._option_names)
            if unknown:
                raise TypeError(f"{type(self).__name__}: unknown option(s) {sorted(unknown)} in "
                                "a parameter group")
            ps = g["params"]
            ps = [ps] if isinstance(ps, _gt.Tensor) else list(ps)
            options = {k: g.get(k, v) for k, v in self.defaults.items()}
            impl = self._impl_cls(ps, **options)
            self._groups.append(_ParamGroup(impl, {"params": ps, **options}))

    @property
    def param_groups(self):
        return list(self._groups)

    def step(self):
        """One update of every parameter that has a .grad."""
        for g in self._groups:
            g._impl.step()

    def zero_grad(self, set_to_none=True):
        for g in self._groups:
            g._impl.zero_grad(set_to_none)

    @property
    def lr(self):
        """The first group's learning rate (gt's shorthand; param_groups has every group's)."""
        return self._groups[0]["lr"]

    @lr.setter
    def lr(self, value):
        for g in self._groups:
            g["lr"] = value

    @property
    def params(self):
        return [p for g in self._groups for p in g["params"]]

    def __repr__(self):
        return f"{type(self).__name__}({len(self._groups)} group(s), lr={self.lr})"


class SGD(Optimizer):
    """torch.optim.SGD: momentum, dampening, weight_decay, nesterov."""

    _impl_cls = _C.SGD
    _option_names = ("lr", "momentum", "dampening", "weight_decay", "nesterov")

    def __init__(self, params, lr=0.01, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening,
                         weight_decay=weight_decay, nesterov=nesterov)

    @property
    def momentum(self):
        return self._groups[0]["momentum"]


class Adam(Optimizer):
    """torch.optim.Adam (amsgrad optional)."""

    _impl_cls = _C.Adam
    _option_names = ("lr", "betas", "eps", "weight_decay", "amsgrad")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False):
        super().__init__(params, lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad)


class AdamW(Adam):
    """torch.optim.AdamW: decoupled weight decay."""

    _impl_cls = _C.AdamW

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad)


class LRScheduler:
    """A schedule over every group of an optimizer (one gt::optim schedule per group, each from
    its group's initial lr, as torch's base_lrs)."""

    _impl_cls = None

    def __init__(self, optimizer, *args):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected a gt.optim optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        self._impls = [self._impl_cls(g._impl, *args) for g in optimizer._groups]

    def step(self):
        for s in self._impls:
            s.step()

    @property
    def last_epoch(self):
        return self._impls[0].last_epoch

    def get_last_lr(self):
        return [s.get_last_lr()[0] for s in self._impls]


class StepLR(LRScheduler):
    """lr * gamma ** (epoch // step_size)."""

    _impl_cls = _C.StepLR

    def __init__(self, optimizer, step_size, gamma=0.1):
        super().__init__(optimizer, step_size, gamma)


class CosineAnnealingLR(LRScheduler):
    """eta_min + (lr - eta_min) (1 + cos(pi epoch / T_max)) / 2."""

    _impl_cls = _C.CosineAnnealingLR

    def __init__(self, optimizer, T_max, eta_min=0.0):  # noqa: N803 (torch's name)
        super().__init__(optimizer, T_max, eta_min)

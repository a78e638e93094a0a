"""gt.nn.init: in-place parameter initializations in torch.nn.init's form (uniform_, normal_,
xavier_*, kaiming_*, ...): libgtclient's gt::nn::init. Each writes new values into the tensor
outside the tape and returns it; random values come from gt.rand / gt.randn (reproducible after
gt.manual_seed)."""
from .. import _gt

_I = _gt.nn.init

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (torch.nn.init.calculate_gain's table)."""
    if param is not None and (isinstance(param, bool) or not isinstance(param, (int, float))):
        raise ValueError(f"calculate_gain: negative_slope {param!r} is not a number")
    return _I.calculate_gain(nonlinearity, param)


uniform_ = _I.uniform_  # uniform_(tensor, a=0.0, b=1.0)
normal_ = _I.normal_  # normal_(tensor, mean=0.0, std=1.0)
constant_ = _I.constant_  # constant_(tensor, val)
zeros_ = _I.zeros_
ones_ = _I.ones_
eye_ = _I.eye_  # 2-d tensors only
xavier_uniform_ = _I.xavier_uniform_  # xavier_uniform_(tensor, gain=1.0)
xavier_normal_ = _I.xavier_normal_
kaiming_uniform_ = _I.kaiming_uniform_  # (tensor, a=0, mode='fan_in', nonlinearity='leaky_relu')
kaiming_normal_ = _I.kaiming_normal_

"""gt.optim: optimizers and learning-rate schedules (libgtclient's gt::optim).

Updates run on the workers as ops outside the tape and write each parameter in place, so the
tensors held by modules see them::

    opt = gt.optim.Adam(model.parameters(), lr=1e-3)
    sched = gt.optim.CosineAnnealingLR(opt, T_max=100)
    for ...:
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
"""
from . import _gt

Optimizer = _gt.optim.Optimizer
SGD = _gt.optim.SGD  # SGD(params, lr=0.01, momentum=0, dampening=0, weight_decay=0, nesterov=False)
Adam = _gt.optim.Adam  # Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False)
AdamW = _gt.optim.AdamW  # AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)
LRScheduler = _gt.optim.LRScheduler
StepLR = _gt.optim.StepLR  # StepLR(optimizer, step_size, gamma=0.1)
CosineAnnealingLR = _gt.optim.CosineAnnealingLR  # CosineAnnealingLR(optimizer, T_max, eta_min=0)

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "LRScheduler", "StepLR", "CosineAnnealingLR"]

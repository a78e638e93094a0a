"""The host-side random generator: what DataLoader(shuffle=True) and random_split draw from when
given no generator. As torch's default generator does for them, it follows gt.manual_seed, so
a script that seeds once gets the same batches in every run (torch.manual_seed(0) then a
shuffling DataLoader is reproducible in PyTorch; unseeded, each process draws its own)."""
import numpy as _np

from . import _gt

_generator = _np.random.default_rng()


def manual_seed(seed):
    """Seeds GT's random tensors (gt.rand, gt.randn, dropout, init) and the host generator."""
    global _generator
    _gt.manual_seed(seed)
    # A stream of its own for the same seed (not the device streams' Philox).
    _generator = _np.random.default_rng([int(seed) & ((1 << 64) - 1), 0x67745f686f7374])


def generator():
    """The host generator (a numpy.random.Generator), seeded by the last gt.manual_seed."""
    return _generator

"""gt.utils: data loading (gt.utils.data), as torch.utils."""
from . import data

__all__ = ["data"]

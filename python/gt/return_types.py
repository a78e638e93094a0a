"""Named-tuple results, as torch.return_types: ``v, i = x.max(dim=1)`` or ``r.values`` /
``r.indices``."""
import collections

max = collections.namedtuple("max", ["values", "indices"])  # noqa: A001 (torch's names)
min = collections.namedtuple("min", ["values", "indices"])  # noqa: A001
sort = collections.namedtuple("sort", ["values", "indices"])
topk = collections.namedtuple("topk", ["values", "indices"])

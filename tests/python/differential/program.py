"""A generated case: the program text shared by both libraries, and the facts about it.

The program is Python source over ``M`` (gt or torch) and ``F`` (M.nn.functional), so one text
runs on both sides and doubles as the reproducer. Facts ("tags") are neutral observations the
generator made while building it ("op:softmax", "input-inf:softmax", "view-inplace"); the OPEN
and DELIBERATE predicates match mismatches against them, never against source text.
"""
from dataclasses import dataclass, field


@dataclass
class Case:
    seed: int
    lines: list                      # statements, in order
    outputs: list                    # variable names compared after the program ran
    grad_inputs: list = field(default_factory=list)  # leaves whose .grad is compared
    tags: set = field(default_factory=set)
    producer: dict = field(default_factory=dict)     # var -> (op, operand dtype names)
    deps: dict = field(default_factory=dict)         # var -> the vars it was computed from
    defined_at: dict = field(default_factory=dict)   # var -> index of the line that set it
    tol_boost: dict = field(default_factory=dict)    # var -> atol factor (ill-conditioned ops)
    line_tags: dict = field(default_factory=dict)    # line index -> the facts of that step
    exact: set = field(default_factory=set)          # vars computed only by correctly rounded ops
    writers: dict = field(default_factory=dict)      # var -> every op that wrote it, in order
    torch_emulated: bool = False     # torch needed float16/bfloat16 emulation (torch_ref.py)
    unusable: bool = False           # emulation could not decide torch's dtype: not compared

    def has(self, *tags):
        """True when the case has every one of the tags."""
        return all(t in self.tags for t in tags)

    def has_any(self, *tags):
        return any(t in self.tags for t in tags)

    def has_prefix(self, prefix):
        return any(t.startswith(prefix) for t in self.tags)

    def ancestors(self, name):
        """Every variable `name` was computed from, directly or not."""
        seen, todo = set(), list(self.deps.get(name, ()))
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(self.deps.get(n, ()))
        return seen

    def ops(self):
        return sorted(t[3:] for t in self.tags if t.startswith("op:"))

    def reproducer(self, lib):
        """One line that recreates the case in `lib` ('gt' or 'torch')."""
        head = ("import gt; M = gt; F = gt.nn.functional" if lib == "gt" else
                "import torch; M = torch; F = torch.nn.functional")
        shown = self.outputs[-2:] + [f"{g}.grad" for g in self.grad_inputs]
        return "; ".join([head] + self.lines + [f"print({', '.join(shown)})"])

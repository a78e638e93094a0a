"""Grows one case step by step.

Each step is written as source and executed at once on torch, the way torch_ref.py will run the
whole case (natively, or emulating float16/bfloat16 kernels torch's CPU build lacks; warnings
off), so the generator always knows the shapes, dtypes and values it is building on:
ops pick operands that fit, and the facts it records (special values reaching a softmax, an
in-place op on a tensor that shares storage with another) are read off real tensors rather than
guessed. A step torch rejects stays in the case (error behaviour is compared) and ends it.
"""
import math
import warnings

import numpy as np
import torch

from . import dtypes as D
from . import values as V
from .program import Case
from .torch_ref import LowPrecisionEmulation, MixedLowPrecision, missing_kernel, namespace


class Builder:
    def __init__(self, rng, seed):
        self.rng = rng
        self.seed = seed
        self.lines = []
        self.tags = set()
        self.ns = namespace()
        self.names = []            # every variable, in creation order
        self.exact = {}            # name -> its values are bit-for-bit reproducible
        self.grad_leaves = []      # inputs created with requires_grad
        self.producer = {}         # name -> (op, operand dtype names)
        self.deps = {}             # name -> operand names
        self.defined_at = {}       # name -> line index
        self.tol_boost = {}        # name -> atol factor for an ill-conditioned op
        self.line_tags = {}        # line index -> the facts of that step
        self.no_backward = False   # a step whose backward torch 1.13 gets wrong
        self.failed = False        # torch rejected the last step
        self.emulating = False     # a float16/bfloat16 kernel was missing: emulating from then
        self.multi_view = set()    # views of split/chunk parts (torch refuses in-place on them)
        self.writers = {}          # name -> every op that wrote it, in order
        self.unusable = False      # the case cannot be built (emulation could not decide)
        self.last = None
        self._n_in = 0
        self._n_var = 0

    # ---- running -----------------------------------------------------------------------------
    def _run(self, line, emulate):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if emulate:
                with LowPrecisionEmulation():
                    exec(line, self.ns)
            else:
                exec(line, self.ns)

    def _exec(self, line):
        """Runs a line as torch_ref.run will: natively until a float16/bfloat16 kernel is missing,
        then (replaying the lines so far) the whole case under the emulation, so the shapes,
        dtypes and aliasing seen here are the reference's."""
        prior = self.lines[:-1] if self.lines and self.lines[-1] is line else list(self.lines)
        try:
            try:
                self._run(line, self.emulating)
            except Exception as e:  # noqa: BLE001
                if self.emulating or not missing_kernel(e):
                    raise
                self.emulating = True
                self.ns = namespace()
                for p in prior:
                    try:
                        self._run(p, True)
                    except Exception:  # noqa: BLE001 - the reference fails there too
                        pass
                self._run(line, True)
            return True
        except Exception as e:  # noqa: BLE001
            if isinstance(e, MixedLowPrecision):
                self.unusable = True
            self.failed = True
            return False

    def t(self, name):
        return self.ns.get(name)

    def dtype(self, name):
        return D.name_of(self.ns[name].dtype)

    def is_tensor(self, name):
        return isinstance(self.ns.get(name), torch.Tensor)

    # ---- inputs ------------------------------------------------------------------------------
    def p(self, prob):
        return self.rng.random() < prob

    def choice(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def rand_dtype(self, allowed=D.ALL):
        names = [n for n in D.ALL if n in allowed]
        w = np.array([D.WEIGHTS[n] for n in names])
        return names[int(self.rng.choice(len(names), p=w / w.sum()))]

    def new_input(self, shape=None, dtype=None, kind="any", grad=None, p_special=0.12):
        """A fresh input tensor (a leaf); float inputs require grad now and then."""
        if shape is None:
            shape = V.rand_shape(self.rng)
        if dtype is None:
            dtype = self.rand_dtype()
        if grad is None:
            grad = D.is_float(dtype) and self.p(0.4)
        grad = grad and D.is_float(dtype)
        vals = V.rand_values(self.rng, tuple(shape), dtype, kind, p_special)
        return self.add_input(vals, dtype, grad)

    def add_input(self, vals, dtype, grad=False):
        """An input tensor holding the given values (a numpy array)."""
        name = f"x{self._n_in}"
        self._n_in += 1
        if D.is_float(dtype) and vals.size:
            a = np.abs(vals[np.isfinite(vals) & (vals != 0)])
            if a.size and (a.max() >= 1e18 or a.min() <= (1e-4 if dtype == "float16" else 1e-30)):
                self.tags.add("extreme-input")  # overflow/underflow inside formulas
        if D.is_int(dtype) and vals.size and np.abs(vals.astype(np.float64)).max() > 2**24:
            self.tags.add("extreme-input")  # not exact in float32 (e.g. as an exponent)
        line = f"{name} = {V.tensor_literal(vals, dtype, grad)}"
        if not self._exec(line):
            raise RuntimeError(f"differential: torch rejected an input literal: {line}")
        self.lines.append(line)
        self.names.append(name)
        self.writers[name] = ["tensor"]
        self.deps[name] = set()
        self.defined_at[name] = len(self.lines) - 1
        self.exact[name] = True
        self.producer[name] = ("tensor", (dtype,))
        if grad:
            self.grad_leaves.append(name)
        return name

    # ---- operands ----------------------------------------------------------------------------
    def tensors(self, pred=None):
        return [n for n in self.names
                if self.is_tensor(n) and (pred is None or pred(self.ns[n]))]

    def operand(self, pred=None, make=None, exact=False, prefer_last=0.75):
        """An existing tensor that fits (the last result first, to build chains), else a fresh
        input from make() (default: any new input)."""
        def ok(n):
            return (self.is_tensor(n) and (pred is None or pred(self.ns[n]))
                    and (not exact or self.exact.get(n, False)))
        if self.last is not None and ok(self.last) and self.p(prefer_last):
            return self.last
        pool = [n for n in self.names if ok(n)]
        if pool and self.p(0.25):
            return self.choice(pool)
        if make is not None:
            return make()
        return self.new_input_where(pred) if pred is not None else self.new_input()

    def new_input_where(self, pred, tries=40):
        """A fresh input the predicate accepts (drawn until one fits)."""
        for _ in range(tries):
            shape = V.rand_shape(self.rng)
            dtype = self.rand_dtype()
            vals = V.rand_values(self.rng, shape, dtype)
            probe = torch.tensor(vals.tolist() if vals.ndim else vals.item(),
                                 dtype=getattr(torch, dtype)).reshape(shape)
            if D.is_float(dtype) and self.p(0.4):
                probe.requires_grad_()
            if pred(probe):
                return self.add_input(vals, dtype, probe.requires_grad)
        return self.new_input((2, 3), "float32")

    # ---- steps -------------------------------------------------------------------------------
    def _note(self, op, operands):
        self.tags.add("op:" + op)
        dts = []
        for o in operands:
            if self.is_tensor(o):
                dts.append(self.dtype(o))
                self.tags.add("dtype:" + self.dtype(o))
        return tuple(dts)

    def emit(self, expr, op, operands, exact=False, tags=(), tol_boost=None):
        """`vN = expr`; returns vN, or None when torch raised (the case ends there)."""
        name = f"v{self._n_var}"
        self._n_var += 1
        dts = self._note(op, operands)
        self.tags.update(tags)
        line = f"{name} = {expr}"
        self.lines.append(line)
        self.line_tags[len(self.lines) - 1] = {"op:" + op} | set(tags)
        ok = self._exec(line)
        self.names.append(name)
        self.deps[name] = set(operands)
        self.defined_at[name] = len(self.lines) - 1
        self.writers[name] = [op]
        if ok:
            self._track_multi_view(name, op, operands)
        if tol_boost:
            self.tol_boost[name] = tol_boost
        self.producer[name] = (op, dts)
        if not ok:
            return None
        self.exact[name] = exact and all(self.exact.get(o, True) for o in operands)
        self.last = name
        return name

    def emit_inplace(self, stmt, op, target, operands, exact=False, tags=()):
        """An in-place statement on `target`. Tensors sharing storage with it in torch (views,
        detach results, bases) change too: they depend on the statement's operands."""
        dts = self._note(op, [target] + list(operands))
        local = {"op:" + op} | set(tags)
        tt = self.ns[target]
        if tt.requires_grad:
            local.add("inplace-on-grad-history" if tt.grad_fn is not None
                      else "inplace-on-grad-leaf")
        leaves = [self.ns[n] for n in self.grad_leaves]
        base = tt._base
        if base is not None:
            local.add("view-inplace")
            # torch's _base is the root of a chain of views; a grad leaf may itself be a view
            # of that root (x = torch.tensor([]).reshape(3, 0).requires_grad_()).
            if any(lf is base or lf._base is base for lf in leaves):
                local.add("inplace-view-of-grad-leaf")
        if any(st == 0 and sz > 1 for st, sz in zip(tt.stride(), tt.shape)):
            local.add("inplace-overlapping-view")  # an expand: torch refuses to write it
        if target in self.multi_view and (tt.requires_grad or any(
                self.is_tensor(o) and self.ns[o].requires_grad for o in operands)):
            local.add("inplace-multi-output-view")  # a split/chunk part: torch refuses
        aliases = []
        if tt.numel() > 0:
            ptr = tt.storage().data_ptr()
            aliases = [n for n in self.tensors() if n != target and self.ns[n].numel() > 0
                       and self.ns[n].storage().data_ptr() == ptr]
            # A tuple result (max(dim)'s (values, indices), split parts) aliases through its
            # elements.
            aliases += [n for n in self.names if n != target and isinstance(self.ns.get(n), tuple)
                        and any(isinstance(e, torch.Tensor) and e.numel() > 0
                                and e.storage().data_ptr() == ptr for e in self.ns[n])]
        if aliases:
            local.add("view-inplace")
            if any(self.is_tensor(a) and self.ns[a].requires_grad and self.ns[a].grad_fn is None
                   for a in aliases):
                local.add("inplace-view-of-grad-leaf")
        self.tags.update(local)
        self.lines.append(stmt)
        self.line_tags[len(self.lines) - 1] = local
        ok = self._exec(stmt)
        self.producer[target] = (op, dts)
        self.writers[target] = self.writers.get(target, []) + [op]
        self.deps[target] = self.deps.get(target, set()) | set(operands)
        for a in aliases:
            self.deps[a] = self.deps.get(a, set()) | {target} | set(operands)
        if not ok:
            return None
        self.exact[target] = (exact and self.exact.get(target, True)
                              and all(self.exact.get(o, True) for o in operands))
        for a in aliases:  # they see the same written values
            self.exact[a] = self.exact.get(a, True) and self.exact[target]
        self.last = target
        return target

    def _track_multi_view(self, name, op, operands):
        """Marks name when it is a split/chunk part or a view of one."""
        new = self.ns.get(name)
        if not isinstance(new, torch.Tensor):
            return
        if op == "tuple-item" and self.producer.get(operands[0], ("",))[0] in ("split", "chunk"):
            self.multi_view.add(name)
            return
        for o in operands:
            src = self.ns.get(o)
            if o in self.multi_view and isinstance(src, torch.Tensor) and new._base is not None \
                    and (new._base is src or new._base is src._base):
                self.multi_view.add(name)

    # ---- finishing ---------------------------------------------------------------------------
    def maybe_backward(self):
        """Ends with `out.backward(g)` when the last result is a float tensor with a history."""
        if self.failed or self.last is None or not self.grad_leaves or self.no_backward:
            return
        out = self.ns.get(self.last)
        if not isinstance(out, torch.Tensor) or not out.requires_grad or out.grad_fn is None:
            return
        dt = self.dtype(self.last)
        if not D.is_float(dt):
            return
        g = V.rand_values(self.rng, tuple(out.shape), dt, "unit")
        line = f"{self.last}.backward({V.tensor_literal(g, dt)})"
        self.tags.add("backward")
        self.lines.append(line)
        self.line_tags[len(self.lines) - 1] = {"backward"}
        self._exec(line)

    def finish(self):
        return Case(seed=self.seed, lines=list(self.lines), outputs=list(self.names),
                    grad_inputs=list(self.grad_leaves) if "backward" in self.tags else [],
                    tags=set(self.tags), producer=dict(self.producer),
                    deps=dict(self.deps),
                    defined_at=dict(self.defined_at), tol_boost=dict(self.tol_boost),
                    line_tags=dict(self.line_tags),
                    exact={n for n, e in self.exact.items() if e},
                    writers={k: list(v) for k, v in self.writers.items()})

    # ---- facts about values --------------------------------------------------------------------
    def has_nonfinite(self, name, kind="any"):
        t = self.ns.get(name)
        if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point or t.numel() == 0:
            return False
        t = t.detach().float()
        if kind == "posinf":
            return bool((t == math.inf).any())
        if kind == "nan":
            return bool(t.isnan().any())
        return not bool(t.isfinite().all())

    def has_subnormal(self, name):
        """Whether a floating tensor holds a nonzero value below its dtype's smallest normal."""
        t = self.ns.get(name)
        if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point or t.numel() == 0:
            return False
        a = t.detach().float().abs()
        return bool(((a > 0) & (a < torch.finfo(t.dtype).tiny)).any())

    def max_abs(self, name):
        t = self.ns.get(name)
        if not isinstance(t, torch.Tensor) or t.numel() == 0:
            return 0.0
        t = t.detach().double()
        f = t[t.isfinite()] if t.dtype.is_floating_point else t
        return float(f.abs().max()) if f.numel() else 0.0

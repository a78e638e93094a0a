"""Runs cases for a range of seeds and aggregates what the test and the bench report."""
import time
from collections import Counter
from dataclasses import dataclass, field

from . import classify as C
from . import gt_run
from . import torch_ref
from .compare import compare
from .generator import make_case


@dataclass
class Outcome:
    case: object
    status: str                 # OK | SKIPPED | DELIBERATE | OPEN | UNEXPLAINED
    verdicts: list = field(default_factory=list)


def run_case(seed, families=None):
    case = make_case(seed, families)
    if case.unusable:
        return Outcome(case, "SKIPPED")
    try:
        t = torch_ref.run(case)
    except torch_ref.MixedLowPrecision:
        return Outcome(case, "SKIPPED")
    g = gt_run.run(case)
    verdicts = C.classify(case, compare(case, g, t), g, t)
    return Outcome(case, C.case_status(verdicts), verdicts)


@dataclass
class Report:
    cases: int = 0
    seconds: float = 0.0
    status: Counter = field(default_factory=Counter)       # case status -> cases
    causes: Counter = field(default_factory=Counter)       # (status, key, item) -> cases
    mismatches: Counter = field(default_factory=Counter)   # (status, key, item) -> mismatches
    emulated: int = 0                                      # torch ran with float16 emulation
    unexplained: dict = field(default_factory=dict)        # signature -> (count, outcome, m)

    def add(self, o):
        self.cases += 1
        self.status[o.status] += 1
        self.emulated += int(o.case.torch_emulated)
        seen = set()
        for v in o.verdicts:
            key = (v.status, v.cause.key if v.cause else "-", v.cause.item if v.cause else "-")
            self.mismatches[key] += 1
            if key not in seen:
                seen.add(key)
                self.causes[key] += 1
            if v.status == "UNEXPLAINED" and not v.inherited:
                sig = C.signature(o.case, v.mismatch)
                n, best, bm = self.unexplained.get(sig, (0, o, v.mismatch))
                if len(o.case.lines) < len(best.case.lines):
                    best, bm = o, v.mismatch
                self.unexplained[sig] = (n + 1, best, bm)

    def figures(self):
        """Named figures (the bench's --json)."""
        return {
            "cases": self.cases,
            "seconds": round(self.seconds, 2),
            "cases_per_second": round(self.cases / self.seconds, 1) if self.seconds else None,
            "status": dict(self.status),
            "unexplained_cases": self.status.get("UNEXPLAINED", 0),
            "torch_emulated_cases": self.emulated,
            "causes": [{"status": s, "cause": k, "item": i, "cases": n,
                        "mismatches": self.mismatches[(s, k, i)]}
                       for (s, k, i), n in sorted(self.causes.items(), key=_cause_order)],
            "unexplained_signatures": [
                {"signature": sig, "cases": n, "seed": o.case.seed, "detail": m.detail,
                 "gt": o.case.reproducer("gt"), "torch": o.case.reproducer("torch")}
                for sig, (n, o, m) in sorted(self.unexplained.items())],
        }

    def table(self):
        """The human-readable report."""
        out = [f"{self.cases} cases in {self.seconds:.1f} s "
               f"({self.cases / max(self.seconds, 1e-9):.0f}/s); torch float16 emulation in "
               f"{self.emulated}"]
        out.append("cases by status: " + ", ".join(
            f"{k} {self.status[k]}" for k in ("OK", "DELIBERATE", "OPEN", "UNEXPLAINED", "SKIPPED")
            if self.status[k]))
        out.append("")
        out.append(f"{'status':<12} {'item':>4}  {'cause':<32} {'cases':>7} {'mismatches':>10}")
        for (s, k, i), n in sorted(self.causes.items(), key=_cause_order):
            out.append(f"{s:<12} {str(i):>4}  {k:<32} {n:>7} {self.mismatches[(s, k, i)]:>10}")
        if self.unexplained:
            out.append("")
            out.append(f"{len(self.unexplained)} distinct UNEXPLAINED signatures:")
            for sig, (n, o, m) in sorted(self.unexplained.items()):
                out.append(f"  [{n} cases] {sig}  (seed {o.case.seed}, {m.var}: {m.detail})")
                out.append(f"    gt:    {o.case.reproducer('gt')}")
                out.append(f"    torch: {o.case.reproducer('torch')}")
        return "\n".join(out)


def _cause_order(item):
    (s, k, i), _ = item
    return (C.ORDER.get(s, 9), str(i).zfill(3), k)


def run_seeds(seeds, families=None, progress=None):
    rep = Report()
    t0 = time.perf_counter()
    for n, seed in enumerate(seeds):
        rep.add(run_case(seed, families))
        if progress and (n + 1) % progress == 0:
            print(f"  ... {n + 1} cases, {rep.status['UNEXPLAINED']} unexplained", flush=True)
    rep.seconds = time.perf_counter() - t0
    return rep

#!/usr/bin/python3
"""Long runs of the differential tester (tests/python/differential): gt against python3-torch on
seeded random programs, with counts per classification and cause.

  PYTHONPATH=build/python /usr/bin/python3 bench/differential.py --cases 20000 [--seed S] [--json]

Cases are seeds S .. S+N-1 (the pytest entry runs seeds 0..2499). Prints a table of cases per
status (OK, DELIBERATE, OPEN, UNEXPLAINED, SKIPPED) and per cause (issue 18 item), then every
distinct UNEXPLAINED signature with a one-line gt and torch reproducer; --json prints one JSON
object of the same figures instead. Exits 1 when anything is UNEXPLAINED, 0 otherwise.
GT runs on GT_ADDRESS when set, else on the embedded default.
"""
import argparse
import json
import sys
from pathlib import Path

# The package lives in tests/python; put it first so `differential` is that package and not this
# script (whose own directory Python puts on sys.path).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))

try:
    import torch  # noqa: F401
except ImportError:
    print("differential.py: PyTorch is not installed (apt-get install python3-torch)")
    sys.exit(0)

from differential import driver  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    ap.add_argument("--json", action="store_true", help="print one JSON object of figures")
    ap.add_argument("--progress", type=int, default=0, help="print a line every N cases")
    a = ap.parse_args()
    rep = driver.run_seeds(range(a.seed, a.seed + a.cases),
                           progress=None if a.json else (a.progress or None))
    if a.json:
        print(json.dumps(rep.figures(), indent=1))
    else:
        print(rep.table())
    return 1 if rep.unexplained else 0


if __name__ == "__main__":
    sys.exit(main())

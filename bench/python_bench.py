#!/usr/bin/python3
"""The `gt` Python package's figures beside Debian's python3-torch on CPU, from one run:

  (a) small-op stream: N x `c = a + b` on 4x4 float32 from Python, then one fetch -> ops/s
      (target >= 100,000 ops/s; the original GT: ~2,000)
  (b) 1000x1000 float32 matmul + fetch to numpy -> ms, median
  (c) MLP training step: 64x784 -> 256 -> 10 (ReLU), cross entropy, SGD(lr=0.01),
      loss.item() every step -> ms/step, median (target <= 1.5x torch CPU; the original: 44-75x),
      and the CPU each process spent per step (client, dispatcher, workers: all threads, from
      /proc schedstat; the daemons are this process's descendants, or --daemon-pids); also GT
      eager with the layers written as x @ w.t() + b instead of nn.Linear
  (d) writes through views: a 256x256 float32 buffer filled row by row (`buf[i] = row`, each a
      write through an aliasing view into its base), then one fetch -> ms, median
  (e) CNN training step: 32x1x28x28 -> Conv2d(1, 16, 3, padding 1) -> BatchNorm2d -> ReLU ->
      MaxPool2d(2) -> Linear(16*14*14, 10), cross entropy, SGD, loss.item() each step -> ms/step
  (c) and (f) run the GT side three ways (issue 11): eager (in a `compile: false` scope), as a
      plain loop (the dispatcher finds the hot path and replays it, the worker fuses its
      elementwise chains) and under gt.compile (a hot path from the first call):
  (f) fused elementwise chain: ((x*a + b).relu() * c).exp() on 16 M float32 -> ms, median, GT
      eager vs plain loop vs gt.compile (target >= 2.5x faster) vs torch eager; the GT results
      bitwise equal

  (g) a chain ending in a reduction: ((x*a + b).relu() * c).exp().sum(), fetched, on 128 K float32
      (the most a chain's reduction tail fuses: one thread sums as it goes) -> ms, median, GT eager
      vs plain loop vs gt.compile vs torch eager; the GT results bitwise equal

  PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py [--ops N] [--reps R]
      [--steps S] [--only abcdefg] [--json]

GT runs on GT_ADDRESS when set, else on the embedded default (a private dispatcher + one worker).
Without torch (apt-get install python3-torch) it prints GT's figures and says torch is missing.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import gt
from proc_cpu import CpuSplit

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None


# ---- (a) ------------------------------------------------------------------------------------------
def small_ops_gt(n, reps):
    a, b = gt.randn(4, 4), gt.randn(4, 4)
    c = a + b
    c.numpy()
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            c = a + b
        c.numpy()
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


def small_ops_torch(n, reps):
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            c = a + b
        c.numpy()
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


# ---- (b) ------------------------------------------------------------------------------------------
def matmul_gt(n):
    a, b = gt.randn(n, n), gt.randn(n, n)

    def run():
        out = (a @ b).numpy()
        assert out.shape == (n, n)

    return run


def matmul_torch(n):
    a, b = torch.randn(n, n), torch.randn(n, n)
    return lambda: (a @ b).numpy()


# ---- (c) ------------------------------------------------------------------------------------------
def mlp_data():
    rng = np.random.default_rng(1)
    return (rng.standard_normal((64, 784)).astype(np.float32),
            rng.integers(0, 10, 64).astype(np.int64))


# How GT runs a repeated step (issue 11): "eager" inside a `compile: false` scope (no hot-path
# detection: every instruction planned and sent), "auto" as a plain loop (the dispatcher finds
# the hot path and replays it), "compiled" under gt.compile (a hot path from the first call).
EAGER_SCOPE = "python_bench.eager"


def gt_mode(fn, mode):
    if mode == "compiled":
        return gt.compile(fn)
    if mode == "auto":
        return fn
    if gt.get_config(EAGER_SCOPE) is None:
        gt.register_config(EAGER_SCOPE, gt.SignalConfig(compile=False))

    def eager(*args):
        with gt.signal.context(EAGER_SCOPE):
            return fn(*args)
    return eager


def mlp_step(m, mode="eager", composite=False):
    """One training step of the 64x784 -> 256 -> 10 MLP written against module `m` (gt or torch);
    for gt, `mode` (gt_mode) says how the step but its loss.item() runs. `composite`: the layers
    written out as x @ w.t() + b (autograd differentiates the transpose and the matmul) instead
    of nn.Linear (F.linear's own gradient: no transpose of the weight-sized product)."""
    xs, ys = mlp_data()
    x, y = m.from_numpy(xs), m.from_numpy(ys)
    m.manual_seed(1)
    nn = m.nn
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = m.optim.SGD(model.parameters(), lr=0.01)
    if composite:
        l1, l2 = model[0], model[2]
        model = lambda t: (t @ l1.weight.t() + l1.bias).relu() @ l2.weight.t() + l2.bias  # noqa: E731

    def body():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = gt_mode(body, mode) if m is gt else body
    return lambda: run().item()


# ---- (f) ------------------------------------------------------------------------------------------
def chain(t):
    return ((t * 1.5 + 0.25).relu() * 0.5).exp()


def fused_chain(m, n, mode="eager"):
    """y = ((x * a + b).relu() * c).exp() on n float32 (gt: `mode` as gt_mode; replayed, it is
    one fused pass on the worker); each call waits for the result to exist (gt.synchronize)."""
    x = m.from_numpy(np.random.default_rng(3).standard_normal(n).astype(np.float32))
    fn = gt_mode(chain, mode) if m is gt else chain
    state = {}

    def run():
        state["y"] = None  # the previous result goes first, as in a loop
        state["y"] = fn(x)
        if m is gt:
            gt.synchronize()
        return 0.0

    run.result = lambda: state["y"]
    return run


# ---- (g) ------------------------------------------------------------------------------------------
def chain_sum(t):
    return chain(t).sum()


def fused_chain_sum(m, n, mode="eager"):
    """chain(x).sum() on n float32, fetched (gt: `mode` as gt_mode; replayed, the chain and its
    sum are one pass on the worker)."""
    x = m.from_numpy(np.random.default_rng(4).standard_normal(n).astype(np.float32))
    fn = gt_mode(chain_sum, mode) if m is gt else chain_sum
    state = {}

    def run():
        state["y"] = fn(x).item()
        return state["y"]

    run.result = lambda: state["y"]
    return run


# ---- (e) ------------------------------------------------------------------------------------------
def cnn_step(m):
    """One training step of a small CNN written against module `m` (gt or torch)."""
    rng = np.random.default_rng(2)
    x = m.from_numpy(rng.standard_normal((32, 1, 28, 28)).astype(np.float32))
    y = m.from_numpy(rng.integers(0, 10, 32).astype(np.int64))
    m.manual_seed(1)
    nn = m.nn
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 14 * 14, 10))
    opt = m.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


# ---- (d) ------------------------------------------------------------------------------------------
def row_writes(m, n=256):
    rows = [m.full((n,), float(i)) for i in range(n)]
    buf = m.zeros(n, n)

    def run():
        for i in range(n):
            buf[i] = rows[i]
        return float(buf.numpy()[n - 1, 0])
    return run


# OpenBLAS keeps one thread spinning for ~0.1 s after a GEMM (measured here: a process sleeping
# right after its matmuls burns 0.1 s of CPU, whatever the sleep's length past that). Without a
# pause, the side measured after torch (or after the GT worker) runs beside the other side's
# spinning thread: one of the two cores gone. The GEMM-heavy figures ((b), (c), (e)) pause
# before each block; the others do not (a pause lets the CPU worker's allocator give back its
# over-the-cap cache, which (f)'s 64 MiB tensors then fault in again: noise of its own).
BLAS_SPIN_PAUSE_S = 0.15


def interleaved(fns, steps, blocks=5, warmup=3, cpu=None, pause=0.0):
    """Per-step times of each fn, measured in alternating blocks (so load changes on a shared
    machine hit both sides alike), `pause` seconds before each block; returns
    (median seconds, first result, last result) per fn. With `cpu` (a proc_cpu.CpuSplit), also
    the mean CPU seconds per step of (client, dispatcher, workers) over each fn's blocks, as
    a fourth item."""
    firsts = [fn() for fn in fns]
    for fn in fns:
        for _ in range(warmup):
            fn()
    times = [[] for _ in fns]
    cpu_sums = [[0.0, 0.0, 0.0] for _ in fns]
    lasts = list(firsts)
    per_block = max(1, steps // blocks)
    for _ in range(blocks):
        for i, fn in enumerate(fns):
            if pause:
                time.sleep(pause)
            before = cpu.now() if cpu else None
            for _ in range(per_block):
                t0 = time.perf_counter()
                lasts[i] = fn()
                times[i].append(time.perf_counter() - t0)
            if cpu:
                for j, (a, b) in enumerate(zip(before, cpu.now())):
                    cpu_sums[i][j] += b - a
    res = [(statistics.median(t), f, l) for t, f, l in zip(times, firsts, lasts)]
    if cpu:
        res = [r + (tuple(c / len(t) for c in s),) for r, s, t in zip(res, cpu_sums, times)]
    return res


FIGURES = {}  # name -> value, printed as one JSON object with --json


def side_by_side(label, gt_fn, torch_fn, reps, key):
    """Prints the medians of gt_fn and torch_fn (None: torch is missing), measured in
    alternating blocks, and their ratio."""
    fns = [gt_fn] + ([torch_fn] if torch_fn is not None else [])
    res = interleaved(fns, reps * 4, blocks=reps, warmup=1, pause=BLAS_SPIN_PAUSE_S)
    g = res[0][0]
    line = f"{label}: gt median {g * 1e3:.2f} ms"
    FIGURES[f"{key}_gt_ms"] = round(g * 1e3, 3)
    if torch_fn is not None:
        t = res[1][0]
        line += f"; torch median {t * 1e3:.2f} ms; ratio {g / t:.2f}x"
        FIGURES[f"{key}_torch_ms"] = round(t * 1e3, 3)
        FIGURES[f"{key}_ratio"] = round(g / t, 3)
    print(line, flush=True)


def three_modes(label, key, res, same, ms_digits, target="", auto_speedup=False):
    """Prints and records (f)/(g): GT eager, plain loop and gt.compile (res[0..2]) and torch eager
    (res[3], when present); exits non-zero when the three GT results are not bitwise equal."""
    e, a, h = res[0][0], res[1][0], res[2][0]
    FIGURES[f"{key}_gt_ms"] = round(e * 1e3, 3)
    FIGURES[f"{key}_gt_auto_ms"] = round(a * 1e3, 3)
    FIGURES[f"{key}_gt_hot_ms"] = round(h * 1e3, 3)
    FIGURES[f"{key}_hot_speedup"] = round(e / h, 3)
    if auto_speedup:
        FIGURES[f"{key}_auto_speedup"] = round(e / a, 3)
    d = ms_digits
    line = (f"{label}: gt eager {e * 1e3:.{d}f} ms, plain loop (hot path found) {a * 1e3:.{d}f} ms "
            f"({e / a:.2f}x faster), gt.compile {h * 1e3:.{d}f} ms ({e / h:.2f}x faster{target}); "
            f"the three bitwise {'equal' if same else 'DIFFERENT'}")
    if len(res) > 3:
        t = res[3][0]
        FIGURES[f"{key}_torch_ms"] = round(t * 1e3, 3)
        line += f"; torch eager {t * 1e3:.{d}f} ms"
    print(line, flush=True)
    if not same:
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=200000, help="ops per small-op run")
    ap.add_argument("--reps", type=int, default=5, help="runs of (a), (b)")
    ap.add_argument("--steps", type=int, default=100, help="timed MLP steps (each side)")
    ap.add_argument("--only", default="abcdefg")
    ap.add_argument("--chain-elems", type=int, default=16 << 20, help="elements of (f)")
    ap.add_argument("--json", action="store_true", help="also print one JSON object of figures")
    ap.add_argument("--daemon-pids", default="",
                    help="dispatcher and worker pids (comma-separated) for (c)'s CPU split when "
                         "GT_ADDRESS names daemons this process did not start")
    ap.add_argument("--torch-threads", type=int, default=0,
                    help="torch.set_num_threads(N) first (default: torch's own setting; the GT "
                         "worker uses OpenBLAS threads and up to one thread per core)")
    args = ap.parse_args()

    where = os.environ.get("GT_ADDRESS") or "embedded default (private dispatcher + 1 worker)"
    print(f"python_bench: gt on {where}; python {sys.version.split()[0]}")
    if torch is None:
        print("python_bench: torch is missing (apt-get install python3-torch): GT figures only")
    else:
        if args.torch_threads > 0:
            torch.set_num_threads(args.torch_threads)
        print(f"python_bench: torch {torch.__version__} on CPU, {torch.get_num_threads()} thread(s)")
    gt.randn(1).numpy()  # start the session outside the timings

    if "a" in args.only:
        g = small_ops_gt(args.ops, args.reps)
        line = (f"(a) small-op stream, {args.ops} x (4x4 add) + 1 fetch: gt {g:,.0f} ops/s "
                f"(target >= 100,000)")
        FIGURES["small_ops_gt_per_s"] = round(g)
        if torch is not None:
            t = small_ops_torch(args.ops, args.reps)
            line += f"; torch eager {t:,.0f} ops/s"
            FIGURES["small_ops_torch_per_s"] = round(t)
        print(line, flush=True)

    if "b" in args.only:
        n = 1000
        side_by_side(f"(b) {n}x{n} matmul + fetch", matmul_gt(n),
                     matmul_torch(n) if torch is not None else None, args.reps, "matmul")

    if "c" in args.only:
        fns = [mlp_step(gt, mode) for mode in ("eager", "auto", "compiled")]
        fns += [mlp_step(gt, "eager", composite=True)]
        fns += [mlp_step(torch)] if torch is not None else []
        cpu = CpuSplit([int(p) for p in args.daemon_pids.split(",") if p] or None)
        res = interleaved(fns, args.steps, cpu=cpu if cpu.found() else None,
                          pause=BLAS_SPIN_PAUSE_S)
        composite = res.pop(3)
        (g, g0, g1), (a, _, _), (h, h0, h1) = res[0][:3], res[1][:3], res[2][:3]
        FIGURES["mlp_step_gt_ms"] = round(g * 1e3, 3)
        FIGURES["mlp_step_gt_auto_ms"] = round(a * 1e3, 3)
        FIGURES["mlp_step_gt_hot_ms"] = round(h * 1e3, 3)
        FIGURES["mlp_step_hot_vs_eager"] = round(h / g, 3)
        FIGURES["mlp_step_gt_composite_ms"] = round(composite[0] * 1e3, 3)
        if torch is not None:
            FIGURES["mlp_step_torch_ms"] = round(res[3][0] * 1e3, 3)
            FIGURES["mlp_step_ratio"] = round(g / res[3][0], 3)
            FIGURES["mlp_step_hot_ratio"] = round(h / res[3][0], 3)
        line = (f"(c) MLP step 64x784->256->10, CE, SGD, loss.item() each step: gt eager median "
                f"{g * 1e3:.2f} ms/step (loss {g0:.3f} -> {g1:.3f}); plain loop (hot path found) "
                f"{a * 1e3:.2f}; gt.compile {h * 1e3:.2f} (loss {h0:.3f} -> {h1:.3f}, {h / g:.2f}x "
                f"eager, target <= 0.75x); gt eager with x @ w.t() + b for nn.Linear "
                f"{composite[0] * 1e3:.2f} (linear's own gradient {g / composite[0]:.2f}x of it)")
        if torch is not None:
            t, t0, t1 = res[3][:3]
            line += (f"; torch median {t * 1e3:.2f} ms/step (loss {t0:.3f} -> {t1:.3f}); "
                     f"ratio {g / t:.2f}x (target <= 1.5x), compiled {h / t:.2f}x")
        print(line, flush=True)
        if cpu.found():
            names = ("eager", "plain loop", "gt.compile") + (("torch",) if torch is not None else ())
            parts = []
            for name, key, r in zip(names, ("eager", "auto", "hot", "torch"), res):
                c, d, w = (x * 1e6 for x in r[3])
                FIGURES[f"mlp_step_{key}_cpu_us"] = (
                    {"client": round(c), "dispatcher": round(d), "workers": round(w)}
                    if key != "torch" else {"client": round(c)})
                parts.append(f"{name} {c:.0f} / {d:.0f} / {w:.0f}" if key != "torch"
                             else f"torch {c:.0f}")
            print("(c) CPU per step, us (client / dispatcher / workers, all threads): " +
                  "; ".join(parts), flush=True)

    if "f" in args.only:
        n = args.chain_elems
        fns = [fused_chain(gt, n, mode) for mode in ("eager", "auto", "compiled")]
        fns += [fused_chain(torch, n)] if torch is not None else []
        res = interleaved(fns, args.reps * 4, blocks=args.reps, warmup=2)
        ref = fns[0].result().numpy()
        same = all(np.array_equal(ref, f.result().numpy()) for f in fns[1:3])
        three_modes(f"(f) ((x*a + b).relu() * c).exp() on {n:,} float32", "chain", res, same,
                    ms_digits=1, target=", target >= 2.5x", auto_speedup=True)

    if "g" in args.only:
        n = 1 << 17
        fns = [fused_chain_sum(gt, n, mode) for mode in ("eager", "auto", "compiled")]
        fns += [fused_chain_sum(torch, n)] if torch is not None else []
        res = interleaved(fns, args.reps * 20, blocks=args.reps, warmup=2)
        same = len({f.result() for f in fns[0:3]}) == 1
        three_modes(f"(g) ((x*a + b).relu() * c).exp().sum() + fetch on {n:,} float32",
                    "chain_sum", res, same, ms_digits=3)

    if "d" in args.only:
        side_by_side("(d) 256 row writes buf[i] = row + fetch", row_writes(gt),
                     row_writes(torch) if torch is not None else None, args.reps, "row_writes")

    if "e" in args.only:
        fns = [cnn_step(gt)] + ([cnn_step(torch)] if torch is not None else [])
        res = interleaved(fns, max(10, args.steps // 2), pause=BLAS_SPIN_PAUSE_S)
        g, g0, g1 = res[0]
        FIGURES["cnn_step_gt_ms"] = round(g * 1e3, 3)
        line = (f"(e) CNN step 32x1x28x28 conv-bn-relu-pool-linear, SGD: gt median "
                f"{g * 1e3:.2f} ms/step (loss {g0:.3f} -> {g1:.3f})")
        if torch is not None:
            t, t0, t1 = res[1]
            FIGURES["cnn_step_torch_ms"] = round(t * 1e3, 3)
            FIGURES["cnn_step_ratio"] = round(g / t, 3)
            line += (f"; torch median {t * 1e3:.2f} ms/step (loss {t0:.3f} -> {t1:.3f}); "
                     f"ratio {g / t:.2f}x")
        print(line, flush=True)

    if args.json:
        print(json.dumps(FIGURES))


if __name__ == "__main__":
    main()

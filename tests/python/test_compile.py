"""gt.compile (python/gt/compile.py, issue 11): a compiled function gives the plain function's
results, and its instructions are a hot path at its first call (HOT_DEFINE in the dispatcher's
instruction log) where the plain function's need two repetitions."""
import os
import tempfile
import time

import numpy as np
import pytest

import gt
from conftest import run_python


def test_compiled_results_equal_the_plain_function():
    x = gt.tensor(np.array([[-2.0, -1.0, 0.0], [1.0, 2.0, 3.0]], dtype=np.float32))

    def body(t, scale=3.0):
        return ((t * 2 + 1).relu() * scale).sum(1)

    step = gt.compile(body)
    assert step.__name__ == "body"  # functools.wraps
    assert step.signal_name.startswith("gt.compile#")
    for _ in range(3):
        np.testing.assert_array_equal(step(x).numpy(), [3.0, 45.0])
    np.testing.assert_array_equal(step(x, scale=1.0).numpy(), [1.0, 15.0])

    @gt.compile
    def decorated(t):
        return t.exp()

    np.testing.assert_allclose(decorated(x).numpy(), np.exp(x.numpy()), rtol=1e-6)

    @gt.compile(enabled=False)
    def plain(t):
        return -t

    assert not hasattr(plain, "signal_name")  # the function itself
    np.testing.assert_array_equal(plain(x).numpy(), -x.numpy())
    assert gt.compile(body, enabled=False) is body
    with pytest.raises(TypeError, match="expected a function"):
        gt.compile(3)


_PROGRAM = """
import numpy as np, gt
x = gt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
def body(t):
    return (t * 2 + 1).relu().sum()
step = gt.compile(body)
for _ in range(3):
    assert step(x).item() == 36.0  # sum of 2t + 1 over 0..5
body(x).item()               # the plain function: a candidate (a miss after a hot run)
"""


def _hot_lines(path, deadline_s=10):
    """HOT_* events of the log, once the embedded dispatcher has exited and flushed it."""
    end = time.time() + deadline_s
    while True:
        text = open(path).read() if os.path.exists(path) else ""
        if "DISCONNECT" in text or time.time() > end:
            break
        time.sleep(0.1)
    events = []
    for line in text.splitlines():
        cols = [c.strip() for c in line.split(" | ")]
        if len(cols) >= 7 and cols[2].startswith("HOT_"):
            events.append(f"{cols[2]} {cols[6]}")
    return events


def test_compiled_function_is_a_hot_path_at_first_call():
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "instructions.log")
        r = run_python(_PROGRAM, env={"GT_INSTRUCTION_LOG": log, "GT_ADDRESS": ""})
        assert r.returncode == 0, r.stderr
        events = _hot_lines(log)
        assert events == ["HOT_DEFINE path=1 instrs=4", "HOT_RUN path=1 instrs=4",
                          "HOT_RUN path=1 instrs=4", "HOT_MISS path=0 instrs=4"], events


def _fused_ops():
    return sum(w.get("fused_ops", 0) for w in gt.debug.status().get("workers", []))


def test_compiled_chain_is_replayed_fused_and_bitwise_eager():
    # gt.compile holds the function's instructions until it returns, so the dispatcher gets
    # the whole stretch in one frame and replays it by reference; the worker runs the
    # elementwise chain as one fused pass (worker fused_ops), with the eager bits.
    x = gt.randn(1 << 16)

    def chain(t):
        return ((t * 1.5 + 0.25).relu() * 0.5).exp()

    eager = chain(x).numpy()
    before = _fused_ops()
    step = gt.compile(chain)
    for _ in range(3):
        np.testing.assert_array_equal(step(x).numpy(), eager)
    # Worker figures arrive with its heartbeat answers.
    deadline = time.time() + 10
    while _fused_ops() - before < 3 * 4 and time.time() < deadline:
        time.sleep(0.1)
    assert _fused_ops() - before >= 3 * 4  # (earlier tests' figures may still be arriving)
    np.testing.assert_allclose(eager, np.exp(np.maximum(x.numpy() * 1.5 + 0.25, 0) * 0.5),
                               rtol=1e-6)


def test_compiled_mixed_precision_chain_fuses_its_casts_bitwise_eager():
    # A float16 tensor computed in float32 and stored back as bfloat16 (mixed precision): the
    # casts are part of the fused pass (the head converted as it is read, the value as it is
    # written), five ops in one, with eager's bits.
    x = (gt.randn(1 << 16) * 30).half()
    b = gt.randn(1 << 16)

    def chain(t):
        return (t.float() * 1.5 + b).relu().to(gt.bfloat16)

    eager = chain(x).float().numpy()
    before = _fused_ops()
    step = gt.compile(chain)
    for _ in range(3):
        y = step(x)
        assert y.dtype == gt.bfloat16
        np.testing.assert_array_equal(y.float().numpy(), eager)
    deadline = time.time() + 10
    while _fused_ops() - before < 3 * 5 and time.time() < deadline:
        time.sleep(0.1)
    assert _fused_ops() - before >= 3 * 5
    ref = np.maximum(x.float().numpy() * 1.5 + b.numpy(), 0)
    np.testing.assert_allclose(eager, ref, rtol=2 ** -8)  # bfloat16's rounding


def _my_session():
    # The embedded default's dispatcher serves this process alone (under GT_ADDRESS other
    # sessions of the same user may show: the busiest one is this test process).
    sessions = gt.debug.status()["sessions"]
    return max(sessions, key=lambda s: s.get("instructions", 0))


def test_compiled_training_step_is_one_replayed_path_per_call():
    # Autograd's backward scopes inside a compiled function change nothing planned: they do not
    # cut the function's stretch, so each call is one hot path, replayed by reference.
    model = gt.nn.Sequential(gt.nn.Linear(8, 16), gt.nn.ReLU(), gt.nn.Linear(16, 3))
    opt = gt.optim.SGD(model.parameters(), lr=0.1)
    x = gt.randn(5, 8)
    y = gt.tensor(np.array([0, 1, 2, 1, 0], dtype=np.int64))

    def body():
        opt.zero_grad()
        loss = gt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step = gt.compile(body)
    first = step().item()
    before = _my_session()
    losses = [step().item() for _ in range(3)]
    after = _my_session()
    assert after["hot_paths"] == before["hot_paths"]  # defined at the first call
    assert after.get("hot_path_hits", 0) - before.get("hot_path_hits", 0) == 3
    assert after.get("hot_path_replays", 0) - before.get("hot_path_replays", 0) == 3
    # Replayed at the first call, its plan kept: the three calls after it are sent from the
    # plan, not planned again (dispatcherd/client_session_plan.cpp).
    assert after.get("hot_path_plans_reused", 0) - before.get("hot_path_plans_reused", 0) == 3
    assert losses[-1] < first  # it trains
    # The backward pass inside the function runs under the function's own scope: its per-node
    # backward scopes would change nothing on the dispatcher and are not sent. A call is the
    # plain body's instructions and the scope's enter and exit.
    compiled = (int(after["instructions"]) - int(before["instructions"])) / 3
    plain_before = _my_session()
    for _ in range(3):
        body().item()
    plain = (int(_my_session()["instructions"]) - int(plain_before["instructions"])) / 3
    assert compiled == plain + 2


_DATA_PARALLEL = r'''
import json, os, sys, time
import numpy as np
import gt
gt.gpu_workers(2)
gt.load_config(sys.argv[1])
deadline = time.time() + 20
while len(gt.debug.get_worker_stats()) < 2 and time.time() < deadline:
    time.sleep(0.02)
rng = np.random.default_rng(0)
x0 = gt.from_numpy(rng.standard_normal((64, 16)).astype(np.float32))
y0 = gt.from_numpy(rng.integers(0, 4, 64))

def train(compiled, steps=6):
    gt.manual_seed(1)
    w1 = gt.nn.Parameter(gt.randn(16, 32) * 0.3)
    w2 = gt.signal.tensor(gt.nn.Parameter(gt.randn(32, 4) * 0.3), "replicated_head")
    x = gt.signal.tensor(x0, "data_parallel")
    y = gt.signal.tensor(y0, "data_parallel")
    opt = gt.nn.SGD([w1, w2], lr=0.1)

    def body():
        with gt.signal.context("data_parallel"):
            loss = gt.nn.cross_entropy_loss((x @ w1).relu() @ w2, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    step = gt.compile(body) if compiled else body
    return [step().item() for _ in range(steps)]

eager = train(False)
hot = train(True)
# (Workers report their counts with their heartbeats: wait for both to have run some.)
deadline = time.time() + 10
while True:
    status = gt.debug.status()
    runs = [w.get("hot_path_hits", 0) for w in status["workers"]]
    if (len(runs) == 2 and min(runs) >= 4) or time.time() > deadline:
        break
    time.sleep(0.1)
session = max(status["sessions"], key=lambda s: s.get("instructions", 0))
print(json.dumps({"eager": eager, "hot": hot, "hits": session.get("hot_path_hits", 0),
                  "replays": session.get("hot_path_replays", 0),
                  "worker_runs": runs,
                  "workers": len(gt.debug.get_worker_stats())}))
'''


def test_compiled_data_parallel_step_gives_the_eager_losses():
    # A sharded step is replayed by reference on both workers (one HotRun each, their exchanges
    # included) and gives bitwise the eager losses.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    config = os.path.join(root, "examples", "python", "sharding.yaml")
    r = run_python(_DATA_PARALLEL, args=[config], env={"GT_ADDRESS": ""}, timeout=120)
    assert r.returncode == 0, r.stderr
    import json
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["workers"] == 2
    assert out["hot"] == out["eager"]  # bitwise, step by step
    assert out["eager"][-1] < out["eager"][0]
    assert out["hits"] >= 4  # the compiled step was a hot path at every call after the first
    assert out["replays"] >= 4  # ... and went to the workers as HotRuns
    assert len(out["worker_runs"]) == 2 and min(out["worker_runs"]) >= 4, out["worker_runs"]


def test_compile_false_scope_turns_hot_path_detection_off():
    x = gt.randn(4, 4)
    gt.register_config("gt.test.no_hot_paths", gt.SignalConfig(compile=False))

    def loop(scoped):
        before = _my_session()
        for _ in range(4):
            if scoped:
                with gt.signal.context("gt.test.no_hot_paths"):
                    y = ((x * 3.0).relu() + 1.0).sum().item()
            else:
                y = ((x * 5.0).relu() + 2.0).sum().item()
        after = _my_session()
        return after["hot_paths"] - before["hot_paths"], y

    off, y_off = loop(True)
    on, y_on = loop(False)
    assert off == 0  # the same loop in a `compile: false` scope is never a hot path
    assert on == 1
    np.testing.assert_allclose(y_off, float((np.maximum(x.numpy() * 3.0, 0) + 1.0).sum()), rtol=1e-5)

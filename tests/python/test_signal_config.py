"""Signal scopes and sharding configs: validation and bookkeeping in this process's shared session,
and their real effect on placement (docs/ARCHITECTURE.md §5) in /usr/bin/python3 subprocesses that start
the embedded default with several CPU workers (gt.gpu_workers(n) must precede the session's
first op, and the suite shares one session)."""
import json
import textwrap
import threading

import numpy as np
import pytest

import gt
from conftest import ROOT, run_python


@pytest.fixture(autouse=True)
def clean_registry():
    saved = gt.get_config()
    gt.config.clear_config()
    yield
    while gt.signal.current() is not None:
        gt.signal.exit()
    gt.config.clear_config()
    for name, cfg in saved.items():
        gt.register_config(name, cfg)


def run_checks(code, workers, env=None, timeout=120):
    """Runs `code` in a fresh process whose embedded default has `workers` CPU workers, with
    helpers: stats() (worker stats sorted by id), ops() (ops_executed per worker), emit(**kv)
    (one JSON line the test reads back). Returns the emitted dicts merged."""
    prelude = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        import gt
        gt.gpu_workers({workers})

        def stats():
            gt.synchronize()
            return [s for _, s in sorted(gt.debug.get_worker_stats().items())]

        def ops():
            return [w["ops_executed"] for w in stats()]

        def emit(**kv):
            print("RESULT " + json.dumps(kv), flush=True)
    """)
    r = run_python(prelude + textwrap.dedent(code), env=dict({"GT_ADDRESS": ""}, **(env or {})),
                   timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            out.update(json.loads(line[len("RESULT "):]))
    return out


# ---- configs ------------------------------------------------------------------------------------

def test_config_objects_and_registry():
    gt.synchronize()  # the session exists: configs go to the dispatcher at once
    cfg = gt.SignalConfig(shard=gt.ShardConfig(axis=0, workers=[0, 1], replicated=False),
                          backward_signal=None, compile=False)
    gt.register_config("layer1", cfg)
    assert gt.get_config("layer1") == cfg
    assert gt.get_config() == {"layer1": cfg}
    assert gt.get_config("missing") is None
    assert "workers=[0, 1]" in repr(cfg)
    # What libgtclient sent to the dispatcher (gt::get_config).
    sent = gt._gt._registered_configs()
    assert sent["layer1"] == {"shard": {"axis": 0, "workers": [0, 1], "replicated": False},
                              "backward": None, "compile": False}
    gt.register_config("layer1", gt.SignalConfig(compile=True, backward_signal="b"))
    assert gt.get_config("layer1").compile is True
    assert gt._gt._registered_configs()["layer1"] == {"shard": None, "backward": "b",
                                                      "compile": True}
    gt.register_config("neg", gt.SignalConfig(shard=gt.ShardConfig(axis=-1, replicated=True)))
    assert gt._gt._registered_configs()["neg"]["shard"] == {"axis": -1, "workers": None,
                                                           "replicated": True}
    gt.config.clear_config()  # forgotten here, emptied in the dispatcher
    assert gt.get_config() == {}
    assert gt._gt._registered_configs()["layer1"] == {"shard": None, "backward": None,
                                                      "compile": None}
    assert gt.SignalConfig().compile is None  # unset: hot paths detected as usual


@pytest.mark.parametrize("make", [
    lambda: gt.ShardConfig(axis=8),
    lambda: gt.ShardConfig(axis=-9),
    lambda: gt.ShardConfig(axis=1.0),
    lambda: gt.ShardConfig(axis=True),
    lambda: gt.ShardConfig(workers=[]),
    lambda: gt.ShardConfig(workers=[0, 0]),
    lambda: gt.ShardConfig(workers=[-1]),
    lambda: gt.ShardConfig(workers=[70000]),
    lambda: gt.ShardConfig(workers=["0"]),
    lambda: gt.ShardConfig(replicated="yes"),
    lambda: gt.SignalConfig(shard={"axis": 0}),
    lambda: gt.SignalConfig(backward_signal=3),
    lambda: gt.SignalConfig(backward_signal=""),
    lambda: gt.SignalConfig(compile=1),
    lambda: gt.register_config("", gt.SignalConfig()),
    lambda: gt.register_config(7, gt.SignalConfig()),
    lambda: gt.register_config("x" * 257, gt.SignalConfig()),
    lambda: gt.register_config("x", {"shard": None}),
])
def test_config_validation(make):
    with pytest.raises(ValueError):
        make()


def test_load_yaml(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent("""
        fwd:
          shard: {axis: 1, workers: [0, 1, 2], replicated: false}
          backward: bwd
          compile: true
        bwd:
          shard:
            axis: -1
        plain:
    """))
    loaded = gt.load_config(path)
    assert set(loaded) == {"fwd", "bwd", "plain"}
    fwd = gt.get_config("fwd")
    assert fwd.shard == gt.ShardConfig(axis=1, workers=[0, 1, 2])
    assert fwd.backward_signal == "bwd" and fwd.compile is True
    assert gt.get_config("bwd").shard == gt.ShardConfig(axis=-1)
    assert gt.get_config("bwd").shard.workers is None
    assert gt.get_config("plain") == gt.SignalConfig()
    assert gt.config.parse_config("a: {backward: b}") == {"a": gt.SignalConfig(backward_signal="b")}
    # The shipped examples parse.
    assert "data_parallel" in gt.load_config(ROOT / "examples/python/sharding.yaml")
    shipped = sorted((ROOT / "etc/gt/sharding").glob("*.yaml"))
    assert shipped
    for f in shipped:
        assert gt.config.parse_config(f.read_text(), str(f))


@pytest.mark.parametrize("text,key", [
    ("a: {shard: {axis: 0, wrkers: [0]}}", "wrkers"),
    ("a: {shrd: {}}", "shrd"),
    ("a: {shard: {axis: x}}", "a.shard.axis"),
    ("a: {shard: {axis: 9}}", "a.shard.axis"),
    ("a: {shard: {workers: [1, 1]}}", "a.shard.workers"),
    ("a: [1, 2]", "mapping"),
    ("- a\n- b", "mapping"),
    ("a: {compile: maybe}", "a.compile"),
    ("a: {shard: {axis: 0}\n", "invalid YAML"),
])
def test_load_yaml_errors_name_file_and_key(tmp_path, text, key):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as e:
        gt.load_config(path)
    assert str(path) in str(e.value) and key in str(e.value), str(e.value)
    assert gt.get_config() == {}  # nothing registered from a bad file
    with pytest.raises(FileNotFoundError):
        gt.load_config(tmp_path / "missing.yaml")


# ---- scopes -------------------------------------------------------------------------------------

def test_signal_scopes_nest_and_belong_to_the_process():
    gt.register_config("f", gt.SignalConfig(backward_signal="b"))
    assert gt.signal.current() is None
    with gt.signal.context("f") as ctx:
        assert ctx.name == "f"
        assert gt.signal.current() == "f"
        assert gt.signal.stack() == [("f", "b")]  # backward from the config
        gt.signal.enter("g", backward="h")
        assert gt.signal.stack() == [("f", "b"), ("g", "h")]
        assert gt._gt._signal_stack() == ["f", "g"]  # libgtclient's stack: the same scopes
        # Scopes are per process: another thread sees them, and may not open or close any.
        seen, errors = [], []

        def other():
            seen.append(gt.signal.current())
            for f in (lambda: gt.signal.enter("t"), gt.signal.exit):
                try:
                    f()
                except RuntimeError as e:
                    errors.append(str(e))

        th = threading.Thread(target=other, name="other-thread")
        th.start()
        th.join()
        assert seen == ["g"]
        assert len(errors) == 2 and all("MainThread" in e and "one thread" in e for e in errors)
        assert gt.signal.stack() == [("f", "b"), ("g", "h")]
        gt.signal.exit()
        assert gt.signal.current() == "f"
    assert gt.signal.current() is None
    assert gt._gt._signal_stack() == []
    with pytest.raises(RuntimeError):
        gt.signal.exit()
    for bad in ("", None, 3, "x" * 257):
        with pytest.raises(ValueError):
            gt.signal.context(bad)
    with pytest.raises(ValueError):
        gt.signal.enter("x", backward="")
    with gt.signal.context("x"):
        assert gt.signal.stack() == [("x", "x")]
    # Once no scope is open, another thread may use them.
    th = threading.Thread(target=lambda: (gt.signal.enter("t"), seen.append(gt.signal.stack()),
                                          gt.signal.exit()))
    th.start()
    th.join()
    assert seen[-1] == [("t", "t")] and gt.signal.current() is None


def test_computation_in_unconfigured_scopes_is_unchanged():
    gt.manual_seed(3)
    x = gt.randn(8, 4)
    w = gt.nn.Parameter(gt.randn(4, 2))
    ref = (x @ w).relu().sum()
    ref.backward()
    g_ref = w.grad.numpy()
    # gt.signal.tensor copies a leaf into a new leaf (same values, same requires_grad).
    ws = gt.signal.tensor(w, "layer")
    assert ws is not w and ws.grad_fn is None and ws.requires_grad
    np.testing.assert_array_equal(ws.numpy(), w.numpy())
    with gt.signal.context("layer", backward="layer_bwd"):
        out = (x @ ws).relu().sum()
    out.backward()
    assert out.item() == ref.item()
    np.testing.assert_array_equal(ws.grad.numpy(), g_ref)
    assert not gt.signal.tensor(x, "layer").requires_grad
    # ... and a tensor with history into a differentiable copy.
    w.grad = None
    h = gt.signal.tensor(x @ w, "layer")
    assert h.grad_fn is not None
    h.relu().sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), g_ref)
    with pytest.raises(TypeError):
        gt.signal.tensor(np.zeros(2), "layer")
    with pytest.raises(ValueError):
        gt.signal.tensor(x, "")


def test_configs_before_the_session_are_sent_on_first_scope(tmp_path):
    path = tmp_path / "env.yaml"
    path.write_text("rows: {shard: {axis: 0, workers: [0, 1]}, backward: rows_bwd}\n")
    out = run_checks("""
        import gt  # GT_CONFIG was loaded at import: no session yet, gpu_workers still allowed
        alive0 = gt._gt._session_alive()
        gt.register_config("cols", gt.SignalConfig(shard=gt.ShardConfig(axis=1)))
        alive1 = gt._gt._session_alive()
        sent0 = sorted(gt._gt._registered_configs())
        with gt.signal.context("rows"):
            x = gt.arange(0, 12).reshape(4, 3) * 1.0
        emit(alive=[alive0, alive1], sent0=sent0, sent1=sorted(gt._gt._registered_configs()),
             x=x.numpy().tolist())
    """, workers=2, env={"GT_CONFIG": str(path)})
    assert out["alive"] == [False, False]
    assert out["sent0"] == [] and out["sent1"] == ["cols", "rows"]
    assert out["x"] == np.arange(12.0).reshape(4, 3).tolist()


def test_gt_config_env_is_loaded_at_import(tmp_path):
    path = tmp_path / "env.yaml"
    path.write_text("sig: {shard: {axis: 0, workers: [0]}, backward: sig_bwd}\n")
    r = run_python("import gt; c = gt.get_config('sig'); "
                   "print(c.shard.workers, c.backward_signal)", env={"GT_CONFIG": str(path)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0] sig_bwd"
    path.write_text("sig: {shard: {bogus: 1}}\n")
    r = run_python("import gt", env={"GT_CONFIG": str(path)})
    assert r.returncode != 0 and "bogus" in r.stderr and str(path) in r.stderr


# ---- real placement (subprocesses with several workers) ----------------------------------------

def test_sharded_creation_same_values_each_worker_holds_its_slice():
    out = run_checks("""
        gt.register_config("rows", gt.SignalConfig(shard=gt.ShardConfig(axis=0)))
        gt.register_config("cols", gt.SignalConfig(shard=gt.ShardConfig(axis=1, workers=[0, 2])))
        gt.register_config("rep", gt.SignalConfig(shard=gt.ShardConfig(replicated=True)))
        gt.manual_seed(7)
        ref = gt.randn(30, 1000)
        gt.synchronize()
        s0 = stats()
        gt.manual_seed(7)
        with gt.signal.context("rows"):
            x = gt.randn(30, 1000)        # 10 rows (40000 bytes) per worker
        gt.synchronize()
        s1 = stats()
        gt.manual_seed(7)
        with gt.signal.context("cols"):
            y = gt.randn(30, 1000)        # 500 columns on workers 0 and 2
        gt.synchronize()
        s2 = stats()
        gt.manual_seed(7)
        with gt.signal.context("rep"):
            z = gt.randn(30, 1000)
        emit(home=[w["worker_id"] for w in s0 if w["tensors"]],
             d_tensors1=[b["tensors"] - a["tensors"] for a, b in zip(s0, s1)],
             d_bytes1=[b["bytes"] - a["bytes"] for a, b in zip(s0, s1)],
             d_tensors2=[b["tensors"] - a["tensors"] for a, b in zip(s1, s2)],
             d_bytes2=[b["bytes"] - a["bytes"] for a, b in zip(s1, s2)],
             same=[bool((t.numpy() == ref.numpy()).all()) for t in (x, y, z)],
             # ops on the sharded tensors give the unsharded results
             err=max(float(np.abs(a.numpy() - b.numpy()).max()) for a, b in [
                 ((x * 2 + 1).relu(), (ref * 2 + 1).relu()),
                 (x.sum(0), ref.sum(0)), (x.sum(1), ref.sum(1)), (y.mean(), ref.mean()),
                 (x @ z.T[:, :5], ref @ ref.T[:, :5]), (x[3:17:2], ref[3:17:2]),
                 (x.reshape(60, 500), ref.reshape(60, 500))]))
    """, workers=3)
    assert out["same"] == [True, True, True]
    assert out["err"] < 1e-3
    assert out["d_tensors1"] == [1, 1, 1]
    for b in out["d_bytes1"]:
        assert 40000 <= b < 120000  # a slice, never the whole tensor
    assert out["d_tensors2"] == [1, 0, 1]
    assert out["d_bytes2"][1] == 0
    for w in (0, 2):
        assert 60000 <= out["d_bytes2"][w] < 120000


def test_data_parallel_mlp_training_matches_unsharded():
    out = run_checks("""
        gt.register_config("batch", gt.SignalConfig(shard=gt.ShardConfig(axis=0)))

        def train(sharded, steps=20):
            gt.manual_seed(71)
            model = gt.nn.Sequential(gt.nn.Linear(16, 32), gt.nn.ReLU(), gt.nn.Linear(32, 4))
            opt = gt.nn.SGD(model.parameters(), lr=0.1)
            x = gt.randn(48, 16)
            y = gt.tensor([i % 4 for i in range(48)], dtype="int64")
            if sharded:  # the batch split over the workers; the weights stay whole
                x = gt.signal.tensor(x, "batch")
                y = gt.signal.tensor(y, "batch")
            before = ops()
            losses = []
            for _ in range(steps):
                opt.zero_grad()
                loss = gt.nn.cross_entropy_loss(model(x), y)
                loss.backward()
                opt.step()
                losses.append(loss.item())
            return losses, [b - a for a, b in zip(before, ops())]

        single, ops1 = train(False)
        dp, ops2 = train(True)
        emit(single=single, dp=dp, ops_single=ops1, ops_dp=ops2)
    """, workers=3)
    single, dp = np.array(out["single"]), np.array(out["dp"])
    assert single[-1] < single[0]
    np.testing.assert_allclose(dp, single, rtol=1e-4, atol=1e-4)
    assert sum(1 for n in out["ops_single"] if n > 0) == 1  # unsharded: the home worker only
    assert all(n > 0 for n in out["ops_dp"])                # sharded: every worker computes


def test_pipeline_stages_and_backward_signals_run_on_their_workers():
    out = run_checks("""
        for name, w, bwd in [("stage0", 0, "stage0_bwd"), ("stage1", 1, "stage1_bwd"),
                             ("stage0_bwd", 2, None), ("stage1_bwd", 2, None), ("last", 1, None)]:
            gt.register_config(name, gt.SignalConfig(shard=gt.ShardConfig(workers=[w]),
                                                     backward_signal=bwd))
        gt.manual_seed(61)
        w0 = gt.randn(8, 8, requires_grad=True)
        w1 = gt.randn(8, 4, requires_grad=True)
        x = gt.randn(16, 8)
        home = [s["worker_id"] for s in stats() if s["tensors"]]
        o0 = ops()
        with gt.signal.context("stage0"):
            h = (x @ w0).relu()
        o1 = ops()
        with gt.signal.context("stage1"):
            y = (h @ w1).sum()
        o2 = ops()
        y.backward()                       # gradient ops under stage1_bwd / stage0_bwd
        o3 = ops()
        g0, g1 = w0.grad.numpy(), w1.grad.numpy()
        # The same with an explicit backward signal given at the scope.
        w0.grad = None
        with gt.signal.context("last", backward="stage1_bwd"):
            y2 = (x @ w0).sum()
        o4 = ops()
        y2.backward()
        o5 = ops()
        # Unsharded reference.
        a, b = w0.detach().requires_grad_(), w1.detach().requires_grad_()
        yr = (x @ a).relu().matmul(b).sum()
        yr.backward()
        emit(home=home, d1=[q - p for p, q in zip(o0, o1)], d2=[q - p for p, q in zip(o1, o2)],
             d3=[q - p for p, q in zip(o2, o3)], d4=[q - p for p, q in zip(o3, o4)],
             d5=[q - p for p, q in zip(o4, o5)],
             err=max(abs(y.item() - yr.item()), float(np.abs(g0 - a.grad.numpy()).max()),
                     float(np.abs(g1 - b.grad.numpy()).max())),
             err2=float(np.abs(w0.grad.numpy() - x.numpy().sum(0)[:, None]).max()))
    """, workers=3)
    d1, d2, d3, d4, d5 = (out[k] for k in ("d1", "d2", "d3", "d4", "d5"))
    assert d1[0] > 0 and d1[1] == 0 and d1[2] == 0      # stage0's ops on worker 0
    assert d2[1] > 0 and d2[2] == 0                      # stage1's on worker 1
    assert d3[2] > 0                                     # gradients on worker 2 (backward signals)
    assert d4[1] > 0 and d4[2] == 0
    assert d5[2] > 0                                     # explicit backward= at the scope
    assert out["err"] < 1e-4 and out["err2"] < 1e-4


def test_scope_naming_a_missing_worker_fails_at_the_sync_point():
    out = run_checks("""
        gt.register_config("far", gt.SignalConfig(shard=gt.ShardConfig(workers=[5])))
        with gt.signal.context("far"):
            x = gt.ones(4, 4)
        try:
            x.numpy()
            emit(error=None)
        except gt.WorkerError as e:
            emit(error=str(e))
        emit(after=float((gt.ones(2) * 2).sum().item()))   # the session goes on
    """, workers=2)
    assert out["error"] and "worker 5" in out["error"]
    assert out["after"] == 4.0


def test_gt_config_yaml_shards_at_import(tmp_path):
    path = tmp_path / "dp.yaml"
    path.write_text(textwrap.dedent("""
        # loaded at import through GT_CONFIG
        batch:
          shard: {axis: 0, workers: [0, 1]}
    """))
    out = run_checks("""
        s0 = stats()
        gt.manual_seed(5)
        ref = gt.randn(64, 256)
        gt.manual_seed(5)
        with gt.signal.context("batch"):
            x = gt.randn(64, 256)
            m = (x * 3).sum(1)
        s1 = stats()
        emit(same=bool((x.numpy() == ref.numpy()).all()),
             err=float(np.abs(m.numpy() - (ref * 3).sum(1).numpy()).max()),
             d_bytes=[b["bytes"] - a["bytes"] for a, b in zip(s0, s1)])
    """, workers=2, env={"GT_CONFIG": str(path)})
    assert out["same"] and out["err"] < 1e-3
    # 64x256 float32 = 64 KiB: ref whole on the home worker, plus half of x (and m) on each.
    assert sorted(out["d_bytes"])[0] >= 32768
    assert sorted(out["d_bytes"])[0] < 65536 + 32768

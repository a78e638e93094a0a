"""Signal scopes and sharding configs (client side: recorded and validated; placement by them
needs the dispatcher's signal-based sharding, issue 5)."""
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
    gt.config.clear_config()
    for name, cfg in saved.items():
        gt.register_config(name, cfg)


@pytest.fixture(params=["pyyaml", "yaml-cpp"])
def yaml_backend(request, monkeypatch):
    """Runs a test with PyYAML and with the extension's yaml-cpp fallback."""
    if request.param == "pyyaml":
        pytest.importorskip("yaml")
    monkeypatch.setattr(gt.config, "_FORCE_BUILTIN_YAML", request.param == "yaml-cpp")
    return request.param


def test_config_objects_and_registry():
    cfg = gt.SignalConfig(shard=gt.ShardConfig(axis=0, workers=[0, 1], replicated=False),
                          backward_signal=None, compile=False)
    gt.register_config("layer1", cfg)
    assert gt.get_config("layer1") == cfg
    assert gt.get_config() == {"layer1": cfg}
    assert gt.get_config("missing") is None
    assert "workers=[0, 1]" in repr(cfg)
    gt.register_config("layer1", gt.SignalConfig(compile=True))
    assert gt.get_config("layer1").compile is True


@pytest.mark.parametrize("make", [
    lambda: gt.ShardConfig(axis=-1),
    lambda: gt.ShardConfig(axis=True),
    lambda: gt.ShardConfig(workers=[]),
    lambda: gt.ShardConfig(workers=[0, 0]),
    lambda: gt.ShardConfig(workers=[-1]),
    lambda: gt.ShardConfig(replicated="yes"),
    lambda: gt.SignalConfig(shard={"axis": 0}),
    lambda: gt.SignalConfig(backward_signal=3),
    lambda: gt.SignalConfig(compile=1),
    lambda: gt.register_config("", gt.SignalConfig()),
    lambda: gt.register_config("x", {"shard": None}),
])
def test_config_validation(make):
    with pytest.raises(ValueError):
        make()


def test_load_yaml(tmp_path, yaml_backend):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent("""
        fwd:
          shard: {axis: 1, workers: [0, 1, 2], replicated: false}
          backward: bwd
          compile: true
        bwd:
          shard:
            axis: 0
        plain:
    """))
    loaded = gt.load_config(path)
    assert set(loaded) == {"fwd", "bwd", "plain"}
    fwd = gt.get_config("fwd")
    assert fwd.shard == gt.ShardConfig(axis=1, workers=[0, 1, 2])
    assert fwd.backward_signal == "bwd" and fwd.compile is True
    assert gt.get_config("bwd").shard.workers is None
    assert gt.get_config("plain") == gt.SignalConfig()
    assert gt.get_config("fwd").shard.replicated is False
    # The shipped example parses.
    assert "forward_layer1" in gt.load_config(ROOT / "examples/python/sharding.yaml")


@pytest.mark.parametrize("text,match", [
    ("a: {shard: {axis: 0, wrkers: [0]}}", "wrkers"),
    ("a: {shrd: {}}", "shrd"),
    ("a: {shard: {axis: x}}", "axis"),
    ("a: [1, 2]", "mapping"),
    ("- a\n- b", "mapping"),
    ("a: {compile: maybe}", "compile"),
    ("a: {shard: {axis: 0}\n", "YAML"),
])
def test_load_yaml_errors_name_the_problem(tmp_path, text, match, yaml_backend):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        gt.load_config(path)
    assert gt.get_config() == {}  # nothing registered from a bad file


def test_builtin_yaml_scalars():
    doc = gt._gt._yaml_load("a: 1\nb: -2.5\nc: true\nd: ~\ne: '7'\nf: [0x10, no]\ng: {h: .inf}\n")
    assert doc == {"a": 1, "b": -2.5, "c": True, "d": None, "e": "7", "f": [16, False],
                   "g": {"h": float("inf")}}


def test_signal_scopes_nest_per_thread():
    gt.register_config("f", gt.SignalConfig(backward_signal="b"))
    assert gt.signal.current() is None
    with gt.signal.context("f") as ctx:
        assert ctx.name == "f"
        assert gt.signal.current() == "f"
        assert gt.signal.stack() == [("f", "b")]  # backward from the config
        gt.signal.enter("g", backward="h")
        assert gt.signal.stack() == [("f", "b"), ("g", "h")]
        seen = []
        th = threading.Thread(target=lambda: seen.append(gt.signal.current()))
        th.start()
        th.join()
        assert seen == [None]
        gt.signal.exit()
        assert gt.signal.current() == "f"
    assert gt.signal.current() is None
    with pytest.raises(RuntimeError):
        gt.signal.exit()
    with pytest.raises(ValueError):
        gt.signal.context("")
    with gt.signal.context("x"):
        assert gt.signal.stack() == [("x", "x")]


def test_computation_in_scopes_is_unchanged():
    gt.manual_seed(3)
    x = gt.randn(8, 4)
    w = gt.nn.Parameter(gt.randn(4, 2))
    ref = (x @ w).relu().sum()
    ref.backward()
    g_ref = w.grad.numpy()
    w.grad = None
    ws = gt.signal.tensor(w, "layer")
    assert ws is w
    with gt.signal.context("layer", backward="layer_bwd"):
        out = (x @ ws).relu().sum()
    out.backward()
    assert out.item() == ref.item()
    np.testing.assert_array_equal(w.grad.numpy(), g_ref)
    with pytest.raises(TypeError):
        gt.signal.tensor(np.zeros(2), "layer")


def test_gt_config_env_is_loaded_at_import(tmp_path):
    path = tmp_path / "env.yaml"
    path.write_text("sig: {shard: {axis: 0, workers: [0]}, backward: sig_bwd}\n")
    r = run_python("import gt; c = gt.get_config('sig'); "
                   "print(c.shard.workers, c.backward_signal)", env={"GT_CONFIG": str(path)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0] sig_bwd"
    path.write_text("sig: {shard: {bogus: 1}}\n")
    r = run_python("import gt", env={"GT_CONFIG": str(path)})
    assert r.returncode != 0 and "bogus" in r.stderr

"""examples/python/ run as programs (/usr/bin/python3 subprocesses) and the benchmark's
smallest configuration runs."""
import pytest

from conftest import ROOT, run_python

EX = ROOT / "examples" / "python"


def test_demo():
    r = run_python(script=EX / "demo.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.rstrip().endswith("demo: ok")


@pytest.mark.parametrize("optim,steps", [("adam", "150"), ("sgd", "150")])
def test_train_mlp(optim, steps):
    r = run_python(script=EX / "train_mlp.py", args=["--optim", optim, "--steps", steps],
                   timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("final accuracy:") and float(last.split()[-1]) >= 0.9


def test_signal_sharding():
    r = run_python(script=EX / "signal_sharding.py", args=["--steps", "10"], env={"GT_ADDRESS": ""})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "signal data_parallel: SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1]" in r.stdout
    # Both workers computed in the data-parallel run (the example also asserts it).
    dp = [l for l in r.stdout.splitlines() if l.startswith("loss data parallel")]
    assert dp and "[0," not in dp[0] and ", 0]" not in dp[0], r.stdout
    assert r.stdout.rstrip().endswith("signal_sharding: ok")


def test_python_bench_runs():
    r = run_python(script=ROOT / "bench" / "python_bench.py",
                   args=["--ops", "2000", "--reps", "1", "--steps", "3", "--chain-elems", "100000"],
                   timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    for tag in ("(a) small-op stream", "(b) 1000x1000 matmul", "(c) MLP step", "(f) ((x*a + b)"):
        assert tag in r.stdout
    # (c)'s CPU split found the embedded daemons: every GT mode's dispatcher and worker did work
    split = [l for l in r.stdout.splitlines() if l.startswith("(c) CPU per step")]
    assert split, r.stdout
    for mode in ("eager", "plain loop", "gt.compile"):
        client, dispatcher, workers = (
            float(v) for v in split[0].split(mode + " ", 1)[1].split(";")[0].split(" / "))
        assert client > 0 and dispatcher > 0 and workers > 0, split[0]


@pytest.mark.parametrize("backend", ["gt", "torch"])
def test_train_cnn_pytorch_script(backend):
    """The CNN example is a PyTorch script: through GT (import gt as torch) the loss falls by at
    least half; the same file runs on PyTorch itself, unchanged (--torch)."""
    if backend == "torch":
        pytest.importorskip("torch")
    r = run_python(script=EX / "train_cnn.py", args=["--torch"] if backend == "torch" else [],
                   timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("loss fell"), r.stdout
    assert float(last.split()[2].rstrip("%,")) >= 50

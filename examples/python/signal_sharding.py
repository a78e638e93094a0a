#!/usr/bin/python3
"""Signal-based sharding from Python: a YAML config gives named signal scopes their meaning
(split the batch over workers 0 and 1, replicate the output layer's weight, run the gradients
under their own signal), and the program marks its data with gt.signal. The dispatcher then
places the tensors on the workers and moves shards between them; the program itself does not
change, and the numbers do not depend on the placement.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/signal_sharding.py [--config FILE]

With no GT_ADDRESS it starts the embedded default with 2 CPU workers (gt.gpu_workers(2)).
It trains the same MLP twice -- unsharded, then data parallel -- checks that the losses and
weights agree, that both workers computed, and prints "signal_sharding: ok" at the end.
"""
import argparse
import os

import numpy as np

import gt

HERE = os.path.dirname(os.path.abspath(__file__))


def ops_per_worker():
    stats = gt.debug.get_worker_stats()
    return [w["ops_executed"] for w in stats]  # per-worker dicts, in worker-id order


def train(x, y, steps, sharded):
    gt.manual_seed(1)
    w1 = gt.nn.Parameter(gt.randn(16, 32) * 0.3)
    w2 = gt.nn.Parameter(gt.randn(32, 4) * 0.3)
    if sharded:
        x = gt.signal.tensor(x, "data_parallel")       # rows split over workers 0 and 1
        y = gt.signal.tensor(y, "data_parallel")
        w2 = gt.signal.tensor(w2, "replicated_head")   # a full copy on each worker
    opt = gt.nn.SGD([w1, w2], lr=0.1)
    before = ops_per_worker()
    losses = []
    for _ in range(steps):
        if sharded:
            with gt.signal.context("data_parallel"):   # gradients under data_parallel_bwd
                logits = (x @ w1).relu() @ w2
                loss = gt.nn.cross_entropy_loss(logits, y)
        else:
            loss = gt.nn.cross_entropy_loss((x @ w1).relu() @ w2, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    ops = [b - a for a, b in zip(before, ops_per_worker())]
    return losses, w1.data.numpy(), ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default=os.path.join(HERE, "sharding.yaml"))
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()

    if not os.environ.get("GT_ADDRESS"):
        gt.gpu_workers(2)
    configs = gt.load_config(args.config)
    for name, cfg in configs.items():
        print(f"signal {name}: {cfg}")

    rng = np.random.default_rng(0)
    x = gt.from_numpy(rng.standard_normal((64, 16)).astype(np.float32))
    y = gt.from_numpy(rng.integers(0, 4, 64))

    plain, w_plain, ops_plain = train(x, y, args.steps, sharded=False)
    sharded, w_sharded, ops_sharded = train(x, y, args.steps, sharded=True)
    print(f"loss unsharded:    {plain[0]:.4f} -> {plain[-1]:.4f}   ops per worker {ops_plain}")
    print(f"loss data parallel: {sharded[0]:.4f} -> {sharded[-1]:.4f}   ops per worker {ops_sharded}")
    assert plain[-1] < plain[0], "training did not reduce the loss"
    assert np.allclose(plain, sharded, rtol=1e-4, atol=1e-5), "sharding changed the results"
    assert np.allclose(w_plain, w_sharded, rtol=1e-4, atol=1e-5)
    if len(ops_sharded) >= 2:
        assert ops_sharded[0] > 0 and ops_sharded[1] > 0, "both workers should have computed"
    print("signal_sharding: ok")


if __name__ == "__main__":
    main()

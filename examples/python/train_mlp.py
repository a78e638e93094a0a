#!/usr/bin/python3
"""Trains a small MLP on a synthetic 3-class spiral through GT (the Python twin of
examples/train_mlp.cpp): the model, the gradients and the optimizer updates all run on the GT
workers; the client only builds the data and reads the loss every few steps.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/train_mlp.py [--steps N] [--optim sgd|adam]

Prints progress and, last, "final accuracy: A" (exit status 0 when A >= 0.9).
"""
import argparse

import numpy as np

import gt


class MLP(gt.nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = [gt.nn.Linear(i, o) for i, o in zip(sizes[:-1], sizes[1:])]

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = layer(x).relu()
        return self.layers[-1](x)


def spiral(classes=3, per_class=100, seed=0):
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.arange(per_class) / per_class
        t = c * 4.0 + 4.0 * r + rng.normal(0, 0.12, per_class)
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        ys.append(np.full(per_class, c))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--optim", choices=["sgd", "adam"], default="adam")
    args = ap.parse_args()

    xs, ys = spiral()
    x = gt.from_numpy(xs)
    y = gt.from_numpy(ys)

    gt.manual_seed(0)
    model = MLP([2, 64, 64, 3])
    if args.optim == "adam":
        opt = gt.optim.Adam(model.parameters(), lr=0.02)
    else:
        opt = gt.nn.SGD(model.parameters(), lr=0.2, momentum=0.9)
    print(f"{len(model.parameters())} parameter tensors, "
          f"{sum(int(np.prod(p.shape)) for p in model.parameters())} values")

    for step in range(1, args.steps + 1):
        logits = model(x)
        loss = gt.nn.cross_entropy_loss(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 1 or step % 50 == 0 or step == args.steps:
            acc = (logits.argmax(axis=1) == y).float().mean().item()
            print(f"step {step:4d}  loss {loss.item():.4f}  accuracy {acc:.3f}", flush=True)

    with gt.no_grad():
        acc = (model(x).argmax(axis=1) == y).float().mean().item()
    print(f"final accuracy: {acc:.4f}")
    return 0 if acc >= 0.9 else 1


if __name__ == "__main__":
    raise SystemExit(main())

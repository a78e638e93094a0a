#!/usr/bin/python3
"""A tour of the `gt` Python API: creation, arithmetic, indexing, autograd, printing, stats.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/demo.py

Uses GT_ADDRESS when set, else the embedded default (a private dispatcher + CPU/GPU worker).
Prints what it does and, last, "demo: ok".
"""
import numpy as np

import gt


def main():
    gt.manual_seed(0)

    # Creation: ops return at once, they run on the workers.
    a = gt.randn(4, 3)
    b = gt.ones(4, 3)
    w = gt.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    print("a =", a)

    # Arithmetic with tensors and Python numbers on either side, matmul, reductions.
    c = (2 * a - b / 2) ** 2
    d = (c @ w).relu()
    print("d.shape =", d.shape, "d.dtype =", d.dtype)
    print("d.sum(axis=0) =", d.sum(axis=0))
    print("max over everything:", d.max().item())

    # Check against numpy (a sync point fetches the values).
    an = a.numpy()
    ref = np.maximum(((2 * an - 0.5) ** 2) @ np.array([[1, 0], [0, 1], [1, 1]], np.float32), 0)
    assert np.allclose(d.numpy(), ref, rtol=1e-5, atol=1e-5)

    # Indexing, layout.
    print("a[1:, ::2] =", a[1:, ::2])
    print("a.T.shape =", a.T.shape, " a.reshape(-1, 6).shape =", a.reshape(-1, 6).shape)
    top, bottom = a.chunk(2)
    print("gt.cat of the halves equals a:", bool((gt.cat([top, bottom]) == a).numpy().all()))

    # Autograd.
    x = gt.randn(3, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    print("x =", x.data.numpy(), " grad of sum(x^2) =", x.grad.numpy())
    assert np.allclose(x.grad.numpy(), 2 * x.data.numpy(), rtol=1e-5)
    with gt.no_grad():
        z = x * 3
    print("under no_grad, z.requires_grad =", z.requires_grad)

    # Errors: a shape error raises where it is made.
    try:
        gt.randn(2, 3) @ gt.randn(2, 3)
    except gt.ShapeError as e:
        print("shape error at the call site:", e)

    # Worker statistics.
    gt.debug.print_worker_stats()
    print("demo: ok")


if __name__ == "__main__":
    main()

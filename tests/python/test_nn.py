"""gt.nn: Module parameter collection, layers and losses against numpy, optimizers against their
closed forms, a training loop, state dicts."""
import numpy as np
import pytest

import gt
from conftest import assert_close


class Block(gt.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = gt.nn.Linear(4, 3)
        self.scale = gt.nn.Parameter(gt.ones(3))
        self.const = gt.ones(3)  # not a parameter: does not require grad

    def forward(self, x):
        return self.fc(x) * self.scale + self.const


class Net(gt.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [Block(), Block()]
        self.heads = {"a": gt.nn.Linear(3, 2)}
        self.shared = self.blocks[0]  # the same module twice: counted once

    def forward(self, x):
        return self.heads["a"](self.blocks[1](self.blocks[0](x).relu() @ gt.ones(3, 4)))


def test_parameters_collected_recursively():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.0.scale",
                     "blocks.1.fc.weight", "blocks.1.fc.bias", "blocks.1.scale",
                     "heads.a.weight", "heads.a.bias"]
    assert len(net.parameters()) == 8
    assert all(p.requires_grad for p in net.parameters())
    assert [n for n, _ in net.named_children()][:2] == ["blocks.0", "blocks.1"]
    assert len(net.modules()) == 1 + 2 + 2 + 1  # net, 2 blocks, their 2 Linear, head
    assert "Linear(in_features=4" in repr(net)


def test_zero_grad_and_call():
    net = Net()
    out = net(gt.randn(5, 4))
    assert out.shape == (5, 2)
    out.sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net(gt.randn(5, 4)).sum().backward()
    net.zero_grad(set_to_none=False)
    assert all(float(abs(p.grad).sum().item()) == 0 for p in net.parameters())


def test_linear_matches_numpy(rng):
    lin = gt.nn.Linear(6, 3)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    assert w.shape == (3, 6) and b.shape == (3,)
    bound = 1 / np.sqrt(6)
    assert np.all(np.abs(w) <= bound) and np.all(np.abs(b) <= bound)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    assert_close(lin(gt.from_numpy(x)), x @ w.T + b, rtol=1e-5)
    assert gt.nn.Linear(6, 3, bias=False).bias is None


def test_sequential_layernorm_embedding_dropout(rng):
    seq = gt.nn.Sequential(gt.nn.Linear(4, 8), gt.nn.ReLU(), gt.nn.Linear(8, 2))
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert seq(gt.randn(3, 4)).shape == (3, 2)

    x = rng.standard_normal((3, 5)).astype(np.float32)
    ln = gt.nn.LayerNorm(5)
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    assert_close(ln(gt.from_numpy(x)), ref, rtol=1e-4, atol=1e-4)
    assert len(ln.parameters()) == 2

    emb = gt.nn.Embedding(10, 4)
    idx = np.array([[1, 2], [9, 1]])
    assert_close(emb(gt.from_numpy(idx)), emb.weight.numpy()[idx])
    assert_close(emb(gt.tensor(idx)), emb.weight.numpy()[idx])  # float indices converted

    drop = gt.nn.Dropout(0.5)
    y = drop(gt.ones(1000)).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 300 < (y == 0).sum() < 700
    drop.eval()
    assert_close(drop(gt.ones(10)), np.ones(10))
    seq.eval()
    assert not seq.training and not seq[0].training
    seq.train()
    assert seq[2].training


def test_losses_match_numpy(rng):
    p = rng.standard_normal((6, 4)).astype(np.float32)
    t = rng.standard_normal((6, 4)).astype(np.float32)
    assert_close(gt.nn.mse_loss(gt.from_numpy(p), gt.from_numpy(t)), ((p - t) ** 2).mean(),
                 rtol=1e-5)
    assert_close(gt.nn.mse_loss(gt.from_numpy(p), gt.from_numpy(t), reduction="sum"),
                 ((p - t) ** 2).sum(), rtol=1e-5)

    prob = 1 / (1 + np.exp(-p))
    tgt = (rng.random((6, 4)) > 0.5).astype(np.float32)
    bce = -(tgt * np.log(prob) + (1 - tgt) * np.log(1 - prob)).mean()
    assert_close(gt.nn.binary_cross_entropy(gt.from_numpy(prob), gt.from_numpy(tgt)), bce,
                 rtol=1e-4)
    assert_close(gt.nn.functional.binary_cross_entropy_with_logits(gt.from_numpy(p),
                                                                   gt.from_numpy(tgt)),
                 bce, rtol=1e-4)

    labels = rng.integers(0, 4, 6)
    logp = p - np.log(np.exp(p).sum(1, keepdims=True))
    ce = -logp[np.arange(6), labels].mean()
    assert_close(gt.nn.cross_entropy_loss(gt.from_numpy(p), gt.from_numpy(labels)), ce, rtol=1e-5)
    # Float labels (gt.tensor's default dtype) are class indices too.
    assert_close(gt.nn.cross_entropy_loss(gt.from_numpy(p), gt.tensor(labels)), ce, rtol=1e-5)
    assert_close(gt.nn.CrossEntropyLoss()(gt.from_numpy(p), gt.from_numpy(labels)), ce, rtol=1e-5)
    assert_close(gt.nn.nll_loss(gt.from_numpy(logp), gt.from_numpy(labels)), ce, rtol=1e-5)


def test_cross_entropy_gradient_closed_form(rng):
    p = rng.standard_normal((5, 3)).astype(np.float32)
    labels = rng.integers(0, 3, 5)
    x = gt.from_numpy(p, requires_grad=True)
    gt.nn.cross_entropy_loss(x, gt.from_numpy(labels)).backward()
    soft = np.exp(p) / np.exp(p).sum(1, keepdims=True)
    soft[np.arange(5), labels] -= 1
    assert_close(x.grad, soft / 5, rtol=1e-4, atol=1e-6)


def test_sgd_momentum_closed_form():
    w = gt.tensor([1.0, -2.0], requires_grad=True)
    opt = gt.nn.SGD([w], 0.1, momentum=0.9)
    buf = np.zeros(2)
    ref = np.array([1.0, -2.0])
    for step in range(3):
        opt.zero_grad()
        (w * w).sum().backward()  # grad 2w
        opt.step()
        g = 2 * ref
        buf = g if step == 0 else 0.9 * buf + g
        ref = ref - 0.1 * buf
        assert_close(w, ref, rtol=1e-5)
    assert opt.lr == 0.1
    opt.lr = 0.01
    assert opt.lr == 0.01


def test_adam_closed_form():
    w = gt.tensor([0.5, -1.5, 3.0], requires_grad=True)
    opt = gt.optim.Adam([w], lr=0.1)
    ref = np.array([0.5, -1.5, 3.0])
    m = np.zeros(3)
    v = np.zeros(3)
    for t in range(1, 4):
        opt.zero_grad()
        (w ** 2).sum().backward()
        opt.step()
        g = 2 * ref
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        ref = ref - 0.1 / (1 - 0.9 ** t) * m / (np.sqrt(v) / np.sqrt(1 - 0.999 ** t) + 1e-8)
        assert_close(w, ref, rtol=1e-4, atol=1e-6)


def test_schedulers():
    w = gt.zeros(2, requires_grad=True)
    opt = gt.optim.SGD([w], lr=1.0)
    sched = gt.optim.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(4):
        sched.step()
        lrs.append(opt.lr)
    assert lrs == [1.0, 0.5, 0.5, 0.25]
    assert sched.get_last_lr() == [0.25]


def test_training_loop_fits_linear_regression(rng):
    true_w = np.array([[2.0], [-3.0], [0.5]], np.float32)
    xs = rng.standard_normal((64, 3)).astype(np.float32)
    ys = xs @ true_w + 1.0
    x, y = gt.from_numpy(xs), gt.from_numpy(ys)
    model = gt.nn.Linear(3, 1)
    opt = gt.nn.SGD(model.parameters(), lr=0.1)
    first = None
    for _ in range(150):
        loss = gt.nn.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if first is None:
            first = loss.item()
    assert loss.item() < 1e-4 < first
    assert_close(model.weight, true_w.T, rtol=1e-2, atol=1e-2)
    assert_close(model.bias, [1.0], rtol=1e-2, atol=1e-2)


def test_manual_training_with_data_updates(rng):
    """The original GT's style: plain tensors, backward, p.data -= lr * p.grad."""
    xs = rng.standard_normal((32, 2)).astype(np.float32)
    ys = (xs[:, :1] * 1.5 - xs[:, 1:] * 0.5).astype(np.float32)
    x, y = gt.from_numpy(xs), gt.from_numpy(ys)
    w = gt.zeros(2, 1, requires_grad=True)
    for _ in range(100):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        w.data -= 0.2 * w.grad
        w.grad.zero_()
    assert_close(w, [[1.5], [-0.5]], rtol=1e-3, atol=1e-3)


def test_state_dict_round_trip(tmp_path):
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd) == [n for n, _ in a.named_parameters()]
    b.load_state_dict(sd)
    for (_, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(pa.numpy(), pb.numpy())
    path = tmp_path / "net.gtsd"
    a.save(path)
    c = Net()
    c.load(path)
    for pa, pc in zip(a.parameters(), c.parameters()):
        np.testing.assert_array_equal(pa.numpy(), pc.numpy())
    with pytest.raises(KeyError):
        c.load_state_dict({"nope": gt.zeros(1)})
    bad = dict(sd)
    bad["heads.a.bias"] = gt.zeros(5)
    with pytest.raises(ValueError):
        c.load_state_dict(bad)


@pytest.mark.parametrize("x_shape", [(5, 6), (2, 3, 6), (6,)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("needs", ["both", "x", "weight"])
def test_linear_gradients_match_torch(rng, x_shape, bias, needs):
    """F.linear's own gradient (dW = G^T X over the flattened leading dims, dX = G W) against
    torch's, for 1-, 2- and 3-d inputs, with and without a bias, whichever side needs it."""
    torch = pytest.importorskip("torch")
    xs = rng.standard_normal(x_shape).astype(np.float32)
    ws = rng.standard_normal((4, 6)).astype(np.float32)
    bs = rng.standard_normal(4).astype(np.float32)
    gs = rng.standard_normal(x_shape[:-1] + (4,)).astype(np.float32)
    results = {}
    for m in (gt, torch):
        x = m.tensor(xs, requires_grad=needs in ("both", "x"))
        w = m.tensor(ws, requires_grad=needs in ("both", "weight"))
        b = m.tensor(bs, requires_grad=True) if bias else None
        y = m.nn.functional.linear(x, w, b)
        y.backward(m.tensor(gs))
        results[m.__name__] = (y, x.grad, w.grad, b.grad if bias else None)
    for got, want in zip(results["gt"], results["torch"]):
        if want is None:
            assert got is None
        else:
            assert_close(got, want.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_linear_backward_refuses_a_weight_changed_in_place():
    # linear saves the weight itself (not a copy of its transpose), so changing it between
    # forward and backward fails the backward pass, as in torch
    w = gt.randn(3, 4)
    x = gt.randn(2, 4, requires_grad=True)
    y = gt.nn.functional.linear(x, w)
    with gt.no_grad():
        w.mul_(2)
    with pytest.raises(RuntimeError, match="MmBackward.*modified by an in-place operation"):
        y.sum().backward()

"""nn and data idioms (issue 13): gt.utils.data (TensorDataset, DataLoader, random_split),
gt.nn.init, gt.nn.utils.clip_grad_norm_ / clip_grad_value_, and gt.save / gt.load with pickled
tensors, against python3-torch and closed forms."""
import io
import math
import pickle

import numpy as np
import pytest

import gt
from conftest import assert_close

torch = pytest.importorskip("torch")


# ---- gt.utils.data -----------------------------------------------------------------------------------
def test_dataloader_batches_in_order_and_drop_last():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10, dtype=np.int64)
    ds = gt.utils.data.TensorDataset(gt.from_numpy(x), gt.from_numpy(y))
    assert len(ds) == 10
    xi, yi = ds[3]
    assert xi.tolist() == [6.0, 7.0] and yi.item() == 3
    batches = list(gt.utils.data.DataLoader(ds, batch_size=4))
    assert [tuple(b[0].shape) for b in batches] == [(4, 2), (4, 2), (2, 2)]
    np.testing.assert_array_equal(np.concatenate([b[1].numpy() for b in batches]), y)
    loader = gt.utils.data.DataLoader(ds, batch_size=4, drop_last=True)
    assert len(loader) == 2 and len(list(loader)) == 2
    with pytest.raises(ValueError, match="batch_size"):
        gt.utils.data.DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="size mismatch"):
        gt.utils.data.TensorDataset(gt.zeros(3), gt.zeros(4))


def test_dataloader_shuffles_each_epoch_reproducibly():
    y = gt.arange(50)
    ds = gt.utils.data.TensorDataset(y)

    def epochs(seed):
        loader = gt.utils.data.DataLoader(ds, batch_size=8, shuffle=True, generator=seed)
        return [np.concatenate([b[0].numpy() for b in loader]) for _ in range(2)]

    e1, e2 = epochs(7)
    assert sorted(e1.tolist()) == list(range(50)) and sorted(e2.tolist()) == list(range(50))
    assert e1.tolist() != list(range(50)) and e1.tolist() != e2.tolist()  # a new order per epoch
    f1, f2 = epochs(7)
    np.testing.assert_array_equal(e1, f1)
    np.testing.assert_array_equal(e2, f2)


def test_manual_seed_makes_unseeded_shuffles_and_splits_reproducible():
    """As in PyTorch, a DataLoader(shuffle=True) or random_split without a generator follows
    gt.manual_seed: the same seed gives the same orders (also for a loader made before the
    seed), another seed other orders."""
    ds = gt.utils.data.TensorDataset(gt.arange(40))

    def epochs(loader):
        return [[int(v) for b in loader for v in b[0].numpy()] for _ in range(3)]

    made_before = gt.utils.data.DataLoader(ds, batch_size=8, shuffle=True)
    gt.manual_seed(0)
    a = epochs(gt.utils.data.DataLoader(ds, batch_size=8, shuffle=True))
    split_a = [list(s.indices) for s in gt.utils.data.random_split(range(10), [4, 6])]
    gt.manual_seed(0)
    b = epochs(gt.utils.data.DataLoader(ds, batch_size=8, shuffle=True))
    split_b = [list(s.indices) for s in gt.utils.data.random_split(range(10), [4, 6])]
    gt.manual_seed(0)
    c = epochs(made_before)
    gt.manual_seed(1)
    d = epochs(gt.utils.data.DataLoader(ds, batch_size=8, shuffle=True))
    assert a == b == c
    assert split_a == split_b
    assert a != d
    assert a[0] != a[1]  # a new order every epoch
    assert all(sorted(e) == list(range(40)) for e in a + d)


def test_generic_dataset_collate_and_random_split():
    class Squares(gt.utils.data.Dataset):
        def __len__(self):
            return 7

        def __getitem__(self, i):
            return gt.tensor([float(i), float(i * i)]), i

    batches = list(gt.utils.data.DataLoader(Squares(), batch_size=3))
    xb, yb = batches[1]
    assert xb.tolist() == [[3.0, 9.0], [4.0, 16.0], [5.0, 25.0]]
    assert yb.dtype == gt.int64 and yb.tolist() == [3, 4, 5]
    a, b = gt.utils.data.random_split(Squares(), [5, 2], generator=1)
    got = sorted([a[i][1] for i in range(len(a))] + [b[i][1] for i in range(len(b))])
    assert len(a) == 5 and len(b) == 2 and got == list(range(7))
    with pytest.raises(ValueError, match="sum"):
        gt.utils.data.random_split(Squares(), [3, 3])


# ---- gt.nn.init ------------------------------------------------------------------------------------
def test_init_fills_and_distributions():
    gt.manual_seed(0)
    w = gt.nn.Linear(400, 300).weight
    assert gt.nn.init.zeros_(w) is w and np.all(w.numpy() == 0)
    gt.nn.init.constant_(w, 0.5)
    assert np.all(w.numpy() == 0.5) and w.requires_grad and w.is_leaf
    gt.nn.init.xavier_uniform_(w)
    bound = math.sqrt(6.0 / (400 + 300))
    v = w.numpy()
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.99 * bound
    assert v.std() == pytest.approx(bound / math.sqrt(3), rel=0.02)  # uniform's std
    gt.nn.init.kaiming_normal_(w, nonlinearity="relu")
    assert w.numpy().std() == pytest.approx(math.sqrt(2.0 / 400), rel=0.02)
    gt.nn.init.normal_(w, mean=3.0, std=0.1)
    assert w.numpy().mean() == pytest.approx(3.0, abs=0.002)
    gt.nn.init.eye_(w)
    np.testing.assert_array_equal(w.numpy(), np.eye(300, 400, dtype=np.float32))
    for name, param in (("tanh", None), ("relu", None), ("leaky_relu", 0.2), ("selu", None)):
        assert gt.nn.init.calculate_gain(name, param) == pytest.approx(
            torch.nn.init.calculate_gain(name, param))
    with pytest.raises(ValueError, match="fewer than 2"):
        gt.nn.init.xavier_uniform_(gt.zeros(3))


# ---- gt.nn.utils -----------------------------------------------------------------------------------
@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_as_torch(norm_type, max_norm):
    rng = np.random.default_rng(4)
    grads = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5,))]
    ps, rs = [], []
    for g in grads:
        p, r = gt.zeros(*g.shape, requires_grad=True), torch.zeros(*g.shape, requires_grad=True)
        p.grad, r.grad = gt.from_numpy(g), torch.from_numpy(g.copy())
        ps.append(p)
        rs.append(r)
    total = gt.nn.utils.clip_grad_norm_(ps, max_norm, norm_type)
    want = torch.nn.utils.clip_grad_norm_(rs, max_norm, norm_type)
    assert total.item() == pytest.approx(want.item(), rel=1e-5)
    for p, r in zip(ps, rs):
        assert_close(p.grad, r.grad.numpy(), rtol=1e-5, atol=1e-6)
    gt.nn.utils.clip_grad_value_(ps, 0.1)
    torch.nn.utils.clip_grad_value_(rs, 0.1)
    for p, r in zip(ps, rs):
        assert_close(p.grad, r.grad.numpy(), rtol=1e-5, atol=1e-6)


# ---- gt.save / gt.load ------------------------------------------------------------------------------
def test_save_load_round_trip_of_state_dicts_and_tensors(tmp_path):
    gt.manual_seed(1)
    model = gt.nn.Sequential(gt.nn.Linear(4, 3), gt.nn.ReLU(), gt.nn.Linear(3, 2))
    path = tmp_path / "model.pt"
    gt.save(model.state_dict(), path)
    other = gt.nn.Sequential(gt.nn.Linear(4, 3), gt.nn.ReLU(), gt.nn.Linear(3, 2))
    other.load_state_dict(gt.load(path))
    x = gt.randn(5, 4)
    np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())
    objs = {"b": gt.tensor([1.5, -2.25]).to(gt.bfloat16), "i": gt.arange(4, dtype=gt.int32),
            "m": gt.tensor([True, False], dtype=gt.bool), "nested": [gt.zeros(0, 3), 7]}
    buf = io.BytesIO()
    gt.save(objs, buf)
    buf.seek(0)
    back = gt.load(buf)
    for k in ("b", "i", "m"):
        assert back[k].dtype == objs[k].dtype
        np.testing.assert_array_equal(back[k].float().numpy(), objs[k].float().numpy())
    assert tuple(back["nested"][0].shape) == (0, 3) and back["nested"][1] == 7
    leaf = gt.ones(2, requires_grad=True)
    assert pickle.loads(pickle.dumps(leaf)).requires_grad
    assert not pickle.loads(pickle.dumps(leaf * 2)).requires_grad  # history is not saved


# ---- gt.optim param_groups ---------------------------------------------------------------------
def _two_groups(m):
    rng = np.random.default_rng(9)
    a = m.from_numpy(rng.standard_normal((3, 4)).astype(np.float32)).requires_grad_()
    b = m.from_numpy(rng.standard_normal((4,)).astype(np.float32)).requires_grad_()
    return a, b


@pytest.mark.parametrize("make", [
    lambda m, g: m.optim.SGD(g, lr=0.1, momentum=0.9),
    lambda m, g: m.optim.Adam(g, lr=0.05),
    lambda m, g: m.optim.AdamW(g, lr=0.05, weight_decay=0.1),
])
def test_param_groups_train_as_torch(make):
    (ga, gb), (ta, tb) = _two_groups(gt), _two_groups(torch)
    gopt = make(gt, [{"params": [ga]}, {"params": gb, "lr": 0.01}])
    topt = make(torch, [{"params": [ta]}, {"params": tb, "lr": 0.01}])
    gs, ts = gt.optim.StepLR(gopt, step_size=2, gamma=0.5), torch.optim.lr_scheduler.StepLR(
        topt, step_size=2, gamma=0.5)
    for step in range(5):
        for opt, a, b in ((gopt, ga, gb), (topt, ta, tb)):
            opt.zero_grad()
            ((a * a).sum() + (b ** 3).sum()).backward()
            opt.step()
        gs.step(), ts.step()
        if step == 2:  # a manual schedule through param_groups, as torch users write it
            for g in gopt.param_groups:
                g["lr"] = g["lr"] * 0.3
            for g in topt.param_groups:
                g["lr"] = g["lr"] * 0.3
        assert [g["lr"] for g in gopt.param_groups] == pytest.approx(
            [g["lr"] for g in topt.param_groups])
    np.testing.assert_allclose(ga.detach().numpy(), ta.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb.detach().numpy(), tb.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert gs.get_last_lr() == pytest.approx(ts.get_last_lr())


def test_param_groups_options_and_errors():
    a, b = _two_groups(gt)
    opt = gt.optim.SGD([{"params": [a], "momentum": 0.5}, {"params": [b]}], lr=0.1)
    groups = opt.param_groups
    assert [g["momentum"] for g in groups] == [0.5, 0.0] and groups[1]["params"][0] is b
    assert opt.param_groups[0]["lr"] == 0.1 and opt.lr == 0.1
    with pytest.raises(NotImplementedError, match="only 'lr'"):
        groups[0]["momentum"] = 0.9
    with pytest.raises(TypeError, match="unknown option"):
        gt.optim.SGD([{"params": [a], "betas": (0.9, 0.99)}])
    with pytest.raises(ValueError, match="'params'"):
        gt.optim.SGD([{"lr": 0.1}])
    with pytest.raises(TypeError, match="iterable"):
        gt.optim.SGD(a)
    single = gt.optim.Adam([a], lr=0.2)
    assert len(single.param_groups) == 1 and single.param_groups[0]["betas"] == (0.9, 0.999)

"""Devices (issue 13): gt.device as torch.device, Tensor.device / .to / .cuda / .cpu, device= on
factories, ``with gt.device(...)``, Module.to, gt.cuda. A device names a worker: where tensors
live is read from the workers' own statistics in a 3-worker session."""
import textwrap

import numpy as np
import pytest

import gt
from conftest import assert_close
from test_signal_config import run_checks

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("spec", ["cuda:1", "cuda", "cpu", "cuda:0"])
def test_device_objects_print_and_compare_as_torch(spec):
    g, t = gt.device(spec), torch.device(spec)
    assert str(g) == str(t)
    assert repr(g) == repr(t)
    assert g.type == t.type
    assert g.index == t.index
    assert g == spec
    assert hash(g) == hash(gt.device(spec))


def test_device_constructors_and_errors():
    assert gt.device("cuda", 2) == gt.device("cuda:2")
    assert gt.device(3) == gt.device("cuda:3")
    assert gt.device(gt.device("cuda:1")) == "cuda:1"
    assert gt.device("auto").index is None
    for bad in ["gpu", "cuda:", "cuda:x", "cuda:-1", "cpu:1"]:
        with pytest.raises(gt.GTError, match="invalid device"):
            gt.device(bad)


def test_one_worker_session_devices():
    assert gt.cuda.device_count() >= 1
    assert gt.cuda.is_available()
    x = gt.randn(3, 4)
    assert x.device == gt.device("auto")
    assert not x.is_cuda and x.get_device() == -1
    y = x.to("cuda:0")
    assert y.device == "cuda:0" and y.is_cuda and y.get_device() == 0
    assert y.to("cuda:0") is not None and y.to(gt.device("cuda:0"))._id == y._id
    assert y.cpu()._id == y._id and x.cuda()._id == x._id  # no move: GT reaches values anywhere
    assert_close(y, x.numpy())
    z = x.to("cuda:0", gt.float16)
    assert z.dtype == gt.float16 and z.device == "cuda:0"
    w = x.to(device=0, dtype=gt.int32)
    assert w.dtype == gt.int32 and w.device == "cuda:0"
    assert x.to(y).device == "cuda:0"  # another tensor's device and dtype
    assert x.to(gt.float16).device == gt.device("auto")
    assert x.to("cuda:0", copy=True)._id != y._id
    assert x.to(gt.float32, copy=True)._id != x._id
    with pytest.raises(ValueError, match="no such worker"):
        x.to("cuda:9")
    with pytest.raises(TypeError, match="unexpected keyword"):
        x.to(device="cuda:0", pin=True)
    assert (y + x).device == "cuda:0"  # an unpinned operand follows the pinned one
    # torch's format: the device before the dtype
    assert repr(gt.tensor([1, 2], device=0)) == "tensor([1, 2], device='cuda:0', dtype=gt.int64)"
    assert repr(gt.tensor([1.5])) == "tensor([1.5000])"


def test_factories_take_device_and_like_factories_keep_it():
    for t in [gt.zeros(2, 3, device="cuda:0"), gt.ones(2, device=0), gt.randn(2, device="cuda:0"),
              gt.rand(2, device="cuda:0"), gt.empty(2, device="cuda:0"),
              gt.full((2,), 1.5, device="cuda:0"), gt.arange(4, device="cuda:0"),
              gt.eye(2, device="cuda:0"), gt.linspace(0, 1, 3, device="cuda:0"),
              gt.randint(0, 5, (3,), device="cuda:0"), gt.tensor([1, 2], device="cuda:0"),
              gt.tensor(gt.ones(2), device="cuda:0")]:
        assert t.device == "cuda:0", t
    p = gt.zeros(2, device="cuda:0")
    for t in [gt.zeros_like(p), gt.ones_like(p), gt.rand_like(p), gt.randn_like(p),
              gt.empty_like(p), gt.full_like(p, 2)]:
        assert t.device == "cuda:0"
    assert gt.zeros_like(p, device="auto").device == "auto"
    assert gt.zeros(2, device="cpu").device == "auto"  # cpu and cuda pin nothing
    assert gt.zeros(2, device="cuda").device == "auto"
    assert_close(gt.tensor([[1.0, 2.0]], device="cuda:0"), [[1.0, 2.0]])
    gt.manual_seed(4)
    a = gt.randn(5).numpy()
    gt.manual_seed(4)
    assert_close(gt.randn(5, device="cuda:0"), a)  # the same values wherever they are made


def test_device_context_manager():
    with gt.device("cuda:0") as d:
        assert d == "cuda:0"
        assert gt.zeros(2).device == "cuda:0"
        with gt.device("auto"):
            assert gt.zeros(2).device == "auto"
        assert gt.tensor([1.0]).device == "cuda:0"
    assert gt.zeros(2).device == "auto"


def test_gradients_flow_through_to():
    w = gt.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (w.to("cuda:0") ** 2).sum().backward()
    assert_close(w.grad, [2.0, -4.0, 6.0])


def test_module_to_keeps_parameter_objects_and_trains():
    gt.manual_seed(2)
    m = gt.nn.Sequential(gt.nn.Linear(4, 8), gt.nn.BatchNorm1d(8), gt.nn.ReLU(), gt.nn.Linear(8, 1))
    before = [p.numpy() for p in m.parameters()]
    ids = [id(p) for p in m.parameters()]
    opt = gt.optim.SGD(m.parameters(), lr=0.05)  # made before the move, as scripts do
    assert m.to("cuda:0") is m
    assert [id(p) for p in m.parameters()] == ids
    for p, b in zip(m.parameters(), before):
        assert p.device == "cuda:0"
        assert_close(p, b)
    assert m[1].running_mean.device == "cuda:0"  # buffers move too
    x = gt.randn(16, 4, device="cuda:0")
    y = (x.sum(1, keepdim=True) > 0).float()
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = gt.nn.functional.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert m[0].weight.grad.device == "cuda:0"
    m.half()
    assert m[0].weight.dtype == gt.float16 and m[0].weight.device == "cuda:0"
    assert m.cpu() is m and m.cuda() is m


def test_pytorch_device_idiom_runs_unchanged():
    code = """
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1).to(device)
        x = torch.randn(32, 3, device=device)
        y = x @ torch.tensor([[1.0], [-2.0], [0.5]], device=device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(200):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y)
            loss.backward()
            opt.step()
        result = loss.cpu().item()
    """
    ns = {"torch": gt}
    exec(textwrap.dedent(code), ns)
    ns_t = {"torch": torch}
    exec(textwrap.dedent(code), ns_t)
    assert ns["result"] < 1e-3 and ns_t["result"] < 1e-3


def test_cuda_memory_queries_read_worker_stats():
    keep = gt.zeros(256, 256, device="cuda:0")
    gt.synchronize()
    assert gt.cuda.memory_allocated(0) >= 256 * 256 * 4
    assert gt.cuda.memory_allocated() >= gt.cuda.memory_allocated(0)
    assert gt.cuda.max_memory_allocated(0) >= gt.cuda.memory_allocated(0)
    assert gt.cuda.memory_reserved() >= gt.cuda.memory_allocated()
    with pytest.raises(ValueError, match="no worker"):
        gt.cuda.memory_allocated(99)
    gt.cuda.synchronize()
    del keep


def test_devices_place_on_their_workers():
    out = run_checks("""
        assert gt.cuda.device_count() == 3
        x = gt.arange(12).float().reshape(3, 4)
        o0 = ops()
        a = gt.zeros(1000, 100, device="cuda:2")
        b = x.to("cuda:1")
        c = (b * 2 + 1).relu().sum(1)
        o1 = ops()
        d = b + gt.ones(3, 4)                      # the unpinned operand moves to worker 1
        e = b @ gt.full((4, 3), 10.0, device="cuda:2")  # one pinned elsewhere moves too
        o2 = ops()
        m = gt.nn.Linear(4, 2).to("cuda:2")
        opt = gt.optim.SGD(m.parameters(), lr=0.1)
        xs = gt.randn(8, 4, device=2)
        o3 = ops()
        for _ in range(5):
            opt.zero_grad()
            loss = (m(xs) ** 2).mean()
            loss.backward()
            opt.step()
        o4 = ops()
        bytes2 = stats()[2]["bytes"]
        emit(ran1=[o1[i] - o0[i] for i in range(3)], ran2=[o2[i] - o1[i] for i in range(3)],
             ran3=[o4[i] - o3[i] for i in range(3)], c=c.tolist(), d=d.tolist(), e=e.tolist(),
             devs=[str(t.device) for t in (a, b, c, d, e, loss, m.weight.grad)],
             bytes2=bytes2)
    """, workers=3)
    assert out["devs"] == ["cuda:2", "cuda:1", "cuda:1", "cuda:1", "cuda:1", "cuda:2", "cuda:2"]
    assert out["ran1"][0] >= 1 and out["ran1"][1] >= 3 and out["ran1"][2] >= 1
    # ones() is made at home (worker 0) and sent: two ops there, none of the arithmetic
    assert out["ran2"][1] >= 2 and out["ran2"][0] <= 2
    assert out["ran3"][2] > 30 and out["ran3"][0] == 0 and out["ran3"][1] == 0
    assert out["bytes2"] >= 400000
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(out["c"], np.maximum(x * 2 + 1, 0).sum(1))
    np.testing.assert_allclose(out["d"], x + 1)
    np.testing.assert_allclose(out["e"], x @ np.full((4, 3), 10.0))

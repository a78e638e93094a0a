"""Views that alias (issue 18 item 1): each program runs once with gt and once with python3-torch
(the oracle), and every tensor it returns (values, shapes, dtypes, gradients) must agree.
Also t[index] = value, strides/is_contiguous/storage_offset, and the writes torch refuses."""
import numpy as np
import pytest

import gt

torch = pytest.importorskip("torch")


def as_numpy(t):
    if isinstance(t, gt.Tensor):
        return t.numpy()
    return t.detach().numpy()


def run_both(program):
    got, want = program(gt), program(torch)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, torch.Tensor):
            assert tuple(g.shape) == tuple(w.shape), f"output {i}"
            np.testing.assert_allclose(as_numpy(g), as_numpy(w), rtol=1e-5, atol=1e-6,
                                       err_msg=f"output {i}")
        else:
            assert g == w, f"output {i}"


def base(m, rows=2, cols=3):
    return m.tensor(np.arange(rows * cols, dtype=np.float32).reshape(rows, cols).tolist())


VIEWS = {
    "reshape": lambda x: x.reshape(3, 2),
    "view": lambda x: x.view(-1),
    "flatten": lambda x: x.flatten(),
    "t": lambda x: x.t(),
    "T": lambda x: x.T,
    "mT": lambda x: x.mT,
    "transpose": lambda x: x.transpose(0, 1),
    "permute": lambda x: x.permute(1, 0),
    "unsqueeze": lambda x: x.unsqueeze(0),
    "squeeze": lambda x: x.unsqueeze(1).squeeze(1),
    "detach": lambda x: x.detach(),
    "row": lambda x: x[1],
    "column": lambda x: x[:, -1],
    "step": lambda x: x[:, ::2],
    "ellipsis-none": lambda x: x[None, ..., 1],
    "split": lambda x: x.split(2, dim=1)[1],
    "chunk": lambda x: x.chunk(2)[0],
    "view-of-view": lambda x: x.t()[2].unsqueeze(0),
    "expand-read": lambda x: x[:, :1].expand(2, 4),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_writes_through_the_base_reach_each_view(name):
    def program(m):
        x = base(m)
        v = VIEWS[name](x)
        x.mul_(2)
        before = v + 0
        x[0, 0] = -5.0
        return [x, v, before]
    run_both(program)


@pytest.mark.parametrize("name", sorted(n for n in VIEWS if n != "expand-read"))
@pytest.mark.parametrize("op", ["add_", "mul_", "copy_", "fill_", "zero_", "iadd", "setitem"])
def test_writes_through_each_view_reach_the_base(name, op):
    def program(m):
        x = base(m)
        v = VIEWS[name](x)
        sibling = x[0]
        if op == "add_":
            v.add_(10)
        elif op == "mul_":
            v.mul_(m.tensor(3.0))
        elif op == "copy_":
            v.copy_(m.ones(*v.shape) * 7)
        elif op == "fill_":
            v.fill_(4)
        elif op == "zero_":
            v.zero_()
        elif op == "iadd":
            v += 100
        else:
            v[...] = 9.0
        return [x, v, sibling]
    run_both(program)


def test_setitem_forms():
    def program(m):
        x = base(m, 3, 4)
        x[0] = 1.0
        x[1, 2] = 5
        x[:, 3] = m.tensor([7.0, 8.0, 9.0])
        x[2, :2] = m.tensor(-1.0)
        x[x > 6] = 0.0
        y = m.zeros(2, 2, dtype=m.int64)
        y[1] = 2 ** 40
        b = m.zeros(3, dtype=m.bool)
        b[1:] = True
        return [x, y, b]
    run_both(program)


@pytest.mark.parametrize("value", [[[1.0, 2.0], [3.0, 4.0]], np.ones((2, 2), np.float32)])
def test_setitem_refuses_lists_and_arrays_as_torch_does(value):
    for m in (torch, gt):
        x = base(m, 2, 3)
        with pytest.raises(TypeError):
            x[:, 1:] = value


def test_gradients_through_writes_and_regenerated_views():
    def program(m):
        w = m.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
        x = w * 1
        v = x[:, 1:]
        x[0].mul_(3)            # a write through a view (CopySlices)
        x.t()[2].add_(x[1, 0])  # another, with a value that depends on x
        loss = (v * v).sum() + (x.exp() * m.tensor([1.0, 2.0, 3.0])).sum()
        loss.backward()
        return [x, v, w.grad, loss]
    run_both(program)


def test_detached_writes_are_seen_but_not_recorded():
    def program(m):
        w = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = w * 2
        y.detach()[1] = 0.0
        y.sum().backward()
        with m.no_grad():
            w[0] = 10.0
        return [y, w, w.grad]
    run_both(program)


def test_strides_and_contiguity_match_torch():
    for make in [lambda m: base(m, 4, 6).t(), lambda m: base(m, 4, 6)[1:, ::3],
                 lambda m: base(m, 4, 6).reshape(2, 2, 6).permute(2, 0, 1)[1],
                 lambda m: base(m, 4, 6)[:, 2].unsqueeze(0).expand(3, 4),
                 lambda m: base(m, 4, 6).t().reshape(3, 8)]:
        g, t = make(gt), make(torch)
        assert g.stride() == t.stride()
        assert g.is_contiguous() == t.is_contiguous()
        assert g.storage_offset() == t.storage_offset()
        assert g.stride(-1) == t.stride(-1)


def test_view_of_a_noncontiguous_tensor_is_refused_and_reshape_copies():
    x = base(gt, 4, 6).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.view(24)
    r = x.reshape(24)
    assert not r._is_view()
    r.fill_(0)
    assert x.sum().item() == sum(range(24))
    assert x.contiguous().is_contiguous() and not x.is_contiguous()


@pytest.mark.parametrize("case", ["leaf-view", "expand", "split-grad", "nograd-view"])
def test_writes_torch_refuses_are_refused(case):
    def attempt(m):
        w = m.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        if case == "leaf-view":
            w[1:].add_(1)
        elif case == "expand":
            m.zeros(3)[None].expand(2, 3).add_(1)
        elif case == "split-grad":
            (w * 2).split(2)[0].mul_(2)
        else:
            y = w * 2
            with m.no_grad():
                v = y[:2]
            v.add_(1)
    with pytest.raises(RuntimeError):
        attempt(torch)
    with pytest.raises(RuntimeError):
        attempt(gt)


def test_assignment_through_index_tensors_as_torch():
    def program(m):
        x = base(m, 3, 2)
        v = x[1]  # a view of the row written below: it sees the write
        x[m.tensor([1, -1], dtype=m.int64)] = 5.0
        x[x > 4.5] = -2.0
        return [x, v]
    run_both(program)
    with pytest.raises(TypeError, match="int64, int32 or bool"):
        base(gt)[gt.tensor([0.0])] = 1.0  # a float32 index, as torch refuses


def test_zero_dim_integer_tensor_indexes_as_an_int():
    def program(m):
        x = base(m, 3, 2)
        i = m.tensor(1, dtype=m.int64)
        v = x[i]
        v.fill_(-1.0)
        x[m.tensor(-1, dtype=m.int64), 0] = 7.0
        return [x, v, x[i, m.tensor(0, dtype=m.int32)]]
    run_both(program)


def test_fill_and_zero_may_write_an_expanded_view():
    def program(m):
        x = base(m, 2, 1)
        e = x.expand(2, 3)
        e.fill_(0.5)
        y = base(m, 1, 3)
        y.expand(4, 3).zero_()
        return [x, e, y]
    run_both(program)


def test_views_of_a_detached_leaf_have_it_as_their_autograd_base():
    def program(m):
        t = m.tensor([[1.0, 2.0], [3.0, 4.0]])
        x = t.detach().requires_grad_()
        v = x[1:]
        with m.no_grad():
            x.mul_(2)  # v is stale: re-reading it keeps its gradient path to x (not to t)
        (v * v).sum().backward()
        buf = t.detach()
        w = m.tensor([5.0, 6.0], requires_grad=True)
        buf[0].copy_(w * 3)  # recorded on buf (CopySlices), not on t
        (buf * buf).sum().backward()
        return [t, v, x.grad, w.grad, buf, t.requires_grad]
    run_both(program)


def test_writing_a_view_that_requires_grad_of_a_leaf_is_refused():
    for m in (torch, gt):
        x = m.tensor([1.0, 2.0, 3.0, 4.0]).reshape(2, 2).requires_grad_()  # a leaf, and a view
        with pytest.raises(RuntimeError):
            x[0].add_(1)
        with pytest.raises(RuntimeError):
            x.add_(1)


@pytest.mark.parametrize("case", ["chunk-part", "nograd-view"])
def test_writes_that_would_make_a_multi_output_or_nograd_view_require_grad(case):
    for m in (torch, gt):
        x = m.zeros(4, 2)
        w = m.ones(2, 2, requires_grad=True)
        if case == "chunk-part":
            part = x.chunk(2)[0]
        else:
            with m.no_grad():
                part = x[:2]
        with pytest.raises(RuntimeError):
            part.copy_(w)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_of_half_types_computes_in_float32(approximate):
    big = [70.0, -70.0, 300.0, 1.5, -0.5]
    for dt in (gt.float16, gt.bfloat16):
        x = gt.tensor(big, dtype=dt, requires_grad=True)
        y = gt.nn.functional.gelu(x, approximate=approximate)
        y.sum().backward()
        ref = torch.nn.functional.gelu(torch.tensor(big), approximate=approximate)
        np.testing.assert_allclose(y.float().numpy(), ref.numpy(), rtol=1e-2, atol=1e-3)
        assert np.isfinite(x.grad.float().numpy()).all()  # x^2 in float16 would overflow


def test_setitem_is_recorded_for_autograd():
    def program(m):
        w = m.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
        u = m.tensor([3.0, -2.0], requires_grad=True)
        x = w * 1
        x[1, :2] = u * u        # written into x (CopySlices): u gets 2u * d(loss)/dx[1, :2]
        x[0] = 7                # the old row's history gets zero gradients
        x[:, 2] = x[:, 2] * 3   # reads x, then writes it
        loss = (x * m.tensor([1.0, 2.0, 3.0])).sum()
        loss.backward()
        return [x, w.grad, u.grad, loss]
    run_both(program)


def test_setitem_on_a_leaf_that_requires_grad_is_refused_outside_no_grad():
    for m in (torch, gt):
        w = m.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError):
            w[0] = 5.0
        with m.no_grad():
            w[0] = 5.0
        assert w.tolist() == [5.0, 2.0]

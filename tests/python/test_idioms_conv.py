"""conv2d / max_pool2d / avg_pool2d / batch_norm and their modules (issue 13) against
python3-torch: values and gradients for strides, padding, dilation, groups, unbatched input,
running statistics, state dicts, and the errors."""
import numpy as np
import pytest

import gt

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def arr(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def both(a):
    return gt.from_numpy(a).requires_grad_(), torch.from_numpy(a.copy()).requires_grad_()


def check_grads(pairs, rtol=1e-4, atol=1e-5):
    for g, t in pairs:
        np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)


CONV_CASES = [
    # (x shape, w shape, kwargs)
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 2), {"stride": 2, "padding": 1}),
    ((1, 4, 9, 9), (6, 2, 3, 3), {"groups": 2, "padding": (2, 1), "dilation": 2}),
    ((3, 5, 5), (2, 3, 1, 1), {"stride": (1, 2)}),          # unbatched
    ((2, 2, 5, 5), (2, 1, 3, 3), {"groups": 2, "padding": "valid"}),  # depthwise
]


@pytest.mark.parametrize("xs,ws,kw", CONV_CASES)
def test_conv2d_values_and_gradients_as_torch(xs, ws, kw):
    x, w, b = arr(xs, 1), arr(ws, 2), arr(ws[:1], 3)
    (gx, tx), (gw, tw), (gb, tb) = both(x), both(w), both(b)
    g = gt.nn.functional.conv2d(gx, gw, gb, **kw)
    t = TF.conv2d(tx, tw, tb, **kw)
    assert tuple(g.shape) == tuple(t.shape)
    np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    up = arr(tuple(t.shape), 4)
    (g * gt.from_numpy(up)).sum().backward()
    (t * torch.from_numpy(up)).sum().backward()
    check_grads([(gx, tx), (gw, tw), (gb, tb)])


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": (2, 3), "stride": 1, "dilation": 2},
                                {"kernel_size": 3, "stride": 2, "ceil_mode": True},
                                {"kernel_size": 2, "stride": 3, "padding": 1, "ceil_mode": True},
                                {"kernel_size": (3, 2), "stride": (2, 3), "dilation": (1, 2),
                                 "ceil_mode": True}])
def test_max_pool2d_as_torch(kw):
    x = arr((2, 3, 8, 7), 5)
    gx, tx = both(x)
    g, t = gt.nn.functional.max_pool2d(gx, **kw), TF.max_pool2d(tx, **kw)
    np.testing.assert_array_equal(g.detach().numpy(), t.detach().numpy())
    up = arr(tuple(t.shape), 6)
    (g * gt.from_numpy(up)).sum().backward()
    (t * torch.from_numpy(up)).sum().backward()
    check_grads([(gx, tx)])


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": 3, "padding": 1, "count_include_pad": False,
                                 "stride": 1},
                                {"kernel_size": 2, "ceil_mode": True},
                                {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
                                {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                                 "count_include_pad": False},
                                {"kernel_size": (2, 3), "stride": 2, "divisor_override": 5},
                                {"kernel_size": 2, "stride": 3, "padding": 1, "ceil_mode": True,
                                 "divisor_override": 3}])
def test_avg_pool2d_as_torch(kw):
    x = arr((2, 3, 7, 7), 7)
    gx, tx = both(x)
    g, t = gt.nn.functional.avg_pool2d(gx, **kw), TF.avg_pool2d(tx, **kw)
    np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    up = arr(tuple(t.shape), 8)
    (g * gt.from_numpy(up)).sum().backward()
    (t * torch.from_numpy(up)).sum().backward()
    check_grads([(gx, tx)])


@pytest.mark.parametrize("shape,cls", [((8, 3), "BatchNorm1d"), ((4, 3, 5), "BatchNorm1d"),
                                       ((4, 3, 5, 6), "BatchNorm2d")])
def test_batch_norm_modules_train_and_eval_as_torch(shape, cls):
    gm, tm = getattr(gt.nn, cls)(3, momentum=0.2), getattr(torch.nn, cls)(3, momentum=0.2)
    for step in range(3):
        x = arr(shape, 10 + step) * 3 + 1
        gx, tx = both(x)
        g, t = gm(gx), tm(tx)
        np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
        up = arr(shape, 20 + step)
        (g * gt.from_numpy(up)).sum().backward()
        (t * torch.from_numpy(up)).sum().backward()
        check_grads([(gx, tx), (gm.weight, tm.weight), (gm.bias, tm.bias)], rtol=1e-3, atol=1e-4)
        gm.weight.grad = gm.bias.grad = None
        tm.weight.grad = tm.bias.grad = None
    np.testing.assert_allclose(gm.running_mean.numpy(), tm.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gm.running_var.numpy(), tm.running_var.numpy(), rtol=1e-5, atol=1e-6)
    assert gm.num_batches_tracked.item() == 3
    assert set(gm.state_dict()) == set(tm.state_dict())
    gm.eval(), tm.eval()
    x = arr(shape, 30)
    np.testing.assert_allclose(gm(gt.from_numpy(x)).numpy(), tm(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_batch_norm_cumulative_momentum_and_no_tracking():
    gm, tm = gt.nn.BatchNorm1d(2, momentum=None), torch.nn.BatchNorm1d(2, momentum=None)
    for s in range(3):
        x = arr((5, 2), 40 + s)
        gm(gt.from_numpy(x)), tm(torch.from_numpy(x))
    np.testing.assert_allclose(gm.running_mean.numpy(), tm.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    g2, t2 = gt.nn.BatchNorm2d(2, track_running_stats=False), torch.nn.BatchNorm2d(2, track_running_stats=False)
    g2.eval(), t2.eval()
    x = arr((2, 2, 3, 3), 50)
    np.testing.assert_allclose(g2(gt.from_numpy(x)).detach().numpy(), t2(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_conv2d_module_shapes_init_and_state_dict():
    gt.manual_seed(0)
    m = gt.nn.Conv2d(3, 8, 3, padding=1, bias=True)
    assert tuple(m.weight.shape) == (8, 3, 3, 3) and tuple(m.bias.shape) == (8,)
    bound = 1 / np.sqrt(27)
    w = m.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound and w.std() > bound / 3
    assert set(m.state_dict()) == {"weight", "bias"}
    assert tuple(m(gt.zeros(2, 3, 5, 5)).shape) == (2, 8, 5, 5)
    assert tuple(gt.nn.MaxPool2d(2)(gt.zeros(1, 1, 5, 5)).shape) == (1, 1, 2, 2)


def test_conv_and_pool_errors():
    F = gt.nn.functional
    x = gt.zeros(1, 3, 5, 5)
    with pytest.raises(gt.GTError, match="groups"):
        F.conv2d(x, gt.zeros(4, 2, 3, 3))
    with pytest.raises(gt.GTError, match="larger than the padded input"):
        F.conv2d(x, gt.zeros(4, 3, 7, 7))
    with pytest.raises(gt.GTError, match="3-d"):
        F.conv2d(gt.zeros(5, 5), gt.zeros(1, 1, 3, 3))
    with pytest.raises(gt.GTError, match="half of the kernel"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(gt.GTError, match="floating"):
        F.max_pool2d(gt.zeros(1, 1, 4, 4, dtype=gt.int64), 2)
    with pytest.raises(gt.GTError, match="strided"):
        F.conv2d(x, gt.zeros(1, 3, 3, 3), padding="same", stride=2)
    with pytest.raises(ValueError, match="same"):
        F.conv2d(x, gt.zeros(1, 3, 3, 3), padding="full")
    with pytest.raises(gt.GTError, match="zero"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(gt.GTError, match="more than 1 value per channel"):
        gt.nn.BatchNorm1d(3)(gt.zeros(1, 3))
    with pytest.raises(ValueError, match="4-d"):
        gt.nn.BatchNorm2d(3)(gt.zeros(2, 3))


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": 3, "stride": 2, "ceil_mode": True},
                                {"kernel_size": (2, 3), "dilation": (2, 1), "stride": 1}])
def test_max_pool2d_return_indices_as_torch(kw):
    # Distinct values (a permutation), so the maximum's position is unique.
    x = (np.random.default_rng(11).permutation(2 * 3 * 8 * 7).reshape(2, 3, 8, 7)
         .astype(np.float32))
    gx, tx = both(x)
    (gv, gi), (tv, ti) = (gt.nn.functional.max_pool2d(gx, return_indices=True, **kw),
                          TF.max_pool2d(tx, return_indices=True, **kw))
    np.testing.assert_array_equal(gv.detach().numpy(), tv.detach().numpy())
    assert gi.dtype == gt.int64
    np.testing.assert_array_equal(gi.numpy(), ti.numpy())
    up = arr(tuple(tv.shape), 9)
    (gv * gt.from_numpy(up)).sum().backward()
    (tv * torch.from_numpy(up)).sum().backward()
    check_grads([(gx, tx)])
    gm = gt.nn.MaxPool2d(return_indices=True, **kw)        # the module form
    np.testing.assert_array_equal(gm(gt.from_numpy(x))[1].numpy(), ti.numpy())


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's note on its own copy
@pytest.mark.parametrize("kernel,dilation", [(3, 1), (4, 1), ((2, 5), (2, 1)), (1, 1)])
def test_conv2d_padding_same_and_valid_as_torch(kernel, dilation):
    """padding='same' keeps the size (an even kernel pads one more after, as torch)."""
    k = kernel if isinstance(kernel, tuple) else (kernel, kernel)
    x, w, b = arr((2, 3, 9, 8), 12), arr((4, 3) + k, 13), arr((4,), 14)
    gx, tx = both(x)
    gw, tw = both(w)
    gb, tb = both(b)
    for padding in ("same", "valid"):
        g = gt.nn.functional.conv2d(gx, gw, gb, padding=padding, dilation=dilation)
        t = TF.conv2d(tx, tw, tb, padding=padding, dilation=dilation)
        assert tuple(g.shape) == tuple(t.shape)
        np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    up = arr(tuple(t.shape), 15)  # the gradient through the 'valid' result, then 'same'
    (g * gt.from_numpy(up)).sum().backward()
    (t * torch.from_numpy(up)).sum().backward()
    check_grads([(gx, tx), (gw, tw), (gb, tb)])
    gm = gt.nn.Conv2d(3, 4, kernel, padding="same", dilation=dilation)
    assert tuple(gm(gx).shape) == (2, 4, 9, 8)

"""gt.set_float32_matmul_precision, as torch.set_float32_matmul_precision (issue 10): the setting
round-trips, every matmul issued after it carries it (GPU workers compute with it; CPU workers
always compute 'highest', so results here equal torch's float32 ones), and a bad value raises
ValueError and changes nothing (torch only warns)."""
import numpy as np
import pytest
import torch

import gt


@pytest.fixture(autouse=True)
def restore_precision():
    yield
    gt.set_float32_matmul_precision("highest")


def test_default_is_highest_like_torch():
    assert gt.get_float32_matmul_precision() == "highest"
    assert torch.get_float32_matmul_precision() == "highest"


@pytest.mark.parametrize("precision", ["highest", "high", "medium"])
def test_setting_round_trips_and_cpu_results_stay_exact(precision):
    gt.set_float32_matmul_precision(precision)
    assert gt.get_float32_matmul_precision() == precision
    rng = np.random.default_rng(7)
    a = rng.standard_normal((17, 33)).astype(np.float32)
    b = rng.standard_normal((33, 9)).astype(np.float32)
    got = (gt.tensor(a) @ gt.tensor(b)).numpy()
    want = (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_backward_matmuls_run_under_the_setting():
    gt.set_float32_matmul_precision("high")
    rng = np.random.default_rng(8)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    ga = gt.tensor(a, requires_grad=True)
    (ga @ gt.tensor(b)).sum().backward()
    ta = torch.tensor(a, requires_grad=True)
    (ta @ torch.from_numpy(b)).sum().backward()
    np.testing.assert_allclose(ga.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", ["fast", "HIGH", "", "tf32"])
def test_a_bad_value_raises_and_changes_nothing(bad):
    gt.set_float32_matmul_precision("medium")
    with pytest.raises(ValueError, match="highest"):
        gt.set_float32_matmul_precision(bad)
    assert gt.get_float32_matmul_precision() == "medium"

"""The surface generated from gt/tensor_api.def: every row is a gt.Tensor method, a gt.<name>
free function and (for `functional` rows) gt.nn.functional.<name> and gt.nn.<name>, and the
free forms compute what the method computes. Values are checked against references by the
op suites (tests/integration/ops, test_ops.py); this checks that no row is missing a form."""
import numpy as np
import pytest

import gt

API = gt._gt._api
X = np.array([[0.5, -1.25, 2.0], [1.5, 0.75, -0.5]], dtype=np.float32)


def test_every_row_has_its_forms():
    for family in ("unary", "binary", "compare", "reduce"):
        assert API[family], family
        for name in API[family]:
            assert callable(getattr(gt.Tensor, name)), name
            assert callable(getattr(gt, name)), name
    for name in API["functional"]:
        assert name in API["unary"]
        assert getattr(gt.nn.functional, name) is not None
        assert getattr(gt.nn, name) is getattr(gt.nn.functional, name)
        assert name in gt.nn.__all__


@pytest.mark.parametrize("name", API["unary"])
def test_unary_free_function_and_functional_match_the_method(name):
    x = gt.from_numpy(np.abs(X) + 0.25)  # inside every unary op's domain
    want = getattr(x, name)().numpy()
    np.testing.assert_array_equal(getattr(gt, name)(x).numpy(), want)
    if name in API["functional"]:
        np.testing.assert_array_equal(getattr(gt.nn.functional, name)(x).numpy(), want)


@pytest.mark.parametrize("name", API["binary"] + API["compare"])
def test_binary_forms_match(name):
    a, b = gt.from_numpy(np.abs(X) + 0.5), gt.from_numpy(np.abs(X[::-1].copy()) + 0.25)
    want = getattr(a, name)(b).numpy()
    np.testing.assert_array_equal(getattr(gt, name)(a, b).numpy(), want)
    # a Python number on the right gives the same as a 0-d tensor of it
    np.testing.assert_array_equal(getattr(a, name)(2.0).numpy(),
                                  getattr(a, name)(gt.tensor(2.0)).numpy())


@pytest.mark.parametrize("name", API["reduce"])
def test_reduce_forms_match(name):
    x = gt.from_numpy(X)
    by_dim = getattr(gt, name)(x, axis=1), getattr(x, name)(dim=1)
    if name in ("max", "min"):  # (values, indices) over a dim
        by_dim = [r.values for r in by_dim]
    np.testing.assert_array_equal(by_dim[0].numpy(), by_dim[1].numpy())
    np.testing.assert_array_equal(getattr(gt, name)(x).numpy(), getattr(x, name)().numpy())

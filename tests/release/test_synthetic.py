"""The model's side of synthetic releases: support, sampling and densities."""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pymc_edp.model.compat import from_dict, get_group
from pymc_edp.release.synthetic import (
    SyntheticData,
    discrete_support,
    observed_name,
    posterior_subset,
)


def _model():
    x = np.linspace(-1, 1, 4)
    with pm.Model() as model:
        a = pm.Normal("a")
        pm.Normal("y", a + x, 1.0, observed=np.array([0.1, -0.2, 0.3, 0.0]))
        pm.Binomial("c", 3, pm.math.sigmoid(a), observed=np.array([1, 2]))
    return model, x


def _posterior():
    idata = from_dict({"posterior": {"a": np.array([[0.0, 0.5, -0.5]])}})
    return get_group(idata, "posterior")


def test_support_and_names():
    model, _ = _model()
    np.testing.assert_array_equal(discrete_support(model, "c"), [0, 1, 2, 3])
    assert discrete_support(model, "y") is None
    with pytest.raises(ValueError, match="say which one"):
        observed_name(model, None)
    assert observed_name(model, "y") == "y"


def test_density_of_a_larger_dataset_repeats_the_covariates():
    model, x = _model()
    data = SyntheticData(model, "y", _posterior(), size=6)
    assert data.blocks == 2
    blocks = np.arange(8, dtype=float).reshape(2, 4) / 10
    expected = [
        stats.norm.logpdf(blocks[0], a + x, 1).sum()
        + stats.norm.logpdf(blocks[1, :2], a + x[:2], 1).sum()
        for a in (0.0, 0.5, -0.5)
    ]
    np.testing.assert_allclose(data.log_density(blocks), expected)
    sample = data.sample(np.array([0, 2]), seed=1)
    assert sample.shape == (2, 2, 4)


def test_listed_outputs_sum_to_one_at_every_draw():
    model, _ = _model()
    data = SyntheticData(model, "c", _posterior(), size=2)
    support = discrete_support(model, "c")
    outs = data.enumerate_outputs(support, 100)
    assert outs.shape == (16, 2)
    np.testing.assert_allclose(np.exp(data.enumerated_log_density(support, outs)).sum(axis=0), 1.0)
    assert data.enumerate_outputs(support, 10) is None


def test_posterior_subset_keeps_the_chosen_draws():
    sub = posterior_subset(_posterior(), np.array([2, 0]))
    np.testing.assert_array_equal(sub["a"].values, [[-0.5, 0.0]])

"""Tests of :mod:`pymc_edp.model.fit`: the fit read once."""

import numpy as np
import pytest
import xarray as xr

from pymc_edp.model.compat import from_dict, get_group, make_container
from pymc_edp.model.fit import GROUPS, Fit


def _container():
    return from_dict(
        {
            "posterior": {"mu": np.zeros((2, 5))},
            "log_likelihood": {"y": np.zeros((2, 5, 3))},
            "observed_data": {"y": np.ones(3)},
        }
    )


def test_read_takes_every_group_and_nothing_else():
    data = _container()
    fit = Fit.read(data)
    assert fit.has("posterior") and fit.has("log_likelihood") and fit.has("observed_data")
    assert not fit.has("sample_stats") and fit.sample_stats is None
    xr.testing.assert_identical(fit.group("posterior"), get_group(data, "posterior"))
    with pytest.raises(ValueError, match="no 'constant_data' group"):
        fit.group("constant_data")
    assert set(GROUPS) >= {"posterior", "log_likelihood", "observed_data", "sample_stats"}


def test_of_reads_a_container_keeps_a_fit_and_wraps_a_posterior():
    fit = Fit.read(_container())
    assert Fit.of(fit) is fit
    post = fit.posterior
    assert Fit.of(post).posterior is post and not Fit.of(post).has("log_likelihood")
    with pytest.raises(TypeError):
        Fit.read({"posterior": post})


def test_replace_leaves_the_fit_unchanged():
    fit = Fit.read(_container())
    bare = fit.replace(log_likelihood=None)
    assert fit.has("log_likelihood") and not bare.has("log_likelihood")
    assert bare.posterior is fit.posterior


def test_a_lazy_fit_is_loaded_but_for_its_log_likelihood():
    data = _container()
    lazy = make_container(
        {
            "posterior": get_group(data, "posterior").chunk(),
            "log_likelihood": get_group(data, "log_likelihood").chunk(),
        }
    )
    fit = Fit.read(lazy)
    assert fit.posterior["mu"].chunks is None
    assert fit.log_likelihood["y"].chunks is not None


def test_the_log_likelihood_source_is_the_fits():
    data = _container()
    assert Fit.read(data).log_likelihood_source == "auto"
    assert Fit.read(data, "model").log_likelihood_source == "model"
    with pytest.raises(ValueError, match="log_likelihood must be one of"):
        Fit.read(data, "disk")
    posterior_only = Fit.read(data).replace(log_likelihood=None)
    with pytest.raises(ValueError, match="log_likelihood='group' but there is no"):
        posterior_only.replace(log_likelihood_source="group")

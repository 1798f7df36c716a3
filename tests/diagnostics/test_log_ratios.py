"""Bin log ratios (:mod:`pymc_edp.diagnostics.log_ratios`), alone and beside the others."""

import dataclasses

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import pymc_edp as edp
from pymc_edp.model.compat import from_dict


def test_bin_log_ratios_of_the_worst_neighbour_reach_epsilon(nn_result):
    res = nn_result
    lr = res.bin_log_ratios()
    assert lr.dims == ("parameter", "bin")
    assert float(np.abs(lr).max()) == pytest.approx(res.epsilon, rel=1e-12)
    assert lr.attrs["neighbour"] == res.worst_neighbour
    xr.testing.assert_identical(lr, edp.diagnostics.bin_log_ratios(res))


def test_bin_log_ratios_of_a_named_neighbour_and_other_bins(nn_result):
    res = nn_result
    label = res.pointwise["neighbour"].values[3]
    lr = edp.diagnostics.bin_log_ratios(res, label, bins=5)
    assert lr.sizes["bin"] == 5 and lr.attrs["bins"] == 5 and lr.attrs["neighbour"] == label
    assert np.isfinite(lr.values).all()
    with pytest.raises(KeyError, match="no neighbour"):
        edp.diagnostics.bin_log_ratios(res, "nobody")


def test_bin_log_ratios_need_the_weights(nn_result):
    res = dataclasses.replace(nn_result, log_weights=None)
    with pytest.raises(ValueError, match="importance weights"):
        edp.diagnostics.bin_log_ratios(res)


def test_several_parameters_and_chains(rng):
    """Vector parameter + scalar, 3 chains: the diagnostics follow the audit's layout."""
    n, chains, draws = 40, 3, 800
    x = rng.normal(size=n)
    y = 1.0 + 0.5 * x + rng.normal(0, 0.8, n)
    # exact posterior of (intercept, slope) under a flat prior with sigma = 0.8 known; a
    # second variable "sigma" (draws of a nuisance the likelihood does not use)
    design = np.column_stack([np.ones(n), x])
    cov = 0.8**2 * np.linalg.inv(design.T @ design)
    mean_beta = np.linalg.solve(design.T @ design, design.T @ y)
    beta = rng.multivariate_normal(mean_beta, cov, size=(chains, draws))
    sigma = np.exp(rng.normal(np.log(0.8), 0.11, (chains, draws)))
    ll = stats.norm.logpdf(y, beta[..., :1] + beta[..., 1:] * x, 0.8)
    idata = from_dict(
        {"posterior": {"beta": beta, "sigma": sigma}, "log_likelihood": {"y": ll}},
        dims={"beta": ["coef"]},
        coords={"coef": ["a", "b"]},
    )
    res = edp.audit(idata, bins=10, method="psis", progressbar=False)
    assert res.parameters["beta"]["epsilon"].sizes == {"coef": 2} and len(res.summary()) == 3
    se = res.mcse()
    np.testing.assert_allclose(se["estimate_i"], res.pointwise["epsilon"], rtol=1e-12)
    assert np.all(np.isfinite(se["epsilon_i"])) and np.all(se["ess_i"] > 0)
    iv = res.interval()
    assert iv["epsilon"].values[0] <= res.epsilon <= iv["epsilon"].values[1]
    assert res.emi()["emi_parameter"].sizes["parameter"] == 3
    assert set(res.empty_bins()["var_name"].values) == {"beta", "sigma"}
    curve = res.curve(bins=[5, 10, 20])
    assert curve.sel(bins=10).item() == pytest.approx(res.epsilon, rel=1e-12)
    # the joint density ratio bounds every marginal's B-EDP
    assert float(res.continuous_limit()["epsilon_inf"]) >= curve.max()
    assert res.bin_log_ratios().sizes == {"parameter": 3, "bin": 10}

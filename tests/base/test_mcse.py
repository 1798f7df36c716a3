"""Tests of :mod:`pymc_edp.base.mcse`: the one Monte-Carlo error of epsilon."""

import numpy as np
import pytest
import xarray as xr
from support import normal_draws

from pymc_edp.base import binning
from pymc_edp.base.mcse import ess_mean, refit_log_ratio_se
from pymc_edp.model.compat import ess


@pytest.mark.parametrize("bin_index", [0, 4, 9])
def test_refit_log_ratio_se_matches_replicate_spread(bin_index):
    """The delta-method error of a refit's bin log ratio is its sampling spread.

    Full-data posterior N(0, 1) and refit posterior N(0.3, 0.9^2), i.i.d. draws (S = S' =
    2,000), B = 10. Over 400 replicates (fresh draws of both, bins recut each time) the
    standard deviation of log P'(b_j) is the true Monte-Carlo error; the mean of the
    estimated errors must agree with it within 15% (the spread of a standard deviation from
    400 replicates is 3.5%, and the delta method's own bias at these counts a few per cent).
    Both parts count: without the cut points' term the error is 25-35% too small here.
    """
    rng = np.random.default_rng(2024)
    estimates, errors = [], []
    for _ in range(400):
        full = rng.normal(0.0, 1.0, (1, 2000))
        refit = rng.normal(0.3, 0.9, (1, 2000))
        bins = binning.quantile_bins(full, 10)
        order = np.argsort(full, axis=1, kind="stable")
        mass, se, _ = refit_log_ratio_se(refit, bins, 0, bin_index, order=order, draws=full)
        estimates.append(np.log(mass))
        errors.append(se)
    spread = np.std(estimates, ddof=1)
    assert np.mean(errors) == pytest.approx(spread, rel=0.15)


def test_refit_log_ratio_se_accounts_for_autocorrelation():
    """Autocorrelated refit draws: the error still matches the replicate spread.

    Refit draws from an AR(1) chain (rho = 0.9, stationary N(0.3, 0.9^2), 4 chains of 1,000)
    carry far less information than i.i.d. ones; the effective sample size of the influence
    series must account for it. 300 replicates, agreement within 20% (the spread of the
    standard deviation is 4%, the ESS estimate's own noise adds a few per cent).
    """
    from scipy.signal import lfilter

    rng = np.random.default_rng(11)
    rho = 0.9
    estimates, errors, ess = [], [], []
    for _ in range(300):
        full = rng.normal(0.0, 1.0, (1, 2000))
        bins = binning.quantile_bins(full, 10)
        order = np.argsort(full, axis=1, kind="stable")
        shocks = rng.normal(size=(4, 1000)) * np.sqrt(1 - rho**2)
        shocks[:, 0] = rng.normal(size=4)  # start each chain in the stationary law
        chains = lfilter([1.0], [1.0, -rho], shocks, axis=1)
        refit = (0.3 + 0.9 * chains).reshape(1, -1)
        mass, se, e = refit_log_ratio_se(
            refit, bins, 0, 6, order=order, draws=full, n_chains_refit=4
        )
        estimates.append(np.log(mass))
        errors.append(se)
        ess.append(e)
    assert np.mean(ess) < 0.6 * 4000  # the indicator of a bin decorrelates faster than theta
    assert np.mean(errors) == pytest.approx(np.std(estimates, ddof=1), rel=0.2)


def test_ess_mean_matches_the_stack(rng):
    x = normal_draws(rng, 4, 500, rho=0.8).reshape(1, -1)
    x = np.concatenate([x, rng.normal(size=(1, 2000)), np.ones((1, 2000))])
    mine = ess_mean(x, n_chains=4)
    ref = [
        float(ess(xr.Dataset({"x": (("chain", "draw"), row.reshape(4, 500))}))["x"])
        for row in x[:2]
    ]
    # same estimator, same arithmetic: agreement to rounding
    np.testing.assert_allclose(mine[:2], ref, rtol=1e-10)
    assert mine[2] == 2000  # constant row, as ArviZ


@pytest.mark.parametrize("bin_index", [0, 3, 9])
def test_pooled_log_ratio_se_matches_replicate_spread(bin_index):
    """The pooled (multiple importance sampling) estimate's error is its sampling spread.

    The setting of :func:`test_refit_log_ratio_se_matches_replicate_spread` with the known
    log density ratio of the two normals: over 300 replicates the mean estimated error must
    be within 15% of the spread of the estimates (4% from 300 replicates, plus the delta
    method's bias). The pooled estimate is far more precise than the raw one (5-15 times
    here), which is why the audit pools.
    """
    from scipy import stats

    from pymc_edp.base.mcse import pooled_log_ratio_se

    def log_ratio(x):
        return stats.norm.logpdf(x, 0.3, 0.9) - stats.norm.logpdf(x, 0.0, 1.0)

    rng = np.random.default_rng(5)
    estimates, errors, raw_errors = [], [], []
    for _ in range(300):
        full = rng.normal(0.0, 1.0, (1, 2000))
        refit = rng.normal(0.3, 0.9, (1, 2000))
        lw_full, lw_nb, _ = binning.pooled_log_weights(log_ratio(full[0]), log_ratio(refit[0]))
        bins = binning.quantile_bins(full, 10)
        order = np.argsort(full, axis=1, kind="stable")
        est, se, _ = pooled_log_ratio_se(
            refit,
            bins,
            0,
            bin_index,
            log_weights_full=lw_full,
            log_weights_neighbour=lw_nb,
            order=order,
            draws=full,
        )
        estimates.append(est)
        errors.append(se)
        raw_errors.append(
            refit_log_ratio_se(refit, bins, 0, bin_index, order=order, draws=full)[1]
        )
    assert np.mean(errors) == pytest.approx(np.std(estimates, ddof=1), rel=0.15)
    assert np.mean(raw_errors) > 4 * np.mean(errors)

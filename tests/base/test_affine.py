"""Moment matching kernel on Gaussian targets whose importance ratio is known in closed form.

Full-data posterior N(0, I_d), neighbour posterior N(m, s^2 I_d): the log ratio is
``sum_d log N(x_d | m, s) - log N(x_d | 0, 1)`` and the neighbour's moments are ``m`` and ``s``.
"""

import numpy as np
import pytest

from pymc_edp.base.affine import (
    moment_match,
    moved_log_ratio_se,
    split_halves,
)
from pymc_edp.base.binning import quantile_bins
from pymc_edp.base.psis import psislw


def _gaussian(m, s):
    def target(x):
        return -0.5 * np.sum(x**2, axis=0)

    def ratio(x):
        return np.sum(-0.5 * ((x - m) / s) ** 2 - np.log(s) + 0.5 * x**2, axis=0)

    return target, ratio


def _weighted_moments(res):
    w = np.exp(res.log_weights)
    mean = res.draws @ w
    sd = np.sqrt(((res.draws - mean[:, None]) ** 2) @ w)
    return mean, sd


@pytest.mark.parametrize("split", [True, False])
def test_gaussian_closed_form(rng, split):
    m, s = 2.5, 1.2
    u = rng.normal(size=(2, 4000))
    target, ratio = _gaussian(m, s)
    res = moment_match(u, target, ratio, split=split, n_chains=4, khat_threshold=0.3)
    assert res.khat_before > 0.7
    assert res.khat_after <= 0.3 < res.khat_before
    assert res.iterations == len(res.transforms) >= 1
    assert res.split is split
    assert np.isclose(np.exp(res.log_weights).sum(), 1.0)
    mean, sd = _weighted_moments(res)
    # Monte-Carlo error of a weighted mean: s / sqrt(ESS); 4 standard errors
    tol = 4 * s / np.sqrt(res.ess)
    np.testing.assert_allclose(mean, m, atol=tol)
    np.testing.assert_allclose(sd, s, atol=tol)
    # plain PSIS on the same draws is far worse
    lw, _ = psislw(ratio(u))
    plain = u @ np.exp(lw)
    assert np.abs(plain - m).max() > np.abs(mean - m).max()


def test_split_uses_the_exact_inverse_map():
    """A scale step is accepted here; the mixture density needs the exact ``T^-1``.

    With the inverse used by R's loo and arviz_stats 1.3 (``(x - mean) / scale + mean - shift``,
    exact only without scaling) the same replicates give a mean error of about -0.08, twelve
    standard errors off (measured when this test was written).
    """
    m, s = 2.0, 1.6
    target, ratio = _gaussian(m, s)
    errors = []
    for seed in range(12):
        u = np.random.default_rng(seed).normal(size=(2, 4000))
        res = moment_match(u, target, ratio, n_chains=4, khat_threshold=0.3)
        assert "scale" in res.transforms
        errors.append(_weighted_moments(res)[0] - m)
    errors = np.array(errors)
    se = errors.std(axis=0, ddof=1) / np.sqrt(len(errors))
    assert np.all(np.abs(errors.mean(axis=0)) < 4 * se + 0.01)


@pytest.mark.parametrize("split", [True, False])
def test_joint_callback_gives_the_same_result(rng, split):
    """``log_target_and_ratio`` (one evaluation for both) changes nothing but the calls."""
    u = rng.normal(size=(2, 2000))
    target, ratio = _gaussian(2.0, 1.6)
    calls = []

    def both(x):
        calls.append(x.shape[1])
        return target(x), ratio(x)

    kw = dict(split=split, n_chains=2, khat_threshold=0.3)
    ref = moment_match(u, target, ratio, **kw)
    res = moment_match(u, target, ratio, log_target_and_ratio=both, **kw)
    assert res.transforms == ref.transforms and len(res.transforms) >= 2
    for field in ("draws", "log_weights", "log_weights_full", "shift", "matrix"):
        np.testing.assert_allclose(getattr(res, field), getattr(ref, field), rtol=0, atol=0)
    assert (res.khat_after, res.ess, res.reff) == (ref.khat_after, ref.ess, ref.reff)
    # the draws, then one call per tried transformation, all on every draw
    assert calls[0] == 2000 and len(calls) >= 1 + len(res.transforms)
    assert set(calls) == {2000}


def test_max_iters_is_respected(rng):
    u = rng.normal(size=(2, 2000))
    target, ratio = _gaussian(3.0, 1.5)
    res0 = moment_match(u, target, ratio, max_iters=0)
    assert res0.iterations == 0 and res0.khat_after == res0.khat_before
    lw, _ = psislw(ratio(u))
    np.testing.assert_allclose(res0.log_weights, lw)
    np.testing.assert_array_equal(res0.draws, u)
    res1 = moment_match(u, target, ratio, max_iters=1, khat_threshold=0.0)
    assert res1.iterations == 1
    res = moment_match(u, target, ratio, max_iters=30, khat_threshold=0.0)
    assert 1 <= res.iterations <= 30
    assert res.khat_after <= res1.khat_after


def test_constant_ratio_gives_uniform_weights(rng):
    u = rng.normal(size=(3, 1000))
    res = moment_match(u, lambda x: -0.5 * np.sum(x**2, 0), lambda x: np.full(x.shape[1], 2.0))
    np.testing.assert_allclose(res.log_weights, -np.log(1000))
    assert res.khat_before == res.khat_after == -np.inf
    assert res.iterations == 0 and not res.split


def test_covariance_step_only_with_enough_draws(rng):
    """``cov=False`` never tries the covariance step; loo's ``S >= 10 d`` rule is applied."""
    rho = 0.8
    chol = np.linalg.cholesky(np.array([[1.0, rho], [rho, 1.0]]))
    prec = np.linalg.inv(chol @ chol.T)
    u = rng.normal(size=(2, 4000))

    def target(x):
        return -0.5 * np.sum(x**2, 0)

    def ratio(x):  # neighbour N(1, Sigma), correlated
        d = x - 1.0
        return -0.5 * np.einsum("is,ij,js->s", d, prec, d) + 0.5 * np.sum(x**2, 0)

    no_cov = moment_match(u, target, ratio, cov=False, khat_threshold=0.0, max_iters=6)
    assert "cov" not in no_cov.transforms
    with_cov = moment_match(u, target, ratio, khat_threshold=0.0, max_iters=6)
    assert with_cov.khat_after <= no_cov.khat_after + 0.05


def test_split_halves():
    mask = split_halves(12, 3)
    np.testing.assert_array_equal(mask.reshape(3, 4), [[1, 1, 0, 0]] * 3)
    assert split_halves(7, 1).sum() == 3
    with pytest.raises(ValueError, match="equal chains"):
        split_halves(10, 3)


def test_shape_errors(rng):
    u = rng.normal(size=(2, 100))
    with pytest.raises(ValueError, match="shape"):
        moment_match(u, lambda x: np.zeros(5), lambda x: np.zeros(x.shape[1]))


def test_moved_log_ratio_se_is_calibrated():
    """The standard error matches the spread of the estimate over replicate posteriors."""
    m, s = 2.0, 1.0
    target, ratio = _gaussian(m, s)
    estimates, ses = [], []
    for seed in range(30):
        u = np.random.default_rng(100 + seed).normal(size=(1, 2000))
        res = moment_match(u, target, ratio, n_chains=2, khat_threshold=0.3)
        bins = quantile_bins(u, 5)
        order = np.argsort(u, axis=1)
        lr, se, _ = moved_log_ratio_se(
            res.log_weights,
            res.draws,
            bins,
            0,
            4,
            draws=u,
            order=order,
            n_chains=2,
            strata=split_halves(2000, 2) if res.split else None,
        )
        estimates.append(lr)
        ses.append(se)
    ratio_sd = np.std(estimates, ddof=1) / np.mean(ses)
    assert 0.6 < ratio_sd < 1.5

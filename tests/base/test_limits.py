"""Tests of the resolution limits of an estimate (:mod:`pymc_edp.base.limits`)."""

import numpy as np
import pytest

from pymc_edp.base import binning, limits


def test_classify_orders_the_reasons():
    eps = np.array([9.9, 1.0, 2.0, 0.3, np.nan, 5.0])
    eps0 = np.array([np.inf, 1.3, 2.0, 0.3, np.nan, 5.04])
    draws = np.array([0.0, 40.0, 2.5, 200.0, np.nan, 100.0])
    codes = limits.classify(eps, eps0, draws, smoothing=0.01)
    assert [limits.MEANINGS[c] for c in codes] == [
        "empty_bin",
        "smoothing",
        "few_draws",
        "none",
        "none",  # no estimate
        "none",  # smoothing lowers it by under 1%
    ]
    # without smoothing the smoothed and raw values are one: nothing to bind
    assert limits.classify(eps0[:1], eps0[:1], draws[:1], 0.0)[0] == limits.EMPTY_BIN


def test_worst_code_picks_the_largest_limited_estimate():
    codes = np.array([[0, 1, 2], [0, 0, 0], [3, 0, 0]], dtype=np.int8)
    eps = np.array([[9.0, 1.0, 3.0], [5.0, 6.0, 7.0], [0.5, 8.0, 1.0]])
    assert limits.worst_code(codes, eps).tolist() == [2, 0, 3]
    attrs = limits.flag_attrs("what")
    assert attrs["flag_meanings"].split() == list(limits.MEANINGS)


def test_weighted_estimates_are_unsmoothed_and_flag_few_draws():
    """One draw carries a bin's mass: finite without smoothing, flagged at the resolution."""
    draws = np.arange(400.0)[None, :]
    bins = binning.quantile_bins(draws, 4)
    lw = np.where(draws[0] < 100, -1e4, 0.0)[None, :]
    lw[0, 99] = -30.0
    est = binning.epsilon_estimates(lw, bins)
    assert est.eps[0, 0] == pytest.approx(30 + np.log(300) + np.log(0.25))  # |log P' - log P|
    assert est.bin_draws[0, 0] == pytest.approx(1.0)
    assert est.limit[0, 0] == limits.FEW_DRAWS
    capped = binning.epsilon_estimates(lw, bins, smoothing=0.01)
    assert capped.eps[0, 0] == pytest.approx(np.log(100.01 / 0.01), rel=1e-6)
    assert capped.limit[0, 0] == limits.SMOOTHING


def test_log_space_masses_match_exact_sums_far_below_underflow():
    """Masses of e^-2000 (exp underflows at e^-745) are summed exactly in log space."""
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(2, 1000))
    bins = binning.quantile_bins(draws, 10)
    lw = np.where(draws[0] < 0, -2000.0 + draws[1], draws[1])[None, :]
    log_m = binning.log_bin_probabilities(lw, bins)[0]
    for p in range(2):
        for j in range(10):
            sel = bins.index[p] == j
            # log sum exp by hand: max factored out
            top = lw[0, sel].max()
            ref = top + np.log(np.exp(lw[0, sel] - top).sum())
            total = lw[0].max() + np.log(np.exp(lw[0] - lw[0].max()).sum())
            assert log_m[p, j] == pytest.approx(ref - total, rel=1e-12)
    est = binning.epsilon_estimates(lw, bins)
    assert np.all(np.isfinite(est.eps)) and est.eps[0, 0] > 1900


def test_raw_refit_estimate_with_an_empty_bin_is_a_lower_bound():
    """Refit draws that miss a bin: without smoothing infinite, with it a flagged bound."""
    rng = np.random.default_rng(2)
    full = rng.normal(size=(1, 2000))
    bins = binning.quantile_bins(full, 10)
    refit = rng.normal(3.0, 0.5, size=(1, 500))  # nothing in the lowest bins
    raw = binning.refit_estimate(refit, bins, 0.0)
    assert np.isinf(raw.eps[0]) and raw.limit[0] == limits.EMPTY_BIN
    smoothed = binning.refit_estimate(refit, bins, 0.01)
    assert np.isfinite(smoothed.eps[0]) and smoothed.limit[0] == limits.EMPTY_BIN
    assert smoothed.bin_draws[0] == 0

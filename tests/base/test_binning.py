import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymc_edp.base import binning


def naive_epsilon(draws, log_weights, bins, smoothing):
    """Direct transcription of Charest & Han eq. (2) with weighted, smoothed bin counts."""
    n_par, n_samples = draws.shape
    out = np.empty((log_weights.shape[0], n_par))
    for p in range(n_par):
        order = np.sort(draws[p])
        cuts = np.unique(order[np.ceil(np.arange(1, bins) * n_samples / bins).astype(int)])
        cuts = cuts[cuts > order[0]]
        idx = np.searchsorted(cuts, draws[p], side="right")
        n_b = cuts.size + 1
        full = (np.bincount(idx, minlength=n_b) + smoothing) / (n_samples + n_b * smoothing)
        for i, lw in enumerate(log_weights):
            w = np.exp(lw - lw.max())
            w /= w.sum()
            mass = np.bincount(idx, weights=w, minlength=n_b)
            q = (n_samples * mass + smoothing) / (n_samples + n_b * smoothing)
            out[i, p] = np.max(np.abs(np.log(q) - np.log(full)))
    return out


def test_quantile_bins_equal_counts(rng):
    draws = rng.normal(size=(3, 4000))
    bins = binning.quantile_bins(draws, 20)
    np.testing.assert_array_equal(bins.n_bins, 20)
    # 4000 / 20 draws in every bin, exactly: the bins are the empirical quantiles
    np.testing.assert_array_equal(bins.counts, 200)
    assert np.all(np.diff(bins.edges, axis=1) > 0)


def test_quantile_bins_merge_ties(rng):
    # a discrete parameter: most mass on few values -> tied quantile edges
    draws = rng.poisson(0.7, size=(1, 5000)).astype(float)
    bins = binning.quantile_bins(draws, 20)
    n_b = bins.n_bins[0]
    assert 2 <= n_b < 20
    counts = bins.counts[0, :n_b]
    assert np.all(counts > 0)
    assert counts.sum() == 5000
    # each bin holds whole values only (no value split across bins)
    for v in np.unique(draws):
        assert np.unique(bins.index[0][draws[0] == v]).size == 1


def test_quantile_bins_constant_draws():
    bins = binning.quantile_bins(np.full((1, 1000), 3.0), 10)
    assert bins.n_bins[0] == 1
    eps = binning.epsilon_estimates(np.zeros((2, 1000)), bins, 0.01).eps
    np.testing.assert_allclose(eps, 0.0, atol=1e-12)


def test_quantile_bins_rejects_nan():
    with pytest.raises(ValueError, match="NaN"):
        binning.quantile_bins(np.array([[0.0, np.nan, 1.0]]), 2)


def test_epsilon_matches_naive(rng):
    draws = np.vstack([rng.normal(size=3000), rng.poisson(2.0, size=3000)])
    lw = rng.normal(scale=0.5, size=(7, 3000)) + 0.3 * draws[0]
    for bins, smoothing in [(5, 0.01), (20, 0.01), (50, 0.0), (10, 1.0)]:
        bo = binning.quantile_bins(draws, bins)
        est = binning.epsilon_estimates(lw, bo, smoothing)
        eps, argbin = est.eps, est.argbin
        np.testing.assert_allclose(eps, naive_epsilon(draws, lw, bins, smoothing), rtol=1e-10)
        ratios = binning.bin_log_ratios(lw, bo, smoothing)
        np.testing.assert_allclose(np.nanmax(np.abs(ratios), axis=-1), eps, rtol=1e-10)
        got = np.take_along_axis(np.abs(ratios), argbin[..., None], axis=-1)[..., 0]
        np.testing.assert_allclose(got, eps, rtol=1e-10)


def test_uniform_weights_give_zero(rng):
    draws = rng.normal(size=(2, 2000))
    bo = binning.quantile_bins(draws, 20)
    eps = binning.epsilon_estimates(np.full((3, 2000), -7.0), bo, 0.01).eps
    np.testing.assert_allclose(eps, 0.0, atol=1e-12)


def test_bin_probabilities_sum_to_one(rng):
    draws = rng.normal(size=(2, 1000))
    bo = binning.quantile_bins(draws, 10)
    mass = np.exp(binning.log_bin_probabilities(rng.normal(size=(4, 1000)), bo))
    np.testing.assert_allclose(mass.sum(-1), 1.0, rtol=1e-12)


def test_zero_smoothing_empty_bin_is_infinite():
    draws = np.arange(100.0)[None]
    bo = binning.quantile_bins(draws, 10)
    lw = np.where(draws[0] < 50, 0.0, -np.inf)[None]  # no weight in the upper bins
    eps = binning.epsilon_estimates(lw, bo, smoothing=0.0).eps
    assert np.isinf(eps[0, 0])
    eps_s = binning.epsilon_estimates(lw, bo, smoothing=0.01).eps
    # smoothed: log((0 + a) / (S + B a)) vs log((10 + a) / (S + B a)), a = 0.01 -> log(1001)
    np.testing.assert_allclose(eps_s[0, 0], np.log(10.01 / 0.01), rtol=1e-12)


def test_weights_sample_mismatch(rng):
    bo = binning.quantile_bins(rng.normal(size=(1, 100)), 5)
    with pytest.raises(ValueError, match="samples"):
        binning.epsilon_estimates(np.zeros((1, 99)), bo, 0.01)


TRANSFORMS = {
    "exp": np.exp,
    "cube": lambda x: x**3,
    "affine": lambda x: 3.0 * x - 2.0,
    "negate": np.negative,
    "neg_exp": lambda x: -np.exp(x),
}


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    bins=st.sampled_from([2, 4, 5, 8, 10, 20, 25]),
    scale=st.floats(0.01, 3.0),
    transform=st.sampled_from(sorted(TRANSFORMS)),
)
def test_monotone_transform_invariance(seed, bins, scale, transform):
    """Bins are quantiles, so epsilon is invariant under strictly monotone maps.

    S = 2000 is divisible by every B drawn, so a decreasing map sends bins onto bins exactly.
    """
    rng = np.random.default_rng(seed)
    draws = rng.normal(size=(1, 2000))
    lw = rng.normal(scale=scale, size=(3, 2000)) + draws[0]
    eps = binning.epsilon_estimates(lw, binning.quantile_bins(draws, bins), 0.01).eps
    moved = TRANSFORMS[transform](draws)
    eps_t = binning.epsilon_estimates(lw, binning.quantile_bins(moved, bins), 0.01).eps
    np.testing.assert_allclose(eps_t, eps, rtol=1e-12, atol=1e-12)


def test_unsmoothed_from_the_same_pass(rng):
    draws = rng.normal(size=(2, 3000))
    lw = rng.normal(scale=2.0, size=(5, 3000)) + 3 * draws[0]
    bo = binning.quantile_bins(draws, 50)
    est = binning.epsilon_estimates(lw, bo, 0.5)
    eps, argbin, eps0 = est.eps, est.argbin, est.eps_unsmoothed
    ref = binning.epsilon_estimates(lw, bo, 0.5)
    ref, ref_bin = ref.eps, ref.argbin
    ref0 = binning.epsilon_estimates(lw, bo, 0.0).eps
    np.testing.assert_array_equal(eps, ref)
    np.testing.assert_array_equal(argbin, ref_bin)
    np.testing.assert_allclose(eps0, ref0, rtol=1e-12)
    assert np.all(eps0 >= eps)  # smoothing pulls every log ratio towards zero

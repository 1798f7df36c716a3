"""Bailie & Gong's bounds from DP as an interval of measures (pymc_edp.risk.bailie_gong)."""

import numpy as np
import pytest
from scipy import stats

from pymc_edp.risk.bailie_gong import (
    bailie_gong_posterior_bounds,
    bailie_gong_power_bound,
    bailie_gong_prior_predictive_bounds,
    hamming_distances,
)
from pymc_edp.risk.charest_han import dp_epsilon


def _randomised_response(n, eps):
    """All binary vectors x of length n and the RR mechanism's pmf P(t | x) over t."""
    xs = np.array([[(i >> k) & 1 for k in range(n)] for i in range(2**n)])
    flip = 1.0 / (np.exp(eps) + 1.0)
    ham = hamming_distances(xs)
    return xs, ham, flip**ham * (1 - flip) ** (n - ham)  # rows x, columns t


def test_randomised_response_is_eps_dp():
    eps = 0.7
    _, ham, pmf = _randomised_response(3, eps)
    pairs = np.argwhere(np.triu(ham == 1))
    assert dp_epsilon(pmf, pairs=pairs) == pytest.approx(eps, rel=1e-12)


def test_bailie_gong_posterior_bounds(rng):
    # Posterior of theta after a randomised-response release, iid Bernoulli(theta) data,
    # many random priors: always inside pi(theta) exp(+-eps d**), d** = n (Hamming).
    n, eps = 3, 0.4
    xs, _, pmf = _randomised_response(n, eps)
    theta = np.linspace(0.05, 0.95, 10)
    k = xs.sum(axis=1)
    p_x_theta = theta[:, None] ** k[None] * (1 - theta[:, None]) ** (n - k[None])
    lik = p_x_theta @ pmf  # p(t | theta), (theta, t)
    for _ in range(50):
        prior = rng.dirichlet(np.ones(theta.size))
        post = prior[:, None] * lik / (prior @ lik)[None, :]
        bounds = bailie_gong_posterior_bounds(prior[:, None], eps, n)
        assert bounds.contains(post)
    b = bailie_gong_posterior_bounds(0.2, 1.0, 2.0)
    assert b.lower == pytest.approx(0.2 * np.exp(-2.0)) and b.upper == pytest.approx(0.2 * np.e**2)


def test_bailie_gong_prior_predictive_bounds_laplace(rng):
    # Laplace mechanism on a binary sum (sensitivity 1), n = 4: p(t) = sum_x P(x) p_x(t)
    # for arbitrary P(x) on {0, 1}^4 stays within the bounds built from p_x alone.
    n, eps = 4, 0.25
    xs = np.array([[(i >> k) & 1 for k in range(n)] for i in range(2**n)])
    t = np.linspace(-10.0, 14.0, 241)
    dens = stats.laplace.pdf(t[None, :], xs.sum(axis=1)[:, None], 1.0 / eps)
    bounds = bailie_gong_prior_predictive_bounds(dens, hamming_distances(xs), eps)
    assert bounds.lower.shape == t.shape and np.all(bounds.lower <= bounds.upper)
    for _ in range(50):
        p_x = rng.dirichlet(np.full(2**n, 0.3))
        assert bounds.contains(p_x @ dens)
    # d*_k = n for every binary vector (its complement), so the bounds are explicit.
    np.testing.assert_allclose(bounds.lower, np.exp(-eps * n) * dens.max(axis=0), rtol=1e-14)
    np.testing.assert_allclose(bounds.upper, np.exp(eps * n) * dens.min(axis=0), rtol=1e-14)


def _neyman_pearson_power(p0, p1, alpha):
    """Power of the most powerful randomised level-alpha test of p0 vs p1 (discrete)."""
    order = np.argsort(-(p1 / p0))
    size, power = 0.0, 0.0
    for j in order:
        take = min(1.0, (alpha - size) / p0[j])
        size += take * p0[j]
        power += take * p1[j]
        if take < 1.0:
            break
    return power


def test_bailie_gong_power_bound_is_attained():
    # H0: x = 000 vs H1: x = 111 observed through randomised response (d** = 3). For
    # alpha up to P0(t = 111) the Neyman-Pearson test attains alpha e^(3 eps) exactly.
    eps, n = 0.5, 3
    _, _, pmf = _randomised_response(n, eps)
    p0, p1 = pmf[0], pmf[-1]
    assert p0[-1] > 0.05  # so the first three levels below are in the attained regime
    for alpha in (1e-3, 0.01, 0.05, 0.2, 0.5, 0.9):
        power = _neyman_pearson_power(p0, p1, alpha)
        bound = bailie_gong_power_bound(alpha, eps, n)
        assert power <= bound + 1e-12
        if alpha <= p0[-1]:
            assert power == pytest.approx(bound, rel=1e-10)
    assert bailie_gong_power_bound(0.5, 2.0, 3) == 1.0  # capped
    np.testing.assert_allclose(
        bailie_gong_power_bound(np.array([0.01, 0.05]), 0.1, 1),
        np.array([0.01, 0.05]) * np.exp(0.1),
    )


def test_hamming_distances():
    d = hamming_distances([[0, 1, 1], [1, 1, 0], [0, 1, 1]])
    np.testing.assert_array_equal(d, [[0, 2, 0], [2, 0, 2], [0, 2, 0]])


@pytest.mark.parametrize(
    ("prior", "match"),
    [
        (-0.2, r"`prior` must hold finite, non-negative .*found -0\.2 \(1 invalid value\)"),
        (np.nan, r"found nan"),
        (np.inf, r"found inf"),
        ([0.1, -0.3, 0.2], r"found -0\.3 at index 1 .*not their logarithms"),
        ([[0.1, 0.2], [np.nan, -1.0]], r"found nan at index \(1, 0\) \(2 invalid values\)"),
    ],
)
def test_bailie_gong_posterior_bounds_refuses_invalid_prior(prior, match):
    # A negative prior used to give lower = p e^{-eps d} > upper = p e^{eps d}.
    with pytest.raises(ValueError, match=match):
        bailie_gong_posterior_bounds(prior, 1.0, 2.0)
    with pytest.raises(ValueError, match="must be >= 0"):
        bailie_gong_posterior_bounds(0.5, np.nan, 2.0)


def test_bailie_gong_posterior_bounds_are_ordered_for_valid_input(rng):
    # Property: for any valid input, 0 <= lower <= prior <= upper, with no NaN and no
    # warning (overflowing exp(eps d**) gives the trivial upper bound inf, 0 * inf is 0).
    for _ in range(200):
        prior = rng.exponential(10.0 ** rng.uniform(-300, 300, size=7))
        prior[rng.random(7) < 0.2] = 0.0
        eps = rng.choice([0.0, np.inf, rng.exponential(1.0), rng.exponential(500.0)])
        d = rng.choice([0.0, np.inf, float(rng.integers(1, 50))])
        bounds = bailie_gong_posterior_bounds(prior, eps, d)
        assert not np.any(np.isnan(bounds.lower)) and not np.any(np.isnan(bounds.upper))
        assert np.all(bounds.lower >= 0) and np.all(bounds.lower <= prior)
        assert np.all(prior <= bounds.upper) and bounds.contains(prior)
        if eps == 0 or d == 0:  # exp(eps d**) = 1, even for an infinite factor: the prior
            np.testing.assert_array_equal(bounds.lower, prior)
            np.testing.assert_array_equal(bounds.upper, prior)
    # Extreme but valid: exp(1000 * 3) overflows; zero prior stays zero at both ends.
    b = bailie_gong_posterior_bounds(np.array([0.0, 0.5]), 1000.0, 3)
    assert b.lower.tolist() == [0.0, 0.0] and b.upper.tolist() == [0.0, np.inf]
    assert bailie_gong_power_bound(np.array([0.0, 0.05]), np.inf, 0).tolist() == [0.0, 0.05]
    assert bailie_gong_power_bound(0.0, 1000.0, 3) == 0.0


def test_bailie_gong_prior_predictive_bounds_refuses_invalid_input():
    dens = np.array([[0.2, 0.3], [0.25, 0.35]])
    dist = np.array([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match=r"`densities` must hold finite.*found nan at index"):
        bailie_gong_prior_predictive_bounds(np.where(dens > 0.3, np.nan, dens), dist, 1.0)
    with pytest.raises(ValueError, match=r"`distances` must hold finite.*found -1\.0"):
        bailie_gong_prior_predictive_bounds(dens, -dist, 1.0)


def test_hamming_distances_refuses_ragged_datasets():
    # Datasets of different lengths used to fail with numpy's "inhomogeneous shape".
    pattern = (
        r"all datasets must have the same number of records .*found lengths \[2, 3\] "
        r"\(dataset lengths in order: \[2, 3, 2\]\)"
    )
    with pytest.raises(ValueError, match=pattern):
        hamming_distances([[0, 1], [1, 0, 1], [1, 1]])
    with pytest.raises(ValueError, match=r"records must have the same shape"):
        hamming_distances([[[0, 1], [1, 1]], [[0], [1, 0]]])
    with pytest.raises(ValueError, match=r"must be 2-D or more.*got shape \(3,\)"):
        hamming_distances([0, 1, 1])
    # Iterables are read once; datasets without records are all identical.
    d = hamming_distances(row for row in ([0, 1], [1, 1]))
    np.testing.assert_array_equal(d, [[0, 1], [1, 0]])
    np.testing.assert_array_equal(hamming_distances(np.zeros((3, 0))), np.zeros((3, 3)))

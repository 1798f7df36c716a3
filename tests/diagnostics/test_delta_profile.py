"""Tests of The bin-free (eps, delta) profile (:mod:`pymc_edp.diagnostics.delta_profile`)."""

import numpy as np
import pytest
from scipy import stats
from support import M1, MU0, S1, SIGMA, SIGMA0, Y, hockey_normal

from pymc_edp.base import hockey
from pymc_edp.conjugate import normal_normal_posterior


def test_hockey_stick_kernel_matches_quadrature(rng):
    theta = rng.normal(size=40_000)
    lw = stats.norm.logpdf(theta, 0.3, 1.1) - stats.norm.logpdf(theta)
    eps = np.array([0.0, 0.1, 0.3])
    got = hockey.hockey_stick_delta(lw[None], eps)[0]

    def exact(e):
        return max(hockey_normal(0, 1, 0.3, 1.1, e), hockey_normal(0.3, 1.1, 0, 1, e))

    # Monte-Carlo s.d. of a mean of (r - e^eps)_+ over 40,000 draws is below 0.002
    np.testing.assert_allclose(got, [exact(e) for e in eps], atol=0.006)
    # pooled form: uniform reference weights give the same numbers
    same = hockey.hockey_stick_delta(lw[None], eps, np.zeros(theta.size))
    np.testing.assert_allclose(same[0], got, rtol=1e-12)


def _exact_delta(i, e):
    m_i, s_i = normal_normal_posterior(np.delete(Y, i), SIGMA, MU0, SIGMA0)
    return max(hockey_normal(M1, S1, m_i, s_i, e), hockey_normal(m_i, s_i, M1, S1, e))


def test_delta_profile_normal_normal(nn_result):
    """delta(eps) from the weights within 0.005 of the exact hockey-stick divergence."""
    eps = [0.05, 0.1, 0.2]
    prof = nn_result.delta_profile(eps, targets=[0.05])
    exact_i = np.array([[_exact_delta(i, e) for e in eps] for i in range(Y.size)])
    # 10,000 i.i.d. draws: Monte-Carlo s.d. of each delta_i below 0.0015, so 0.005 is > 3 s.d.
    np.testing.assert_allclose(prof["delta"], exact_i.max(axis=0), atol=0.005)
    np.testing.assert_allclose(prof["delta_i"], exact_i, atol=0.006)
    star = 1 - np.prod(1 - exact_i, axis=0)
    # delta* compounds 100 records' errors (correlated through the shared draws)
    np.testing.assert_allclose(prof["delta_star"], star, atol=0.03)
    assert np.all(prof["delta_star"] >= prof["delta"])
    e_at = float(prof["epsilon_delta"].sel(target=0.05))
    at = nn_result.delta_profile([e_at, max(e_at - 1e-3, 0)])["delta"].values
    assert at[0] <= 0.05 < at[1]


@pytest.mark.parametrize("target", [float("nan"), 1.0, -0.1])
def test_delta_profile_refuses_targets_outside_zero_one(nn_result, target):
    # issue 32: a NaN target slipped past the range check into a raw xarray TypeError
    with pytest.raises(ValueError, match=r"targets must be deltas in \[0, 1\)"):
        nn_result.delta_profile([0.5], targets=[target])

"""Grid, composition of both orderings and the atoms a composed delta rests on."""

import numpy as np
import pytest
from scipy import stats

from pymc_edp.base import accounting as acc


def _gaussian_atoms(mu, m=20_000):
    # quantile atoms of the Gaussian mechanism's loss in both orderings (symmetric)
    q = (np.arange(m) + 0.5) / m
    loss = stats.norm.ppf(q, mu**2 / 2, mu)
    prob = np.full(m, 1 / m)
    return np.stack([loss, loss]), np.stack([prob, prob])


def test_composed_bounds_bracket_the_closed_form():
    mu, k = 0.3, 10
    loss, prob = _gaussian_atoms(mu)
    h = acc.grid_interval(loss, prob, k, points=acc.COARSE_POINTS)
    comp = acc.compose_pair(loss, prob, k, h)
    lo, up = float(comp.epsilon(1e-3, "lower")), float(comp.epsilon(1e-3))
    assert lo <= up <= lo + 2 * k * h + 1e-9
    fine = acc.compose_pair(
        loss, prob, k, acc.grid_interval(loss, prob, k, points=4096, accuracy=1e-3)
    )
    eps = float(fine.epsilon(1e-3))
    mu_k = mu * np.sqrt(k)
    closed = stats.norm.cdf(-eps / mu_k + mu_k / 2) - np.exp(eps) * stats.norm.cdf(
        -eps / mu_k - mu_k / 2
    )
    assert closed == pytest.approx(1e-3, rel=0.05)


def test_contributions_count_the_atoms_beyond_epsilon_for_one_release():
    loss = np.array([0.0, 1.0, 2.0, 3.0])
    prob = np.full(4, 0.25)
    assert acc.contributing_atoms(loss, prob, 1, 1.5, 0.01) == pytest.approx(
        (0.25 * (1 - np.exp(-0.5)) + 0.25 * (1 - np.exp(-1.5))) ** 2
        / ((0.25 * (1 - np.exp(-0.5))) ** 2 + (0.25 * (1 - np.exp(-1.5))) ** 2)
    )
    assert acc.resolution_limited(2.0) and not acc.resolution_limited(50.0)
    # composed: k releases spread delta over many atoms of one release
    loss, prob = _gaussian_atoms(0.2, 4000)
    comp = acc.compose_pair(loss, prob, 20, 1e-3)
    eps = float(comp.epsilon(1e-3))
    assert acc.contributing_atoms(loss[0], prob[0], 20, eps, 1e-3) > 100
    assert acc.contributing_atoms(loss[0], prob[0], 1, float(loss.max()) - 1e-3, 1e-3) < 2


def test_epsilon_curve_is_decreasing_in_delta():
    loss, prob = _gaussian_atoms(0.5, 2000)
    curve = acc.epsilon_curve(loss, prob, acc.DELTA_GRID)
    assert np.all(np.diff(curve[np.isfinite(curve)]) <= 1e-12)


def test_a_loss_that_is_zero_everywhere_rests_on_no_draw():
    # a constant statistic: both datasets give every output the same probability, so
    # epsilon 0 is exact (issue 32: it was flagged a lower bound)
    loss, prob = np.zeros(3), np.array([0.2, 0.3, 0.5])
    assert acc.contributing_atoms(loss, prob, 1, 0.0, 1e-3) == np.inf
    assert acc.contributing_atoms(loss, prob, 4, 0.0, 1e-3) == np.inf
    assert not acc.resolution_limited(acc.contributing_atoms(loss, prob, 1, 0.0, 1e-3))
    # the largest of sampled losses (delta = 0 of posterior draws) still rests on none
    spread = np.linspace(-1.0, 1.0, 3)
    assert acc.contributing_atoms(spread, prob, 1, 1.0, 1e-3) == 0.0

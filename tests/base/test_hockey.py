"""Tests of pymc_edp.base.hockey against exact answers.

* The hockey-stick divergence between ``N(0, 1)`` and ``N(mu, 1)`` has the closed form
  ``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)`` (both directions agree); between two
  Laplace distributions ``Laplace(0, b)`` and ``Laplace(mu, b)`` it is
  ``1 - exp((eps - mu/b) / 2)`` for ``eps <= mu/b`` and 0 beyond, with the closed-form
  inverse ``eps = mu/b + 2 log(1 - delta)``.
* Weighted "draws" on a fine grid (weights = density x spacing) make the sample-based
  divergence a Riemann sum of the integral: deterministic and accurate to ~1e-8.
"""

import math

import numpy as np
import pytest
from scipy import stats

from pymc_edp.base.hockey import (
    hockey_stick_delta,
    hockey_stick_from_prepared,
    hockey_stick_prepare,
    smallest_epsilon,
    total_risk,
)


def gauss_delta(mu, eps):
    eps = np.asarray(eps, dtype=float)
    return stats.norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)


def laplace_delta(mu, b, eps):
    return np.maximum(1.0 - np.exp((np.asarray(eps, dtype=float) - mu / b) / 2), 0.0)


def laplace_eps(mu, b, delta):
    return mu / b + 2 * np.log1p(-np.asarray(delta, dtype=float))


def grid_weights(logpdf_p, logpdf_q, lo=-30.0, hi=30.0, n=200_001):
    x = np.linspace(lo, hi, n)
    log_dx = math.log(x[1] - x[0])
    return logpdf_q(x) + log_dx, logpdf_p(x) + log_dx


EPS = np.array([0.0, 0.1, 0.5, 1.0, 2.0])


# --------------------------------------------------------------------------------------
# hockey_stick_delta
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("mu", [0.25, 1.0, 3.0])
@pytest.mark.parametrize("normalize", [True, False])
def test_gaussian_closed_form_on_a_grid(mu, normalize):
    lq, lp = grid_weights(stats.norm.logpdf, lambda x: stats.norm.logpdf(x, mu))
    got = hockey_stick_delta(lq, EPS, lp, normalize=normalize)
    # Riemann sum with spacing 3e-4 of smooth, fast-decaying integrands with one kink: the
    # error is O(dx^2) (observed below 3e-9); 1e-7 leaves a wide margin.
    np.testing.assert_allclose(got, gauss_delta(mu, EPS), atol=1e-7)
    for direction in ("forward", "backward"):  # symmetric pair: each direction is delta
        one = hockey_stick_delta(lq, EPS, lp, normalize=normalize, direction=direction)
        np.testing.assert_allclose(one, gauss_delta(mu, EPS), atol=1e-7)


@pytest.mark.parametrize("mu", [0.5, 2.0])
def test_laplace_closed_form_on_a_grid(mu):
    lq, lp = grid_weights(stats.laplace.logpdf, lambda x: stats.laplace.logpdf(x, mu))
    eps = np.array([0.0, 0.2, 0.4, 1.0, 2.5])
    # as for the Gaussians (observed below 5e-9)
    np.testing.assert_allclose(
        hockey_stick_delta(lq, eps, lp), laplace_delta(mu, 1, eps), atol=1e-7
    )


def test_draws_from_p_with_exact_log_ratio(rng):
    """Monte Carlo: 400k draws of N(0, 1) and the exact log ratio of N(d, 1) to it.

    Each expectation has Monte Carlo s.e. below 1e-3, so 4e-3 is a 4-sigma bound.
    """
    d, eps = 0.5, np.array([0.0, 0.2, 0.5])
    theta = rng.normal(size=400_000)
    log_ratio = stats.norm.logpdf(theta, d) - stats.norm.logpdf(theta)
    got = hockey_stick_delta(log_ratio, eps, normalize=False)
    np.testing.assert_allclose(got, gauss_delta(d, eps), atol=4e-3)
    # weights: equal weights change nothing (the reference is normalised)
    w = np.full_like(log_ratio, 3.0)
    same = hockey_stick_delta(log_ratio + np.log(w), eps, np.log(w), normalize=False)
    np.testing.assert_allclose(same, got, rtol=1e-12)
    # self-normalised weights (normalize=True) estimate the same divergence
    np.testing.assert_allclose(hockey_stick_delta(log_ratio, eps), gauss_delta(d, eps), atol=4e-3)


def test_equals_the_direct_expectations(rng):
    # E_p[(1 - e^eps r)_+] (forward), E_p[(r - e^eps)_+] (backward), computed directly.
    log_ratio = 0.7 * rng.normal(size=(3, 2000))
    r = np.exp(log_ratio)
    for e in (0.0, 0.3, 1.0):
        fwd = np.maximum(1 - np.exp(e) * r, 0).mean(-1)
        bwd = np.maximum(r - np.exp(e), 0).mean(-1)
        for direction, want in (("forward", fwd), ("backward", bwd)):
            got = hockey_stick_delta(log_ratio, e, normalize=False, direction=direction)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        got = hockey_stick_delta(log_ratio, e, normalize=False)
        np.testing.assert_allclose(got, np.maximum(fwd, bwd), rtol=1e-12, atol=1e-15)
        # self-normalised: r / mean(r) in place of r
        rn = r / r.mean(-1, keepdims=True)
        fwd, bwd = np.maximum(1 - np.exp(e) * rn, 0), np.maximum(rn - np.exp(e), 0)
        want = np.maximum(fwd.mean(-1), bwd.mean(-1))
        np.testing.assert_allclose(hockey_stick_delta(log_ratio + 5.0, e), want, rtol=1e-12)


def test_swapping_the_distributions_swaps_the_directions(rng):
    lq, lp = rng.normal(size=(2, 4, 500))
    eps = np.array([0.0, 0.4, 1.5])
    fwd = hockey_stick_delta(lq, eps, lp, direction="forward")
    bwd = hockey_stick_delta(lq, eps, lp, direction="backward")
    np.testing.assert_allclose(hockey_stick_delta(lp, eps, lq, direction="forward"), bwd)
    np.testing.assert_allclose(hockey_stick_delta(lp, eps, lq, direction="backward"), fwd)
    np.testing.assert_array_equal(hockey_stick_delta(lq, eps, lp), np.maximum(fwd, bwd))
    assert np.all(np.diff(fwd, axis=-1) <= 1e-15)  # non-increasing in eps
    np.testing.assert_array_equal(hockey_stick_delta(lp, eps, lp), 0.0)


def test_shapes_prepared_and_errors(rng):
    lw = rng.normal(size=(2, 3, 100))
    eps = np.array([0.0, 0.5])
    out = hockey_stick_delta(lw, eps)
    assert out.shape == (2, 3, 2)
    np.testing.assert_array_equal(hockey_stick_delta(lw[1, 2], eps), out[1, 2])
    assert hockey_stick_delta(lw[0, 0], 0.5).shape == ()
    prepared = hockey_stick_prepare(lw)
    np.testing.assert_array_equal(hockey_stick_from_prepared(prepared, eps), out.reshape(6, 2))
    # a reference shared by all rows broadcasts
    ref = rng.normal(size=100)
    np.testing.assert_array_equal(
        hockey_stick_delta(lw, eps, ref),
        hockey_stick_delta(lw, eps, np.broadcast_to(ref, lw.shape)),
    )
    # draws with no weight under either distribution carry no mass
    lw0 = np.append(lw[0, 0], -np.inf)
    ref0 = np.append(ref, -np.inf)
    np.testing.assert_allclose(
        hockey_stick_delta(lw0, eps, ref0), hockey_stick_delta(lw[0, 0], eps, ref)
    )
    with pytest.raises(ValueError, match="non-negative"):
        hockey_stick_delta(lw, [-0.1])
    with pytest.raises(ValueError, match="finite"):
        hockey_stick_delta(lw, [np.inf])
    with pytest.raises(ValueError, match="direction"):
        hockey_stick_delta(lw, eps, direction="up")


# --------------------------------------------------------------------------------------
# total_risk
# --------------------------------------------------------------------------------------
def test_total_risk_is_one_minus_the_product(rng):
    d = rng.uniform(0, 0.3, size=(20, 5))
    np.testing.assert_allclose(total_risk(d), 1 - np.prod(1 - d, axis=0), rtol=1e-13)
    np.testing.assert_allclose(total_risk(d.T, axis=1), total_risk(d), rtol=1e-15)
    # tiny deltas: 1 - prod(1 - d) loses every digit, the log-space sum does not
    tiny = np.full(1000, 1e-18)
    assert 1 - np.prod(1 - tiny) == 0.0
    assert total_risk(tiny) == pytest.approx(1e-15, rel=1e-12)  # exact: 1e-15 (1 - 5e-16)
    # clipped to [0, 1]; one certain exposure makes the total risk 1
    assert total_risk(np.array([0.2, -1e-17, 0.5])) == pytest.approx(0.6, rel=1e-15)
    assert total_risk(np.array([0.2, 1.0])) == 1.0
    assert total_risk(np.zeros(3)) == 0.0


# --------------------------------------------------------------------------------------
# smallest_epsilon
# --------------------------------------------------------------------------------------
def test_smallest_epsilon_inverts_the_laplace_curve():
    mu, b = 2.0, 1.0
    targets = np.array([0.5, 0.1, 0.01, 1e-4])
    got = smallest_epsilon(lambda e: laplace_delta(mu, b, e), targets, 0.0, 10.0)
    np.testing.assert_allclose(got, laplace_eps(mu, b, targets), rtol=2e-9)
    # absolute tolerance instead; and targets reached at the lower end return it
    got = smallest_epsilon(
        lambda e: laplace_delta(mu, b, e), [0.1, 0.9], 0.0, 10.0, rtol=0.0, atol=1e-7
    )
    assert got[0] == pytest.approx(laplace_eps(mu, b, 0.1), abs=1e-7)
    assert got[1] == 0.0
    # scalar target, own bracket per target; a target not reached returns the upper end
    one = smallest_epsilon(lambda e: laplace_delta(mu, b, e), 0.1, 1.5, 2.0)
    assert one.shape == ()
    assert float(one) == pytest.approx(laplace_eps(mu, b, 0.1), rel=2e-9)
    assert smallest_epsilon(lambda e: laplace_delta(mu, b, e), 0.01, 0.0, 1.0) == 1.0
    lows = smallest_epsilon(lambda e: laplace_delta(mu, b, e), [0.1, 0.1], [0.0, 0.9], 5.0)
    np.testing.assert_allclose(lows, laplace_eps(mu, b, 0.1), rtol=2e-9)


def test_smallest_epsilon_on_prepared_draws():
    # The use in the audits: bisection on the sample-based divergence of weighted draws, the
    # maximum over rows (two Laplace pairs), against the closed-form inverse of the larger.
    eps_grid = np.array([0.0])
    rows = [
        grid_weights(stats.laplace.logpdf, lambda x, m=m: stats.laplace.logpdf(x, m))
        for m in (1.0, 2.0)
    ]
    prepared = hockey_stick_prepare(np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows]))
    assert hockey_stick_from_prepared(prepared, eps_grid).shape == (2, 1)
    targets = np.array([0.3, 0.05, 0.01])

    def delta(e):
        return np.array([hockey_stick_from_prepared(prepared, [x]).max() for x in e])

    got = smallest_epsilon(delta, targets, 0.0, 5.0, rtol=1e-10)
    # delta is accurate to 1e-7 (above), so eps to 2e-7 / (1 - delta) < 3e-7
    np.testing.assert_allclose(got, laplace_eps(2.0, 1.0, targets), atol=3e-7)

"""Tests of the adaptive quadrature of log-densities (base.quadrature) against closed forms.

Each density below integrates to one (or to a known constant), so ``log_z`` is exact,
whatever the starting centre and scale (off by factors of e^3 here). The tolerances are the
ones the kernel states: a relative error under ``rtol`` = 1e-9 for smooth densities (so
``|log_z - exact|`` under about 1e-9), and under 1e-4 where the density has a kink (its
error estimate cannot see a kink next to a panel's edge); support edges are found by
bisection, so jumps there are as accurate as smooth densities.
"""

import numpy as np
import pytest
from scipy import special, stats

from pymc_edp.base.quadrature import GK15, log_integrals

M = 300
RTOL = 1e-9


@pytest.fixture(scope="module")
def problems():
    rng = np.random.default_rng(11)
    mu = rng.normal(0, 5, M)
    sd = np.exp(rng.normal(0, 2, M))
    start = mu + rng.normal(0, 1, M) * sd
    step = sd * np.exp(rng.normal(0, 1.5, M))
    return mu, sd, start, step


def test_gauss_kronrod_weights_integrate_polynomials_exactly():
    nodes, kronrod, gauss = GK15
    for degree in range(24):
        exact = (1 - (-1) ** (degree + 1)) / (degree + 1)
        assert abs(kronrod @ nodes**degree - exact) < 1e-15  # 15-point Kronrod: degree 22+
        if degree <= 13:
            assert abs(gauss @ nodes**degree - exact) < 1e-15  # its 7-point Gauss: 13
    assert abs(gauss @ nodes**14 - 2 / 15) > 1e-6  # and no further: the error estimate


DENSITIES = {
    "normal": lambda mu, sd: stats.norm(mu, sd),
    "student_t3": lambda mu, sd: stats.t(3.0, mu, sd),  # heavy tails: a wide search
    "skew_normal": lambda mu, sd: stats.skewnorm(6.0, mu, sd),
    "exponential": lambda mu, sd: stats.expon(mu, sd),  # an edge of the support, a jump
    "uniform": lambda mu, sd: stats.uniform(mu, sd),  # two jumps
    "laplace": lambda mu, sd: stats.laplace(mu, sd),  # a kink at the mode
}
#: ``|log_z - exact|`` allowed: smooth densities and support edges, and kinks.
ATOL = {"laplace": 1e-4}


@pytest.mark.parametrize("name", DENSITIES)
def test_log_integrals_of_densities_are_zero(problems, name):
    mu, sd, start, step = problems
    shift = np.linspace(-50, 50, M)  # unnormalised: log_z is the shift

    def logf(ids, t):
        return DENSITIES[name](mu[ids], sd[ids]).logpdf(t) + shift[ids]

    if name in ("exponential", "uniform"):  # start inside a bounded support, as the audit does
        start = mu + 0.5 * sd
    res = log_integrals(logf, start, step, rtol=RTOL)
    assert res.converged.all()
    np.testing.assert_allclose(res.log_z, shift, rtol=0, atol=ATOL.get(name, 5e-9))
    assert np.all(res.error <= RTOL)


def test_a_product_with_a_kink_matches_its_closed_form(problems):
    """``exp(-t^2 / 2 - |t - a|)`` integrates to a sum of two error functions."""
    a = np.linspace(-4, 4, 50)

    def logf(ids, t):
        return -0.5 * t**2 - np.abs(t - a[ids])

    exact = np.log(
        np.sqrt(np.pi / 2)
        * np.exp(0.5)
        * (
            np.exp(-a) * special.erfc((1 - a) / np.sqrt(2))
            + np.exp(a) * special.erfc((1 + a) / np.sqrt(2))
        )
    )
    res = log_integrals(logf, np.zeros(a.size), np.ones(a.size))
    assert res.converged.all()
    np.testing.assert_allclose(res.log_z, exact, rtol=0, atol=1e-4)


def test_far_narrow_and_separated_modes_are_found():
    def narrow(ids, t):
        return stats.norm.logpdf(t, 1e4, 1e-3)

    res = log_integrals(narrow, np.zeros(2), np.ones(2))
    np.testing.assert_allclose(res.log_z, 0.0, atol=1e-9)

    def two(ids, t):
        return np.logaddexp(
            stats.norm.logpdf(t, -10, 0.5) + np.log(0.3),
            stats.norm.logpdf(t, 10, 0.5) + np.log(0.7),
        )

    res = log_integrals(two, np.zeros(2), np.ones(2))
    np.testing.assert_allclose(res.log_z, 0.0, atol=1e-9)


def test_nan_is_outside_the_support_and_an_improper_density_does_not_converge():
    def half(ids, t):
        return np.where(t > 0, stats.expon.logpdf(t), np.nan)

    res = log_integrals(half, np.array([1.0]), np.array([1.0]))
    np.testing.assert_allclose(res.log_z, 0.0, atol=1e-9)

    def flat(ids, t):
        return np.zeros_like(t)

    res = log_integrals(flat, np.array([0.0]), np.array([1.0]))
    assert not res.converged[0]


def test_bad_starts_are_refused():
    with pytest.raises(ValueError, match="positive scale"):
        log_integrals(lambda ids, t: -(t**2), np.zeros(2), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="one value per problem"):
        log_integrals(lambda ids, t: -(t**2), np.zeros(2), np.ones(3))

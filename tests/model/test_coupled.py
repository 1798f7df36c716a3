"""Tests of the leave-one-out conditionals of coupled likelihoods (model.coupled).

References are independent of the code under test: each model's joint density written
again with SciPy, and ``log p(y_i | y_-i) = log p(y) - log of the integral of p(y) over
y_i`` by ``scipy.integrate.quad`` (to 1e-12), or, for Gaussian models, the closed form
from the covariance (drop row and column ``i``). Tolerances are the routes' stated ones:
1e-8 for the Gaussian routes, 1e-7 for quadrature of smooth densities, 1e-4 with a kink.
"""

import itertools

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr
from scipy import integrate, stats
from zoo_libraries import kalman_terms

from pymc_edp.core.loglik import NonFactorisedError
from pymc_edp.model.coupled import CoupledLikelihood, record_logp
from pymc_edp.model.structure import read_structure

N = 12


def _draws(**values):
    return xr.Dataset({k: (("chain", "draw"), np.atleast_2d(v)) for k, v in values.items()})


def _likelihood(model, name="y"):
    return CoupledLikelihood(model, name, read_structure(model, model[name]))


def _loo_by_quad(logf, y, i, at=None, points=None):
    """``log p(at_i | y_-i)`` from a joint log-density ``logf(y)``, by ``quad``."""
    at = y if at is None else at

    def joint(t):
        z = y.copy()
        z[i] = t
        return logf(z)

    peak = joint(y[i])
    mass, _ = integrate.quad(
        lambda t: np.exp(joint(t) - peak), -np.inf, np.inf, epsabs=0, epsrel=1e-12, limit=500
    )
    if points is not None:  # kinks: integrate piecewise between them
        edges = np.concatenate([[-np.inf], np.sort(points), [np.inf]])
        mass = sum(
            integrate.quad(lambda t: np.exp(joint(t) - peak), a, b, epsabs=0, epsrel=1e-12)[0]
            for a, b in itertools.pairwise(edges)
        )
    return joint(at[i]) - peak - np.log(mass)


# ---------------------------------------------------------------------------- models
def _kalman_terms(y, sigma_level, sigma_obs):
    """A local-level Kalman filter: ``log p(y_t | y_1..y_t-1)``, one term per time step."""
    return kalman_terms(y, 0.0, sigma_level, sigma_obs, p0=P0)


P0 = 10.0  # the filter's initial state variance


def _kalman_cov(sigma_level, sigma_obs, n=N):
    t = np.arange(n)
    return P0 + sigma_level**2 * np.minimum(t[:, None], t[None, :]) + sigma_obs**2 * np.eye(n)


def _gaussian_loo(cov, y, at=None, blocks=None):
    """``log p(at_b | y_-b)`` of zero-mean Gaussian ``y``, per record (or block)."""
    at = y if at is None else at
    out = []
    for b in blocks or [[i] for i in range(y.size)]:
        keep = np.setdiff1d(np.arange(y.size), b)
        joint = y.copy()
        joint[b] = at[b]
        full = stats.multivariate_normal(np.zeros(y.size), cov).logpdf(joint)
        rest = stats.multivariate_normal(np.zeros(keep.size), cov[np.ix_(keep, keep)])
        out.append(full - rest.logpdf(y[keep]))
    return np.array(out)


@pytest.fixture(scope="module")
def kalman():
    y = np.cumsum(np.random.default_rng(3).normal(0, 0.7, N)) + np.random.default_rng(4).normal(
        0, 1.0, N
    )
    with pm.Model() as model:
        level = pm.HalfNormal("sigma_level", 1.0)
        obs = pm.HalfNormal("sigma_obs", 1.0)
        pm.CustomDist("y", level, obs, logp=_kalman_terms, observed=y)
    return model, y


@pytest.mark.slow
@pytest.mark.both_stacks
def test_a_kalman_filter_is_checked_gaussian_and_exact(kalman):
    model, y = kalman
    lik = _likelihood(model)
    assert lik.route == "gaussian (checked)"  # a scan proves nothing: checked at the draws
    post = _draws(sigma_level=[[0.5, 0.9, 0.3]], sigma_obs=[[1.1, 0.6, 1.4]])
    alt = y + 3.0
    out = lik.conditionals(post, (alt,))
    assert out.route == "gaussian (checked)"
    for s in range(3):
        cov = _kalman_cov(float(post["sigma_level"][0, s]), float(post["sigma_obs"][0, s]))
        np.testing.assert_allclose(out.at_data[s], _gaussian_loo(cov, y), rtol=0, atol=1e-8)
        np.testing.assert_allclose(out.at[0][s], _gaussian_loo(cov, y, alt), rtol=0, atol=1e-8)
    blocks = [np.array([0, 1]), np.array([4, 7, 11])]
    got = lik.blocks(post, blocks)
    for s in range(3):
        cov = _kalman_cov(float(post["sigma_level"][0, s]), float(post["sigma_obs"][0, s]))
        want = _gaussian_loo(cov, y, blocks=[list(b) for b in blocks])
        np.testing.assert_allclose(got[s], want, rtol=0, atol=1e-8)


def _skew_walk(v, sigma, alpha):
    innovations = pm.logp(pm.SkewNormal.dist(mu=0.0, sigma=sigma, alpha=alpha), v[1:] - v[:-1])
    return innovations.sum() + pm.logp(pm.Normal.dist(0.0, 10.0), v[0])


def _arch(v, a0, a1):
    scale = pt.sqrt(a0 + a1 * v[:-1] ** 2)
    return pm.logp(pm.Normal.dist(0.0, scale), v[1:]).sum() + pm.logp(pm.Normal.dist(), v[0])


def _gauss_laplace(v, s):
    smooth = pt.concatenate([pt.zeros(1), pt.abs(v[1:] - v[:-1])])
    return pm.logp(pm.Normal.dist(0.0, 1.0), v) - smooth / s


def _laplace_walk(v, b):
    return pm.logp(pm.Laplace.dist(0.0, b), v[1:] - v[:-1]).sum() + pm.logp(
        pm.Normal.dist(0.0, 10.0), v[0]
    )


CASES = {
    # name: (logp, parameters and their draws, the joint density by SciPy, kinks)
    "skew_walk": (
        _skew_walk,
        {"sigma": [0.5, 0.8], "alpha": [4.0, 6.0]},
        lambda z, p: (
            stats.skewnorm.logpdf(np.diff(z), p["alpha"], 0.0, p["sigma"]).sum()
            + stats.norm.logpdf(z[0], 0, 10)
        ),
        None,
    ),
    "arch": (
        _arch,
        {"a0": [0.2, 0.4], "a1": [0.5, 0.7]},
        lambda z, p: (
            stats.norm.logpdf(z[1:], 0, np.sqrt(p["a0"] + p["a1"] * z[:-1] ** 2)).sum()
            + stats.norm.logpdf(z[0])
        ),
        None,
    ),
    "gauss_laplace": (
        _gauss_laplace,
        {"s": [0.5, 1.5]},
        lambda z, p: stats.norm.logpdf(z).sum() - np.abs(np.diff(z)).sum() / p["s"],
        "neighbours",
    ),
    "laplace_walk": (
        _laplace_walk,
        {"b": [0.4, 0.9]},
        lambda z, p: (
            stats.laplace.logpdf(np.diff(z), 0, p["b"]).sum() + stats.norm.logpdf(z[0], 0, 10)
        ),
        "neighbours",
    ),
}


def _case_model(name, y):
    logp, params, _, _ = CASES[name]
    with pm.Model() as model:
        free = [pm.HalfNormal(p, 5.0) for p in params]
        pm.CustomDist("y", *free, logp=logp, observed=y)
    return model


@pytest.mark.slow
@pytest.mark.both_stacks
@pytest.mark.parametrize("name", list(CASES))
def test_a_non_gaussian_coupled_likelihood_is_integrated(name):
    _, params, scipy_logp, kinks = CASES[name]
    y = np.cumsum(np.random.default_rng(7).normal(0.3, 0.6, N))
    model = _case_model(name, y)
    lik = _likelihood(model)
    post = _draws(**{p: [v] for p, v in params.items()})
    alt = y - 0.4  # not so far out that the densities' own tails lose digits
    out = lik.conditionals(post, (alt,))
    assert out.route == "quadrature"  # never a Gaussian conditional
    # PyMC's skew-normal log-density itself differs from SciPy's by up to 7e-7 here
    atol = 1e-4 if kinks else 2e-6 if name == "skew_walk" else 1e-7
    for s in range(2):
        p = {k: v[s] for k, v in params.items()}

        def joint(z, p=p):
            return scipy_logp(z, p)

        for i in (0, 5, N - 1):
            points = None
            if kinks:  # where |y_i - y_i+-1| has its kinks
                points = [y[j] for j in (i - 1, i + 1) if 0 <= j < N]
            want = _loo_by_quad(joint, y, i, points=points)
            assert out.at_data[s, i] == pytest.approx(want, abs=atol)
            want_alt = _loo_by_quad(joint, y, i, alt, points=points)
            assert out.at[0][s, i] == pytest.approx(want_alt, abs=atol)


def test_closed_form_routes():
    y = np.random.default_rng(1).normal(size=N)
    with pm.Model() as ar:
        rho = pm.Normal("rho", 0.0, 0.5)
        pm.AR("y", rho=[rho], sigma=1.0, init_dist=pm.Normal.dist(), observed=y)
    assert _likelihood(ar).route == "gaussian"
    with pm.Model() as t:
        nu = pm.Gamma("nu", 4, 1)
        pm.MvStudentT("y", nu=nu, mu=np.zeros(N), scale=np.eye(N) + 0.3, observed=y)
    assert _likelihood(t).route == "student_t"


def test_discrete_coupled_values_are_refitted():
    """A Poisson autoregression: no reweighting route, its neighbours are refits."""
    counts = np.array([2, 3, 1, 4, 6, 3, 2, 2, 5, 4, 3, 1])

    def ingarch(v, a, b):
        rate = pt.exp(a + b * pt.log1p(v[:-1]))
        return pm.logp(pm.Poisson.dist(rate), v[1:]).sum() + pm.logp(pm.Poisson.dist(3.0), v[0])

    with pm.Model() as model:
        a = pm.Normal("a")
        b = pm.Normal("b", 0.0, 0.5)
        pm.CustomDist("y", a, b, logp=ingarch, observed=counts, dtype="int64")
    lik = _likelihood(model)
    assert lik.route == "refit"
    with pytest.raises(NonFactorisedError, match="discrete.*refitted with its record unobserved"):
        lik.conditionals(_draws(a=[[0.5]], b=[[0.2]]))


def test_record_logp_per_route(kalman):
    y = np.array([0.5, -1.0, 2.0])
    with pm.Model() as model:
        mu = pm.Normal("mu")
        obs = pm.Normal("y", mu, 2.0, observed=y)
    terms = record_logp(model, obs).eval({model.rvs_to_values[mu]: 0.3})
    np.testing.assert_allclose(terms, stats.norm(0.3, 2.0).logpdf(y), rtol=1e-8)
    filter_model, _ = kalman
    with pytest.raises(NonFactorisedError, match="not a graph"):
        record_logp(filter_model, filter_model["y"])  # checked at draws: no graph

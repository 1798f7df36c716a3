"""Tests of the leave-one-out conditionals of coupled likelihoods (model.conditional).

The reference is the definition: ``log p(y_i | y_-i) = log p(y) - log p(y_-i)``, both joint
Gaussian densities computed directly with SciPy (drop row and column ``i`` of the covariance).
"""

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

from pymc_edp.model.pymc import elementwise_loglik

N = 9


def _draws(rng, **ranges):
    return xr.Dataset(
        {k: (("chain", "draw"), rng.uniform(lo, hi, (1, 4))) for k, (lo, hi) in ranges.items()}
    )


def _loo(mean, cov, y, at=None):
    """``log p(at_i | y_-i)`` for every ``i``, from joint densities (``at`` default ``y``)."""
    at = y if at is None else at
    out = []
    for i in range(y.size):
        keep = np.arange(y.size) != i
        joint = y.copy()
        joint[i] = at[i]
        full = stats.multivariate_normal(mean, cov).logpdf(joint)
        rest = stats.multivariate_normal(mean[keep], cov[np.ix_(keep, keep)]).logpdf(y[keep])
        out.append(full - rest)
    return np.array(out)


def _ar1_cov(rho, scale):
    t = np.arange(N)
    return scale**2 * rho ** np.abs(t[:, None] - t[None, :])


def _ar_cov(rho, sigma, init_sd):
    """Covariance of an AR(1) series ``y_t = rho y_(t-1) + e_t``, ``y_0 ~ N(0, init_sd)``."""
    a = np.eye(N)
    a[np.arange(1, N), np.arange(N - 1)] = -rho
    prec = a.T @ np.diag([init_sd**-2] + [sigma**-2] * (N - 1)) @ a
    return np.linalg.inv(prec)


def _gp_cov(x, ls, sigma, jitter=1e-6):
    """ExpQuad kernel plus noise, and the jitter ``gp.Marginal`` adds to the diagonal."""
    k = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / ls**2)
    return k + (sigma**2 + jitter) * np.eye(x.size)


def _mvnormal(y):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        s = pm.HalfNormal("s", 2)
        pm.MvNormal("y", mu, cov=_ar1_cov(0.8, 1.0) * s**2, observed=y)
    return model, lambda d: (np.full(N, d["mu"]), _ar1_cov(0.8, d["s"]))


def _ar(y):
    with pm.Model() as model:
        rho = pm.Normal("rho", 0, 0.5)
        sigma = pm.HalfNormal("sigma", 1)
        pm.AR("y", rho=[rho], sigma=sigma, init_dist=pm.Normal.dist(0, 3), observed=y)
    return model, lambda d: (np.zeros(N), _ar_cov(d["rho"], d["sigma"], 3.0))


def _gp(y):
    x = np.linspace(0, 4, N)
    with pm.Model() as model:
        ls = pm.Gamma("ls", 4, 4)
        gp = pm.gp.Marginal(cov_func=pm.gp.cov.ExpQuad(1, ls=ls))
        gp.marginal_likelihood("y", X=x[:, None], y=y, sigma=0.4)
    return model, lambda d: (np.zeros(N), _gp_cov(x, d["ls"], 0.4))


def _random_walk(y):
    with pm.Model() as model:
        s = pm.HalfNormal("s", 1)
        pm.GaussianRandomWalk("y", sigma=s, init_dist=pm.Normal.dist(0, 2), observed=y)
    steps = np.tril(np.ones((N, N)))
    return model, lambda d: (
        np.zeros(N),
        steps @ np.diag([4.0] + [d["s"] ** 2] * (N - 1)) @ steps.T,
    )


def _car(y):
    adjacency = np.diag(np.ones(N - 1), 1) + np.diag(np.ones(N - 1), -1)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        tau = pm.Gamma("tau", 2, 1)
        pm.CAR("y", mu=mu * np.ones(N), W=adjacency, alpha=0.9, tau=tau, observed=y)
    precision = np.diag(adjacency.sum(1)) - 0.9 * adjacency
    return model, lambda d: (np.full(N, d["mu"]), np.linalg.inv(d["tau"] * precision))


CASES = {
    "mvnormal": (_mvnormal, {"mu": (-1, 1), "s": (0.5, 2)}),
    "ar": (_ar, {"rho": (-0.9, 0.9), "sigma": (0.5, 2)}),
    "gp_marginal": (_gp, {"ls": (0.3, 2)}),
    "random_walk": (_random_walk, {"s": (0.3, 2)}),
    "car": (_car, {"mu": (-1, 1), "tau": (0.5, 2)}),  # its logp has shape (1,), not ()
}


@pytest.mark.parametrize("case", CASES)
def test_leave_one_out_conditionals_equal_joint_minus_rest(case, rng):
    build, ranges = CASES[case]
    y = rng.normal(0, 1.5, N)
    y[3] += 6.0  # an outlying record
    model, gaussian = build(y)
    post = _draws(rng, **ranges)
    fn = elementwise_loglik(model, "y")
    assert fn.coupled
    got = fn(post, y)
    alt = y + rng.normal(0, 2, N)
    got_alt = fn(post, alt)  # conditionals at other values, given the data's other records
    for s in range(4):
        mean, cov = gaussian({k: float(post[k].values[0, s]) for k in ranges})
        np.testing.assert_allclose(got[s], _loo(mean, cov, y), rtol=0, atol=1e-10)
        np.testing.assert_allclose(got_alt[s], _loo(mean, cov, y, alt), rtol=0, atol=1e-10)


@pytest.mark.parametrize("case", ["mvnormal", "ar", "gp_marginal"])
def test_block_conditionals_equal_joint_minus_rest(case, rng):
    build, ranges = CASES[case]
    y = rng.normal(0, 1.5, N)
    model, gaussian = build(y)
    post = _draws(rng, **ranges)
    blocks = [np.array([0, 1]), np.array([2, 5, 8]), np.array([4])]
    got = elementwise_loglik(model, "y").blocks(post, blocks)
    for s in range(4):
        mean, cov = gaussian({k: float(post[k].values[0, s]) for k in ranges})
        full = stats.multivariate_normal(mean, cov).logpdf(y)
        for j, b in enumerate(blocks):
            keep = np.setdiff1d(np.arange(N), b)
            rest = stats.multivariate_normal(mean[keep], cov[np.ix_(keep, keep)]).logpdf(y[keep])
            assert got[s, j] == pytest.approx(full - rest, abs=1e-10)


def test_student_t_over_records_has_its_closed_form(rng):
    """``pm.MvStudentT``: Bürkner et al.'s conditional t equals log p(y) - log p(y_-i)."""
    y = rng.normal(0, 1.5, N)
    y[2] += 8.0
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        nu = pm.Gamma("nu", 4, 1)
        s = pm.HalfNormal("s", 2)
        pm.MvStudentT("y", nu=nu, mu=mu * np.ones(N), scale=_ar1_cov(0.6, 1.0) * s**2, observed=y)
    post = _draws(rng, mu=(-1, 1), nu=(1.5, 10), s=(0.5, 2))
    fn = elementwise_loglik(model, "y")
    alt = y + rng.normal(0, 2, N)
    got, got_alt = fn(post, y), fn(post, alt)
    for k in range(4):
        mu_, nu_, s_ = (float(post[v].values[0, k]) for v in ("mu", "nu", "s"))
        shape = _ar1_cov(0.6, s_)
        for at, values in ((y, got[k]), (alt, got_alt[k])):
            ref = []
            for i in range(N):
                keep = np.arange(N) != i
                joint = y.copy()
                joint[i] = at[i]
                full = stats.multivariate_t(np.full(N, mu_), shape, df=nu_).logpdf(joint)
                rest = stats.multivariate_t(
                    np.full(N - 1, mu_), shape[np.ix_(keep, keep)], df=nu_
                ).logpdf(y[keep])
                ref.append(full - rest)
            np.testing.assert_allclose(values, ref, rtol=0, atol=1e-10)

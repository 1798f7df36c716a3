"""Exact leave-one-group-out B-EDP of two Gaussian hierarchical models, by quadrature.

Reference for tests/test_auditing_verify.py, independent of pymc_edp's estimators (no
draws, no weights): Rao-Blackwellised over everything but the group scale ``tau``.

Models (sigma known, group g has n_g rows with mean ybar_g):

* ``centred``:   mu ~ N(0, s_mu^2), tau ~ HalfNormal(s_tau), alpha_g ~ N(mu, tau^2),
                 y_gj ~ N(alpha_g, sigma^2);
* ``zerosum``:   mu ~ N(0, s_mu^2), tau ~ HalfNormal(s_tau),
                 alpha ~ ZeroSumNormal(tau) (covariance tau^2 (I - J / G)),
                 y_gj ~ N(mu + alpha_g, sigma^2).

Given tau both are linear-Gaussian in theta = (mu, alpha) with data ybar_g ~ N(H theta,
sigma^2 / n_g): the posterior of theta given tau is Gaussian (a Kalman update, which takes
the singular zero-sum prior as it is), and p(tau | y) is proportional to
p(tau) N(ybar; H m0, H P0(tau) H' + R) (the within-group scatter does not depend on tau or
theta's mean and cancels). So every marginal is a mixture over a fine grid of tau (the
tau marginal is the grid density itself), its CDF computed exactly for each grid point:

    F(x) = sum_t w_t Phi((x - m_t) / s_t)        (tau: cumulative trapezoid of p(tau | y))

The neighbour "group g left out" drops row g of H, ybar and R; alpha_g stays in the model.
Bins are the exact B-quantiles of each full-data marginal (bisection on F), and the
neighbour's bin masses are differences of its CDF there. Grid: 4,000 points of tau on
(0, 12 s_tau], enough for 1e-6 relative accuracy of masses ~1e-4 (checked by halving the
grid when this was written: epsilons agreed to 1e-6).

Run ``python tests/reference/hierarchical_logo.py`` to print the reference epsilons of the
tests' data sets.
"""

from __future__ import annotations

import numpy as np
from scipy import special

GRID = 4000


def group_data(seed: int, sizes, effects, mu: float, sigma: float = 1.0, zerosum: bool = False):
    """Seeded rows ``(y, group index)`` of a hierarchical data set."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(len(sizes)), sizes)
    effects = np.asarray(effects, dtype=float)
    if zerosum:
        effects = effects - effects.mean()
    y = mu + effects[groups] + rng.normal(0.0, sigma, groups.size)
    return y, groups


def _design(n_groups: int, zerosum: bool, rows) -> np.ndarray:
    """H: ybar_g = H theta, theta = (mu, alpha_1..G)."""
    h = np.zeros((len(rows), n_groups + 1))
    for i, g in enumerate(rows):
        h[i, 1 + g] = 1.0
        if zerosum:
            h[i, 0] = 1.0
    return h


def _prior_cov(n_groups: int, tau: float, s_mu: float, zerosum: bool) -> np.ndarray:
    p = np.zeros((n_groups + 1, n_groups + 1))
    p[0, 0] = s_mu**2
    if zerosum:
        p[1:, 1:] = tau**2 * (np.eye(n_groups) - 1.0 / n_groups)
    else:  # alpha = mu + tau z
        p[0, 1:] = p[1:, 0] = s_mu**2
        p[1:, 1:] = s_mu**2 + tau**2 * np.eye(n_groups)
    return p


def _conditionals(y, groups, keep, *, s_mu, s_tau, sigma, zerosum):
    """Grid of tau, its posterior weights, and theta's conditional means and sds per point."""
    n_groups = int(groups.max()) + 1
    rows = [g for g in range(n_groups) if g in keep]
    n_g = np.array([np.sum(groups == g) for g in rows], dtype=float)
    ybar = np.array([y[groups == g].mean() for g in rows])
    h = _design(n_groups, zerosum, rows)
    r = np.diag(sigma**2 / n_g)
    tau = np.linspace(0.0, 12.0 * s_tau, GRID + 1)[1:]
    log_w = np.empty(tau.size)
    mean = np.empty((tau.size, n_groups + 1))
    sd = np.empty((tau.size, n_groups + 1))
    for t, tv in enumerate(tau):
        p0 = _prior_cov(n_groups, tv, s_mu, zerosum)
        s = h @ p0 @ h.T + r
        chol = np.linalg.cholesky(s)
        alpha = np.linalg.solve(chol, ybar)
        log_w[t] = (
            -0.5 * alpha @ alpha - np.log(np.diag(chol)).sum() - 0.5 * tv**2 / s_tau**2
        )  # HalfNormal(s_tau) prior, up to a constant
        gain = np.linalg.solve(s, h @ p0).T  # P0 H' S^-1
        mean[t] = gain @ ybar
        cov = p0 - gain @ h @ p0
        sd[t] = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    return tau, w, mean, sd


def _mixture_cdf(x: np.ndarray, w, mean, sd) -> np.ndarray:
    z = (x[None, :] - mean[:, None]) / sd[:, None]
    return w @ special.ndtr(z)


def _tau_cdf(x: np.ndarray, tau, w) -> np.ndarray:
    # p(tau | y) on the grid, as a piecewise-linear density (cumulative trapezoid)
    dens = w / np.trapezoid(w, tau)
    cum = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(tau))])
    cum /= cum[-1]
    return np.interp(x, tau, cum, left=0.0, right=1.0)


def _quantiles(cdf, probs, lo, hi) -> np.ndarray:
    out = np.empty(probs.size)
    for i, p in enumerate(probs):
        a, b = lo, hi
        for _ in range(200):
            m = 0.5 * (a + b)
            if cdf(np.array([m]))[0] < p:
                a = m
            else:
                b = m
        out[i] = 0.5 * (a + b)
    return out


def logo_epsilons(
    y,
    groups,
    *,
    bins: int = 20,
    s_mu: float = 5.0,
    s_tau: float = 1.0,
    sigma: float = 1.0,
    zerosum: bool = False,
) -> dict:
    """Exact epsilon of every parameter for every group left out.

    Returns
    -------
    dict
        ``{"mu": (G,), "tau": (G,), "alpha": (G, G)}``: row g is group g left out.
    """
    n_groups = int(groups.max()) + 1
    kw = dict(s_mu=s_mu, s_tau=s_tau, sigma=sigma, zerosum=zerosum)
    full = _conditionals(y, groups, set(range(n_groups)), **kw)
    probs = np.arange(1, bins) / bins
    out = {"mu": np.empty(n_groups), "tau": np.empty(n_groups)}
    out["alpha"] = np.empty((n_groups, n_groups))
    edges = {}
    for k in range(n_groups + 1):
        _, w, mean, sd = full

        def cdf(x, k=k, w=w, mean=mean, sd=sd):
            return _mixture_cdf(x, w, mean[:, k], sd[:, k])

        lo = float(np.min(mean[:, k] - 12 * sd[:, k]))
        hi = float(np.max(mean[:, k] + 12 * sd[:, k]))
        edges[k] = _quantiles(cdf, probs, lo, hi)
    tau_edges = _quantiles(lambda x: _tau_cdf(x, full[0], full[1]), probs, 0.0, full[0][-1])

    def epsilon(masses) -> float:
        masses = np.diff(np.concatenate([[0.0], masses, [1.0]]))
        return float(np.max(np.abs(np.log(masses) - np.log(1.0 / bins))))

    for g in range(n_groups):
        tau, w, mean, sd = _conditionals(y, groups, set(range(n_groups)) - {g}, **kw)
        out["mu"][g] = epsilon(_mixture_cdf(edges[0], w, mean[:, 0], sd[:, 0]))
        out["tau"][g] = epsilon(_tau_cdf(tau_edges, tau, w))
        for k in range(1, n_groups + 1):
            out["alpha"][g, k - 1] = epsilon(_mixture_cdf(edges[k], w, mean[:, k], sd[:, k]))
    return out


#: The tests' data sets (tests/test_auditing_verify.py).
SIZES = [30, 25, 20, 15, 10, 40]
CENTRED = dict(seed=6, sizes=SIZES, effects=[-2.0, -1.0, 0.0, 1.0, 2.0, 3.0], mu=0.3)
ZEROSUM = dict(seed=7, sizes=SIZES, effects=[-1.5, -0.5, 0.0, 0.5, 1.0, 0.5], mu=0.3)


if __name__ == "__main__":
    for name, spec, zs in (("centred", CENTRED, False), ("zerosum", ZEROSUM, True)):
        y, groups = group_data(**spec, zerosum=zs)
        ref = logo_epsilons(y, groups, zerosum=zs)
        per_group = np.maximum(np.maximum(ref["mu"], ref["tau"]), ref["alpha"].max(axis=1))
        print(name, "mu", np.round(ref["mu"], 4).tolist())
        print(name, "tau", np.round(ref["tau"], 4).tolist())
        print(name, "alpha[g, g]", np.round(np.diag(ref["alpha"]), 4).tolist())
        print(name, "epsilon per group left out", np.round(per_group, 4).tolist())

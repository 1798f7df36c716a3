"""Hand-written equivalents of third-party libraries' canonical models (issue 39).

pymc-extras' state-space models and pymc-marketing's CLV models do not install beside both
stacks without a downgrade (``benchmarks/libraries/README.md``), so the zoo keeps models that
build the same likelihoods with PyMC alone, written as users write them:

- :func:`local_level_kalman`: the structural local-level model on the Nile flow (statsmodels'
  copy of the data, 1871-1970, in units of 100 million m^3), its likelihood a Kalman filter
  written as a ``pytensor.scan`` inside ``pm.CustomDist``: one term per year,
  log p(y_t | y_1..y_{t-1}), as pymc-extras' ``obs`` has it. Variances free.
  :func:`local_level_kalman_fixed` fixes the variances (the initial level stays free), so
  that the exact leave-one-out posterior is Gaussian.
- :func:`gamma_gamma_potential`: pymc-marketing's Gamma-Gamma spend model, its likelihood
  in ``pm.Potential("likelihood", ...)`` of shape (n,) over constants ``x`` (repeat
  purchases) and ``z_mean`` (mean spend), exactly as ``GammaGammaModel.build_model`` writes
  it.
- :func:`bgnbd_customdist`: pymc-marketing's BG/NBD model with ``BetaGeoNBD.logp`` copied
  into a ``pm.CustomDist`` observed on an (n, 2) array of (recency, frequency), with the
  library's default priors.

Each builder returns ``(model, idata)`` fitted as :func:`zoo.fit` fits. ``benchmarks/
libraries/equivalence.py`` checks each hand-written log-density against the library's own at
the same parameters. ``tests/test_zoo.py`` audits each (``test_library_model_audits``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from zoo import SEED, fit

#: The record planted as a gross outlier, by builder name.
OUTLIER: dict[str, int] = {"gamma_gamma_potential": 11}

#: Initial state of the hand-written filter: its variance (the level's mean is a parameter).
P0 = 10.0


def nile() -> np.ndarray:
    """Annual flow of the Nile at Aswan, 1871-1970, in 100 million m^3 (statsmodels' copy)."""
    from statsmodels.datasets import nile as nile_data

    return nile_data.load_pandas().data["volume"].to_numpy(dtype=float) / 100.0


def kalman_terms(y, level0, sigma_level, sigma_obs, p0=P0):
    """One-step-ahead log densities log p(y_t | y_1..y_{t-1}) of a local-level model.

    The level follows a random walk with standard deviation ``sigma_level`` and is observed
    with noise ``sigma_obs``; at t = 0 the predicted level is N(``level0``, ``p0``). The
    filter updates with y_t, then predicts t + 1 (pymc-extras' convention).
    """

    def step(y_t, a, p, s2_level, s2_obs):
        f = p + s2_obs
        v = y_t - a
        ll = -0.5 * (pt.log(2.0 * np.pi * f) + v**2 / f)
        k = p / f
        return a + k * v, p * (1.0 - k) + s2_level, ll

    # CustomDist hands its scalar parameters over with shape (1,)
    level0, sigma_level, sigma_obs = (pt.squeeze(v) for v in (level0, sigma_level, sigma_obs))
    level0 = pt.cast(level0, "float64")  # the scan's state: a float level0 is float32
    _, _, ll = pytensor.scan(
        step,
        sequences=[y],
        outputs_info=[level0, pt.as_tensor(np.float64(p0)), None],
        non_sequences=[sigma_level**2, sigma_obs**2],
        strict=False,
        return_updates=False,
    )
    return ll


def local_level_model(y, sigma_level=None, sigma_obs=None) -> pm.Model:
    """The local-level model on ``y``; variances free unless given."""
    with pm.Model(coords={"year": np.arange(1871, 1871 + len(y))}) as model:
        level0 = pm.Normal("level0", 10.0, 5.0)
        if sigma_level is None:
            sigma_level = pm.HalfNormal("sigma_level", 1.0)
            sigma_obs = pm.HalfNormal("sigma_obs", 2.0)
        pm.CustomDist(
            "y",
            level0,
            sigma_level,
            sigma_obs,
            logp=lambda value, level0, sl, so: kalman_terms(value, level0, sl, so),
            observed=y,
            dims="year",
        )
    return model


def local_level_kalman(years: int | None = None):
    """Local level on the Nile (its first ``years``), variances free: a Kalman filter (scan)."""
    model = local_level_model(nile()[:years])
    return model, fit(model)


def local_level_kalman_fixed():
    """Local level on the Nile, variances fixed near their posterior means: Gaussian."""
    model = local_level_model(nile(), sigma_level=0.4, sigma_obs=1.2)
    return model, fit(model)


# ------------------------------------------------------------------ pymc-marketing CLV
def _spend(n: int = 60, seed: int = SEED + 39):
    """Repeat purchases ``x`` and mean spend ``z_mean`` from the Gamma-Gamma process."""
    rng = np.random.default_rng(seed)
    p, q, v = 6.0, 4.0, 15.0
    x = 1 + rng.poisson(2.0, n)
    nu = rng.gamma(q, 1.0 / v, n)  # each customer's spend rate
    z_mean = rng.gamma(p * x, 1.0 / (x * nu))  # the mean of x Gamma(p, nu) spends
    x[OUTLIER["gamma_gamma_potential"]] = 12
    z_mean[OUTLIER["gamma_gamma_potential"]] = 40.0 * z_mean.mean()
    return x.astype(float), z_mean


def gamma_gamma_potential():
    """pymc-marketing's Gamma-Gamma spend model: its likelihood in a Potential of shape (n,)."""
    model = gamma_gamma_model()
    return model, fit(model)


def gamma_gamma_model() -> pm.Model:
    """The model of :func:`gamma_gamma_potential`, unfitted."""
    x_data, z_data = _spend()
    z_mean = pt.as_tensor_variable(z_data)
    x = pt.as_tensor_variable(x_data)
    with pm.Model(coords={"customer_id": np.arange(len(x_data))}) as model:
        p = pm.Weibull("p", alpha=2.0, beta=1.0)
        q = pm.Weibull("q", alpha=2.0, beta=1.0)
        v = pm.Weibull("v", alpha=2.0, beta=10.0)
        # Likelihood for mean_spend, marginalizing over nu (Fader & Hardie 2013, eq. 1a)
        pm.Potential(
            "likelihood",
            (
                pt.gammaln(p * x + q)
                - pt.gammaln(p * x)
                - pt.gammaln(q)
                + q * pt.log(v)
                + (p * x - 1) * pt.log(z_mean)
                + (p * x) * pt.log(x)
                - (p * x + q) * pt.log(x * z_mean + v)
            ),
        )
    return model


def bgnbd_logp(value, a, b, r, alpha, T):
    """pymc-marketing's ``BetaGeoNBD.logp`` (1.3), for (recency, frequency) rows."""
    t_x = pt.atleast_1d(value[..., 0])
    x = pt.atleast_1d(value[..., 1])
    x_non_zero = x > 0
    d1 = (
        pt.gammaln(r + x)
        - pt.gammaln(r)
        + pt.gammaln(a + b)
        + pt.gammaln(b + x)
        - pt.gammaln(b)
        - pt.gammaln(a + b + x)
    )
    d2 = r * pt.log(alpha) - (r + x) * pt.log(alpha + t_x)
    c3 = ((alpha + t_x) / (alpha + T)) ** (r + x)
    c4 = a / (b + x - 1)
    logp = d1 + d2 + pt.log(c3 + pt.switch(x_non_zero, c4, 0))
    return pt.switch(pt.or_(pt.or_(pt.lt(t_x, 0), pt.lt(x, 0)), pt.gt(t_x, T)), -np.inf, logp)


def _bgnbd_data(n: int = 120, seed: int = SEED + 40):
    """Frequency, recency and age of ``n`` customers simulated from the BG/NBD process."""
    rng = np.random.default_rng(seed)
    r, alpha, a, b = 0.25, 4.0, 0.8, 2.5
    T = rng.uniform(27.0, 39.0, n)
    lam = rng.gamma(r, 1.0 / alpha, n)
    drop = rng.beta(a, b, n)
    x = np.zeros(n)
    t_x = np.zeros(n)
    for i in range(n):
        t = 0.0
        while True:
            t += rng.exponential(1.0 / lam[i])
            if t > T[i]:
                break
            x[i] += 1
            t_x[i] = t
            if rng.uniform() < drop[i]:  # becomes inactive after this purchase
                break
    return x, t_x, T


def bgnbd_customdist():
    """pymc-marketing's BG/NBD with its default priors, the logp in a ``pm.CustomDist``."""
    model = bgnbd_model()
    return model, fit(model)


def bgnbd_model() -> pm.Model:
    """The model of :func:`bgnbd_customdist`, unfitted."""
    x, t_x, T = _bgnbd_data()
    coords = {"customer_id": np.arange(len(x)), "obs_var": ["recency", "frequency"]}
    with pm.Model(coords=coords) as model:
        alpha = pm.Weibull("alpha", alpha=2.0, beta=10.0)
        phi_dropout = pm.Uniform("phi_dropout", lower=0.0, upper=1.0)
        kappa_dropout = pm.Pareto("kappa_dropout", alpha=1.0, m=1.0)
        a = pm.Deterministic("a", phi_dropout * kappa_dropout)
        b = pm.Deterministic("b", (1.0 - phi_dropout) * kappa_dropout)
        r = pm.Weibull("r", alpha=2.0, beta=1.0)
        pm.CustomDist(
            "recency_frequency",
            a,
            b,
            r,
            alpha,
            T,
            logp=bgnbd_logp,
            signature="(),(),(),(),()->(2)",
            observed=np.stack((t_x, x), axis=1),
            dims=("customer_id", "obs_var"),
        )
    return model


#: The libraries' canonical models, hand-written, by name.
LIBRARIES: dict[str, Callable] = {
    f.__name__: f
    for f in (
        local_level_kalman,
        local_level_kalman_fixed,
        gamma_gamma_potential,
        bgnbd_customdist,
    )
}

"""A zoo of PyMC models written as PyMC's example gallery writes them (issue 31).

Every builder simulates a small data set with a fixed seed, writes the model with the
gallery's idioms (``pm.Data`` for covariates and observed values, ``coords`` and ``dims``,
``initval``, ``pm.Censored``, ``pm.Potential``, ...), fits it briefly with ``pm.sample``
and computes its pointwise log likelihood. Each returns ``(model, idata)``;
``tests/test_zoo.py`` audits them and ``benchmarks/zoo_table.py`` times them.

``OUTLIER`` maps a builder's name to the record its data makes the most exposed (a gross
outlier planted in the simulated data), where there is one.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pymc as pm
import pytensor.tensor as pt

N = 40
SEED = 31

#: The record planted as a gross outlier, by builder name (neighbour label as the audit
#: writes it: the index of the row in its observed variable).
OUTLIER: dict[str, int] = {
    "glm_normal": 7,
    "glm_studentt": 3,
    "glm_poisson": 11,
    "mvnormal_lkj": 5,
}


def fit(model: pm.Model, seed: int = SEED, *, log_likelihood: bool = True, **kwargs):
    """A small fit of ``model`` and its pointwise log likelihood, as the gallery does it.

    ``log_likelihood=False`` leaves the pointwise log likelihood to the audit (which
    computes it from the model when the group is missing).
    """
    with model, warnings.catch_warnings():
        # A proposal that overflows (an inf in a gradient, or in PyMC's mass-matrix update) is
        # rejected by the sampler; the RuntimeWarning numpy raises on the way is not a
        # problem of the model.
        warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
        idata = pm.sample(
            draws=500, tune=500, chains=2, random_seed=seed, progressbar=False, **kwargs
        )
        if log_likelihood:
            pm.compute_log_likelihood(idata, progressbar=False)
    return idata


def _rng(offset: int = 0) -> np.random.Generator:
    return np.random.default_rng(SEED + offset)


def _design(rng, n=N, k=2):
    return rng.normal(size=(n, k))


def _coords(n=N, k=2):
    return {"obs_id": np.arange(n), "coef": [f"x{j}" for j in range(k)]}


# ------------------------------------------------------------------ GLMs
def glm_normal():
    """Linear regression, Normal noise, ``pm.Data`` covariates and observed; one outlier."""
    rng = _rng(1)
    x = _design(rng)
    y = 1.0 + x @ np.array([0.5, -1.0]) + rng.normal(0.0, 0.5, N)
    y[7] += 8.0
    with pm.Model(coords=_coords()) as model:
        X = pm.Data("X", x, dims=("obs_id", "coef"))
        y_data = pm.Data("y_data", y, dims="obs_id")
        alpha = pm.Normal("alpha", 0.0, 5.0)
        beta = pm.Normal("beta", 0.0, 2.0, dims="coef")
        sigma = pm.HalfNormal("sigma", 2.0)
        mu = pm.Deterministic("mu", alpha + X @ beta, dims="obs_id")
        pm.Normal("y", mu=mu, sigma=sigma, observed=y_data, dims="obs_id")
    return model, fit(model)


def glm_studentt():
    """Robust regression: Student-t noise with a learned ``nu``; one outlier."""
    rng = _rng(2)
    x = _design(rng)
    y = 1.0 + x @ np.array([0.5, -1.0]) + rng.normal(0.0, 0.5, N)
    y[3] += 10.0
    with pm.Model(coords=_coords()) as model:
        X = pm.Data("X", x, dims=("obs_id", "coef"))
        alpha = pm.Normal("alpha", 0.0, 5.0)
        beta = pm.Normal("beta", 0.0, 2.0, dims="coef")
        sigma = pm.HalfNormal("sigma", 2.0)
        nu = pm.Gamma("nu", 2.0, 0.1)
        pm.StudentT("y", nu=nu, mu=alpha + X @ beta, sigma=sigma, observed=y, dims="obs_id")
    return model, fit(model)


def glm_logistic():
    """Logistic regression with ``pm.Data`` covariates and a plain observed array."""
    rng = _rng(3)
    x = _design(rng)
    p = 1.0 / (1.0 + np.exp(-(0.3 + x @ np.array([1.5, -1.0]))))
    y = rng.binomial(1, p)
    with pm.Model(coords=_coords()) as model:
        X = pm.Data("X", x, dims=("obs_id", "coef"))
        alpha = pm.Normal("alpha", 0.0, 2.5)
        beta = pm.Normal("beta", 0.0, 2.5, dims="coef")
        pm.Bernoulli("y", logit_p=alpha + X @ beta, observed=y, dims="obs_id")
    return model, fit(model)


def glm_logistic_observed_data():
    """Logistic regression whose observed values are a ``pm.Data`` container too."""
    rng = _rng(3)
    x = _design(rng)
    p = 1.0 / (1.0 + np.exp(-(0.3 + x @ np.array([1.5, -1.0]))))
    y = rng.binomial(1, p)
    with pm.Model(coords=_coords()) as model:
        X = pm.Data("X", x, dims=("obs_id", "coef"))
        y_data = pm.Data("y_data", y, dims="obs_id")
        alpha = pm.Normal("alpha", 0.0, 2.5)
        beta = pm.Normal("beta", 0.0, 2.5, dims="coef")
        pm.Bernoulli("y", logit_p=alpha + X @ beta, observed=y_data, dims="obs_id")
    return model, fit(model)


def glm_poisson():
    """Poisson regression with a log link; one record with an extreme count."""
    rng = _rng(4)
    x = _design(rng)
    y = rng.poisson(np.exp(1.0 + x @ np.array([0.3, -0.4])))
    y[11] = 60
    with pm.Model(coords=_coords()) as model:
        X = pm.Data("X", x, dims=("obs_id", "coef"))
        alpha = pm.Normal("alpha", 0.0, 2.0)
        beta = pm.Normal("beta", 0.0, 1.0, dims="coef")
        pm.Poisson("y", mu=pm.math.exp(alpha + X @ beta), observed=y, dims="obs_id")
    return model, fit(model)


def glm_negbin():
    """Negative-binomial regression (``mu``, ``alpha`` parametrisation)."""
    rng = _rng(5)
    x = _design(rng)
    mu = np.exp(1.5 + x @ np.array([0.4, -0.3]))
    y = rng.negative_binomial(3.0, 3.0 / (3.0 + mu))
    with pm.Model(coords=_coords()) as model:
        X = pm.Data("X", x, dims=("obs_id", "coef"))
        intercept = pm.Normal("intercept", 0.0, 2.0)
        beta = pm.Normal("beta", 0.0, 1.0, dims="coef")
        alpha = pm.Exponential("alpha", 0.5)
        pm.NegativeBinomial(
            "y", mu=pm.math.exp(intercept + X @ beta), alpha=alpha, observed=y, dims="obs_id"
        )
    return model, fit(model)


def glm_zip():
    """Zero-inflated Poisson regression."""
    rng = _rng(6)
    x = _design(rng, k=1)
    y = rng.poisson(np.exp(1.2 + 0.5 * x[:, 0])) * (rng.random(N) > 0.3)
    with pm.Model(coords=_coords(k=1)) as model:
        X = pm.Data("X", x, dims=("obs_id", "coef"))
        psi = pm.Beta("psi", 2.0, 2.0)
        alpha = pm.Normal("alpha", 0.0, 2.0)
        beta = pm.Normal("beta", 0.0, 1.0, dims="coef")
        pm.ZeroInflatedPoisson(
            "y", psi=psi, mu=pm.math.exp(alpha + X @ beta), observed=y, dims="obs_id"
        )
    return model, fit(model)


# ------------------------------------------------------------------ hierarchical
def _groups(offset):
    rng = _rng(offset)
    n_groups, per = 6, 5
    group = np.repeat(np.arange(n_groups), per)
    effect = rng.normal(0.0, 1.0, n_groups)
    y = 2.0 + effect[group] + rng.normal(0.0, 1.0, group.size)
    coords = {"group": [f"g{g}" for g in range(n_groups)], "obs_id": np.arange(group.size)}
    return group, y, coords


def hier_centred():
    """Varying intercepts, centred parametrisation."""
    group, y, coords = _groups(7)
    with pm.Model(coords=coords) as model:
        g = pm.Data("group_idx", group, dims="obs_id")
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 2.0)
        theta = pm.Normal("theta", mu, tau, dims="group")
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("y", theta[g], sigma, observed=y, dims="obs_id")
    return model, fit(model, target_accept=0.95)


def hier_noncentred():
    """Varying intercepts, non-centred parametrisation."""
    group, y, coords = _groups(8)
    with pm.Model(coords=coords) as model:
        g = pm.Data("group_idx", group, dims="obs_id")
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 2.0)
        z = pm.Normal("z", 0.0, 1.0, dims="group")
        theta = pm.Deterministic("theta", mu + tau * z, dims="group")
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("y", theta[g], sigma, observed=y, dims="obs_id")
    return model, fit(model)


def hier_zerosum():
    """Group effects that sum to zero (``pm.ZeroSumNormal``) around a free mean."""
    group, y, coords = _groups(9)
    with pm.Model(coords=coords) as model:
        g = pm.Data("group_idx", group, dims="obs_id")
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 2.0)
        effect = pm.ZeroSumNormal("effect", sigma=tau, dims="group")
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("y", mu + effect[g], sigma, observed=y, dims="obs_id")
    return model, fit(model, target_accept=0.95)


# ------------------------------------------------------------------ mixtures, limits
def _two_component(rng, n=N):
    comp = rng.random(n) < 0.4
    return np.where(comp, rng.normal(-2.0, 0.7, n), rng.normal(2.0, 0.7, n))


def mixture():
    """Two-component ``pm.NormalMixture``, means kept apart by a positive gap (no initval)."""
    y = _two_component(_rng(10))
    with pm.Model(coords={"component": ["a", "b"], "obs_id": np.arange(N)}) as model:
        w = pm.Dirichlet("w", np.ones(2), dims="component")
        low = pm.Normal("low", 0.0, 5.0)
        gap = pm.HalfNormal("gap", 5.0)
        mu = pm.Deterministic("mu", pm.math.stack([low, low + gap]), dims="component")
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.NormalMixture("y", w=w, mu=mu, sigma=sigma, observed=y, dims="obs_id")
    return model, fit(model)


def mixture_initval():
    """The gallery's mixture that sets ``initval=`` on the weights and the scale too."""
    y = _two_component(_rng(10))
    with pm.Model(coords={"component": ["a", "b"], "obs_id": np.arange(N)}) as model:
        w = pm.Dirichlet("w", np.ones(2), dims="component", initval=[0.5, 0.5])
        mu = pm.Normal(
            "mu",
            0.0,
            5.0,
            dims="component",
            transform=pm.distributions.transforms.ordered,
            initval=[-1.0, 1.0],
        )
        sigma = pm.HalfNormal("sigma", 2.0, dims="component", initval=[1.0, 1.0])
        pm.NormalMixture("y", w=w, mu=mu, sigma=sigma, observed=y, dims="obs_id")
    # PyMC 6's own pm.compute_log_likelihood cannot rebuild a model with initval=
    # (NotImplementedError from fgraph_from_model): the audit computes it instead.
    return model, fit(model, log_likelihood=False)


def censored():
    """A Normal measurement censored at an instrument's limits (``pm.Censored``)."""
    rng = _rng(11)
    raw = rng.normal(1.0, 2.0, N)
    y = np.clip(raw, -1.0, 3.0)
    with pm.Model(coords={"obs_id": np.arange(N)}) as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.HalfNormal("sigma", 3.0)
        pm.Censored(
            "y", pm.Normal.dist(mu, sigma), lower=-1.0, upper=3.0, observed=y, dims="obs_id"
        )
    return model, fit(model)


def truncated():
    """A Normal observed only above a threshold (``pm.Truncated``)."""
    rng = _rng(12)
    raw = rng.normal(1.0, 2.0, 4 * N)
    y = raw[raw > 0.0][:N]
    with pm.Model(coords={"obs_id": np.arange(y.size)}) as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.HalfNormal("sigma", 3.0)
        pm.Truncated("y", pm.Normal.dist(mu, sigma), lower=0.0, observed=y, dims="obs_id")
    return model, fit(model)


# ------------------------------------------------------------------ categorical outcomes
def ordinal():
    """Ordered-logistic regression with ordered cutpoints."""
    rng = _rng(13)
    x = rng.normal(size=N)
    latent = 1.2 * x + rng.logistic(size=N)
    y = np.digitize(latent, [-1.0, 0.0, 1.0])
    with pm.Model(coords={"obs_id": np.arange(N), "cut": np.arange(3)}) as model:
        x_data = pm.Data("x", x, dims="obs_id")
        beta = pm.Normal("beta", 0.0, 2.0)
        # An ordered prior mean is an ordered starting point (no initval needed).
        cutpoints = pm.Normal(
            "cutpoints",
            np.array([-1.0, 0.0, 1.0]),
            3.0,
            dims="cut",
            transform=pm.distributions.transforms.ordered,
        )
        pm.OrderedLogistic("y", eta=beta * x_data, cutpoints=cutpoints, observed=y, dims="obs_id")
    return model, fit(model)


def categorical():
    """Multinomial-logit regression with a reference category."""
    rng = _rng(14)
    x = rng.normal(size=N)
    logits = np.stack([np.zeros(N), 0.5 + x, -0.5 - x], axis=1)
    prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=p) for p in prob])
    coords = {"obs_id": np.arange(N), "free_cat": ["b", "c"]}
    with pm.Model(coords=coords) as model:
        x_data = pm.Data("x", x, dims="obs_id")
        a = pm.Normal("a", 0.0, 2.0, dims="free_cat")
        b = pm.Normal("b", 0.0, 2.0, dims="free_cat")
        eta = a[None, :] + b[None, :] * x_data[:, None]
        eta = pm.math.concatenate([pm.math.zeros((N, 1)), eta], axis=1)
        pm.Categorical("y", p=pm.math.softmax(eta, axis=1), observed=y, dims="obs_id")
    return model, fit(model)


# ------------------------------------------------------------------ survival
def survival_weibull():
    """Weibull survival times, right-censored at the end of follow-up (``pm.Censored``)."""
    rng = _rng(15)
    x = rng.binomial(1, 0.5, N).astype(float)
    scale = np.exp(2.0 + 0.5 * x)
    t = scale * rng.weibull(1.5, N)
    follow_up = 10.0
    y = np.minimum(t, follow_up)
    with pm.Model(coords={"obs_id": np.arange(N)}) as model:
        x_data = pm.Data("treated", x, dims="obs_id")
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        b0 = pm.Normal("b0", 0.0, 3.0)
        b1 = pm.Normal("b1", 0.0, 2.0)
        dist = pm.Weibull.dist(alpha=alpha, beta=pm.math.exp(b0 + b1 * x_data))
        pm.Censored("y", dist, lower=None, upper=follow_up, observed=y, dims="obs_id")
    return model, fit(model)


def follow_up(n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Days to death or to the end of follow-up, and which are censored (alive at the end)."""
    rng = _rng(22)
    death = 4000.0 * rng.weibull(1.3, n)
    end = rng.uniform(1500.0, 5000.0, n)
    return np.minimum(death, end), death > end


def weibull_lccdf(x, alpha, beta):
    """Log complementary cdf of the Weibull distribution (the gallery's)."""
    return -((x / beta) ** alpha)


def survival_weibull_potential():
    """The gallery's Weibull survival model: the censored records' log survival in a Potential.

    As PyMC's example "Reparameterizing the Weibull Accelerated Failure Time Model"
    (parameterization 1) writes it: the deaths observed, the censored times in
    ``pm.Potential("y_cens", ...)`` of one element per record.
    """
    model = survival_weibull_potential_model()
    # the gallery's sampler settings ("change init to avoid divergences")
    return model, fit(model, target_accept=0.9, init="adapt_diag")


def survival_weibull_potential_model() -> pm.Model:
    """The model of :func:`survival_weibull_potential`, unfitted."""
    y, censored = follow_up()
    with pm.Model() as model:
        alpha_sd = 10.0
        mu = pm.Normal("mu", mu=0, sigma=100)
        alpha_raw = pm.Normal("a0", mu=0, sigma=0.1)
        alpha = pm.Deterministic("alpha", pt.exp(alpha_sd * alpha_raw))
        beta = pm.Deterministic("beta", pt.exp(mu / alpha))
        pm.Weibull("y_obs", alpha=alpha, beta=beta, observed=y[~censored])
        pm.Potential("y_cens", weibull_lccdf(y[censored], alpha, beta))
    return model


# ------------------------------------------------------------------ multivariate rows
def _mv_rows():
    rng = _rng(16)
    cov = np.array([[1.0, 0.6], [0.6, 2.0]])
    y = rng.multivariate_normal([1.0, -1.0], cov, size=N)
    y[5] = [9.0, -9.0]
    return y


def mvnormal_lkj():
    """Rows of a bivariate Normal with an LKJ prior on the Cholesky factor."""
    y = _mv_rows()
    with pm.Model(coords={"obs_id": np.arange(N), "dim": ["a", "b"]}) as model:
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=2, eta=2.0, sd_dist=pm.Exponential.dist(1.0, shape=2)
        )
        mu = pm.Normal("mu", 0.0, 5.0, dims="dim")
        pm.MvNormal("y", mu=mu, chol=chol, observed=y, dims=("obs_id", "dim"))
    return model, fit(model)


def mvnormal_lkj_corr():
    """The same model with ``compute_corr=True``: the audit is asked for ``chol_corr``."""
    y = _mv_rows()
    with pm.Model(coords={"obs_id": np.arange(N), "dim": ["a", "b"]}) as model:
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=2, eta=2.0, sd_dist=pm.Exponential.dist(1.0, shape=2), compute_corr=True
        )
        mu = pm.Normal("mu", 0.0, 5.0, dims="dim")
        pm.MvNormal("y", mu=mu, chol=chol, observed=y, dims=("obs_id", "dim"))
    return model, fit(model)


# ------------------------------------------------------------------ discrete latent
def coal_mining():
    """The coal-mining disasters change point: ``pm.DiscreteUniform`` switchpoint.

    NUTS for the rates and Metropolis for the switchpoint (PyMC's compound step).
    """
    rng = _rng(17)
    years = np.arange(1900, 1900 + N)
    switch = 1900 + N // 2
    counts = rng.poisson(np.where(years < switch, 3.0, 1.0))
    with pm.Model(coords={"year": years}) as model:
        year = pm.Data("year_data", years, dims="year")
        switchpoint = pm.DiscreteUniform("switchpoint", years.min(), years.max())
        early = pm.Exponential("early_rate", 1.0)
        late = pm.Exponential("late_rate", 1.0)
        rate = pm.math.switch(switchpoint >= year, early, late)
        pm.Poisson("disasters", rate, observed=counts, dims="year")
    return model, fit(model)


# ------------------------------------------------------------------ structure
def missing_values():
    """A Normal regression whose outcome has missing values (automatic imputation)."""
    rng = _rng(18)
    x = rng.normal(size=N)
    y = 1.0 + 0.8 * x + rng.normal(0.0, 0.5, N)
    y[[4, 20, 33]] = np.nan
    with pm.Model(coords={"obs_id": np.arange(N)}) as model:
        alpha = pm.Normal("alpha", 0.0, 5.0)
        beta = pm.Normal("beta", 0.0, 2.0)
        sigma = pm.HalfNormal("sigma", 2.0)
        with warnings.catch_warnings():
            # PyMC announces the imputation it was asked for.
            warnings.filterwarnings("ignore", "Data in y contains missing values", UserWarning)
            pm.Normal("y", alpha + beta * x, sigma, observed=y)
    return model, fit(model)


def two_observed():
    """Two outcomes sharing a mean: a Normal measurement and a Poisson count per record."""
    rng = _rng(19)
    y1 = rng.normal(1.0, 1.0, N)
    y2 = rng.poisson(np.exp(1.0), N)
    with pm.Model(coords={"obs_id": np.arange(N)}) as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("y_cont", mu, sigma, observed=y1, dims="obs_id")
        pm.Poisson("y_count", pm.math.exp(mu), observed=y2, dims="obs_id")
    return model, fit(model)


def potential():
    """A regression with a soft sum-to-one constraint on its slopes (``pm.Potential``)."""
    rng = _rng(20)
    x = _design(rng)
    y = x @ np.array([0.3, 0.7]) + rng.normal(0.0, 0.5, N)
    with pm.Model(coords=_coords()) as model:
        X = pm.Data("X", x, dims=("obs_id", "coef"))
        beta = pm.Normal("beta", 0.0, 2.0, dims="coef")
        pm.Potential("sum_to_one", pm.logp(pm.Normal.dist(1.0, 0.05), beta.sum()))
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("y", X @ beta, sigma, observed=y, dims="obs_id")
    return model, fit(model)


# ------------------------------------------------------------------ non-factorised
def ar_series():
    """An AR(1) series observed as one ``pm.AR`` term."""
    rng = _rng(21)
    y = np.zeros(N)
    for t in range(1, N):
        y[t] = 0.6 * y[t - 1] + rng.normal(0.0, 0.5)
    with pm.Model(coords={"time": np.arange(N)}) as model:
        rho = pm.Normal("rho", 0.0, 0.5, shape=1)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.AR(
            "y",
            rho=rho,
            sigma=sigma,
            init_dist=pm.Normal.dist(0.0, 1.0),
            observed=y,
            dims="time",
        )
    return model, fit(model)


def gp_marginal():
    """A GP regression with the marginal likelihood (``pm.gp.Marginal``)."""
    rng = _rng(22)
    n = 25
    x = np.linspace(0.0, 10.0, n)
    y = np.sin(x) + rng.normal(0.0, 0.3, n)
    with pm.Model() as model:
        ell = pm.Gamma("ell", 2.0, 1.0)
        eta = pm.HalfNormal("eta", 2.0)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(1, ls=ell))
        sigma = pm.HalfNormal("sigma", 1.0)
        gp.marginal_likelihood("y", X=x[:, None], y=y, sigma=sigma)
    return model, fit(model)


def car_areas():
    """A conditional autoregression over 16 areas on a line (``pm.CAR`` observed).

    Its log-density is one term of shape (1,) over the areas (it crashed the layout check).
    """
    rng = _rng(24)
    n = 16
    w = np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1)
    y = rng.normal(0.0, 1.0, n)
    y[5] += 3.0
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        tau = pm.Gamma("tau", 2.0, 1.0)
        pm.CAR("y", mu=mu * np.ones(n), W=w, alpha=0.8, tau=tau, observed=y)
    return model, fit(model)


def ar_missing():
    """An AR(1) series with one missing value (``nan``), which PyMC imputes."""
    rng = _rng(25)
    y = np.zeros(N)
    for t in range(1, N):
        y[t] = 0.6 * y[t - 1] + rng.normal(0.0, 0.5)
    y[N // 2] = np.nan
    with pm.Model() as model:
        rho = pm.Normal("rho", 0.0, 0.5)
        sigma = pm.HalfNormal("sigma", 1.0)
        with warnings.catch_warnings():
            # PyMC announces the imputation it was asked for.
            warnings.filterwarnings("ignore", "Data in y contains missing values", UserWarning)
            pm.AR("y", rho=[rho], sigma=sigma, init_dist=pm.Normal.dist(0.0, 1.0), observed=y)
    return model, fit(model)


def stochastic_volatility():
    """The gallery's stochastic volatility: a Gaussian random walk of log volatility."""
    rng = _rng(23)
    n = 60
    log_vol = np.cumsum(rng.normal(0.0, 0.2, n))
    returns = rng.standard_t(5.0, n) * np.exp(log_vol) * 0.02
    with pm.Model(coords={"time": np.arange(n)}) as model:
        step_size = pm.Exponential("step_size", 10.0)
        volatility = pm.GaussianRandomWalk(
            "volatility", sigma=step_size, init_dist=pm.Normal.dist(0.0, 10.0), dims="time"
        )
        nu = pm.Exponential("nu", 0.1)
        pm.StudentT("returns", nu=nu, lam=np.exp(-2.0 * volatility), observed=returns, dims="time")
    return model, fit(model)


#: Factorised models the audit handles today, by name.
FACTORISED: dict[str, Callable] = {
    f.__name__: f
    for f in (
        glm_normal,
        glm_studentt,
        glm_logistic,
        glm_poisson,
        glm_negbin,
        glm_zip,
        hier_centred,
        hier_noncentred,
        hier_zerosum,
        mixture,
        censored,
        truncated,
        ordinal,
        categorical,
        survival_weibull,
        survival_weibull_potential,
        mvnormal_lkj,
        coal_mining,
        missing_values,
        two_observed,
        potential,
    )
}

#: The gallery idioms that stopped the audit before issue 31 (observed pm.Data, initval=, a
#: correlation matrix in var_names, coupled likelihoods), stochastic volatility, and those
#: found beside issue 39 (``pm.CAR``, an AR series with a missing value).
GALLERY: dict[str, Callable] = {
    f.__name__: f
    for f in (
        glm_logistic_observed_data,
        mixture_initval,
        mvnormal_lkj_corr,
        ar_series,
        gp_marginal,
        stochastic_volatility,
        car_areas,
        ar_missing,
    )
}

ALL: dict[str, Callable] = {**FACTORISED, **GALLERY}

"""Helpers shared by several test modules (on ``sys.path`` through pytest's ``pythonpath``).

Charest & Han's Normal-Normal setting (sigma^2 = 5, prior N(10, 3), n = 100) with exact
posterior draws, audits of them, and exact references.
"""

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import pymc_edp as edp
from pymc_edp.conjugate import normal_normal_posterior
from pymc_edp.model.compat import ARVIZ_1, from_dict, has_group, import_arviz

#: Marks a test that audits a fit known not to have converged, or one sampled deliberately
#: small for speed (a few hundred draws, whose ESS or R-hat may miss PyMC's rules on one stack
#: or seed), from a sampler that did not run PyMC's convergence checks (built with from_dict,
#: or nutpie): the audit warns so, as it must, and the test is about something else.
NOT_CONVERGED = pytest.mark.filterwarnings(
    "ignore:Convergence checks as pm.sample runs them:pymc_edp.EDPWarning"
)

SIGMA, MU0, SIGMA0 = np.sqrt(5.0), 10.0, np.sqrt(3.0)
Y = np.random.default_rng(2017).normal(10.0, SIGMA, 100)
M1, S1 = normal_normal_posterior(Y, SIGMA, MU0, SIGMA0)


def normal_draws(rng, chains, draws, rho=0.0):
    """Exact posterior draws of mu, AR(1)-correlated within each chain when rho > 0."""
    e = rng.normal(size=(chains, draws))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0]
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * e[:, t]
    return M1 + S1 * x


def normal_audit(mu, y=Y, bins=20, **kwargs):
    ll = stats.norm.logpdf(y[None, None, :], mu[..., None], SIGMA)
    idata = from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    return edp.audit(idata, var_names="mu", bins=bins, method="psis", progressbar=False, **kwargs)


def bb_audit(model, rng, m=10_000, smoothing=0.01):
    """Charest & Han's Table 2 setting: n = 5, a = b = 0.5, x = 0, record replaced."""
    p = rng.beta(0.5, 5.5, size=(1, m))
    ll = stats.bernoulli.logpmf(np.zeros(5)[None, None, :], p[..., None])
    idata = from_dict(
        {"posterior": {"p": p}, "log_likelihood": {"y": ll}, "observed_data": {"y": np.zeros(5)}}
    )
    return edp.audit(
        idata,
        model,
        var_names="p",
        bins=20,
        method="psis",
        neighbour="replace",
        smoothing=smoothing,
        progressbar=False,
    )


def hockey_normal(m_p, s_p, m_q, s_q, e):
    """Exact integral of (q - e^eps p)_+ for q = N(m_q, s_q^2), p = N(m_p, s_p^2).

    log q - log p - eps is a quadratic in x; where it is >= 0 (one or two intervals) the
    integrand is q - e^eps p, integrated with normal CDFs. Checked against adaptive
    quadrature (scipy.integrate.quad) to 1e-9 when this test was written.
    """
    a = 0.5 / s_p**2 - 0.5 / s_q**2
    b = m_q / s_q**2 - m_p / s_p**2
    c = 0.5 * m_p**2 / s_p**2 - 0.5 * m_q**2 / s_q**2 + np.log(s_p / s_q) - e

    def mass(lo, hi):
        q = stats.norm.cdf(hi, m_q, s_q) - stats.norm.cdf(lo, m_q, s_q)
        p = stats.norm.cdf(hi, m_p, s_p) - stats.norm.cdf(lo, m_p, s_p)
        return q - np.exp(e) * p

    if abs(a) < 1e-14 * (abs(b) + 1):  # equal variances: a half-line
        root = -c / b
        return mass(root, np.inf) if b > 0 else mass(-np.inf, root)
    disc = b * b - 4 * a * c
    if disc <= 0:
        return mass(-np.inf, np.inf) if a > 0 else 0.0
    r1, r2 = sorted(((-b - np.sqrt(disc)) / (2 * a), (-b + np.sqrt(disc)) / (2 * a)))
    if a > 0:
        return mass(-np.inf, r1) + mass(r2, np.inf)
    return mass(r1, r2)


class OutlierNormal:
    """Issue 14's Normal-Normal setting: 14 records from N(0, 1) and one at 12, sigma = 1,
    prior mu ~ N(0, 10^2). Plain PSIS k-hat of the outlier is about 1.1 with 4 x 2,000 exact
    posterior draws (exact EDP: :func:`pymc_edp.conjugate.normal_normal_edp`)."""

    Y = np.append(np.random.default_rng(14).normal(0.0, 1.0, 14), 12.0)
    SIGMA, MU0, SIGMA0 = 1.0, 0.0, 10.0
    M1, S1 = normal_normal_posterior(Y, SIGMA, MU0, SIGMA0)
    OUTLIER = 14


def tuning_result(**changes):
    """A hand-made :class:`pymc_edp.PriorTuningResult` (no search run); ``changes`` override."""
    kw = dict(
        value=1.2,
        epsilon=0.31,
        mcse=0.01,
        target_epsilon=0.3,
        hyperparameter="sigma0",
        initial_value=1.73,
        initial_epsilon=0.45,
        search_epsilon=0.3,
        bins=20,
        neighbour="remove",
        method="psis",
        direction="increasing",
        monotone=True,
        stopped="tolerance",
        trials=xr.Dataset(),
        utility=xr.DataTree(),
    )
    kw.update(changes)
    return edp.PriorTuningResult(**kw)


def loglik_dataset(rng, n_chains=2, n_draws=500, **coords):
    """``y`` with 6 records (obs a..f) and ``z`` with 2 x 3 records; two grouping coords
    (``person`` on ``y``, ``who`` on ``z``) and any further ``coords``."""
    return xr.Dataset(
        {
            "y": (("chain", "draw", "obs"), rng.normal(-1, 0.3, (n_chains, n_draws, 6))),
            "z": (("chain", "draw", "row", "col"), rng.normal(-2, 0.3, (n_chains, n_draws, 2, 3))),
        },
        coords={
            "obs": list("abcdef"),
            "row": [0, 1],
            "col": [10, 20, 30],
            "person": ("obs", [1, 1, 2, 2, 3, 3]),
            "who": (("row", "col"), [[1, 2, 3], [1, 2, 3]]),
            **coords,
        },
    )


def set_group(data, name, dataset):
    """Put ``dataset`` into ``data`` as group ``name`` (replacing it if present), in place."""
    if isinstance(data, xr.DataTree):
        data[name] = xr.DataTree(dataset)
    elif has_group(data, name):
        setattr(data, name, dataset)
    else:
        data.add_groups({name: dataset})


def stack_psislw(log_weights, reff=1.0):
    """The stack's own PSIS of rows of log weights (sample axis last), normalised.

    ``arviz.psislw`` on ArviZ 0.23; arviz_stats' ``psislw`` accessor on ArviZ 1.x (which
    takes log-likelihood values, the negated log weights). The reference for our kernel.
    """
    lw = np.asarray(log_weights, dtype=float)
    if ARVIZ_1:
        import arviz_stats  # noqa: F401 - registers the ``azstats`` accessor

        dims = [f"dim_{i}" for i in range(lw.ndim - 1)] + ["__sample__"]
        smoothed, khat = xr.DataArray(-lw, dims=dims).azstats.psislw(r_eff=reff, dim="__sample__")
        return np.asarray(smoothed), np.asarray(khat)
    smoothed, khat = import_arviz().psislw(lw.copy(), reff=reff)
    return np.asarray(smoothed), np.asarray(khat)


def take_columns(cols, columns):
    """The ``ModelColumns`` ``cols`` restricted to ``columns``, keeping only their data."""
    from pymc_edp.model.stream import _normalise

    idx, _ = _normalise(columns, cols.shape[1], "record")
    data = [np.ascontiguousarray(a[idx]) for a in cols._data]
    return cols._copy(_data=data, shape=(cols.shape[0], int(data[0].shape[0])))


def regression_audit(n: int = 200, draws: int = 1000) -> edp.EDPResult:
    """An audit of a regression's exact posterior with its ``n`` fitted means ``mu``.

    ``y_i ~ N(a + b x_i, 1)``, flat priors: ``(a, b)`` is exactly Normal, ``mu = a + b x`` a
    vector of ``n`` elements (a Deterministic, or BART's ``mu``).
    """
    rng = np.random.default_rng(5)
    x = rng.normal(size=n)
    design = np.column_stack([np.ones(n), x])
    y = design @ np.array([1.0, 0.5]) + rng.normal(size=n)
    y[7] += 4.0
    cov = np.linalg.inv(design.T @ design)
    coef = rng.multivariate_normal(cov @ design.T @ y, cov, size=(2, draws))
    mu = coef @ design.T  # (chain, draw, n)
    ll = stats.norm.logpdf(y, mu, 1.0)
    idata = from_dict(
        {
            "posterior": {"a": coef[..., 0], "b": coef[..., 1], "mu": mu},
            "log_likelihood": {"y": ll},
        }
    )
    return edp.audit(idata, bins=10, method="psis", progressbar=False)


def bart_regression(n=40, m=10, outlier=None, seed=4):
    """pymc-bart's canonical regression, ``mu = BART(X, y)``, ``y ~ Normal(mu, sigma)``.

    ``y = sin(1.5 x) + N(0, 0.2)``; ``outlier`` adds that much to record 0. Returns
    ``build(X, y) -> pm.Model`` and the data ``(X, y, f)``; skipped without pymc-bart.
    """
    import pymc as pm

    pmb = pytest.importorskip("pymc_bart")
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, (n, 1))
    f = np.sin(1.5 * x[:, 0])
    y = f + rng.normal(0.0, 0.2, n)
    if outlier is not None:
        y[0] += outlier

    def build(x_, y_):
        with pm.Model() as model:
            mu = pmb.BART("mu", x_, y_, m=m)
            sigma = pm.HalfNormal("sigma", 1.0)
            pm.Normal("y", mu, sigma, observed=y_)
        return model

    return build, (x, y, f)


def bambi_grunfeld(center_predictors=True, draws=300, seed=1):
    """bambi's ``invest ~ value + capital + (1|firm)`` on statsmodels' Grunfeld data, fitted.

    Returns the bambi model and its fit (with bambi's log-likelihood); skipped without bambi.
    bambi leaves the offset ``1|firm_offset`` out of the posterior.
    """
    import warnings

    bmb = pytest.importorskip("bambi")
    sm = pytest.importorskip("statsmodels.api")
    data = sm.datasets.grunfeld.load_pandas().data
    with warnings.catch_warnings():  # pandas' and formulae's, not ours
        warnings.simplefilter("ignore")
        model = bmb.Model(
            "invest ~ value + capital + (1|firm)", data, center_predictors=center_predictors
        )
        idata = model.fit(
            draws=draws, tune=draws, chains=2, cores=1, random_seed=seed, progressbar=False
        )
        model.compute_log_likelihood(idata)
    return model, idata

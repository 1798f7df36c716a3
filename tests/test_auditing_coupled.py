"""Audits of coupled likelihoods (one term over all records) against exact B-EDP.

For a Gaussian likelihood ``y | mu ~ N(mu a + b, C)`` with known ``a``, ``b``, ``C`` and a
Normal prior on ``mu``, the posterior and every neighbour posterior are Normal: leaving record
``i`` out drops row and column ``i``, replacing it changes ``y_i``. The exact B-EDP uses bins
at the full posterior's exact quantiles; the audit, bins at its draws' quantiles (a Monte-Carlo
difference within the tolerance). The models are written as users write them: ``pm.MvNormal``
with an AR(1) covariance, ``pm.gp.Marginal`` with fixed kernel hyperparameters and a constant
mean, ``pm.AR`` with a constant and a known coefficient; each has an outlying record.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats
from zoo_libraries import kalman_terms

import pymc_edp as edp
from pymc_edp.model.compat import get_group

pytestmark = pytest.mark.slow  # each audit compiles its refit model (about 30 s)

N, BINS, PRIOR_SD = 16, 10, 3.0
DRAWS = dict(draws=2000, tune=500, chains=2, progressbar=False, random_seed=7)


def _data(seed=3):
    rng = np.random.default_rng(seed)
    y = 1.0 + rng.normal(0, 1, N)
    y[5] += 5.0
    return y


def _posterior(a, b, cov, y):
    """Mean and sd of ``mu`` given ``y ~ N(mu a + b, cov)`` and ``mu ~ N(0, PRIOR_SD)``."""
    q = np.linalg.solve(cov, a)
    prec = PRIOR_SD**-2 + a @ q
    return q @ (y - b) / prec, prec**-0.5


def exact_epsilons(a, b, cov, y, replacement=None, bins=BINS, groups=None):
    """Exact B-EDP of every neighbour (a record removed or replaced, or a group removed).

    ``replacement`` replaces ``y_i``; ``groups`` (one label per record) removes every record
    of a group.
    """
    mean, sd = _posterior(a, b, cov, y)
    inner = stats.norm.ppf(np.linspace(0, 1, bins + 1)[1:-1], mean, sd)
    labels = np.arange(y.size) if groups is None else np.asarray(groups)
    out = []
    for g in np.unique(labels):
        if replacement is None:
            keep = labels != g
            m, s = _posterior(a[keep], b[keep], cov[np.ix_(keep, keep)], y[keep])
        else:
            alt = y.copy()
            alt[labels == g] = replacement
            m, s = _posterior(a, b, cov, alt)
        mass = np.diff(np.concatenate([[0.0], stats.norm.cdf(inner, m, s), [1.0]]))
        out.append(np.abs(np.log(mass * bins)).max())
    return np.array(out)


def _mvnormal(y):
    t = np.arange(N)
    cov = 0.7 ** np.abs(t[:, None] - t[None, :])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, PRIOR_SD)
        pm.MvNormal("y", mu, cov=cov, observed=y)
    return model, (np.ones(N), np.zeros(N), cov)


def _gp(y):
    x = np.linspace(0, 8, N)
    k = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / 1.5**2)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, PRIOR_SD)
        gp = pm.gp.Marginal(
            mean_func=pm.gp.mean.Constant(mu), cov_func=pm.gp.cov.ExpQuad(1, ls=1.5)
        )
        gp.marginal_likelihood("y", X=x[:, None], y=y, sigma=0.5)
    return model, (np.ones(N), np.zeros(N), k + (0.25 + 1e-6) * np.eye(N))


def _ar(y):
    rho, init_sd = 0.5, 4.0
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, PRIOR_SD)
        pm.AR(
            "y",
            rho=pt.stack([mu, rho]),
            sigma=1.0,
            constant=True,
            init_dist=pm.Normal.dist(0, init_sd),
            observed=y,
        )
    # A y = mu e + noise: the series' mean is mu A^-1 e, its covariance (A' D A)^-1
    a_mat = np.eye(N)
    a_mat[np.arange(1, N), np.arange(N - 1)] = -rho
    e = np.r_[0.0, np.ones(N - 1)]
    prec = a_mat.T @ np.diag([init_sd**-2] + [1.0] * (N - 1)) @ a_mat
    return model, (np.linalg.solve(a_mat, e), np.zeros(N), np.linalg.inv(prec))


MODELS = {"mvnormal_ar1": _mvnormal, "gp_marginal": _gp, "ar": _ar}


def _fit(build, y):
    model, reference = build(y)
    return model, _sample(model), reference


def _sample(model):
    with model:
        return pm.sample(**DRAWS)


@pytest.mark.parametrize("name", MODELS)
def test_default_audit_matches_exact_removal(name):
    y = _data()
    model, idata, reference = _fit(MODELS[name], y)
    res = edp.audit(idata, model, bins=BINS, random_seed=1, progressbar=False)
    exact = exact_epsilons(*reference, y)
    assert int(np.argmax(res.pointwise["epsilon"].values)) == int(np.argmax(exact))
    assert res.epsilon == pytest.approx(exact.max(), rel=0.10)
    np.testing.assert_allclose(res.pointwise["epsilon"].values, exact, rtol=0.15, atol=0.03)
    # the headline is confirmed by refits with the record unobserved (no build_model)
    assert res.verification == "confirmed", res.verification_note


def test_replacement_matches_exact(tmp_path):
    y = _data()
    model, idata, reference = _fit(_mvnormal, y)
    res = edp.audit(
        idata,
        model,
        bins=BINS,
        random_seed=1,
        progressbar=False,
        neighbour=edp.Replace(-4.0),
    )
    exact = exact_epsilons(*reference, y, replacement=-4.0)
    assert int(np.argmax(res.pointwise["epsilon"].values)) == int(np.argmax(exact))
    assert res.epsilon == pytest.approx(exact.max(), rel=0.10)
    assert res.verification == "confirmed", res.verification_note
    # the views and the file work as for a factorised model
    path = tmp_path / "coupled.nc"
    res.to_netcdf(path)
    back = edp.EDPResult.from_netcdf(path)
    np.testing.assert_array_equal(back.pointwise["epsilon"], res.pointwise["epsilon"])
    assert f"{res.epsilon:.3f}" in res._repr_html_()
    axes = res.plot()
    assert axes.shape == (2, 2)
    plt.close(axes[0, 0].figure)


GROUPS = np.repeat(np.arange(4), 2)


@pytest.fixture(scope="module")
def grouped():
    """Eight AR(1)-correlated MvNormal records, fitted once: ``(model, idata, reference)``."""
    y = _data()[:8]
    t = np.arange(8)
    cov = 0.7 ** np.abs(t[:, None] - t[None, :])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, PRIOR_SD)
        pm.MvNormal("y", mu, cov=cov, observed=y)
        idata = pm.sample(**DRAWS)
    return model, idata, (np.ones(8), np.zeros(8), cov, y)


def test_groups_of_a_coupled_likelihood_reweight_by_their_block_conditional(grouped):
    """A group's weight is its block's joint conditional, not a sum of its records'."""
    model, idata, reference = grouped
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)  # a k-hat of 0.76: compared below
        res = edp.audit(
            idata,
            model,
            bins=5,
            random_seed=1,
            progressbar=False,
            method="psis",
            neighbour=edp.Remove(groups=GROUPS),
        )
    exact = exact_epsilons(*reference, bins=5, groups=GROUPS)
    # reweighted estimates (4,000 draws): within 10% of exact, as for single records
    np.testing.assert_allclose(res.pointwise["epsilon"].values, exact, rtol=0.10, atol=0.02)


def test_groups_of_a_coupled_likelihood_are_confirmed_by_refits(grouped):
    """The default audit of groups: reweighted by blocks, confirmed by refitting them."""
    model, idata, reference = grouped
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        res = edp.audit(
            idata,
            model,
            bins=5,
            random_seed=1,
            progressbar=False,
            neighbour=edp.Remove(groups=GROUPS),
        )
    # the printout says what a record is, how it is reweighted, and that refits leave it
    # unobserved (estimated from their own draws: pooling would reuse the conditionals)
    (line,) = res.records
    assert "Gaussian closed form" in line and "refits leave the record unobserved" in line
    assert res.verification in ("confirmed", "corrected"), res.verification_note
    exact = exact_epsilons(*reference, bins=5, groups=GROUPS)
    eps = res.pointwise["epsilon"].values
    refitted = res.pointwise["method"].values == "refit"
    # the last group (k-hat 0.76) is refitted: its estimate from 4,000 refit draws has a
    # standard deviation of 10% of exact over audit seeds (tests/reference/
    # coupled_group_refits.py: mean 3.955, sd 0.371, exact 3.801), so it is held to three of
    # its own standard errors; the reweighted groups (standard errors near 2%) to 10%
    assert refitted.tolist() == [False, False, False, True]
    np.testing.assert_allclose(eps[~refitted], exact[~refitted], rtol=0.10, atol=0.02)
    se = res.pointwise["epsilon_mcse"].values[refitted]
    assert np.all(se > 0) and np.all(se < 0.15 * exact[refitted]), se
    assert np.all(np.abs(eps[refitted] - exact[refitted]) < 3 * se), (eps, exact, se)


def _gp_estimated(y):
    x = np.linspace(0, 8, y.size)
    with pm.Model() as model:
        ls = pm.Gamma("ls", 6, 4)
        eta = pm.HalfNormal("eta", 2)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(1, ls=ls))
        gp.marginal_likelihood("y", X=x[:, None], y=y, sigma=0.5)
    return model


def _ar_estimated(y):
    with pm.Model() as model:
        rho = pm.Normal("rho", 0, 0.5)
        sigma = pm.HalfNormal("sigma", 2)
        pm.AR("y", rho=[rho], sigma=sigma, init_dist=pm.Normal.dist(0, 4), observed=y)
    return model


@pytest.mark.parametrize("build", [_gp_estimated, _ar_estimated], ids=["gp", "ar"])
def test_estimated_hyperparameters_agree_with_refits_of_every_record(build):
    """Reweighting through the conditionals agrees with refitting every record."""
    y = _data()[:12] - 1.0
    model = build(y)
    with model:
        idata = pm.sample(**DRAWS)
    common = dict(bins=5, random_seed=1, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)  # a correction is also a warning
        res = edp.audit(idata, model, **common)
    # confirmed on PyMC 6; on PyMC 5's draws of the GP one verification refit disagreed
    # (z = 3.9) and the audit corrected itself with refits: either way refits back it
    assert res.verification in ("confirmed", "corrected"), res.verification_note
    refit = edp.audit(idata, model, method="refit", **common)

    def se(r):
        lo, hi = r.interval(0.9)["epsilon_i"].values.T
        return (hi - lo) / (2 * 1.645)

    z = np.abs(res.pointwise["epsilon"].values - refit.pointwise["epsilon"].values) / np.hypot(
        se(res), se(refit)
    )
    # 12 records: the largest of 12 |z| stays under 3.5 but for a 0.5% chance
    assert z.max() < 3.5, z


# ------------------------------------------------ sequential and non-Gaussian likelihoods
# Likelihoods that couple their records however many terms they have: a Kalman filter
# written one term per time step, and random walks whose conditionals are not Gaussian.
# References: exact B-EDP, in closed form (a Gaussian posterior) or on a grid of the
# parameters (tests/reference/coupled_grid.py). Per-record epsilons within 10% (+0.03),
# the Monte-Carlo error of reweighting 2,000 draws; the worst record (and parameter) exact.
P0 = 4.0  # the filter's initial state variance


def _kalman_terms(v, sigma_level, sigma_obs, level0):
    """A local-level Kalman filter, ``log p(y_t | y_1..y_t-1)`` per time step (a scan)."""
    return kalman_terms(v, level0, sigma_level, sigma_obs, p0=P0)


def _by_record(res) -> np.ndarray:
    """``(neighbour, parameter)`` epsilons of a scalar-parameter audit."""
    nodes = res.parameters.children.values()
    return np.stack([node["epsilon_neighbour"].values for node in nodes], axis=1)


def _check_against(res, exact: np.ndarray, top: str = "exact") -> None:
    """Per-record epsilons within 10% (+0.03), and the worst record and parameter exact.

    ``top="tie"``: the audit's worst record is one whose exact epsilon is within the same
    tolerance of the largest (two records of nearly equal epsilon, as in a walk).
    """
    got = _by_record(res)
    np.testing.assert_allclose(got.max(axis=1), exact.max(axis=1), rtol=0.10, atol=0.03)
    at = np.unravel_index(got.argmax(), got.shape)
    if top == "tie":
        assert exact[at] >= 0.9 * exact.max() - 0.03, (at, exact.max(axis=1))
    else:
        assert at == np.unravel_index(exact.argmax(), exact.shape)


def test_a_kalman_filter_with_known_variances_matches_its_gaussian_posterior():
    """Variances fixed: the initial level's posterior, and each leave-one-out, are Gaussian."""
    y = _data()
    sigma_level, sigma_obs = 0.6, 1.0
    with pm.Model() as model:
        level0 = pm.Normal("level0", 0, PRIOR_SD)
        pm.CustomDist("y", sigma_level, sigma_obs, level0, logp=_kalman_terms, observed=y)
    idata = _sample(model)
    res = edp.audit(idata, model, bins=BINS, random_seed=1, progressbar=False)
    t = np.arange(N)
    cov = P0 + sigma_level**2 * np.minimum(t[:, None], t[None, :]) + sigma_obs**2 * np.eye(N)
    exact = exact_epsilons(np.ones(N), np.zeros(N), cov, y)
    _check_against(res, exact[:, None])
    (line,) = res.records
    assert "cannot be read (Scan" in line and "checked" in line, line  # not per-term
    assert res.verification in ("confirmed", "corrected"), res.verification_note


def _nile(n=40):
    import statsmodels.api as sm

    return sm.datasets.nile.load_pandas().data["volume"].to_numpy()[:n] / 100


def test_a_kalman_filter_with_free_variances_matches_the_grid():
    """The Nile's local level, both variances free: exact leave-one-year-out on a grid."""
    from reference.coupled_grid import bedp, kalman_local_level

    y = _nile()
    with pm.Model() as model:
        level = pm.HalfNormal("sigma_level", 1.0)
        obs = pm.HalfNormal("sigma_obs", 2.0)
        pm.CustomDist("y", level, obs, 10.0, logp=_kalman_terms, observed=y)
    idata = _sample(model)
    res = edp.audit(idata, model, bins=BINS, random_seed=1, progressbar=False)
    post = get_group(idata, "posterior")
    axes = [
        np.linspace(1e-3, 1.6 * float(post["sigma_level"].max()), 300),
        np.linspace(1e-3, 1.4 * float(post["sigma_obs"].max()), 300),
    ]
    level_, obs_ = np.meshgrid(*axes, indexing="ij")
    prior = stats.halfnorm.logpdf(level_, scale=1.0) + stats.halfnorm.logpdf(obs_, scale=2.0)
    full = kalman_local_level(y, level_**2, obs_**2, P0, a0=10.0)
    loo = [kalman_local_level(y, level_**2, obs_**2, P0, a0=10.0, missing=i) for i in range(40)]
    exact = bedp(prior, full, np.stack(loo), axes, BINS)
    _check_against(res, exact)
    assert res.verification in ("confirmed", "corrected"), res.verification_note


def _random_walk(y):
    """A Gaussian random walk with drift ``mu``: the AR(1) above with ``rho = 1``."""
    init_sd = 4.0
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, PRIOR_SD)
        pm.GaussianRandomWalk(
            "y", mu=mu, sigma=1.0, init_dist=pm.Normal.dist(0, init_sd), observed=y
        )
    a_mat = np.eye(N)
    a_mat[np.arange(1, N), np.arange(N - 1)] = -1.0
    e = np.r_[0.0, np.ones(N - 1)]
    prec = a_mat.T @ np.diag([init_sd**-2] + [1.0] * (N - 1)) @ a_mat
    return model, (np.linalg.solve(a_mat, e), np.zeros(N), np.linalg.inv(prec))


def test_interior_records_of_a_random_walk_are_exactly_zero_and_agree_with_refits():
    """Only the ends of a random walk inform its drift: the rest have exact epsilon 0.

    Their conditionals do not depend on ``mu``, so their log ratios are constant up to
    rounding: no Pareto tail to fit (k-hat -inf, not inf or NaN weights), and reweighting
    gives 0. Verification refits some of them, by the raw estimator (their own draws): the
    largest of ten noisy bin log ratios, judged at z = 3 over those ten (3.64). Such a
    judge says "disagree" wrongly in about 1.6% of audits (``tests/auditing/
    test_verification.py``); on PyMC 6 this audit meets one (record 2, 0.289 refitted,
    z = 3.8: issue 39's CI). Over the whole batch's 50 log ratios (4.04, 0.5% of null
    audits) every refit of an interior record agrees with 0, and what a false alarm does is
    bounded: the headline stays within 15% (+0.03) of the exact one. (Issue 39's 0.8 bug,
    "0.000 estimated vs 0.000 refitted, z = -72.7", is ``test_zero_against_zero_is_agreement``.)
    """
    from pymc_edp.auditing.verification import family_z

    y = np.cumsum(_data())
    model, idata, reference = _fit(_random_walk, y)
    exact = exact_epsilons(*reference, y)
    interior = np.arange(1, N - 1)
    assert exact[interior].max() < 1e-13
    kw = dict(bins=BINS, random_seed=1, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", edp.EDPWarning)  # no lower bound, no weights' warning
        psis = edp.audit(idata, model, method="psis", **kw)
    eps = psis.pointwise["epsilon"].values
    assert np.all(eps[interior] <= edp.base.limits.LOG_RATIO_RESOLUTION)
    assert np.all(np.isneginf(psis.pointwise["pareto_k"].values[interior]))
    np.testing.assert_allclose(eps, exact, rtol=0.15, atol=0.03)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        res = edp.audit(idata, model, **kw)
    assert res.verification in ("confirmed", "corrected"), res.verification_note
    pw = res.pointwise
    checked = pw["verification"].values[interior] != 0
    assert checked.any()  # verification refitted some of them
    z = pw["verify_z"].values[interior][checked]
    assert np.all(np.abs(z) <= family_z(3.0, 5 * BINS)), z
    assert res.epsilon == pytest.approx(exact.max(), rel=0.15, abs=0.03)
    assert int(np.argmax(pw["epsilon"].values)) == int(np.argmax(exact))


# Random walks whose conditionals are not Gaussian: never reweighted with a Gaussian
# conditional (quadrature), each within 10% (+0.03) of its exact B-EDP on a parameter grid
# whose leave-one-out likelihoods integrate the missing value out on a fine grid of it.
WALK_N = 16
#: The walks' fits: fewer draws than the Gaussian cases (each draw costs a quadrature per
#: record), enough for 10% at B = 10.
WALK_DRAWS = dict(DRAWS, draws=1000)


def _walk_data(seed, skew=0.0, bump=2.5):
    rng = np.random.default_rng(seed)
    steps = stats.skewnorm.rvs(skew, scale=0.5, size=WALK_N - 1, random_state=rng)
    y = np.concatenate([[0.3], 0.3 + np.cumsum(steps)])
    y[8] += bump  # an outlying record
    return y


def _skew_walk_logp(v, sigma, alpha):
    steps = pm.logp(pm.SkewNormal.dist(mu=0.0, sigma=sigma, alpha=alpha), v[1:] - v[:-1])
    return steps.sum() + pm.logp(pm.Normal.dist(0.0, 10.0), v[0])


def _arch_logp(v, a1):
    scale = pt.sqrt(0.2 + a1 * v[:-1] ** 2)
    return pm.logp(pm.Normal.dist(0.0, scale), v[1:]).sum() + pm.logp(pm.Normal.dist(0, 10), v[0])


def _gauss_laplace_logp(v, mu):
    """Gaussian terms and a Laplace smoothness term |y_t - y_t-1|: one term per value."""
    smooth = pt.concatenate([pt.zeros(1), pt.abs(v[1:] - v[:-1])])
    return pm.logp(pm.Normal.dist(mu, 2.0), v) - smooth / 0.5


def _walk_reference(name, y, axis):
    """Exact B-EDP of the walk ``name`` on a grid ``axis`` of its one parameter."""
    from reference.coupled_grid import bedp, joint_log_lik, skew_normal_logpdf, walk_log_lik

    nodes = np.linspace(y.min() - 8, y.max() + 8, 4001)
    p = axis[:, None]
    if name == "skew_walk":
        prior = stats.norm.logpdf(axis, 0, 5)

        def step(d):  # the innovations' log-density, parameters on the first axis
            return skew_normal_logpdf(
                np.asarray(d)[None, ...], 0.5, p.reshape(-1, *[1] * np.ndim(d))
            )

        full = walk_log_lik(y, step)
        loo = [walk_log_lik(y, step, missing=i, nodes=nodes) for i in range(y.size)]
    elif name == "arch":
        prior = stats.beta.logpdf(axis, 2, 2)

        def joint(z):  # on a grid of one value (last axis), with the other values fixed
            var = 0.2 + p[..., None] * z[..., :-1] ** 2
            return stats.norm.logpdf(z[..., 1:], 0, np.sqrt(var)).sum(axis=-1) + (
                stats.norm.logpdf(z[..., 0], 0, 10)
            )

        full, loo = joint_log_lik(y, joint, nodes)
    else:
        prior = stats.norm.logpdf(axis, 0, 3)

        def joint(z):
            smooth = np.abs(np.diff(z, axis=-1)).sum(axis=-1) / 0.5
            return stats.norm.logpdf(z, p[..., None], 2.0).sum(axis=-1) - smooth

        full, loo = joint_log_lik(y, joint, nodes)
    return bedp(prior, full, np.stack(loo), [axis], BINS)


WALKS = {
    "skew_walk": (lambda: pm.Normal("alpha", 0, 5), _skew_walk_logp, 0.5, 4.0),
    "arch": (lambda: pm.Beta("a1", 2, 2), _arch_logp, None, 0.0),
    "gauss_laplace": (lambda: pm.Normal("mu", 0, 3), _gauss_laplace_logp, None, 0.0),
}


def _check_walk(res, exact: np.ndarray) -> None:
    """Reweighted records within 10% (+0.03) of exact, refitted ones within their interval.

    A record whose weights PSIS distrusts (k-hat above the threshold) is refitted; its raw
    estimate (refit draws counted in bins, 2,000 of them) carries a Monte-Carlo error of
    about 0.1 per bin, and is checked against its own 90% interval (+0.03).
    """
    pw = res.pointwise
    got, best = _by_record(res).max(axis=1), exact.max(axis=1)
    refit = pw["method"].values == "refit"
    np.testing.assert_allclose(got[~refit], best[~refit], rtol=0.10, atol=0.03)
    low, high = pw["epsilon_lower"].values[refit], pw["epsilon_upper"].values[refit]
    assert np.all((low - 0.03 <= best[refit]) & (best[refit] <= high + 0.03)), (
        np.flatnonzero(refit),
        low,
        best[refit],
        high,
    )
    top = int(np.argmax(got))
    assert best[top] >= 0.9 * best.max() - 0.03 or refit[top], (top, best)
    assert abs(res.epsilon - best.max()) <= 0.10 * best.max() + 0.03


_WALK_FITS: dict = {}


def _walk_fit(name):
    """``(model, idata, y, exact)`` of the walk ``name``, fitted once per test session."""
    if name not in _WALK_FITS:
        prior, logp, sigma, skew = WALKS[name]
        # the skew walk without an outlier: against skewed steps one sets epsilon near 5,
        # where B = 10 bins of 2,000 draws resolve only a lower bound
        y = _walk_data(3, skew, bump=0.0 if name == "skew_walk" else 2.5)
        with pm.Model() as model:
            param = prior()
            args = (sigma, param) if sigma is not None else (param,)
            pm.CustomDist("y", *args, logp=logp, observed=y)
            idata = pm.sample(**WALK_DRAWS)
        draws = get_group(idata, "posterior")[model.free_RVs[0].name].values
        axis = np.linspace(draws.min() - 3 * draws.std(), draws.max() + 3 * draws.std(), 600)
        if name == "arch":
            axis = np.linspace(1e-4, 1 - 1e-4, 600)
        _WALK_FITS[name] = (model, idata, y, _walk_reference(name, y, axis))
    return _WALK_FITS[name]


#: Known and open: on PyMC 5 (its own NUTS, seeded) the skew walk's fit reweights its two top
#: records 19% low with good k-hats, their intervals short of the exact values, and the
#: verification's raw refits, higher, agree within their band and keep them.
_SKEW_ON_PYMC5 = pytest.mark.xfail(
    int(pm.__version__.split(".")[0]) < 6,
    reason=(
        "PyMC 5 fit: records 11 and 12 reweight to 0.549 and 0.532 (k-hat 0.17, 90% intervals "
        "[0.49, 0.61] and [0.47, 0.59]) against exact 0.679 and 0.661; their raw refits (0.80, "
        "z = 2.2 and 2.4) agree within the family-wise 3.64 and keep them"
    ),
    strict=True,
)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=_SKEW_ON_PYMC5) if n == "skew_walk" else n for n in WALKS]
)
def test_a_non_gaussian_coupled_likelihood_is_integrated_and_exact(name):
    model, idata, _, exact = _walk_fit(name)
    with warnings.catch_warnings():  # a record's k-hat or a refit's empty bin may be said
        warnings.simplefilter("ignore", edp.EDPWarning)
        res = edp.audit(idata, model, bins=BINS, random_seed=1, progressbar=False)
    (line,) = res.records
    assert "adaptive quadrature" in line, line  # never a Gaussian conditional
    _check_walk(res, exact)
    assert res.verification in ("confirmed", "corrected"), res.verification_note


def test_verification_catches_a_wrong_conditional(monkeypatch):
    """Issue 39: refits that leave the record unobserved catch a wrong reweighting.

    The skew-normal walk's conditionals are forced to the Gaussian expansion (as version
    0.8 took them): the reweighted epsilons are wrong, the raw refits (their own draws,
    never the conditional under test) disagree, and every refitted record takes its exact
    value (within its interval); the headline is not below the exact one.
    """
    from pymc_edp.model.coupled import CoupledLikelihood

    model, idata, _, exact = _walk_fit("skew_walk")
    # version 0.8's test: a curvature that is finite and positive
    monkeypatch.setattr(
        CoupledLikelihood,
        "_quadratic",
        lambda self, draws, fd: bool(np.all(np.isfinite(fd["q"])) and np.all(fd["q"] > 0)),
    )
    kw = dict(bins=BINS, random_seed=1, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        wrong = _by_record(edp.audit(idata, model, method="psis", **kw)).max(axis=1)
    assert np.nanmax(np.abs(wrong - exact.max(axis=1))) > 0.1 + 0.1 * exact.max()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", edp.EDPWarning)
        res = edp.audit(idata, model, **kw)
    said = [str(w.message) for w in caught]
    assert any("disagree" in m for m in said), (res.verification_note, said)
    (line,) = res.records
    assert "Gaussian" in line and "checked" in line, line  # the wrong route was taken
    assert res.verification == "corrected", res.verification_note
    pw = res.pointwise
    refit = pw["method"].values == "refit"
    assert refit.any()
    best = exact.max(axis=1)[refit]  # refitted records: within their own interval
    low, high = pw["epsilon_lower"].values[refit], pw["epsilon_upper"].values[refit]
    assert np.all((low - 0.03 <= best) & (best <= high + 0.03)), (low, best, high)
    # what reweighting still says elsewhere may be too high, never too low at the top
    assert res.epsilon >= 0.9 * exact.max() - 0.03

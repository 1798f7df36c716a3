"""Tests of pymc_edp.diagnostics: Monte-Carlo error, EMI, empty bins, eps(B), (eps, delta)."""

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import pymc_edp as edp
from pymc_edp import diagnostics
from pymc_edp.base import hockey
from pymc_edp.base.mcse import ess_mean
from pymc_edp.conjugate import beta_binomial_edp, normal_normal_edp, normal_normal_posterior
from pymc_edp.model.compat import ess, from_dict

# Charest & Han's Normal-Normal setting: sigma^2 = 5, prior N(10, 3), n = 100
SIGMA, MU0, SIGMA0 = np.sqrt(5.0), 10.0, np.sqrt(3.0)
Y = np.random.default_rng(2017).normal(10.0, SIGMA, 100)
M1, S1 = normal_normal_posterior(Y, SIGMA, MU0, SIGMA0)


def _normal_draws(rng, chains, draws, rho=0.0):
    """Exact posterior draws of mu, AR(1)-correlated within each chain when rho > 0."""
    e = rng.normal(size=(chains, draws))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0]
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * e[:, t]
    return M1 + S1 * x


def _normal_audit(mu, y=Y, bins=20, **kwargs):
    ll = stats.norm.logpdf(y[None, None, :], mu[..., None], SIGMA)
    idata = from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    return edp.audit(idata, var_names="mu", bins=bins, method="psis", progressbar=False, **kwargs)


@pytest.fixture(scope="module")
def nn_result():
    return _normal_audit(_normal_draws(np.random.default_rng(11), 2, 5000))


@pytest.fixture(scope="module")
def bb_model():
    import pymc as pm

    with pm.Model() as model:
        p = pm.Beta("p", 0.5, 0.5)
        pm.Bernoulli("y", p, observed=np.zeros(5))
    return model


def _bb_audit(model, rng, m=10_000, smoothing=0.01):
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


def _hockey_normal(m_p, s_p, m_q, s_q, e):
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


# ------------------------------------------------------------------------------ kernels
def test_ess_mean_matches_arviz(rng):
    x = _normal_draws(rng, 4, 500, rho=0.8).reshape(1, -1)
    x = np.concatenate([x, rng.normal(size=(1, 2000)), np.ones((1, 2000))])
    mine = ess_mean(x, n_chains=4)
    ref = [
        float(ess(xr.Dataset({"x": (("chain", "draw"), row.reshape(4, 500))}))["x"])
        for row in x[:2]
    ]
    # same estimator, same arithmetic: agreement to rounding
    np.testing.assert_allclose(mine[:2], ref, rtol=1e-10)
    assert mine[2] == 2000  # constant row, as ArviZ


def test_hockey_stick_kernel_matches_quadrature(rng):
    theta = rng.normal(size=40_000)
    lw = stats.norm.logpdf(theta, 0.3, 1.1) - stats.norm.logpdf(theta)
    eps = np.array([0.0, 0.1, 0.3])
    got = hockey.hockey_stick_delta(lw[None], eps)[0]

    def exact(e):
        return max(_hockey_normal(0, 1, 0.3, 1.1, e), _hockey_normal(0.3, 1.1, 0, 1, e))

    # Monte-Carlo s.d. of a mean of (r - e^eps)_+ over 40,000 draws is below 0.002
    np.testing.assert_allclose(got, [exact(e) for e in eps], atol=0.006)
    # pooled form: uniform reference weights give the same numbers
    same = hockey.hockey_stick_delta(lw[None], eps, np.zeros(theta.size))
    np.testing.assert_allclose(same[0], got, rtol=1e-12)


# -------------------------------------------------------------------- Monte-Carlo error
def test_mcse_and_interval_shapes(nn_result):
    res = nn_result
    se = res.mcse()
    iv = res.interval(0.9)
    assert se["epsilon_i"].dims == ("neighbour",)
    assert iv["epsilon_i"].dims == ("neighbour", "interval")
    # the reweighting estimate the errors refer to is the audit's epsilon_i
    np.testing.assert_allclose(se["estimate_i"], res.pointwise["epsilon"], rtol=1e-12)
    lo, hi = iv["epsilon"].values
    assert lo < res.epsilon < hi
    assert np.all(iv["epsilon_i"].sel(interval="lower") <= iv["estimate_i"])
    assert np.all(iv["epsilon_i"].sel(interval="upper") >= iv["estimate_i"])
    wider = res.interval(0.99)["epsilon"].values
    assert wider[0] < lo and wider[1] > hi
    assert res.mcse() is not se  # a fresh Dataset, from the cached arrays
    assert float(se["epsilon"]) > 0


def test_mcse_needs_weights():
    res = _normal_audit(_normal_draws(np.random.default_rng(1), 1, 1000), store_weights=False)
    with pytest.raises(ValueError, match="store_weights=True"):
        res.mcse()


@pytest.mark.slow
@pytest.mark.parametrize(("chains", "draws", "rho"), [(2, 1000, 0.0), (4, 1000, 0.8)])
def test_interval_coverage_normal_normal(chains, draws, rho):
    """Nominal 90% intervals cover the exact epsilon in 80-97% of 100 replications.

    i.i.d. draws and AR(1) draws with rho = 0.8 (ESS about 1/9 of the draws): without the
    ESS of the influence series the AR(1) intervals would be 3x too narrow and cover ~40%.
    The record is the most exposed one (largest exact epsilon_i), which sets epsilon. With
    100 replications the coverage count has s.d. 3, so 80-97 is the brief's band around 90.
    """
    exact = normal_normal_edp(Y, SIGMA, MU0, SIGMA0, 20, pointwise=True)
    worst = int(np.argmax(exact))
    hits_i = hits = 0
    for r in range(100):
        res = _normal_audit(_normal_draws(np.random.default_rng([7, r]), chains, draws, rho))
        iv = res.interval(0.9)
        lo, hi = iv["epsilon_i"].values[worst]
        hits_i += lo <= exact[worst] <= hi
        lo, hi = iv["epsilon"].values
        hits += lo <= exact.max() <= hi
    assert 80 <= hits_i <= 97
    assert 80 <= hits <= 97


# ----------------------------------------------------------------------------- EMI etc.
def test_emi_and_empty_bins_table2_setting(bb_model):
    """Table 2 setting (x = 0, B = 20) at M = 10,000: EMI, empty bins, smoothing."""
    res = _bb_audit(bb_model, np.random.default_rng(2013))
    exact = beta_binomial_edp(5, 0, 0.5, 0.5, 20)
    assert abs(res.epsilon - exact) < 0.3  # MCSE is ~0.1 here
    em = res.emi()  # epsilon = 6.8 is far above the EMI: no warning
    assert em.attrs["n_draws"] == 5000
    # counts of 5,000 independent draws in 20 bins: relative s.d. of a bin's count ratio
    # sqrt(2 * 0.95 / 250) = 0.087 (both halves noisy); the max over 20 bins is 1-4 s.d.
    assert 0.087 <= float(em["emi"]) <= 0.35
    eb = res.empty_bins()
    # reweighting: every bin holds 500 draws with positive weight, so none is empty ...
    assert int(eb["n_empty"].sum()) == 0
    # ... but the lowest bin has a neighbour ratio e^-6.8: 500 * 0.0011 = 0.56 draws' worth
    assert int(eb["n_under_one_draw"].sum()) == 5  # that bin, for each of the 5 records
    assert eb.attrs["smoothing"] == 0.01
    sens = res.smoothing_sensitivity()
    assert np.all(np.isfinite(sens))  # no empty bin, so alpha = 0 stays finite
    assert float(sens.sel(smoothing=0.0)) > float(sens.sel(smoothing=1.0))


def test_emi_warns_when_epsilon_within_two_emi():
    rng = np.random.default_rng(5)
    y = rng.normal(10.0, SIGMA, 3000)  # 3,000 records: each moves the posterior very little
    m1, s1 = normal_normal_posterior(y, SIGMA, MU0, SIGMA0)
    res = _normal_audit(m1 + s1 * rng.normal(size=(1, 2000)), y=y)
    with pytest.warns(edp.EDPWarning, match="not clearly above the noise floor"):
        em = res.emi()
    assert res.epsilon <= 2 * float(em["emi"])
    assert "within 2 EMI" in em.attrs["message"]


def test_zero_smoothing_infinite_is_announced(rng):
    mu = rng.normal(size=(1, 2000))
    # one record whose removal puts e^(-hundreds) weight on the lower half: empty bins
    ll = (-300.0 * mu)[..., None]
    idata = from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    with pytest.warns(edp.EDPWarning) as record:
        res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    messages = [str(w.message) for w in record]
    assert any("k-hat" in m for m in messages)
    # the audit itself says that alpha = 0 would be infinite (not silently smoothed)
    assert any("without smoothing epsilon would be infinite" in m for m in messages)
    eb = res.empty_bins()
    assert int(eb["n_empty"].sum()) > 0
    with pytest.warns(edp.EDPWarning, match="smoothing = 0 gives an infinite epsilon"):
        sens = res.smoothing_sensitivity((0.0, 0.01))
    assert np.isinf(sens.values[0]) and np.isfinite(sens.values[1])


# --------------------------------------------------------------------- eps(B), B -> inf
def test_curve_from_stored_weights(nn_result):
    res = nn_result
    bins = [5, 10, 20, 50, 100]
    curve = res.curve(bins=bins)
    assert curve.dims == ("bins",)
    assert curve.sel(bins=20).item() == pytest.approx(res.epsilon, rel=1e-12)
    exact = normal_normal_edp(Y, SIGMA, MU0, SIGMA0, bins)
    # 10,000 draws: every B within its own 99.9% Monte-Carlo band (z = 3.3 x mcse)
    assert np.all(np.abs(curve.values - exact) <= 3.3 * curve["mcse"].values)
    assert np.all(np.diff(curve.values) > 0)  # epsilon grows with B (sec. 3.3)
    assert np.all(curve["lower"] <= curve) and np.all(curve <= curve["upper"])
    # the B -> inf reference bounds every B; normal tails: the supremum diverges
    assert curve.attrs["continuous_limit"] > curve.max()
    assert curve.attrs["continuous_limit_diverges"]
    assert "diverges" in curve.attrs["note"]


def test_continuous_limit_bounded_ratio(rng):
    # posterior of p uniform on (0.2, 0.8), one record y = 1: removing it reweights by 1/p,
    # so r = (1/p) / E[1/p] with E[1/p] = log(4) / 0.6, bounded: sup |log r| = log(5 E^-1)
    p = rng.uniform(0.2, 0.8, size=(1, 20_000))
    ll = np.log(p)[..., None]
    idata = from_dict({"posterior": {"p": p}, "log_likelihood": {"y": ll}})
    res = edp.audit(idata, var_names="p", bins=20, method="psis", progressbar=False)
    lim = res.continuous_limit()
    expected = np.log(5.0 * 0.6 / np.log(4.0))
    # the self-normalised E[1/p] has relative error ~0.3% at 20,000 draws
    assert float(lim["epsilon_inf"]) == pytest.approx(expected, abs=0.01)
    assert not bool(lim["diverges"])
    assert lim.attrs["note"] == ""


# -------------------------------------------------------------------- (eps, delta) profile
def _exact_delta(i, e):
    m_i, s_i = normal_normal_posterior(np.delete(Y, i), SIGMA, MU0, SIGMA0)
    return max(_hockey_normal(M1, S1, m_i, s_i, e), _hockey_normal(m_i, s_i, M1, S1, e))


def test_delta_profile_normal_normal(nn_result):
    """delta(eps) from the weights within 0.005 of the exact hockey-stick divergence."""
    eps = [0.05, 0.1, 0.2]
    prof = nn_result.delta_profile(eps, targets=[0.05])
    exact_i = np.array([[_exact_delta(i, e) for e in eps] for i in range(Y.size)])
    # 10,000 i.i.d. draws: Monte-Carlo s.d. of each delta_i below 0.0015, so 0.005 is > 3 s.d.
    np.testing.assert_allclose(prof["delta"], exact_i.max(axis=0), atol=0.005)
    np.testing.assert_allclose(prof["delta_i"], exact_i, atol=0.006)
    star = 1 - np.prod(1 - exact_i, axis=0)
    # delta* compounds 100 records' errors (correlated through the shared draws)
    np.testing.assert_allclose(prof["delta_star"], star, atol=0.03)
    assert np.all(prof["delta_star"] >= prof["delta"])
    e_at = float(prof["epsilon_delta"].sel(target=0.05))
    at = nn_result.delta_profile([e_at, max(e_at - 1e-3, 0)])["delta"].values
    assert at[0] <= 0.05 < at[1]


def test_bin_log_ratios_and_report(nn_result):
    res = nn_result
    lr = res.bin_log_ratios()
    assert lr.dims == ("parameter", "bin")
    assert float(np.abs(lr).max()) == pytest.approx(res.epsilon, rel=1e-12)
    text = res.diagnose()
    assert "interval" in text and "EMI" in text and "B -> inf" in text


def test_diagnostics_describe_refits_as_reweighting():
    res = _normal_audit(_normal_draws(np.random.default_rng(3), 1, 1000))
    assert not bool(diagnostics.epsilon_mcse(res)["refit"].any())
    assert res.delta_profile([0.1]).attrs["refit_neighbours"] == 0


def test_several_parameters_and_chains(rng):
    """Vector parameter + scalar, 3 chains: the diagnostics follow the audit's layout."""
    n, chains, draws = 40, 3, 800
    x = rng.normal(size=n)
    y = 1.0 + 0.5 * x + rng.normal(0, 0.8, n)
    # exact posterior of (intercept, slope) under a flat prior with sigma = 0.8 known; a
    # second variable "sigma" (draws of a nuisance the likelihood does not use)
    design = np.column_stack([np.ones(n), x])
    cov = 0.8**2 * np.linalg.inv(design.T @ design)
    mean_beta = np.linalg.solve(design.T @ design, design.T @ y)
    beta = rng.multivariate_normal(mean_beta, cov, size=(chains, draws))
    sigma = np.exp(rng.normal(np.log(0.8), 0.11, (chains, draws)))
    ll = stats.norm.logpdf(y, beta[..., :1] + beta[..., 1:] * x, 0.8)
    idata = from_dict(
        {"posterior": {"beta": beta, "sigma": sigma}, "log_likelihood": {"y": ll}},
        dims={"beta": ["coef"]},
        coords={"coef": ["a", "b"]},
    )
    res = edp.audit(idata, bins=10, method="psis", progressbar=False)
    assert res.parameters.sizes["parameter"] == 3
    se = res.mcse()
    np.testing.assert_allclose(se["estimate_i"], res.pointwise["epsilon"], rtol=1e-12)
    assert np.all(np.isfinite(se["epsilon_i"])) and np.all(se["ess_i"] > 0)
    iv = res.interval()
    assert iv["epsilon"].values[0] <= res.epsilon <= iv["epsilon"].values[1]
    assert res.emi()["emi_parameter"].sizes["parameter"] == 3
    assert set(res.empty_bins()["var_name"].values) == {"beta", "sigma"}
    curve = res.curve(bins=[5, 10, 20])
    assert curve.sel(bins=10).item() == pytest.approx(res.epsilon, rel=1e-12)
    # the joint density ratio bounds every marginal's B-EDP
    assert float(res.continuous_limit()["epsilon_inf"]) >= curve.max()
    assert res.bin_log_ratios().sizes == {"parameter": 3, "bin": 10}

"""The PyMC glue (pymc_edp.model.pymc) on tiny real PyMC models and fake posteriors.

Every log-likelihood is checked against scipy's densities evaluated directly at the
posterior draws. The posteriors are built with ``compat.from_dict``, so each test runs on
the container of the installed stack (InferenceData on PyMC 5, DataTree on PyMC 6).
"""

import re

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

from pymc_edp.model.compat import from_dict, get_group, group_names, has_group, make_container
from pymc_edp.model.pymc import (
    ElementwiseLogLik,
    check_log_likelihood_matches_model,
    check_model,
    check_model_matches_data,
    ensure_log_likelihood,
    fit_for_model,
    imputed_positions,
    model_observed,
    observed_arrays,
    observed_values,
    potential_records,
    reads_data,
    replacement_log_likelihood,
    sampled_without_nuts,
)

Y = np.array([0.3, -1.2, 2.1, 0.8, 1.5])
N_CHAINS, N_DRAWS = 2, 7
# Log-densities are sums of a few float64 terms of order 1-10: round-off is ~1e-15.
LOGP_ATOL = 1e-10


def normal_model(y=Y) -> pm.Model:
    """``y ~ Normal(mu, sigma)`` with a log-transformed ``sigma``."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu, sigma, observed=y)
    return model


@pytest.fixture(scope="module")
def model():
    return normal_model()


@pytest.fixture(scope="module")
def loglik_y(model):
    """Compiled once for the module: compiling is the slow part."""
    return ElementwiseLogLik(model, "y")


def draws(rng):
    """Posterior draws ``(chain, draw)`` of ``mu`` and ``sigma`` (sigma > 0)."""
    mu = rng.normal(1.0, 0.3, (N_CHAINS, N_DRAWS))
    sigma = rng.uniform(0.5, 2.0, (N_CHAINS, N_DRAWS))
    return mu, sigma


def posterior_container(mu, sigma, observed=Y, **groups):
    data = {"posterior": {"mu": mu, "sigma": sigma}, **groups}
    if observed is not None:
        data["observed_data"] = {"y": observed}
    return from_dict(data)


def expected_loglik(y, mu, sigma) -> np.ndarray:
    """``log N(y_i | mu_s, sigma_s)`` with samples flattened chain-major: (sample, record)."""
    return stats.norm.logpdf(np.asarray(y)[None, :], mu.reshape(-1, 1), sigma.reshape(-1, 1))


# ---------------------------------------------------------------------------------------
# ensure_log_likelihood
# ---------------------------------------------------------------------------------------
def test_ensure_log_likelihood_computes_the_pointwise_loglik(rng, model):
    mu, sigma = draws(rng)
    idata = posterior_container(mu, sigma)
    assert not has_group(idata, "log_likelihood")
    ll = ensure_log_likelihood(idata, model)
    assert isinstance(ll, xr.Dataset)
    assert ll["y"].dims[:2] == ("chain", "draw")
    assert ll["y"].shape == (N_CHAINS, N_DRAWS, Y.size)
    want = stats.norm.logpdf(Y, mu[..., None], sigma[..., None])  # sigma, not log(sigma)
    np.testing.assert_allclose(ll["y"].values, want, rtol=0, atol=LOGP_ATOL)
    assert not has_group(idata, "log_likelihood")  # the user's container is not modified


def test_ensure_log_likelihood_returns_the_existing_group(rng):
    mu, sigma = draws(rng)
    stored = rng.normal(size=(N_CHAINS, N_DRAWS, Y.size))
    idata = posterior_container(mu, sigma, log_likelihood={"y": stored})
    ll = ensure_log_likelihood(idata)  # no model needed: nothing is computed
    np.testing.assert_array_equal(ll["y"].values, stored)


def test_ensure_log_likelihood_errors(rng, model):
    mu, sigma = draws(rng)
    with pytest.raises(ValueError, match="no 'log_likelihood' group and no model was given"):
        ensure_log_likelihood(posterior_container(mu, sigma))
    only_mu = from_dict({"posterior": {"mu": mu}})
    with pytest.raises(ValueError, match=re.escape("free variable(s) ['sigma']")):
        ensure_log_likelihood(only_mu, model)
    no_posterior = from_dict({"observed_data": {"y": Y}})
    with pytest.raises(ValueError, match="has no 'posterior' group"):
        ensure_log_likelihood(no_posterior, model)


# ---------------------------------------------------------------------------------------
# Observed data: observed_values, model_observed, observed_arrays
# ---------------------------------------------------------------------------------------
def test_observed_values_prefers_observed_data_over_the_model(rng, model):
    mu, sigma = draws(rng)
    stored = Y + 10.0  # differs from the model's data, so the source is visible
    idata = posterior_container(mu, sigma, observed=stored)
    np.testing.assert_array_equal(observed_values(idata, model, "y"), stored)
    np.testing.assert_array_equal(observed_values(None, model, "y"), Y)
    no_obs = posterior_container(mu, sigma, observed=None)
    np.testing.assert_array_equal(observed_values(no_obs, model, "y"), Y)


def test_observed_values_from_pm_data():
    # pm.Data is a shared variable (get_value), a plain observed array a constant (.data).
    new = np.array([4.0, 5.0, 6.0])
    with pm.Model() as model:
        data = pm.Data("data", Y)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=data)
    np.testing.assert_array_equal(observed_values(None, model, "y"), Y)
    with model:
        pm.set_data({"data": new})
    np.testing.assert_array_equal(observed_values(None, model, "y"), new)


def test_observed_values_errors(rng, model):
    mu, sigma = draws(rng)
    with pytest.raises(ValueError, match="cannot find the observed values of 'z'"):
        observed_values(posterior_container(mu, sigma), model, "z")
    with pytest.raises(ValueError, match="cannot find the observed values of 'y'"):
        observed_values(posterior_container(mu, sigma, observed=None), None, "y")
    with pytest.raises(ValueError, match="cannot find the observed values of 'mu'"):
        observed_values(None, model, "mu")  # a free variable has no observed values


def test_model_observed_lists_every_observed_variable():
    counts = np.array([3, 0, 2])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        rate = pm.Gamma("rate", 2.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=Y)
        pm.Poisson("k", rate, observed=counts)
    got = model_observed(model)
    assert set(got) == {"y", "k"}
    np.testing.assert_array_equal(got["y"], Y)
    np.testing.assert_array_equal(got["k"], counts)
    with pm.Model() as no_data:
        pm.Normal("mu", 0.0, 1.0)
    assert model_observed(no_data) == {}


def test_observed_arrays(rng, model):
    mu, sigma = draws(rng)
    stored = Y + 10.0
    from_group = observed_arrays(posterior_container(mu, sigma, observed=stored), model)
    assert set(from_group) == {"y"}
    np.testing.assert_array_equal(from_group["y"], stored)
    no_obs = posterior_container(mu, sigma, observed=None)
    from_model = observed_arrays(no_obs, model)
    assert set(from_model) == {"y"}
    np.testing.assert_array_equal(from_model["y"], Y)
    assert observed_arrays(no_obs, None) == {}


# ---------------------------------------------------------------------------------------
# check_model, check_model_matches_data
# ---------------------------------------------------------------------------------------
def test_check_model(model):
    check_model(None)
    check_model(model)
    with pytest.raises(TypeError, match="model must be a pymc.Model, got dict"):
        check_model({"mu": 1.0})
    with pytest.raises(TypeError, match="refit_model must be a pymc.Model, got ndarray"):
        check_model(Y, what="refit_model")


def test_check_model_matches_data_accepts_the_same_data(model):
    check_model_matches_data(model, xr.Dataset({"y": ("obs", Y.copy())}))
    check_model_matches_data(model, xr.Dataset({"other": ("obs", Y + 1.0)}))  # not compared
    with pm.Model() as int_model:
        rate = pm.Gamma("rate", 2.0, 1.0)
        pm.Poisson("k", rate, observed=np.array([3, 0, 2]))
    # the same counts stored as floats are the same data
    check_model_matches_data(int_model, xr.Dataset({"k": ("obs", [3.0, 0.0, 2.0])}))
    # float32 observed_data are the same data, rounded (issue 21: "30 differing values")
    check_model_matches_data(model, xr.Dataset({"y": ("obs", Y.astype(np.float32))}))


def test_check_model_matches_data_compares_the_model_s_data_containers():
    """Issue 21: after pm.set_data a refit used the new covariate without a word."""
    x = np.arange(5.0)
    with pm.Model() as m:
        xd = pm.Data("x", x)
        mu = pm.Normal("mu")
        pm.Normal("y", mu + xd, 1.0, observed=np.ones(5))
    constant = xr.Dataset({"x": ("obs", x)})
    check_model_matches_data(m, None, constant)
    with m:
        pm.set_data({"x": x + 1.0})
    with pytest.raises(ValueError, match=r"model's data 'x' are not the constant_data .*set_data"):
        check_model_matches_data(m, None, constant)


def test_check_model_matches_data_refuses_other_data(model):
    changed = Y.copy()
    changed[[1, 3]] += 0.5
    with pytest.raises(
        ValueError, match=r"observed data 'y' .* \(2 differing value\(s\), up to 0.5\)"
    ):
        check_model_matches_data(model, xr.Dataset({"y": ("obs", changed)}))
    with pytest.raises(ValueError, match=re.escape("(shape (5,) vs (4,))")):
        check_model_matches_data(model, xr.Dataset({"y": ("obs", Y[:4])}))


# ---------------------------------------------------------------------------------------
# ElementwiseLogLik
# ---------------------------------------------------------------------------------------
def test_elementwise_loglik_matches_scipy(rng, loglik_y):
    mu, sigma = draws(rng)
    posterior = get_group(posterior_container(mu, sigma), "posterior")
    y_new = np.array([-3.0, 0.0, 0.25, 1.0, 7.5])
    got = loglik_y(posterior, y_new)
    assert got.shape == (N_CHAINS * N_DRAWS, Y.size)
    np.testing.assert_allclose(got, expected_loglik(y_new, mu, sigma), rtol=0, atol=LOGP_ATOL)


def test_elementwise_loglik_loop_fallback_gives_the_same_values(rng, model):
    mu, sigma = draws(rng)
    posterior = get_group(posterior_container(mu, sigma), "posterior")
    fn = ElementwiseLogLik(model, "y")
    fn._vec = None  # as for a model whose graph cannot be vectorised
    got = fn(posterior, Y)
    np.testing.assert_allclose(got, expected_loglik(Y, mu, sigma), rtol=0, atol=LOGP_ATOL)


def test_elementwise_loglik_vector_parameter_any_dim_order(rng):
    # A parameter with its own dimension, stored with dims in a non-canonical order.
    group = np.array([0, 1, 1, 0, 1])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0, shape=2)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu[group], sigma, observed=Y)
    mu_d = rng.normal(0.0, 1.0, (N_CHAINS, N_DRAWS, 2))
    sigma_d = rng.uniform(0.5, 2.0, (N_CHAINS, N_DRAWS))
    posterior = xr.Dataset(
        {
            "mu": (("mu_dim_0", "chain", "draw"), mu_d.transpose(2, 0, 1)),
            "sigma": (("chain", "draw"), sigma_d),
        }
    )
    got = ElementwiseLogLik(model, "y")(posterior, Y)
    want = stats.norm.logpdf(Y[None, :], mu_d.reshape(-1, 2)[:, group], sigma_d.reshape(-1, 1))
    np.testing.assert_allclose(got, want, rtol=0, atol=LOGP_ATOL)


def test_elementwise_loglik_errors(rng, model, loglik_y):
    with pytest.raises(KeyError, match="'mu' is not an observed variable of the model"):
        ElementwiseLogLik(model, "mu")
    with pytest.raises(KeyError, match="'z' is not an observed variable of the model"):
        ElementwiseLogLik(model, "z")
    mu, _ = draws(rng)
    only_mu = xr.Dataset({"mu": (("chain", "draw"), mu)})
    with pytest.raises(
        ValueError, match=re.escape("lacks the model's free variable(s) ['sigma']")
    ):
        loglik_y(only_mu, Y)


# ---------------------------------------------------------------------------------------
# replacement_log_likelihood
# ---------------------------------------------------------------------------------------
def test_replacement_log_likelihood_matches_scipy(rng, model):
    mu, sigma = draws(rng)
    idata = posterior_container(mu, sigma)
    candidates = np.stack([np.zeros(Y.size), np.linspace(-2.0, 2.0, Y.size), Y + 3.0])
    got = replacement_log_likelihood(idata, model, "y", candidates)
    assert got.shape == (3, N_CHAINS * N_DRAWS, Y.size)
    for c, values in enumerate(candidates):
        np.testing.assert_allclose(
            got[c], expected_loglik(values, mu, sigma), rtol=0, atol=LOGP_ATOL
        )
    # At the observed values it is the pointwise log-likelihood, samples flattened.
    at_y = replacement_log_likelihood(idata, model, "y", Y[None, :])[0]
    ll = ensure_log_likelihood(idata, model)["y"]
    np.testing.assert_allclose(at_y, ll.values.reshape(-1, Y.size), rtol=0, atol=LOGP_ATOL)


def test_replacement_log_likelihood_errors(rng, model):
    mu, sigma = draws(rng)
    with pytest.raises(ValueError, match="neighbour='replace' needs p\\(y' \\| theta\\)"):
        replacement_log_likelihood(posterior_container(mu, sigma), None, "y", Y[None, :])
    only_mu = from_dict({"posterior": {"mu": mu}})
    with pytest.raises(ValueError, match=re.escape("free variable(s) ['sigma']")):
        replacement_log_likelihood(only_mu, model, "y", Y[None, :])


def test_the_stored_log_likelihood_is_checked_against_the_model_s_data_of_now(rng):
    """Issue 39 item 4: after pm.set_data a second audit was refused as "shuffled draws"."""
    x = np.array([0.5, -1.0, 2.0, 0.0, 1.0])
    with pm.Model() as model:
        x_data = pm.Data("x", x)
        y_data = pm.Data("y_data", Y)
        mu = pm.Normal("mu", 0.0, 10.0)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu * x_data, sigma, observed=y_data, shape=x_data.shape)
    mu, sigma = draws(rng)
    posterior = get_group(posterior_container(mu, sigma), "posterior")

    def stored(x, y):
        ll = stats.norm.logpdf(y, mu[..., None] * x, sigma[..., None])
        return xr.Dataset({"y": (("chain", "draw", "y_dim_0"), ll)})

    check_log_likelihood_matches_model(stored(x, Y), posterior, model, {"y": Y})
    x2, y2 = x[::-1] + 1.0, Y * 2.0
    with model:
        pm.set_data({"x": x2, "y_data": y2})
    check_log_likelihood_matches_model(stored(x2, y2), posterior, model, {"y": y2})
    with pytest.raises(ValueError, match="does not belong to these posterior draws"):
        check_log_likelihood_matches_model(stored(x, y2), posterior, model, {"y": y2})


def test_reads_data_tells_constants_from_copies_of_the_data():
    """Issue 31: a fixed cutpoint or an LKJ unit diagonal is no data; copies of y are."""
    import pytensor.tensor as pt

    y = np.array([0, 1, 2, 3, 0, 2])
    x = np.array([0.5, -1.0, 0.2, 1.1, -0.3, 0.7])
    rows = np.random.default_rng(0).normal(size=(6, 2))
    with pm.Model() as model:
        d = pm.HalfNormal("d", 1.0, shape=2)
        cut = pm.Deterministic("cut", pt.concatenate([pt.as_tensor([0.0]), pt.cumsum(d)]))
        beta = pm.Normal("beta")
        pm.OrderedLogistic("y", beta * x, cut, observed=y)
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=2, eta=2, sd_dist=pm.Exponential.dist(1), compute_corr=True
        )
        pm.MvNormal("rows", 0.0, chol=chol, observed=rows)
        xs = pm.Data("xs", x)
        pm.Deterministic("copy_y", pt.as_tensor(y) + 0 * beta)
        pm.Deterministic("copy_first", pt.as_tensor(rows)[0] + 0 * beta)
        pm.Deterministic("copy_data", xs + 0 * beta)
        pm.Deterministic("scaled", 2.0 * beta)
    corr = [v.name for v in model.deterministics if v.name.endswith("corr")]
    names = ["cut", "d", "beta", "copy_y", "copy_first", "copy_data", "scaled", "y", *corr]
    out = reads_data(model, [*names, "not_a_variable"])
    assert out == {
        "cut": False,
        "d": False,
        "beta": False,
        "copy_y": True,
        "copy_first": True,
        "copy_data": True,
        "scaled": False,
        **dict.fromkeys(corr, False),
    }
    assert corr  # the correlation matrix is a model variable on both PyMC versions


@pytest.mark.filterwarnings("ignore:Data in y contains missing values")
@pytest.mark.parametrize(
    "data",
    [
        np.array([0.1, 0.2, np.nan, 0.4, 0.5, np.nan, 0.7]),
        np.array([[0.1, np.nan, 0.3], [0.4, 0.5, np.nan]]),
        np.ma.masked_array([0.1, 0.2, 0.3, 0.4], mask=[1, 0, 0, 1]),
    ],
    ids=["nan", "2d", "masked"],
)
def test_imputed_positions_are_the_observed_entries_of_the_data(rng, data):
    with pm.Model() as m:
        mu = pm.Normal("mu")
        pm.Normal("y", mu, observed=data)
    observed = np.ma.masked_invalid(data)
    expected = np.flatnonzero(~np.ma.getmaskarray(observed))
    joined, positions = imputed_positions(m, None, None, "y_observed")
    assert joined == "y"
    np.testing.assert_array_equal(positions, expected)
    # without the model: the entries of the joined y that no draw changes
    y = np.broadcast_to(np.ma.filled(observed, 0.0), (N_CHAINS, N_DRAWS, *data.shape)).copy()
    free = rng.normal(size=(N_CHAINS, N_DRAWS, data.size - expected.size))
    y.reshape(N_CHAINS, N_DRAWS, -1)[..., np.ma.getmaskarray(observed).ravel()] = free
    post = get_group(from_dict({"posterior": {"y": y, "y_unobserved": free}}), "posterior")
    values = np.ma.compressed(observed)
    _, positions = imputed_positions(None, post, values, "y_observed")
    np.testing.assert_array_equal(positions, expected)
    # what is not the observed part of an imputed variable has none
    assert imputed_positions(m, post, values, "y") is None
    assert imputed_positions(None, post, values[::-1], "y_observed") is None
    assert imputed_positions(None, post.drop_vars("y_unobserved"), values, "y_observed") is None


def test_potential_records_finds_the_records_a_potential_weights(rng):
    # regression weights as observed y plus pm.Potential((w - 1) * logp): records 1 and 3
    # are partly in the Potential, the others (weight 1) are not; a penalty on the
    # parameters and a Potential over other data hold no record of y
    y, w = Y.copy(), np.array([1.0, 4.0, 1.0, 0.5, 1.0])
    with pm.Model() as m:
        mu = pm.Normal("mu")
        sigma = pm.HalfNormal("sigma")
        obs = pm.Normal("y", mu, sigma, observed=y)
        pm.Potential("weights", ((w - 1) * pm.logp(obs, y)).sum())
        pm.Potential("penalty", -(mu**2))
        pm.Potential("others", pm.logp(pm.Normal.dist(mu, 1.0), np.array([5.0, 6.0])).sum())
    post = get_group(
        from_dict(
            {
                "posterior": {
                    "mu": rng.normal(size=(N_CHAINS, N_DRAWS)),
                    "sigma": rng.uniform(0.5, 2.0, (N_CHAINS, N_DRAWS)),
                }
            }
        ),
        "posterior",
    )
    found = potential_records(m, post)
    assert list(found) == ["weights"] and list(found["weights"]) == ["y"]
    np.testing.assert_array_equal(found["weights"]["y"], w != 1)
    # without draws (or data the Potential cannot be differentiated in): every record
    assert potential_records(m) == {"weights": {"y": None}}
    with pm.Model() as counts:
        lam = pm.Gamma("lam", 2.0, 1.0)
        k = np.array([1, 0, 3])
        obs = pm.Poisson("k", lam, observed=k)
        pm.Potential("weights", (2.0 * pm.logp(obs, k)).sum())
    post = get_group(from_dict({"posterior": {"lam": np.ones((N_CHAINS, N_DRAWS))}}), "posterior")
    assert potential_records(counts, post) == {"weights": {"k": None}}


# ------------------------------------------------------------ step methods, libraries
def test_variables_pymc_samples_without_nuts():
    with pm.Model() as model:
        pm.Poisson("k", 3.0)
        pm.Bernoulli("b", 0.5)
        pm.Normal("mu", 0.0, 1.0)
    assert sampled_without_nuts(model) == {"k": "Metropolis", "b": "BinaryGibbsMetropolis"}
    assert sampled_without_nuts(normal_model()) == {}


def test_a_bart_variable_is_sampled_by_pgbart():
    from support import bart_regression

    build, (x, y, _) = bart_regression()
    assert sampled_without_nuts(build(x, y)) == {"mu": "PGBART"}


# ------------------------------------------------------------------------ bambi fits
def _without(data, group):
    return make_container({g: get_group(data, g) for g in group_names(data) if g != group})


@pytest.fixture(scope="module")
def grunfeld_centred():
    from support import bambi_grunfeld

    return bambi_grunfeld(center_predictors=True)


@pytest.fixture(scope="module")
def grunfeld_uncentred():
    from support import bambi_grunfeld

    return bambi_grunfeld(center_predictors=False)


def test_a_bambi_model_is_not_the_pymc_model(grunfeld_uncentred):
    model, _ = grunfeld_uncentred
    with pytest.raises(TypeError, match=r"pass the PyMC model it built, model.backend.model"):
        check_model(model)


def test_bambis_offsets_are_recovered_and_its_fit_checked(grunfeld_uncentred):
    """Uncentred predictors: bambi's draws are its PyMC model's once the offsets are back."""
    model, idata = grunfeld_uncentred
    pymc_model = model.backend.model
    post = get_group(idata, "posterior")
    assert "1|firm_offset" not in post  # bambi leaves it out
    completed = fit_for_model(idata, pymc_model)
    offset = completed.posterior["1|firm_offset"]
    sigma = post["1|firm_sigma"]
    # what bambi kept: 1|firm = 1|firm_offset * 1|firm_sigma
    np.testing.assert_allclose(offset * sigma, post["1|firm"], rtol=1e-10, atol=1e-8)
    # and the model's log-likelihood at the completed draws is bambi's
    ll = ensure_log_likelihood(completed.replace(log_likelihood=None), pymc_model)
    np.testing.assert_allclose(
        ll["invest"].values, get_group(idata, "log_likelihood")["invest"].values, rtol=1e-8
    )


def test_bambis_uncentred_intercept_is_refused(grunfeld_centred):
    """bambi samples centred predictors and reports the uncentred intercept (-53 vs 133 here).

    The model's log-likelihood at bambi's draws is then wrong: refused, with the remedy.
    """
    model, idata = grunfeld_centred
    with pytest.raises(ValueError, match="center_predictors=False.*model=None, method='psis'"):
        fit_for_model(idata, model.backend.model)


def test_a_bambi_fit_without_its_log_likelihood_cannot_be_checked(grunfeld_uncentred):
    model, idata = grunfeld_uncentred
    bare = _without(idata, "log_likelihood")
    with pytest.raises(ValueError, match=r"model.compute_log_likelihood\(idata\)"):
        fit_for_model(bare, model.backend.model)

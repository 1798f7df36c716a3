import inspect
import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from support import NOT_CONVERGED, set_group

import pymc_edp as edp
from pymc_edp import conjugate
from pymc_edp.model.compat import from_dict, get_group, has_group, make_container

SAMPLE_KW = {"progressbar": False, "compute_convergence_checks": False}


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def normal_normal():
    """Charest & Han's Normal-Normal study: n = 100, y ~ N(10, 5), prior N(10, 3)."""
    rng = np.random.default_rng(100)
    sigma, mu0, sigma0 = np.sqrt(5.0), 10.0, np.sqrt(3.0)
    y = rng.normal(10.0, sigma, 100)
    with pm.Model() as model:
        mu = pm.Normal("mu", mu0, sigma0)
        pm.Normal("y", mu, sigma, observed=y)
        idata = pm.sample(
            2500,
            tune=1000,
            chains=4,
            cores=2,
            random_seed=11,
            **SAMPLE_KW,
        )
        pm.compute_log_likelihood(idata, progressbar=False)
    return idata, model, (y, sigma, mu0, sigma0)


@pytest.fixture(scope="module")
def bernoulli_table2():
    """Charest & Han Table 2 setting: Beta(0.5, 0.5) prior, n = 5, x = 1."""
    y = np.array([1, 0, 0, 0, 0])
    with pm.Model() as model:
        p = pm.Beta("p", 0.5, 0.5)
        pm.Bernoulli("y", p, observed=y)
        # 4 x 10,000 draws: see tests/reference/psis_replace_spread.py for the MC spread
        idata = pm.sample(
            10_000,
            tune=1000,
            chains=4,
            cores=2,
            random_seed=5,
            **SAMPLE_KW,
        )
        pm.compute_log_likelihood(idata, progressbar=False)
    return idata, model


def fake_idata(rng, n=8, n_chains=2, n_draws=1000):
    """A conjugate Normal-mean posterior with its exact pointwise log-likelihood."""
    y = rng.normal(0.0, 1.0, n)
    post_sd = 1 / np.sqrt(1 + n)
    mu = rng.normal(y.sum() / (1 + n), post_sd, (n_chains, n_draws))
    ll = stats.norm.logpdf(y, mu[..., None], 1.0)
    return from_dict(
        {
            "posterior": {"mu": mu, "exp_mu": np.exp(mu)},
            "log_likelihood": {"y": ll},
            "observed_data": {"y": y},
        },
        coords={"obs": [f"r{i}" for i in range(n)]},
        dims={"y": ["obs"]},
    )


# --------------------------------------------------------------- accuracy (the papers)
@pytest.mark.slow
@pytest.mark.parametrize("bins", [5, 10, 20, 50])
def test_normal_normal_psis_within_3_percent(normal_normal, bins):
    idata, _, (y, sigma, mu0, sigma0) = normal_normal
    res = edp.audit(idata, bins=bins, method="psis", progressbar=False)
    exact = conjugate.normal_normal_edp(y, sigma, mu0, sigma0, bins, neighbour="remove")
    # Must-show tolerance: 3%, or 3 Monte-Carlo standard errors of this estimate where that is
    # larger. At B = 50 the audit's own MCSE is 1.3-1.9% of epsilon (seeds 11-13, PyMC's NUTS
    # and nutpie, which PyMC 6 picks when installed), so a fixed 3% is a ~2-sigma bound there
    # and seed 11 under nutpie misses it by 0.6% (+3.6%); its bias is under 1% (DESIGN.md).
    mcse = float(res.mcse()["epsilon"])
    assert abs(res.epsilon - exact) <= max(0.03 * exact, 3 * mcse)
    # the worst record is the one the exact computation names
    exact_i = conjugate.normal_normal_edp(y, sigma, mu0, sigma0, bins, pointwise=True)
    assert res.pointwise["epsilon"].values.argmax() == exact_i.argmax()
    assert np.all(res.pointwise["pareto_k"].values < res.khat_threshold)


TABLE2_X1 = {5: 2.16, 10: 2.49, 20: 2.97}


@pytest.mark.slow
# The 1 -> 0 flip reweights Beta(1.5, 4.5) by (1 - p) / p: P(w > t) ~ t^(-3/2) near p = 0,
# so its true Pareto shape is k = 2/3, on the 0.7 threshold; the k-hat flag may fire.
@pytest.mark.filterwarnings("ignore:Pareto k-hat above:pymc_edp.EDPWarning")
@pytest.mark.parametrize("bins", [5, 10, 20])
def test_bernoulli_replace_table2(bernoulli_table2, bins):
    idata, model = bernoulli_table2
    res = edp.audit(idata, model, bins=bins, method="psis", neighbour="replace", progressbar=False)
    # k-hat of the heavy neighbour estimates the exact tail shape 2/3 (k-hat sd ~0.05 here)
    assert res.pointwise["pareto_k"].values[0] == pytest.approx(2 / 3, abs=0.1)
    # within 5% of Charest & Han Table 2 (about 4 MC standard deviations at 40,000 draws)
    assert res.epsilon == pytest.approx(TABLE2_X1[bins], rel=0.05)
    exact = conjugate.beta_binomial_edp(5, 1, 0.5, 0.5, bins, neighbour="replace")
    assert res.epsilon == pytest.approx(exact, rel=0.05)
    # each neighbour against its exact value: 1 -> 0 gives Beta(0.5, 5.5), 0 -> 1 Beta(2.5, 3.5)
    edges = stats.beta(1.5, 4.5).ppf(np.linspace(0, 1, bins + 1))
    for k, (a, b) in enumerate([(0.5, 5.5), (2.5, 3.5)]):
        exact_k = np.max(np.abs(np.log(np.diff(stats.beta(a, b).cdf(edges)) * bins)))
        assert res.pointwise["epsilon"].values[k] == pytest.approx(exact_k, rel=0.05)
    np.testing.assert_allclose(res.pointwise["epsilon"].values[2:], res.pointwise["epsilon"][1])
    assert res.neighbour == "replace"
    np.testing.assert_array_equal(res.pointwise["worst_replacement"].values, 0)


# ------------------------------------------------------------------ behaviour
def test_basic_result_structure(rng):
    idata = fake_idata(rng)
    res = edp.audit(idata, bins=10, method="psis", progressbar=False)
    assert set(res.epsilon_by_var) == {"mu", "exp_mu"}
    assert res.epsilon == max(float(v) for v in res.epsilon_by_var.values())
    assert list(res.pointwise["neighbour"].values) == [f"r{i}" for i in range(8)]
    assert res.pointwise["epsilon"].max() == res.epsilon
    assert res.log_weights.shape == (8, 2000)
    np.testing.assert_allclose(np.exp(res.log_weights).sum("sample"), 1.0, rtol=1e-10)
    assert res.summary().shape[0] == 2


def test_monotone_transform_same_epsilon(rng):
    """exp_mu = exp(mu): bins are quantiles, so both have the same epsilon (S % B == 0)."""
    res = edp.audit(fake_idata(rng), bins=20, method="psis", progressbar=False)
    by_var = res.epsilon_by_var
    assert float(by_var["exp_mu"]) == pytest.approx(float(by_var["mu"]), rel=1e-12)


def test_auto_without_model_warns_only_when_needed(rng):
    idata = fake_idata(rng)
    res = edp.audit(idata, bins=10, progressbar=False)  # good k-hat: silent
    assert res.method == "psis" and res.warnings == ()
    # an outlier makes one neighbour's weights heavy-tailed
    ll = idata.log_likelihood["y"].values.copy()
    mu = idata.posterior["mu"].values
    ll[..., 0] = stats.norm.logpdf(12.0, mu, 0.3)
    bad = from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    with pytest.warns(edp.EDPWarning) as record:
        res = edp.audit(bad, bins=10, progressbar=False)
    assert res.pointwise["pareto_k"].values[0] > res.khat_threshold
    assert "k-hat above" in res.warnings[0]
    assert [str(w.message) for w in record] == list(res.warnings)
    assert "very bad" in repr(res)
    # without a model nothing can confirm the headline, and the result says so
    assert res.verification == "unverified" and "no model" in res.verification_note
    assert "Verification: unverified: no model" in repr(res)
    # the outlier's weights leave bins with ~e^-200 mass: no smoothing, so no ceiling ...
    assert res.pointwise["epsilon"].values[0] > 50
    # ... where smoothing=0.01 would cap it near log(S / (B alpha)) and flag a lower bound
    with pytest.warns(edp.EDPWarning) as record:
        capped = edp.audit(bad, bins=10, smoothing=0.01, progressbar=False)
    assert any("smoothing constant, not the data" in str(w.message) for w in record)
    assert capped.lower_bound and capped.epsilon < np.log(2000 / 10 / 0.01) + 0.01


def test_groups_equal_presummed_records(rng):
    """Leave-one-group-out equals removing a record whose log-lik is the group's sum."""
    mu = rng.normal(0.3, 0.2, (2, 1000))
    y1 = rng.normal(0.3, 1, 6)
    y2 = rng.normal(0.3, 1, 3)
    ll1 = stats.norm.logpdf(y1, mu[..., None], 1)
    ll2 = stats.norm.logpdf(y2, mu[..., None], 1)
    person1 = np.array(["ann", "ann", "bob", "bob", "cy", "cy"])
    person2 = np.array(["ann", "bob", "cy"])
    idata = from_dict(
        {"posterior": {"mu": mu}, "log_likelihood": {"y1": ll1, "y2": ll2}},
        coords={"obs1": np.arange(6), "obs2": np.arange(3)},
        dims={"y1": ["obs1"], "y2": ["obs2"]},
    )
    ll_group = get_group(idata, "log_likelihood")
    set_group(
        idata,
        "log_likelihood",
        ll_group.assign_coords(person=("obs1", person1), person2=("obs2", person2)),
    )
    res = edp.audit(
        idata,
        bins=10,
        method="psis",
        neighbour={"groups": {"y1": person1, "y2": person2}},
        progressbar=False,
    )
    summed = ll1[..., 0::2] + ll1[..., 1::2] + ll2
    ref = edp.audit(
        from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": summed}}),
        bins=10,
        method="psis",
        progressbar=False,
    )
    assert list(res.pointwise["neighbour"].values) == ["ann", "bob", "cy"]
    np.testing.assert_allclose(res.pointwise["epsilon"], ref.pointwise["epsilon"], rtol=1e-9)
    np.testing.assert_array_equal(res.pointwise["n_rows"], [3, 3, 3])
    assert res.neighbour == "remove (groups)"
    # a coordinate name on a single observed variable works too
    res1 = edp.audit(
        idata,
        bins=10,
        method="psis",
        neighbour=edp.Remove(groups="person", observed="y1"),
        progressbar=False,
    )
    assert list(res1.pointwise["neighbour"].values) == ["ann", "bob", "cy"]


@pytest.mark.slow
@pytest.mark.both_stacks
def test_multivariate_rows_are_records(rng):
    """An MvNormal observation contributes one record per row."""
    y = rng.multivariate_normal([0.5, -0.5], [[1, 0.3], [0.3, 1]], size=12)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1, shape=2)
        pm.MvNormal("y", mu, np.array([[1, 0.3], [0.3, 1]]), observed=y)
        idata = pm.sample(500, tune=300, chains=2, cores=1, random_seed=1, **SAMPLE_KW)
    res = edp.audit(idata, model, bins=5, method="psis", progressbar=False)
    assert res.n_neighbours == 12
    post = idata.posterior["mu"].values
    ll = np.stack(
        [
            stats.multivariate_normal([0, 0], [[1, 0.3], [0.3, 1]]).logpdf(y[i] - post)
            for i in range(12)
        ],
        axis=-1,
    )
    ref = edp.audit(
        from_dict({"posterior": {"mu": post}, "log_likelihood": {"y": ll}}),
        bins=5,
        method="psis",
        progressbar=False,
    )
    np.testing.assert_allclose(res.pointwise["epsilon"], ref.pointwise["epsilon"], rtol=1e-8)


def test_log_likelihood_computed_from_model(rng):
    y = rng.normal(1.0, 1.0, 10)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        pm.Normal("y", mu, 1.0, observed=y)
        idata = pm.sample(500, tune=300, chains=2, cores=1, random_seed=2, **SAMPLE_KW)
    assert not has_group(idata, "log_likelihood")
    res = edp.audit(idata, model, bins=5, method="psis", progressbar=False)
    full = pm.compute_log_likelihood(idata, model=model, progressbar=False)
    ref = edp.audit(full, bins=5, method="psis", progressbar=False)
    assert res.epsilon == pytest.approx(ref.epsilon, rel=1e-12)


def test_replace_candidates_forms(rng):
    y = rng.normal(0.0, 1.0, 6)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1.0, observed=y)
        idata = pm.sample(
            500,
            tune=300,
            chains=2,
            cores=1,
            random_seed=3,
            **SAMPLE_KW,
        )
        pm.compute_log_likelihood(idata, progressbar=False)
    both = edp.audit(
        idata,
        model,
        bins=5,
        method="psis",
        neighbour=edp.Replace([-3.0, 3.0]),
        progressbar=False,
    )
    lo = edp.audit(
        idata,
        model,
        bins=5,
        method="psis",
        neighbour=edp.Replace(edp.PerRecord(np.full(6, -3.0))),
        progressbar=False,
    )
    hi = edp.audit(
        idata,
        model,
        bins=5,
        method="psis",
        neighbour=edp.Replace({"y": edp.PerRecord(np.full((1, 6), 3.0))}),
        progressbar=False,
    )
    # the worst case over candidates is the larger of the single-candidate audits
    np.testing.assert_allclose(
        both.pointwise["epsilon"],
        np.maximum(lo.pointwise["epsilon"], hi.pointwise["epsilon"]),
        rtol=1e-12,
    )
    chosen = np.where(hi.pointwise["epsilon"] > lo.pointwise["epsilon"], 1, 0)
    np.testing.assert_array_equal(both.pointwise["worst_replacement"], chosen)
    # replacing a record by its own value changes nothing
    same = edp.audit(
        idata,
        model,
        bins=5,
        method="psis",
        neighbour=edp.Replace(edp.PerRecord(y)),
        progressbar=False,
    )
    np.testing.assert_allclose(same.pointwise["epsilon"], 0.0, atol=1e-12)
    # the reweighted replace epsilon matches the exact Normal-Normal value
    exact = conjugate.normal_normal_edp(
        y, 1.0, 0.0, 1.0, 5, neighbour="replace", replacements=np.full(6, 3.0)
    )
    assert hi.epsilon == pytest.approx(exact, rel=0.1)  # 1,000 draws: ~3% MC sd


# ------------------------------------------------------------------- bad input
def test_missing_log_likelihood_without_model(rng):
    idata = from_dict({"posterior": {"mu": rng.normal(size=(2, 500))}})
    with pytest.raises(ValueError, match="no 'log_likelihood' group.*compute_log_likelihood"):
        edp.audit(idata, method="psis", progressbar=False)


def test_unknown_var_names(rng):
    with pytest.raises(KeyError, match="nope.*posterior has variables"):
        edp.audit(fake_idata(rng), var_names=["nope"], method="psis", progressbar=False)


def test_nan_log_likelihood(rng):
    idata = fake_idata(rng)
    idata.log_likelihood["y"][1, 3, 4] = np.nan
    with pytest.raises(ValueError, match=r"NaN.*record y\[r4\]"):
        edp.audit(idata, method="psis", progressbar=False)


@pytest.mark.slow
@pytest.mark.both_stacks
@NOT_CONVERGED
def test_non_factorised_fake_and_pymc(rng):
    mu = rng.normal(size=(2, 500))
    idata = from_dict(
        {"posterior": {"mu": mu}, "log_likelihood": {"y": rng.normal(size=(2, 500))}}
    )
    with pytest.raises(ValueError, match="does not factorise"):
        edp.audit(idata, bins=5, method="psis", progressbar=False)
    y = rng.normal(size=5)
    with pm.Model() as model:
        m = pm.Normal("m", 0, 1)
        pm.MvNormal("y", m * np.ones(5), np.eye(5) + 0.5, observed=y)
        idata = pm.sample(300, tune=200, chains=1, random_seed=1, **SAMPLE_KW)
    # with the model, each record is reweighted by its Gaussian leave-one-out conditional
    res = edp.audit(idata, model, bins=5, method="psis", progressbar=False)
    assert res.n_neighbours == 5 and np.isfinite(res.pointwise["epsilon"].values).all()


def test_too_few_draws_for_bins(rng):
    with pytest.raises(ValueError, match="too few draws.*bins <= 200"):
        edp.audit(fake_idata(rng), bins=250, method="psis", progressbar=False)


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"bins": 1}, ValueError, "bins must be an integer >= 2"),
        ({"bins": 2.5}, ValueError, "bins must be an integer"),
        ({"method": "magic"}, ValueError, "method must be one of"),
        ({"neighbour": "swap"}, ValueError, "neighbour must be one of"),
        ({"smoothing": -1}, ValueError, "smoothing"),
        ({"method": "refit"}, ValueError, "needs the model"),
        ({"refit": {"estimator": "magic"}}, ValueError, "estimator must be"),
        ({"refit": {"max_refits": -1}}, ValueError, "max_refits"),
        ({"refit": {"draw": 10}}, TypeError, r"unknown refit option\(s\) \['draw'\]"),
        ({"refit": 10}, TypeError, "refit= takes a RefitOptions"),
        (
            {"neighbour": {"replacements": [1.0]}},
            ValueError,
            "replacements= are for a relation that replaces",
        ),
        ({"neighbour": "replace"}, ValueError, "needs replacement values"),
        ({"log_likelihood": "disk"}, ValueError, "log_likelihood must be one of"),
    ],
)
def test_argument_errors(rng, kwargs, err, match):
    kwargs = {"method": "psis", **kwargs}
    with pytest.raises(err, match=match):
        edp.audit(fake_idata(rng), progressbar=False, **kwargs)


def test_replace_needs_model(rng):
    idata = fake_idata(rng)
    with pytest.raises(ValueError, match="needs the model"):
        edp.audit(
            idata,
            method="psis",
            neighbour=edp.Replace([0.0]),
            progressbar=False,
        )


def test_not_inference_data():
    with pytest.raises(TypeError, match="InferenceData"):
        edp.audit({"posterior": None}, method="psis")


# ------------------------------------------- never a silently wrong epsilon (issue 12)
def _tiny_sample(model, seed=1, draws=300):
    with model:
        idata = pm.sample(draws, tune=300, chains=2, cores=1, random_seed=seed, **SAMPLE_KW)
        pm.compute_log_likelihood(idata, progressbar=False)
    return idata


@NOT_CONVERGED
def test_posterior_copy_of_the_data_is_never_epsilon_zero():
    """NaN in the data: PyMC adds a posterior ``y`` holding the observed values verbatim."""
    y = np.array([0.3, -1.2, 0.8, np.nan, 1.5, -0.4, 0.1, 2.2])
    with pm.Model() as model, pytest.warns(UserWarning, match="imputed"):
        mu = pm.Normal("mu", 0, 2)
        pm.Normal("y", mu, 1.0, observed=y)
    idata = _tiny_sample(model)
    assert "y" in get_group(idata, "posterior")
    with pytest.warns(edp.EDPWarning, match=r"Left out of the audit: 'y' is a copy.*disclose"):
        res = edp.audit(idata, model, bins=5, method="psis", progressbar=False)
    assert "y" not in res.epsilon_by_var and "mu" in res.epsilon_by_var
    assert [lo.reason for lo in res.left_out] == ["data copy"]
    assert any("Left out of the audit" in w for w in res.warnings)
    with pytest.raises(ValueError, match=r"\['y'\] that cannot be audited.*not 0"):
        edp.audit(idata, model, var_names=["mu", "y"], bins=5, method="psis", progressbar=False)


def test_constant_posterior_variable_is_left_out(rng):
    idata = fake_idata(rng)
    post = get_group(idata, "posterior").assign(fixed=lambda d: d["mu"] * 0 + 3.0)
    set_group(idata, "posterior", post)
    with pytest.warns(edp.EDPWarning, match=r"'fixed' is constant \(3 in every draw\)"):
        res = edp.audit(idata, method="psis", bins=5, progressbar=False)
    assert set(res.epsilon_by_var) == {"mu", "exp_mu"}
    assert [(lo.variable, lo.reason) for lo in res.left_out] == [("fixed", "constant")]
    with pytest.raises(ValueError, match="no posterior variable is left to audit.*'fixed'"):
        edp.audit(idata, var_names="fixed", method="psis", bins=5, progressbar=False)


@pytest.fixture(scope="module")
def poisson_fit():
    y = np.random.default_rng(5).poisson(3.0, 12)
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 0.5)
        pm.Poisson("y", lam, observed=y)
    return _tiny_sample(model, seed=2), model, y


@pytest.mark.parametrize("value", [2.5, 2.9])
@NOT_CONVERGED
def test_non_integer_replacement_on_integer_data_is_refused(poisson_fit, value):
    idata, model, _ = poisson_fit
    with pytest.raises(ValueError, match=r"integers.*non-integer.*truncated"):
        edp.audit(
            idata,
            model,
            neighbour=edp.Replace([value]),
            bins=5,
            progressbar=False,
        )


@NOT_CONVERGED
def test_non_integer_replacement_under_an_integer_likelihood_is_refused_for_float_data():
    """Poisson data stored as floats: the likelihood's support, not the dtype, decides."""
    y = np.random.default_rng(5).poisson(3.0, 12).astype(float)
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 0.5)
        pm.Poisson("y", lam, observed=y)
    idata = _tiny_sample(model, seed=2, draws=100)
    with pytest.raises(ValueError, match=r"integer support.*non-integer.*truncated"):
        edp.audit(
            idata,
            model,
            neighbour=edp.Replace([2.5]),
            progressbar=False,
        )


@pytest.mark.slow
@pytest.mark.both_stacks
@NOT_CONVERGED
def test_whole_number_floats_under_a_normal_accept_any_real_replacement():
    """Ages recorded as 44.0, 51.0, ...: a Normal likelihood is not truncated at 45.5."""
    y = np.round(np.random.default_rng(3).normal(50.0, 8.0, 15))
    with pm.Model() as model:
        mu = pm.Normal("mu", 50.0, 20.0)
        pm.Normal("y", mu, 8.0, observed=y)
    idata = _tiny_sample(model, seed=4, draws=200)
    res = edp.audit(
        idata,
        model,
        neighbour=edp.Replace([45.5]),
        bins=5,
        progressbar=False,
    )
    assert np.isfinite(res.epsilon) and res.epsilon >= 0
    # the replaced value entered the log-likelihood unrounded: 45.5 and 45.0 differ
    res45 = edp.audit(
        idata,
        model,
        neighbour=edp.Replace([45.0]),
        bins=5,
        progressbar=False,
    )
    assert not np.allclose(res.pointwise["epsilon"], res45.pointwise["epsilon"])


@NOT_CONVERGED
def test_replacement_outside_the_support_is_refused(poisson_fit):
    idata, model, _ = poisson_fit
    with pytest.raises(ValueError, match=r"-1.*outside the support"):
        edp.audit(
            idata,
            model,
            neighbour=edp.Replace([-1]),
            bins=5,
            progressbar=False,
        )


@NOT_CONVERGED
def test_length_of_replacements_never_decides_their_meaning(poisson_fit):
    idata, model, y = poisson_fit
    kw = dict(bins=5, method="psis", progressbar=False)

    def replace(values):
        return edp.Replace(values)

    values = (y + 3).tolist()  # as many values as records: still candidates for every record
    as_list = edp.audit(idata, model, neighbour=replace(values), **kw)
    longer = edp.audit(idata, model, neighbour=replace([*values, values[0]]), **kw)
    np.testing.assert_array_equal(as_list.pointwise["epsilon"], longer.pointwise["epsilon"])
    per_record = edp.audit(idata, model, neighbour=replace(edp.PerRecord(np.array(values))), **kw)
    assert per_record.epsilon < as_list.epsilon  # one value per record, not the worst of 12
    np.testing.assert_array_equal(per_record.pointwise["worst_replacement"], 0)
    with pytest.raises(ValueError, match=r"PerRecord"):
        edp.audit(idata, model, neighbour=replace(np.array([values, values])), **kw)
    with pytest.raises(ValueError, match="empty"):
        edp.audit(idata, model, neighbour=replace([]), **kw)


def test_log_likelihood_must_match_records_and_draws(rng):
    y = rng.normal(size=30)
    mu = rng.normal(size=(2, 500))
    ll40 = stats.norm.logpdf(rng.normal(size=40), mu[..., None])
    bad = from_dict(
        {"posterior": {"mu": mu}, "log_likelihood": {"y": ll40}, "observed_data": {"y": y}},
        dims={"y": ["obs"]},
    )
    with pytest.raises(ValueError, match=r"records of shape \(40,\).*shape \(30,\)"):
        edp.audit(bad, bins=5, method="psis", progressbar=False)
    ll = stats.norm.logpdf(y, mu.reshape(4, 250)[..., None])
    bad = from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    with pytest.raises(ValueError, match="chain=4 but the posterior has chain=2"):
        edp.audit(bad, bins=5, method="psis", progressbar=False)


def test_model_with_other_data_is_refused(rng):
    y = rng.normal(size=10)
    mu = rng.normal(y.mean(), 0.3, size=(2, 500))
    idata = from_dict({"posterior": {"mu": mu}, "observed_data": {"y": y}})
    with pm.Model() as other:
        m = pm.Normal("mu", 0, 1)
        pm.Normal("y", m, 1.0, observed=y + 1.0)
    with pytest.raises(ValueError, match=r"not the observed_data.*10 differing"):
        edp.audit(idata, other, bins=5, method="psis", progressbar=False)
    with pm.Model() as same:
        m = pm.Normal("mu", 0, 1)
        pm.Normal("y", m, 1.0, observed=y)
    res = edp.audit(idata, same, bins=5, method="psis", progressbar=False)
    assert np.isfinite(res.epsilon)


def test_helpful_messages_for_bad_arguments(rng):
    idata = fake_idata(rng)
    tiny = from_dict(
        {
            "posterior": {"mu": rng.normal(size=(1, 6))},
            "log_likelihood": {"y": rng.normal(size=(1, 6, 3))},
        }
    )
    with pytest.raises(ValueError, match=r"Draw at least 20 samples") as info:
        edp.audit(tiny, bins=2, method="psis", progressbar=False)
    assert "bins <= 0" not in str(info.value)
    with pytest.raises(TypeError, match="smoothing must be a number"):
        edp.audit(idata, smoothing="0.01", progressbar=False)
    with pytest.raises(ValueError, match="var_names is empty"):
        edp.audit(idata, var_names=[], progressbar=False)
    with pytest.raises(ValueError, match="leaves no variable"):
        edp.audit(idata, var_names=["~mu", "~exp_mu"], progressbar=False)
    for method in ("psis", "auto"):
        with pytest.raises(TypeError, match="model must be a pymc.Model, got str"):
            edp.audit(idata, "model", method=method, progressbar=False)
    scalar = from_dict(
        {
            "posterior": {"mu": rng.normal(size=(2, 500))},
            "log_likelihood": {"y": rng.normal(size=(2, 500))},
            "observed_data": {"y": np.array(1.0)},
        }
    )
    with pytest.raises(ValueError, match="single scalar value.*no record dimension"):
        edp.audit(scalar, method="psis", progressbar=False)


# valid values of audit's arguments, and invalid ones; each example corrupts up to two
_VALID = {
    "bins": st.sampled_from([2, 5, 10, 20, np.int64(8)]),
    "method": st.sampled_from(["auto", "psis"]),
    "neighbour": st.just("remove"),  # "replace" needs the model, which is not at hand
    "smoothing": st.sampled_from([None, 0, 0.01, 1.0]),
    "var_names": st.sampled_from([None, "mu", ["mu", "exp_mu"], ["~mu"]]),
    "filter_vars": st.sampled_from([None, "like"]),
    "groups": st.sampled_from([None, "pair"]),
    "replacements": st.just(None),
    "observed": st.sampled_from([None, "y"]),
    "model": st.just(None),
    "refit": st.sampled_from([None, {"max_refits": 0}, {"max_refits": 2}]),
    "store_weights": st.sampled_from([None, True, False]),
}
_INVALID = {
    "bins": st.one_of(
        st.integers(-2, 1), st.floats(allow_nan=True), st.sampled_from(["10", True, 1e6])
    ),
    "method": st.sampled_from(["bogus", None, 3]),
    "neighbour": st.sampled_from(["swap", None, "replace"]),
    "smoothing": st.one_of(
        st.floats(max_value=-1e-9), st.sampled_from([np.nan, np.inf, "0.01", -1])
    ),
    "var_names": st.sampled_from([[], "nope", ["~mu", "~exp_mu"], 5, ["m"]]),
    "filter_vars": st.sampled_from(["regex", "bogus"]),
    "groups": st.sampled_from(["obs", "nope", [1, 2]]),
    "replacements": st.sampled_from([[], "x", [[0.0, 1.0]], [0.0], "per-record"]),
    "observed": st.sampled_from([[], "nope"]),
    "model": st.just("model"),
    "refit": st.sampled_from([{"max_refits": -1}, {"max_refits": "a"}, {"nope": 1}, 3]),
    "store_weights": st.sampled_from(["no", 1]),
}


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_audit_arguments_never_crash_with_another_exception(data):
    """Valid argument combinations with up to two invalid values: a result whose epsilon is
    finite (or NaN / inf with a warning saying why), or a ValueError / TypeError / KeyError
    with a message, never another exception type."""
    rng = np.random.default_rng(0)
    idata = fake_idata(rng)
    kwargs = {name: data.draw(strategy, label=name) for name, strategy in _VALID.items()}
    bad = data.draw(st.lists(st.sampled_from(sorted(_INVALID)), max_size=2, unique=True))
    kwargs.update({name: data.draw(_INVALID[name], label=f"bad {name}") for name in bad})
    if isinstance(kwargs["groups"], str) and kwargs["groups"] == "pair":
        kwargs["groups"] = np.arange(8) // 2
    if isinstance(kwargs["replacements"], str) and kwargs["replacements"] == "per-record":
        kwargs["replacements"] = edp.PerRecord(np.zeros(8))
    model = kwargs.pop("model")
    fields = ("groups", "replacements", "observed")
    kwargs["neighbour"] = {
        "relation": kwargs["neighbour"],
        **{name: kwargs.pop(name) for name in fields},
    }
    kwargs["chunks"] = {"store_weights": kwargs.pop("store_weights")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = edp.audit(idata, model, progressbar=False, **kwargs)
        except (ValueError, TypeError, KeyError) as err:
            assert str(err).strip()
            # an argument audit() does not take would make every example stop here
            assert "unexpected keyword argument" not in str(err)
            return
    assert np.isfinite(res.epsilon) or res.warnings


@pytest.mark.slow
@pytest.mark.both_stacks
@NOT_CONVERGED
def test_random_seed_none_is_fresh_and_recorded(poisson_fit):
    """None draws a fresh seed (as pm.sample does), recorded so the run can be repeated."""
    idata, model, _ = poisson_fit
    kw = dict(
        bins=5,
        method="refit",
        progressbar=False,
        refit=edp.RefitOptions(draws=100, tune=100, chains=1, max_refits=2),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        first = edp.audit(idata, model, random_seed=None, **kw)
        second = edp.audit(idata, model, random_seed=None, **kw)
        again = edp.audit(idata, model, random_seed=first.random_seed, **kw)
        from_gen = edp.audit(idata, model, random_seed=np.random.default_rng(3), **kw)
        same_gen = edp.audit(idata, model, random_seed=np.random.default_rng(3), **kw)
    assert first.random_seed != second.random_seed
    refitted = first.pointwise["method"].values == "refit"
    assert refitted.sum() == 2
    np.testing.assert_array_equal(again.pointwise["epsilon"], first.pointwise["epsilon"])
    assert list(again.refits.status["seed"]) == list(first.refits.status["seed"])
    assert list(first.refits.status["seed"]) != list(second.refits.status["seed"])
    assert from_gen.random_seed == same_gen.random_seed
    np.testing.assert_array_equal(from_gen.pointwise["epsilon"], same_gen.pointwise["epsilon"])
    with pytest.raises(TypeError, match="random_seed must be None, an integer"):
        edp.audit(idata, model, random_seed="7", **kw)


# ------------------------------------------ the model of the enclosing `with` block (issue 15)
def _assert_same_audit(a, b):
    np.testing.assert_array_equal(a.pointwise["epsilon"], b.pointwise["epsilon"])
    np.testing.assert_array_equal(a.pointwise["method"], b.pointwise["method"])
    assert a.epsilon == b.epsilon and a.summary().equals(b.summary())
    assert a.warnings == b.warnings


@NOT_CONVERGED
def test_audit_takes_the_model_of_the_with_block_remove():
    y = np.random.default_rng(7).normal(1.0, 1.0, 20)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        pm.Normal("y", mu, 1.0, observed=y)
        idata = pm.sample(200, tune=200, chains=1, random_seed=3, **SAMPLE_KW)
        bare = idata.copy()  # no log_likelihood group: computing it needs the model
        pm.compute_log_likelihood(idata, progressbar=False)
        in_context = edp.audit(idata, bins=5, method="psis", progressbar=False)
        computed = edp.audit(bare, bins=5, method="psis", progressbar=False)
    explicit = edp.audit(idata, model, bins=5, method="psis", progressbar=False)
    _assert_same_audit(in_context, explicit)
    _assert_same_audit(computed, explicit)
    # outside a model context, the old error stays
    with pytest.raises(ValueError, match="no 'log_likelihood' group.*compute_log_likelihood"):
        edp.audit(bare, bins=5, method="psis", progressbar=False)


@NOT_CONVERGED
def test_audit_takes_the_model_of_the_with_block_replace():
    y = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0])
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p, observed=y)
        idata = pm.sample(200, tune=200, chains=1, random_seed=4, **SAMPLE_KW)
        pm.compute_log_likelihood(idata, progressbar=False)
        in_context = edp.audit(
            idata, bins=5, method="psis", neighbour="replace", progressbar=False
        )
    explicit = edp.audit(
        idata, model, bins=5, method="psis", neighbour="replace", progressbar=False
    )
    _assert_same_audit(in_context, explicit)
    np.testing.assert_array_equal(
        in_context.pointwise["worst_replacement"], explicit.pointwise["worst_replacement"]
    )
    with pytest.raises(ValueError, match="needs the model"):
        edp.audit(idata, bins=5, method="psis", neighbour="replace", progressbar=False)


@pytest.mark.slow
@pytest.mark.both_stacks
@NOT_CONVERGED
def test_audit_takes_the_model_of_the_with_block_refit(poisson_fit):
    idata, model, _ = poisson_fit
    kw = dict(
        bins=5,
        method="refit",
        random_seed=11,
        progressbar=False,
        refit=edp.RefitOptions(draws=100, tune=100, chains=1, max_refits=1),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        with model:
            in_context = edp.audit(idata, **kw)
        explicit = edp.audit(idata, model, **kw)
    assert (in_context.pointwise["method"].values == "refit").sum() == 1
    _assert_same_audit(in_context, explicit)
    with pytest.raises(ValueError, match="method='refit' needs the model"):
        edp.audit(idata, **kw)


@NOT_CONVERGED
def test_explicit_model_wins_over_the_with_block(poisson_fit):
    idata, model, _ = poisson_fit
    y = get_group(idata, "observed_data")["y"].values
    with pm.Model():  # a model of other data: it is refused, unless a model is passed
        lam = pm.Gamma("lam", 2.0, 0.5)
        pm.Poisson("y", lam, observed=y + 1)
        res = edp.audit(idata, model, bins=5, method="psis", progressbar=False)
        with pytest.raises(ValueError, match=r"not the observed_data.*12 differing"):
            edp.audit(idata, bins=5, method="psis", progressbar=False)
    assert np.isfinite(res.epsilon)


def test_tune_prior_takes_the_model_of_the_with_block():
    with pm.Model():
        sigma0 = pm.Data("sigma0", 1.0)
        mu = pm.Normal("mu", 0.0, sigma0)
        pm.Normal("y", mu, 1.0, observed=np.zeros(5))
        # the context model is used: its variables are looked up
        with pytest.raises(KeyError, match="no variable 'nope'"):
            edp.tune_prior(hyperparameter="nope", target_epsilon=0.3, progressbar=False)
        # ... but never with a builder, which builds its own models
        with pytest.raises(ValueError, match="model_at= needs initial="):
            edp.tune_prior(model_at=lambda v: None, target_epsilon=0.3, progressbar=False)
    with pytest.raises(ValueError, match="pass either model="):
        edp.tune_prior(hyperparameter="sigma0", target_epsilon=0.3, progressbar=False)


# ------------------------------------------------------ hostile inputs (issue 21)
def _normal_model(y, x=None):
    """The model of :func:`fake_idata` (mu ~ N(0, 1), y ~ N(mu, 1)), optionally with data x."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        shift = 0.0 if x is None else 0.0 * pm.Data("x", x)
        pm.Normal("y", mu + shift, 1.0, observed=y)
    return model


def _with_log_likelihood(idata, ll):
    return from_dict(
        {
            "posterior": {"mu": get_group(idata, "posterior")["mu"].values},
            "log_likelihood": {"y": ll},
            "observed_data": {"y": get_group(idata, "observed_data")["y"].values},
        }
    )


@pytest.mark.parametrize("how", ["shuffled draws", "swapped chains"])
def test_a_log_likelihood_of_other_draws_is_refused_with_the_model(rng, how):
    """Item 1: shuffled draws gave 0.14 instead of 0.87, even with model= passed."""
    idata = fake_idata(rng, n=6, n_draws=400)
    y = get_group(idata, "observed_data")["y"].values
    ll = get_group(idata, "log_likelihood")["y"].values
    if how == "shuffled draws":
        bad = ll[:, rng.permutation(ll.shape[1])]
    else:
        bad = ll[::-1]
    model = _normal_model(y)
    kw = {"bins": 5, "method": "psis", "progressbar": False, "random_seed": 3}
    with pytest.raises(ValueError, match=r"does not belong to these posterior draws.*'y'"):
        edp.audit(_with_log_likelihood(idata, bad), model, **kw)
    # the right group passes the check, and gives the audit of the model's own log-likelihood
    good = edp.audit(_with_log_likelihood(idata, ll), model, **kw)
    from_model = edp.audit(_with_log_likelihood(idata, ll), model, log_likelihood="model", **kw)
    assert good.epsilon == pytest.approx(from_model.epsilon, rel=1e-9)


def test_a_model_whose_data_were_changed_with_set_data_is_refused_before_refitting(rng):
    """Item 2: after pm.set_data a refit used the new covariate (2.68 instead of 1.89)."""
    idata = fake_idata(rng, n=6, n_draws=400)
    y = get_group(idata, "observed_data")["y"].values
    x = np.linspace(0.0, 1.0, 6)
    set_group(
        idata, "constant_data", get_group(from_dict({"constant_data": {"x": x}}), "constant_data")
    )
    model = _normal_model(y, x)
    res = edp.audit(idata, model, bins=5, method="psis", progressbar=False)
    assert np.isfinite(res.epsilon)  # the same data: accepted
    with model:
        pm.set_data({"x": x + 1.0})
    with pytest.raises(ValueError, match=r"model's data 'x' are not the constant_data.*set_data"):
        edp.audit(idata, model, bins=5, method="refit", progressbar=False)


def test_records_inside_a_potential_are_refused_or_warned_about(rng):
    """Item 3: data records inside a pm.Potential were left out of the audit silently.

    Issue 39: a Potential summed to one term is refused with how to write it as an observed
    pm.CustomDist, unless the neighbours are named from the other observed variables.
    """
    idata = fake_idata(rng, n=6, n_draws=400)
    y = get_group(idata, "observed_data")["y"].values
    extra = np.array([0.4, -0.2, 1.1])
    with pm.Model() as with_data:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=y)
        pm.Potential("more_records", pm.logp(pm.Normal.dist(mu, 1.0), extra).sum())
    refused = r"Potential 'more_records' reads data.*single term.*CustomDist\(.more_records., mu"
    with pytest.raises(ValueError, match=refused):
        edp.audit(idata, with_data, bins=5, method="psis", progressbar=False)
    only_y = edp.Remove(observed="y")
    with pytest.warns(edp.EDPWarning, match=r"Potential.*'more_records'.*no neighbour"):
        edp.audit(idata, with_data, bins=5, method="psis", neighbour=only_y, progressbar=False)
    with pm.Model() as penalty_only:  # a constraint on the parameters holds no records
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=y)
        pm.Potential("penalty", -0.01 * mu**2)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*Potential", category=edp.EDPWarning)
        res = edp.audit(idata, penalty_only, bins=5, method="psis", progressbar=False)
    assert not any("Potential" in m for m in res.warnings)


def test_most_exposed_refuses_a_negative_or_fractional_k(rng):
    """Item 8: most_exposed(-1) returned every row but the last; 2.5 a slicing error."""
    res = edp.audit(fake_idata(rng, n=6, n_draws=400), bins=5, method="psis", progressbar=False)
    assert len(res.most_exposed(0)) == 0 and len(res.most_exposed(100)) == 6
    with pytest.raises(ValueError, match=r"k must be .*>= 0.*-1"):
        res.most_exposed(-1)
    with pytest.raises(ValueError, match=r"k must be an integer.*2.5"):
        res.most_exposed(2.5)


def test_messages_for_bad_argument_types(rng):
    """var_names=5, ChunkOptions(store_weights='no') and a (sample,) posterior: clear messages."""
    idata = fake_idata(rng, n=6, n_draws=400)
    kw = {"bins": 5, "method": "psis", "progressbar": False}
    with pytest.raises(TypeError, match=r"var_names must be a string or a list.*5"):
        edp.audit(idata, var_names=5, **kw)
    with pytest.raises(TypeError, match=r"store_weights must be True, False or None.*'no'"):
        edp.audit(idata, chunks={"store_weights": "no"}, **kw)
    mu = get_group(idata, "posterior")["mu"].values.reshape(-1)
    stacked = make_container({"posterior": xr.Dataset({"mu": ("sample", mu)})})
    with pytest.raises(ValueError, match=r"without \['chain', 'draw'\].*sample_dims"):
        edp.audit(stacked, **kw)


def test_float32_observed_data_are_the_same_data(rng):
    """'30 differing values' was float32 rounding of the very same data."""
    idata = fake_idata(rng, n=30, n_draws=400)
    y = get_group(idata, "observed_data")["y"].values
    set_group(idata, "observed_data", get_group(idata, "observed_data").astype(np.float32))
    res = edp.audit(idata, _normal_model(y), bins=5, method="psis", progressbar=False)
    assert np.isfinite(res.epsilon)


# ------------------------------------- one spelling per setting (issues 22 and 34)
def test_audit_release_and_tune_prior_spell_audits_settings_as_audit():
    """tune_prior's audit keywords can never drift from audit(): they are audit's keyword
    parameters but idata, model, random_seed and progressbar, in order, with the same
    defaults; audit_release spells the ones it shares the same way."""
    params = inspect.signature(edp.audit).parameters
    skip = {"idata", "model", "random_seed", "progressbar"}
    names = [p for p in params if p not in skip]
    tuning = inspect.signature(edp.tune_prior).parameters
    assert [p for p in tuning if p in names] == names
    assert {name: tuning[name].default for name in names} == {
        name: params[name].default for name in names
    }
    release = inspect.signature(edp.audit_release).parameters
    shared = [p for p in release if p in params and p not in skip]
    assert shared == ["var_names", "filter_vars", "bins", "neighbour", "log_likelihood"]
    assert {n: release[n].default for n in shared} == {n: params[n].default for n in shared}


def test_tune_prior_checks_audits_settings_before_sampling(rng, monkeypatch):
    from pymc_edp.tuning import prior

    def no_sampling(*args, **kwargs):
        raise AssertionError("sampled before the audit's settings were checked")

    monkeypatch.setattr(prior._Sampler, "__call__", no_sampling)
    y = rng.normal(size=6)
    model = _normal_model(y)
    with model:
        pm.Data("s0", 1.0)
    kw = dict(hyperparameter="s0", target_epsilon=0.3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'groups'"):
        edp.tune_prior(model, groups="school", **kw)
    with pytest.raises(ValueError, match="method must be one of"):
        edp.tune_prior(model, method="exact", **kw)
    with pytest.raises(ValueError, match="bins must be"):
        edp.tune_prior(model, bins=1, **kw)
    for release in (None, "draws"):  # an audit's target and a release's
        with pytest.raises(ValueError, match="log_likelihood must be one of"):
            edp.tune_prior(model, release=release, log_likelihood="disk", **kw)


@pytest.mark.parametrize(
    "old",
    [
        {"groups": "school"},
        {"replacements": [0.0]},
        {"observed": "y"},
        {"verify": False},
        {"moment_match": False},
        {"store_weights": True},
        {"prune": False},
    ],
)
def test_old_keywords_are_refused_by_python(rng, old):
    """The keywords that moved into the options objects are not silently accepted."""
    idata = fake_idata(rng, n=6, n_draws=400)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        edp.audit(idata, method="psis", progressbar=False, **old)


@pytest.mark.slow
@pytest.mark.both_stacks
@pytest.mark.parametrize("sampler", ["pymc", "nutpie"])
def test_an_audit_of_a_badly_mixed_funnel_says_the_fit_has_not_converged(sampler):
    """Neal's funnel in its centred form, barely tuned: the audit's headline says what PyMC's
    convergence checks find on the audited variable. PyMC's sampler ran them (told here not to
    log them, which the fit does not record): the audit does not warn again. nutpie did not
    (nor does pm.sample with it): the audit warns in PyMC's words."""
    y = np.random.default_rng(31).normal(0.0, 1.0, 6)
    with pm.Model() as model:
        log_tau = pm.Normal("log_tau", 0.0, 3.0)
        theta = pm.Normal("theta", 0.0, pm.math.exp(log_tau), shape=6)
        pm.Normal("y", theta, 1.0, observed=y)
        idata = pm.sample(
            draws=200,
            tune=5,
            chains=2,
            cores=1,
            random_seed=3,
            nuts_sampler=sampler,
            **SAMPLE_KW,
        )
        pm.compute_log_likelihood(idata, progressbar=False)
    with warnings.catch_warnings(record=True) as caught:  # k-hat warnings may come
        warnings.simplefilter("always")
        res = edp.audit(
            idata, model, var_names="log_tau", bins=5, method="psis", progressbar=False
        )
    said = [str(w.message) for w in caught if "onvergence" in str(w.message)]
    fit = res.convergence
    assert not fit.converged and fit.n_divergent is not None
    assert fit.rhat_var in (None, "log_tau") and fit.ess_bulk_var == "log_tau"
    assert fit.sampler == sampler and fit.checked == (sampler == "pymc")
    note = fit.note()
    assert note in repr(res) and note in res._repr_html_().replace("&#x27;", "'")
    if sampler == "pymc":
        assert note.startswith("Convergence, as PyMC reported when sampling: ")
        assert fit.message() == "" and said == []
    else:
        assert note == fit.message() == said[0] == res.warnings[0]
        assert note.startswith(
            "Convergence checks as pm.sample runs them, on the audited variables (sampled by "
            "nutpie, which does not run them): "
        )

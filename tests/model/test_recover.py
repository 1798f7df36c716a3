"""Free variables a posterior leaves out, recovered (:mod:`pymc_edp.model.recover`)."""

import json
import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_edp as edp
from pymc_edp.core.loglik import relative_efficiency
from pymc_edp.core.select import RECOVERED, recovered_names, select_var_names
from pymc_edp.model import recover
from pymc_edp.model.compat import get_group, make_container
from pymc_edp.model.moment_match import ModelDensity
from pymc_edp.model.pymc import ensure_log_likelihood

SCHOOLS_Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SCHOOLS_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def schools_model():
    """Eight schools, non-centred: ``theta = mu + tau * z`` kept, ``z`` the free variable."""
    with pm.Model(coords={"school": list("ABCDEFGH")}) as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 5.0)
        z = pm.Normal("z", 0.0, 1.0, dims="school")
        theta = pm.Deterministic("theta", mu + tau * z, dims="school")
        pm.Normal("y", theta, SCHOOLS_SIGMA, observed=SCHOOLS_Y, dims="school")
    return model


def draws(rng, chains=2, n_draws=50):
    mu = rng.normal(4.0, 3.0, (chains, n_draws))
    tau = rng.gamma(2.0, 2.0, (chains, n_draws))
    z = rng.normal(size=(chains, n_draws, 8))
    theta = mu[..., None] + tau[..., None] * z
    coords = {"school": list("ABCDEFGH")}
    post = xr.Dataset(
        {
            "mu": (("chain", "draw"), mu),
            "tau": (("chain", "draw"), tau),
            "theta": (("chain", "draw", "school"), theta),
        },
        coords=coords,
    )
    return post, z


def test_a_non_centred_offset_is_recovered_exactly_with_its_dims():
    model = schools_model()
    post, z = draws(np.random.default_rng(1))
    rec = recover.recover_free_variables(post, model)
    assert rec.recovered == {"z": ("theta",)} and rec.unrecovered == {}
    got = rec.posterior["z"]
    assert got.dims == ("chain", "draw", "school")
    assert list(got["school"].values) == list("ABCDEFGH")
    # z = (theta - mu) / tau: exact to rounding (theta is stored to 1 ulp)
    np.testing.assert_allclose(got.values, z, rtol=1e-12, atol=1e-12)
    assert recovered_names(rec.posterior) == ["z"]
    assert "theta" in got.attrs[RECOVERED]
    assert "z" not in post  # the input is not changed


def test_recovered_variables_are_never_audited_nor_counted_in_r_eff():
    model = schools_model()
    post, _ = draws(np.random.default_rng(2))
    completed = recover.recover_free_variables(post, model).posterior
    assert select_var_names(completed, None, None) == ["mu", "tau", "theta"]
    assert select_var_names(completed, ["~theta"], None) == ["mu", "tau"]
    with pytest.raises(KeyError, match="not found"):
        select_var_names(completed, ["z"], None)
    assert relative_efficiency(completed) == relative_efficiency(post)


def test_coupled_unknowns_are_solved_draw_by_draw():
    """``x = L z + c`` with a full lower-triangular ``L``: every element reads several z."""
    chol = np.array([[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.2, -0.3, 2.0]])
    with pm.Model() as model:
        z = pm.Normal("z", shape=3)
        pm.Deterministic("x", pm.math.dot(chol, z) + 1.0)
    z_draws = np.random.default_rng(3).normal(size=(2, 40, 3))
    post = xr.Dataset({"x": (("chain", "draw", "x_dim_0"), z_draws @ chol.T + 1.0)})
    rec = recover.recover_free_variables(post, model)
    assert rec.recovered == {"z": ("x",)}
    np.testing.assert_allclose(rec.posterior["z"].values, z_draws, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("graph", "reason"),
    [
        (lambda z, s: z**2 * s, "not an affine function"),  # +-z fit: not determined
        (lambda z, s: pm.math.exp(z) * s, "not an affine function"),
        (lambda z, s: 0.0 * z + s, "do not depend on them"),
    ],
)
def test_what_the_deterministics_do_not_determine_is_not_recovered(graph, reason):
    with pm.Model() as model:
        s = pm.HalfNormal("s")
        z = pm.Normal("z", shape=2)
        pm.Deterministic("d", graph(z, s))
    rng = np.random.default_rng(4)
    s_draws, z_draws = rng.uniform(0.5, 2.0, (1, 30)), rng.normal(size=(1, 30, 2))
    values = pm.draw(graph(pm.math.constant(z_draws), pm.math.constant(s_draws[..., None])))
    post = xr.Dataset(
        {"s": (("chain", "draw"), s_draws), "d": (("chain", "draw", "d_dim_0"), values)}
    )
    rec = recover.recover_free_variables(post, model)
    assert rec.recovered == {} and "z" not in rec.posterior
    assert reason in rec.unrecovered["z"]
    # the reason reaches what the user reads
    message = recover.lacking_message(rec.posterior, ["z"], "it cannot be evaluated")
    assert reason in message and "cannot be recovered" in message
    assert json.loads(rec.posterior.attrs["pymc_edp_unrecovered"]) == rec.unrecovered


def test_without_a_deterministic_nothing_is_recovered():
    model = schools_model()
    post, _ = draws(np.random.default_rng(5))
    rec = recover.recover_free_variables(post.drop_vars("theta"), model)
    assert rec.unrecovered == {"z": "no deterministic the posterior holds depends on ['z']"}


def test_the_smallest_deterministics_that_cover_the_missing_are_used():
    """``theta`` (8 values) recovers z; the 8-record ``eta`` (theta again) is not needed."""
    with pm.Model(coords={"school": list("ABCDEFGH")}) as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 5.0)
        z = pm.Normal("z", 0.0, 1.0, dims="school")
        theta = pm.Deterministic("theta", mu + tau * z, dims="school")
        pm.Deterministic("eta", pm.math.stack([theta, 2.0 * theta]))
    post, z_draws = draws(np.random.default_rng(6))
    post["eta"] = xr.concat([post["theta"], 2.0 * post["theta"]], dim="eta_dim_0").transpose(
        "chain", "draw", "eta_dim_0", "school"
    )
    rec = recover.recover_free_variables(post, model)
    assert rec.recovered == {"z": ("theta",)}
    np.testing.assert_allclose(rec.posterior["z"].values, z_draws, rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def schools_fit():
    """Eight schools sampled (one chain: r_eff is 1 whatever the posterior holds)."""
    model = schools_model()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(
            500, tune=500, chains=1, random_seed=7, progressbar=False, target_accept=0.95
        )
    post = get_group(idata, "posterior")
    dropped = make_container(
        {"posterior": post.drop_vars("z"), "observed_data": get_group(idata, "observed_data")}
    )
    full = make_container({"posterior": post, "observed_data": get_group(idata, "observed_data")})
    return model, full, dropped


@pytest.mark.slow
@pytest.mark.both_stacks
def test_the_model_is_evaluated_at_recovered_draws_as_at_sampled_ones(schools_fit):
    model, full, dropped = schools_fit
    with pytest.raises(ValueError, match=r"lacks the model's free variable\(s\) \['z'\]"):
        ensure_log_likelihood(dropped, model)
    completed, rec = recover.with_free_variables(dropped, model)
    assert rec.recovered == {"z": ("theta",)}
    ll_full = ensure_log_likelihood(full, model)["y"].values
    ll_rec = ensure_log_likelihood(completed, model)["y"].values
    np.testing.assert_allclose(ll_rec, ll_full, rtol=1e-10, atol=1e-10)
    density = ModelDensity(model, ["mu", "tau", "theta"])
    np.testing.assert_allclose(
        density.unconstrained_from(completed.posterior),
        density.unconstrained_from(get_group(full, "posterior")),
        rtol=1e-10,
        atol=1e-10,
    )


def test_an_audit_without_the_offsets_equals_one_with_them(schools_fit):
    """Moment matching (forced for every school) and replacements need every free variable.

    Before recovery the audit of ``dropped`` warned "Was idata sampled ... var_names=?" and
    kept the reweighting estimates; now it computes what the full posterior gives.
    """
    model, full, dropped = schools_fit
    kw = dict(
        var_names=["mu", "tau", "theta"],
        method=edp.MomentMatch({"khat_threshold": -10.0}),
        neighbour=edp.Replace([0.0]),
        random_seed=1,
        progressbar=False,
    )
    results = []
    for idata in (full, dropped):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results.append(edp.audit(idata, model, **kw))
        assert not [w for w in caught if "var_names" in str(w.message)]
    a, b = results
    assert "moment_match" in set(a.pointwise["method"].values)  # where k-hat fell
    np.testing.assert_array_equal(a.pointwise["method"].values, b.pointwise["method"].values)
    np.testing.assert_allclose(
        a.pointwise["epsilon"].values, b.pointwise["epsilon"].values, rtol=1e-8
    )


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:The fit has not converged:pymc_edp.EDPWarning")
@pytest.mark.filterwarnings("ignore:epsilon is a lower bound:pymc_edp.EDPWarning")
def test_a_bambi_fit_is_audited_and_verified_without_its_offsets():
    """bambi leaves ``1|firm_offset`` out by design: recovered, nothing asks about var_names.

    Uncentred predictors, so bambi's draws are its PyMC model's (centred ones are refused:
    ``tests/model/test_pymc.py``); verification refits sample that model.
    """
    from support import bambi_grunfeld

    model, idata = bambi_grunfeld(center_predictors=False)
    params = [v for v in get_group(idata, "posterior").data_vars if v != "mu"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = edp.audit(
            idata,
            model.backend.model,
            var_names=params,
            method=edp.Auto(verify=edp.VerifyOptions(top=2, max_refits=2)),
            refit=edp.RefitOptions(draws=300, tune=300, chains=2),
            random_seed=1,
            progressbar=False,
        )
    said = [str(w.message) for w in caught]
    assert not [m for m in said if "var_names" in m or "lacks" in m], said
    assert "1|firm_offset" not in set(res.epsilon_by_var.data_vars)
    status = list(res.refits.status["status"])
    assert "ok" in status and set(status) <= {"ok", "diverged"}
    # two refits may not settle every neighbour that could set epsilon: "incomplete"
    assert res.verification.startswith(("confirmed", "corrected", "incomplete"))
    assert "failed" not in res.verification_note

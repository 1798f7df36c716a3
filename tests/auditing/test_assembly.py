"""Tests of :mod:`pymc_edp.auditing.assembly`: the stages put together are the audit."""

import warnings

import numpy as np
import pytest
import xarray as xr
from pipeline_support import make_settings
from scipy import stats

import pymc_edp as edp
from pymc_edp.auditing.assembly import assemble
from pymc_edp.auditing.inputs import read_fit, read_inputs
from pymc_edp.auditing.reweighting import reweight
from pymc_edp.auditing.verification import refit_and_verify, refit_problem
from pymc_edp.model.compat import from_dict


@pytest.mark.slow
@pytest.mark.both_stacks
def test_stages_put_together_are_the_audit(normal):
    settings = make_settings()
    inp = read_inputs(read_fit(normal, None), None, settings)
    rw = reweight(inp, settings)
    verified = refit_and_verify(
        inp, settings, refit_problem(inp, settings, rw.estimates), rw.estimates, rw
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = assemble(inp, settings, verified, ["a message of an earlier stage"])
    assert [str(w.message) for w in caught] == list(res.warnings)
    assert "a message of an earlier stage" in res.warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        ref = edp.audit(normal, bins=10, method="psis", random_seed=1, progressbar=False)
    assert res.epsilon == ref.epsilon and res.method == "psis" and res.neighbour == "remove"
    np.testing.assert_array_equal(res.pointwise["epsilon"], ref.pointwise["epsilon"])
    xr.testing.assert_identical(res.parameters, ref.parameters)
    assert res.random_seed == 1 and res.noise_floor == ref.noise_floor
    # the verified estimates are left as they were
    assert (
        np.isfinite(verified.estimates["eps"]).all()
        or np.isneginf(verified.estimates["eps"]).any()
    )


def _shifted_chains(rng, divergent=0):
    """Two chains of mu that disagree (R-hat well above 1.01), with ``divergent`` divergences."""
    y = rng.normal(0, 1, 8)
    mu = rng.normal(y.sum() / 9, 1 / 3, (2, 1000))
    mu[1] += 0.5  # 1.5 posterior sd: the second chain is elsewhere
    diverging = np.zeros((2, 1000), dtype=bool)
    diverging[0, :divergent] = True
    return from_dict(
        {
            "posterior": {"mu": mu},
            "log_likelihood": {"y": stats.norm.logpdf(y, mu[..., None], 1)},
            "sample_stats": {"diverging": diverging},
        }
    )


def test_a_fit_that_has_not_converged_says_so_first_everywhere(rng):
    """A fit whose sampler ran no convergence check (here: none recorded) gets PyMC's."""
    idata = _shifted_chains(rng, divergent=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = edp.audit(idata, bins=5, method="psis", progressbar=False)
    fit = res.convergence
    assert fit.rhat_var == "mu" and fit.max_rhat > 1.1 and fit.n_divergent == 3
    msg = fit.message()
    assert msg.startswith(
        "Convergence checks as pm.sample runs them, on the audited variables (the fit does "
        f"not record its sampler): The rhat statistic is larger than 1.01 for some parameters "
        f"(max {fit.max_rhat:.3f} for 'mu')"
    )
    assert "There were 3 divergences after tuning." in msg
    # a warning, the first of the audit's, kept with the result
    assert str(caught[0].message) == msg and caught[0].category is edp.EDPWarning
    assert res.warnings[0] == msg
    # the headline says it once, right under epsilon, in the printout and the HTML view
    lines = repr(res).splitlines()
    at = lines.index(msg)
    assert lines[at - 1].startswith("epsilon = ") and repr(res).count(msg) == 1
    page = res._repr_html_()
    assert page.count("Convergence checks as pm.sample runs them") == 1
    assert page.index("The rhat statistic") < page.index("90% Monte-Carlo interval")


def test_what_pm_sample_reported_is_shown_not_warned_again(rng):
    """Draws pm.sample checked (``inference_library`` "pymc"): no warning; the views say it."""
    idata = _shifted_chains(rng, divergent=3)
    posterior = idata["posterior"]
    posterior.attrs.update(inference_library="pymc", tuning_steps=1000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = edp.audit(idata, bins=5, method="psis", progressbar=False)
    fit = res.convergence
    assert fit.checked and not fit.converged and fit.message() == ""
    assert not any("onvergence" in str(w.message) for w in caught)
    assert not any("onvergence" in w for w in res.warnings)
    note = fit.note()
    assert note == (
        f"Convergence, as PyMC reported when sampling: max R-hat {fit.max_rhat:.2f} for 'mu' "
        f"(above 1.01); 3 divergences after tuning; min bulk ESS {fit.min_ess_bulk:.0f} for "
        "'mu' (under 200: 100 per chain)."
    )
    lines = repr(res).splitlines()
    assert lines[lines.index(note) - 1].startswith("epsilon = ")
    assert res._repr_html_().count("Convergence, as PyMC reported when sampling") == 1


def test_a_converged_fit_adds_nothing(normal):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = edp.audit(normal, bins=10, method="psis", progressbar=False)
    assert res.convergence is not None and res.convergence.converged
    assert not any("onvergence" in str(w.message) for w in caught)
    assert "onvergence" not in repr(res) and "onvergence" not in res._repr_html_()


def _arms_idata(rng):
    """A posterior with a scalar ``mu`` and ``theta`` over ``arm`` whose arm ``c`` is constant."""
    y = rng.normal(0, 1, 10)
    mu = rng.normal(y.sum() / 11, 1 / np.sqrt(11), (2, 1000))
    theta = mu[..., None] + rng.normal(0, 0.1, (2, 1000, 3))
    theta[..., 2] = 1.0
    return from_dict(
        {
            "posterior": {"mu": mu, "theta": theta},
            "log_likelihood": {"y": stats.norm.logpdf(y, mu[..., None], 1)},
        },
        coords={"patient": [f"p{i}" for i in range(10)], "arm": ["a", "b", "c"]},
        dims={"y": ["patient"], "theta": ["arm"]},
    )


def test_epsilon_by_var_has_the_posterior_dims_and_coords(rng, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        res = edp.audit(_arms_idata(rng), bins=10, method="psis", progressbar=False)
    by_var = res.epsilon_by_var
    assert list(by_var) == ["mu", "theta"] and by_var["mu"].dims == ()
    assert by_var["theta"].dims == ("arm",)
    assert list(by_var["arm"].values) == ["a", "b", "c"]
    par = res.summary()["epsilon"]
    assert float(by_var["mu"]) == par["mu"]
    for arm in ("a", "b"):
        assert by_var["theta"].sel(arm=arm) == par[f"theta[{arm}]"]
    assert np.isnan(by_var["theta"].sel(arm="c"))  # constant: left out
    assert res.parameters["theta"]["audited"].values.tolist() == [True, True, False]
    assert res.parameters["theta"]["worst_neighbour"].sel(arm="c") == ""
    assert "theta[c]" not in par.index
    path = tmp_path / "res.nc"
    res.to_netcdf(path)
    for back in (edp.EDPResult.from_netcdf(path), edp.EDPResult.from_datatree(res.to_datatree())):
        assert back.epsilon_by_var.identical(by_var)
    # files written before the variables' dims were kept (flat tables, each variable's
    # maximum as JSON) read over the flat labels
    old = _format0(res.to_dataset())
    back = edp.EDPResult.from_dataset(old).epsilon_by_var
    assert back["theta"].dims == ("parameter",) and back["mu"].dims == ()
    assert back["theta"]["parameter"].values.tolist() == ["theta[a]", "theta[b]"]
    np.testing.assert_array_equal(back["theta"], by_var["theta"].sel(arm=["a", "b"]))
    assert float(back["mu"]) == float(by_var["mu"])


def _format0(ds):
    """A format-2 Dataset as the first versions wrote it: flat tables, maxima as JSON."""
    flat = edp.EDPResult.from_dataset(ds).summary()
    old = ds[[v for v in ds.data_vars if v.startswith("pointwise_")]]
    old = old.drop_dims([d for d in old.dims if d != "neighbour"])
    for v in ("epsilon", "worst_neighbour", "worst_bin", "n_bins", "var_name"):
        old[f"parameter_{v}"] = ("parameter", flat[v].values)
    old = old.assign_coords(parameter=flat.index.values)
    old.attrs = {**ds.attrs, "pymc_edp_result": 1, "epsilon_by_var": '{"mu": 0.5}'}
    return old

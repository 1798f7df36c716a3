"""Posterior variables with constant elements (issue 31), on models of the PyMC gallery.

An LKJ correlation matrix has a unit diagonal, ordinal cutpoints often a first one fixed at
0: those elements are constant, carry no information about any record and are left out,
the variable's other elements are audited (asked for in ``var_names`` or not), and the
constant is never called a copy of the data. The warning, the printout and the HTML view
say so in the same words, and the netCDF file keeps it.
"""

import html
import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_edp as edp
from pymc_edp.core.select import CONSTANT, DATA_COPY, left_out_message
from pymc_edp.model.compat import get_group

SAMPLE_KW = {"progressbar": False, "compute_convergence_checks": False}


def _fit(model, seed):
    with model:
        idata = pm.sample(draws=500, tune=500, chains=2, cores=1, random_seed=seed, **SAMPLE_KW)
        pm.compute_log_likelihood(idata, progressbar=False)
    return idata


@pytest.fixture(scope="module")
def lkj_fit():
    """An LKJ MvNormal over the rows of an (n, 2) data matrix."""
    rng = np.random.default_rng(31)
    data = rng.multivariate_normal([0.0, 0.0], [[1.0, 0.5], [0.5, 1.0]], size=24)
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=2, eta=2, sd_dist=pm.Exponential.dist(1), compute_corr=True
        )
        mu = pm.Normal("mu", 0.0, 2.0, shape=2)
        pm.MvNormal("y", mu, chol=chol, observed=data)
    idata = _fit(model, 1)
    # PyMC 5 and 6 name the correlation matrix in their own way
    (corr,) = [v for v in get_group(idata, "posterior").data_vars if v.endswith("corr")]
    return idata, model, corr


@pytest.fixture(scope="module")
def ordinal_fit():
    """Ordered logistic regression with the first cutpoint fixed at 0 (data 0..3)."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=30)
    y = np.digitize(x + rng.logistic(size=30), [0.0, 1.0, 2.0])
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 2.0)
        gaps = pm.HalfNormal("gaps", 1.0, shape=2)
        cutpoints = pm.Deterministic(
            "cutpoints", pt.concatenate([pt.as_tensor([0.0]), pt.cumsum(gaps)])
        )
        pm.OrderedLogistic("y", beta * x, cutpoints, observed=y, compute_p=False)
    assert 0 in y  # the fixed cutpoint equals a data value: still no copy of the data
    return _fit(model, 2), model


def _audit(idata, model, **kwargs):
    """The audit and its "Left out" warnings (which it must give).

    Other warnings are recorded, not raised: after the whole PyMC 5 suite these small fits
    can put one k-hat at the 0.67 threshold, and nutpie's numba backend can announce an
    object-mode op in a refit. Neither concerns what this module tests.
    """
    kwargs = {"bins": 5, "method": "psis", "progressbar": False, **kwargs}
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        res = edp.audit(idata, model, **kwargs)
    said = [
        str(w.message)
        for w in record
        if issubclass(w.category, edp.EDPWarning) and "Left out of the audit" in str(w.message)
    ]
    assert said, "the audit did not say what it left out"
    return res, said


def _same_words_everywhere(res, tmp_path):
    """The warning, the printout, the HTML view and the netCDF file say the same thing."""
    message = left_out_message(res.left_out)
    assert message in res.warnings
    text = repr(res)
    assert text.count(message) == 1  # under epsilon, not again among the warnings
    page = res._repr_html_()
    assert html.escape(message) in page
    path = tmp_path / "res.nc"
    res.to_netcdf(path)
    back = edp.EDPResult.from_netcdf(path)
    assert back.left_out == res.left_out
    assert repr(back).count(message) == 1
    return message


@pytest.mark.slow
@pytest.mark.both_stacks
def test_lkj_correlation_audits_its_free_elements(lkj_fit, tmp_path):
    idata, model, corr = lkj_fit
    res, said = _audit(idata, model)
    assert corr in res.epsilon_by_var
    audited = [str(p) for p in res.summary().index if str(p).startswith(corr)]
    assert audited == [f"{corr}[0, 1]", f"{corr}[1, 0]"]
    assert int(res.parameters[corr]["audited"].sum()) == 2  # of its 4 elements, kept by dims
    (left,) = res.left_out
    assert (left.variable, left.reason) == (corr, CONSTANT)
    assert left.elements == (f"{corr}[0, 0]", f"{corr}[1, 1]")
    message = _same_words_everywhere(res, tmp_path)
    assert said == [message]
    assert "is constant" in message or "are constant" in message
    assert "copy" not in message and "disclose" not in message


def test_lkj_correlation_in_var_names(lkj_fit):
    idata, model, corr = lkj_fit
    res, said = _audit(idata, model, var_names=[corr])
    assert list(res.epsilon_by_var) == [corr]
    assert np.isfinite(res.epsilon) and res.epsilon > 0
    assert said == [left_out_message(res.left_out)]
    assert f"'{corr}[0, 0]', '{corr}[1, 1]' of '{corr}' are constant" in said[0]


@pytest.mark.slow
@pytest.mark.both_stacks
def test_fixed_cutpoint_is_constant_not_a_data_copy(ordinal_fit, tmp_path):
    idata, model = ordinal_fit
    res, _ = _audit(idata, model)
    assert set(res.epsilon_by_var) == {"beta", "gaps", "cutpoints"}
    assert [(lo.variable, lo.reason, lo.elements) for lo in res.left_out] == [
        ("cutpoints", CONSTANT, ("cutpoints[0]",))
    ]
    message = _same_words_everywhere(res, tmp_path)
    assert "'cutpoints[0]' of 'cutpoints' is constant (0 in every draw)" in message
    assert "copy" not in message


def test_cutpoints_in_var_names_through_moment_matching(ordinal_fit):
    """Moment matching bins the free elements of the draws it moves."""
    idata, model = ordinal_fit
    # just below the largest k-hat of this fit (sampler versions move it): at least one
    # neighbour is moment-matched
    plain, _ = _audit(idata, model, var_names="cutpoints")
    top = float(plain.pointwise["pareto_k"].max())
    method = edp.MomentMatch({"khat_threshold": top - 0.01})
    res, _ = _audit(idata, model, var_names="cutpoints", method=method)
    assert list(res.epsilon_by_var) == ["cutpoints"]
    assert int(res.parameters["cutpoints"]["audited"].sum()) == 2
    assert "moment_match" in set(res.pointwise["method"].values.astype(str))
    assert not any("moment matching was not possible" in w for w in res.warnings)


@pytest.mark.slow
@pytest.mark.both_stacks
def test_cutpoints_in_var_names_through_refits(ordinal_fit):
    """The refits that verify the headline bin the free elements of their draws."""
    idata, model = ordinal_fit
    res, _ = _audit(
        idata,
        model,
        var_names="cutpoints",
        method=edp.Auto(match=False, verify={"top": 1}),
        refit={"draws": 300, "tune": 300},
    )
    assert list(res.epsilon_by_var) == ["cutpoints"]
    assert "refit" in set(res.pointwise["method"].values.astype(str))
    assert res.verification in ("confirmed", "corrected")


def test_without_the_model_a_constant_equal_to_data_is_taken_for_a_copy(ordinal_fit):
    """Values alone cannot tell a cutpoint fixed at 0 from a copy of a record 0."""
    idata, _ = ordinal_fit
    res, said = _audit(idata, None)
    assert "cutpoints" not in res.epsilon_by_var
    assert [(lo.variable, lo.reason) for lo in res.left_out] == [("cutpoints", DATA_COPY)]
    assert "pass model=" in said[0]

"""Tests of :mod:`pymc_edp.auditing.matching`."""

import numpy as np
from pipeline_support import make_settings
from support import OutlierNormal as ON

from pymc_edp.auditing.inputs import read_fit, read_inputs
from pymc_edp.auditing.matching import match_moments
from pymc_edp.auditing.methods import Auto
from pymc_edp.auditing.reweighting import reweight
from pymc_edp.auditing.verification import refit_problem


def _stages(model, idata, **kwargs):
    settings = make_settings(model, **kwargs)
    inp = read_inputs(read_fit(idata, model), model, settings)
    est = reweight(inp, settings).estimates
    return inp, settings, refit_problem(inp, settings, est), est


def test_the_outlier_is_moment_matched_into_new_estimates(outlier):
    model, idata = outlier
    inp, settings, problem, est = _stages(model, idata, method="moment_match")
    assert est["khat"][ON.OUTLIER] > 0.7
    before = est["eps"].copy()
    out = match_moments(inp, settings, problem, est)
    assert out.messages == ()
    new = out.estimates
    assert new is not est and new["method"][ON.OUTLIER] == "moment_match"
    assert new["khat_mm"][ON.OUTLIER] < 0.7 and np.isfinite(new["refit_mcse"][ON.OUTLIER])
    np.testing.assert_array_equal(est["eps"], before)  # what it was given is unchanged
    assert est["method"][ON.OUTLIER] == "psis" and np.isnan(est["khat_mm"]).all()


def test_nothing_to_do_returns_the_same_estimates(outlier, normal):
    model, idata = outlier
    for kwargs in ({"method": "psis"}, {"method": Auto(match=False)}):
        inp, settings, problem, est = _stages(model, idata, **kwargs)
        assert match_moments(inp, settings, problem, est).estimates is est
    inp, settings, problem, est = _stages(None, normal, method="auto")  # no model
    assert match_moments(inp, settings, problem, est).estimates is est

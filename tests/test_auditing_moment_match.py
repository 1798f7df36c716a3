"""Moment matching inside the audit: method="moment_match" and the auto chain.

The reference is the exact oracle :func:`pymc_edp.conjugate.normal_normal_edp` (closed-form
bin integrals); the kernel-level checks (eight schools against ``arviz_stats``, replicate
bias of plain PSIS) are in ``tests/model/test_moment_match.py``.
"""

import numpy as np
import pymc as pm
import pytest
from support import OutlierNormal as ON

import pymc_edp as edp
from pymc_edp.conjugate import normal_normal_edp
from pymc_edp.model.compat import from_dict

# 14 records from N(0, 1) and one at 12; sigma = 1, prior mu ~ N(0, 10^2) (issue 14)
Y, SIGMA, MU0, SIGMA0 = ON.Y, ON.SIGMA, ON.MU0, ON.SIGMA0
M1, S1, OUTLIER = ON.M1, ON.S1, ON.OUTLIER


@pytest.fixture(scope="module")
def nn():
    with pm.Model() as model:
        mu = pm.Normal("mu", MU0, SIGMA0)
        pm.Normal("y", mu, SIGMA, observed=Y)
    draws = M1 + S1 * np.random.default_rng(20261123).normal(size=(4, 2000))
    idata = from_dict({"posterior": {"mu": draws}, "observed_data": {"y": Y}})
    return model, idata


@pytest.mark.parametrize("bins", [10, 20])
def test_outlier_moment_matched_within_5_percent_of_exact(nn, bins):
    model, idata = nn
    kw = dict(bins=bins, smoothing=0.0, progressbar=False, random_seed=1)
    mm = edp.audit(idata, model, method="moment_match", **kw)
    with pytest.warns(edp.EDPWarning, match="k-hat above"):
        psis = edp.audit(idata, model, method="psis", **kw)
    pw = mm.pointwise.isel(neighbour=OUTLIER)
    assert str(pw["method"].values) == "moment_match"
    assert float(pw["pareto_k"]) > 0.7
    assert float(pw["pareto_k_moment_match"]) <= mm.khat_threshold
    assert np.isnan(mm.pointwise["pareto_k_moment_match"].values[:OUTLIER]).all()
    exact = normal_normal_edp(Y, SIGMA, MU0, SIGMA0, bins, pointwise=True)[OUTLIER]
    err_mm = float(pw["epsilon"]) / exact - 1
    err_psis = float(psis.pointwise["epsilon"][OUTLIER]) / exact - 1
    assert abs(err_mm) < 0.05, (err_mm, err_psis)
    # its Monte-Carlo error is the moment-matched one, and the interval covers exact
    assert np.isfinite(float(pw["refit_mcse"]))
    lo, hi = mm.interval(0.99).sel(neighbour=OUTLIER)["epsilon"].values
    assert lo <= exact <= hi
    assert mm.method == "moment_match" and not mm.warnings


@pytest.mark.slow
@pytest.mark.both_stacks
def test_auto_moment_matches_before_refitting(nn):
    model, idata = nn
    res = edp.audit(
        idata,
        model,
        method=edp.Auto(verify=False),
        bins=10,
        progressbar=False,
        random_seed=1,
        # no verification, which refits the worst neighbours: tests/test_auditing_verify.py
        refit={"draws": 200, "tune": 200, "chains": 1},
    )
    methods = res.pointwise["method"].values.astype(str)
    assert methods[OUTLIER] == "moment_match" and "refit" not in methods
    # without a converging moment match, auto refits: max_iters=0 moves nothing
    res0 = edp.audit(
        idata,
        model,
        method=edp.Auto(match={"max_iters": 0}, verify=False),
        bins=10,
        progressbar=False,
        random_seed=1,
        refit={"draws": 300, "tune": 300, "chains": 1, "engine": "pymc"},
    )
    assert res0.pointwise["method"].values.astype(str)[OUTLIER] == "refit"


def test_moment_match_needs_the_model(nn):
    _, idata = nn
    with pytest.raises(ValueError, match="method='moment_match'"):
        edp.audit(idata, method="moment_match", bins=10, progressbar=False)


def test_pruning_never_skips_what_moment_matching_repairs(nn):
    """Bad k-hat neighbours do not bound the answer: pruning leaves them to be repaired."""
    model, idata = nn
    kw = dict(bins=10, method="moment_match", progressbar=False, random_seed=1)
    full = edp.audit(idata, model, chunks={"prune": False}, **kw)
    # a chunk of one record, so that pruning can stop early on 15 records
    pruned = edp.audit(idata, model, chunks={"prune": True, "memory": "256KiB"}, **kw)
    assert pruned.epsilon == full.epsilon
    assert str(pruned.pointwise["method"].values[OUTLIER]) == "moment_match"
    assert (pruned.pointwise["method"].values.astype(str) == "pruned").any()

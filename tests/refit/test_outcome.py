"""Tests of Refit seeds and outcomes (:mod:`pymc_edp.refit.outcome`)."""

import numpy as np
import pytest
import xarray as xr
from refit_support import REFIT_KW

import pymc_edp as edp
from pymc_edp import refit
from pymc_edp.refit import engines


def test_refit_seeds_do_not_depend_on_order_or_resumption(tmp_path):
    """Each refit samples with the seed of (audit seed, neighbour) whatever the run order."""

    class Echo:  # a posterior that records the seed it was sampled with
        def sample(self, data, seed):
            return xr.Dataset({"mu": (("chain", "draw"), np.full((1, 2), float(seed)))}), 0

    tasks = [refit.RefitTask(k, f"r{k}", None, refit.refit_seed(7, k)) for k in range(6)]
    assert len({t.seed for t in tasks}) == 6
    forward = refit.run_refits(Echo(), tasks, progressbar=False)
    backward = refit.run_refits(Echo(), tasks[::-1], progressbar=False)
    pooled = refit.run_refits(Echo(), tasks, executor=2, progressbar=False)
    config = {"draws": 1}
    refit.run_refits(Echo(), tasks[:3], checkpoint=refit.Checkpoint(tmp_path, config))
    resumed = refit.run_refits(
        Echo(), tasks[::-1], checkpoint=refit.Checkpoint(tmp_path, config), progressbar=False
    )
    for task in tasks:
        k = task.index
        for run in (forward, backward, pooled, resumed):
            assert run[k].seed == task.seed
            assert float(run[k].posterior["mu"][0, 0]) == float(task.seed)


@pytest.mark.slow
@pytest.mark.both_stacks
def test_failed_refit_is_recorded(outlier_model, monkeypatch):
    idata, model, _ = outlier_model
    original = engines.NutpieEngine.sample

    def broken(self, data, seed):
        if data["edp_dw_y"][3] == -1:
            raise RuntimeError("sampler exploded")
        return original(self, data, seed)

    monkeypatch.setattr(engines.NutpieEngine, "sample", broken)
    with pytest.warns(edp.EDPWarning, match="1 refit.s. failed"):
        res = edp.audit(idata, model, bins=5, method="refit", **REFIT_KW)
    assert res.pointwise["method"].values[3] == "psis"
    assert res.pointwise["status"].values[3] == "error: RuntimeError: sampler exploded"
    assert res.refits.status.loc[3, "status"] == "error"
    # the result says what happened: not every neighbour was refitted
    assert res.method == "auto" and "B = 5, auto)" in repr(res)


@pytest.mark.filterwarnings("ignore:Pareto k-hat above:pymc_edp.EDPWarning")
@pytest.mark.filterwarnings("ignore:.*refit.s. failed:pymc_edp.EDPWarning")
def test_method_says_psis_when_no_refit_succeeded(outlier_model, monkeypatch):
    """Every refit fails (e.g. nutpie on a model it cannot sample): not reported as 'refit'."""
    idata, model, _ = outlier_model

    def broken(self, data, seed):
        raise TypeError("Cannot convert Type Scalar(float64) into Type Scalar(int64)")

    monkeypatch.setattr(engines.NutpieEngine, "sample", broken)
    monkeypatch.setattr(engines.PymcEngine, "sample", broken)
    with pytest.warns(edp.EDPWarning, match="none of the 20 refit.s. succeeded"):
        res = edp.audit(idata, model, bins=5, method="refit", **REFIT_KW)
    assert res.method == "psis"
    assert "B = 5, psis)" in repr(res)
    assert set(res.pointwise["method"].values) == {"psis"}

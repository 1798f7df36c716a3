"""Tests of :class:`pymc_edp.tuning.PriorTuningResult`."""

import xarray as xr

from pymc_edp import PriorTuningResult
from pymc_edp.results.tuning import LEAKAGE_CAVEAT


def test_result_summary_is_tabular():
    ds = xr.Dataset(
        {"mean_untuned": ("parameter", [1.0]), "sd_untuned": ("parameter", [1.0])},
        coords={"parameter": ["mu"]},
    )
    res = PriorTuningResult(
        value=0.1,
        epsilon=0.3,
        mcse=0.01,
        target_epsilon=0.3,
        hyperparameter="s",
        initial_value=1.0,
        initial_epsilon=0.6,
        search_epsilon=0.3,
        bins=20,
        neighbour="remove",
        method="psis",
        direction="increasing",
        monotone=True,
        stopped="tolerance",
        trials=xr.Dataset(),
        utility=ds,
        warnings=(LEAKAGE_CAVEAT,),
    )
    assert list(res.summary().index) == ["mu"]
    assert res.relative_error == 0.0

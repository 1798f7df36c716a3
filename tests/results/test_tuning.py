"""Tests of :class:`pymc_edp.tuning.PriorTuningResult`."""

import xarray as xr
from support import tuning_result

from pymc_edp.results.tuning import LEAKAGE_CAVEAT


def test_result_summary_is_tabular():
    ds = xr.DataTree.from_dict(
        {"mu": xr.Dataset({"mean_untuned": 1.0, "sd_untuned": 1.0, "audited": True})}
    )
    res = tuning_result(
        value=0.1,
        epsilon=0.3,
        hyperparameter="s",
        initial_value=1.0,
        initial_epsilon=0.6,
        utility=ds,
        warnings=(LEAKAGE_CAVEAT,),
    )
    assert list(res.summary().index) == ["mu"]
    assert list(res.summary().columns) == ["mean_untuned", "sd_untuned"]
    assert res.relative_error == 0.0

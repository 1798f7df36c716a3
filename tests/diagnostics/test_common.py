"""What the diagnostics read from an audit (:mod:`pymc_edp.diagnostics._common`)."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

import pymc_edp as edp
from pymc_edp.diagnostics._common import (
    AuditData,
    bins_of,
    draws_of,
    keep_weights_advice,
    kept_weights,
    order_of,
    refitted,
    was_pruned,
    weights_of,
    z_value,
)

FIELDS = (
    "pointwise",
    "parameters",
    "log_weights",
    "draws",
    "bins",
    "smoothing",
    "count_smoothing",
    "n_chains",
    "epsilon",
    "worst_neighbour",
)


class Data:
    """Any object with the attributes of AuditData (no EDPResult)."""

    def __init__(self, res):
        for name in FIELDS:
            setattr(self, name, getattr(res, name))


def test_an_audit_result_is_audit_data(nn_result):
    assert isinstance(nn_result, AuditData)
    assert not isinstance(SimpleNamespace(pointwise=None), AuditData)
    assert {name for name in dir(AuditData) if not name.startswith("_")} == set(FIELDS)


def test_the_diagnostics_need_only_the_protocol(nn_result):
    """The diagnostics run on any AuditData, with the numbers of the result itself."""
    data = Data(nn_result)
    assert isinstance(data, AuditData)
    np.testing.assert_array_equal(
        edp.diagnostics.epsilon_interval(data)["epsilon"], nn_result.interval()["epsilon"]
    )
    assert float(edp.diagnostics.emi(data)["emi"]) == float(nn_result.emi()["emi"])
    assert edp.diagnostics.bin_log_ratios(data).equals(nn_result.bin_log_ratios())


def test_bins_and_order_are_cached_per_object(nn_result):
    data = Data(nn_result)
    assert bins_of(data, 10) is bins_of(data, 10)
    assert order_of(data) is order_of(data)
    assert bins_of(Data(nn_result), 10) is not bins_of(data, 10)
    np.testing.assert_array_equal(order_of(data)[0], np.argsort(draws_of(data)[0], kind="stable"))


def test_missing_weights_and_draws_are_explained(nn_result):
    bare = dataclasses.replace(nn_result, log_weights=None, draws=None)
    with pytest.raises(ValueError, match=r"chunks=\{'store_weights': True"):
        kept_weights(bare)
    with pytest.raises(ValueError, match="result.draws"):
        draws_of(bare)
    assert not was_pruned(bare)
    assert keep_weights_advice(bare) == (
        "rerun edp.audit(..., chunks={'store_weights': True}) (the default)"
    )


def test_pruned_and_refitted_neighbours(nn_result):
    pw = nn_result.pointwise
    method = np.full(pw.sizes["neighbour"], "psis", dtype=object)
    method[[0, 1]] = ["pruned", "refit"]
    method[2] = "moment_match"
    res = dataclasses.replace(
        nn_result, pointwise=pw.assign(method=("neighbour", method.astype(str)))
    )
    assert was_pruned(res) and "prune=False" in keep_weights_advice(res)
    assert refitted(res)[:4].tolist() == [False, True, True, False]
    assert not refitted(dataclasses.replace(res, pointwise=pw.drop_vars("method"))).any()
    lw, rows = kept_weights(res)
    assert lw.shape[0] == rows.size == res.n_neighbours
    assert weights_of(res).shape == lw.shape


def test_z_value():
    assert z_value(0.9) == pytest.approx(1.6448536, rel=1e-6)

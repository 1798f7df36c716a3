"""Tests of :mod:`pymc_edp.auditing.reweighting`."""

import numpy as np
import pytest
from pipeline_support import make_settings

import pymc_edp as edp
from pymc_edp.auditing.inputs import read_fit, read_inputs
from pymc_edp.auditing.reweighting import reweight, unprune


def test_reweight_gives_the_audits_estimates(normal):
    settings = make_settings()
    inp = read_inputs(read_fit(normal, None), None, settings)
    out = reweight(inp, settings)
    assert not out.pruning and out.estimates.log_weights.shape == (8, 1000)
    res = edp.audit(normal, bins=10, method="psis", progressbar=False)
    np.testing.assert_array_equal(out.estimates.epsilon(), res.pointwise["epsilon"].values)
    np.testing.assert_array_equal(out.estimates["khat"], res.pointwise["pareto_k"].values)
    assert unprune(out.reweighter, out.estimates, settings) is None  # nothing pruned


def test_pruning_keeps_the_maximum(normal):
    full = reweight(read_inputs(read_fit(normal, None), None, make_settings()), make_settings())
    settings = make_settings(chunks={"prune": True, "memory": "64KiB"})
    pruned = reweight(read_inputs(read_fit(normal, None), None, settings), settings)
    assert pruned.pruning and pruned.estimates.log_weights is None
    est = pruned.estimates
    assert est.epsilon().max() == full.estimates.epsilon().max()
    assert set(est["method"][est.pruned]) <= {"pruned"}


def test_store_weights_and_pruning_conflict(normal):
    settings = make_settings(chunks={"prune_above": 10, "store_weights": True})
    with pytest.raises(ValueError, match=r"ChunkOptions\(prune=False\)"):
        reweight(read_inputs(read_fit(normal, None), None, settings), settings)


@pytest.mark.slow
def test_an_int_executor_is_a_process_pool_with_the_same_numbers(normal):
    """``ChunkOptions(executor=2)`` means what ``RefitOptions(executor=2)`` does (issue 41)."""
    serial = edp.audit(normal, bins=10, method="psis", progressbar=False)
    chunks = {"executor": 2, "memory": "64KiB"}  # several chunks, on two worker processes
    pooled = edp.audit(normal, bins=10, method="psis", chunks=chunks, progressbar=False)
    np.testing.assert_array_equal(pooled.pointwise["epsilon"], serial.pointwise["epsilon"])

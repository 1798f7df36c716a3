"""Tests of :mod:`pymc_edp.auditing.estimates`: stages get new estimates, never change theirs."""

from types import SimpleNamespace

import numpy as np

from pymc_edp.auditing.estimates import Errors, Estimates, intervals, method_used


def _row(value):
    return SimpleNamespace(
        eps=np.full(2, value),
        argbin=np.array([1, 2]),
        eps_unsmoothed=np.full(2, value),
        bin_draws=np.full(2, 50.0),
        limit=np.zeros(2, np.int8),
    )


def test_empty_estimates():
    est = Estimates.empty(3, 2, 100, keep_weights=True)
    assert est["eps"].shape == (3, 2) and np.isneginf(est["eps"]).all()
    assert est.log_weights.shape == (3, 100)
    assert list(est["method"]) == ["psis"] * 3 and list(est["status"]) == [""] * 3
    assert est.weights()[0] is est.log_weights
    assert Estimates.empty(3, 2, 100, keep_weights=False).weights() is None


def _with_rows(est, rows, method):
    """A copy of ``est`` with the rows ``{k: (estimate, se)}``, as the stages make one."""
    out = est.copy()
    for k, (value, se) in rows.items():
        out.set_row(k, value, se, method)
    return out


def test_a_copy_with_new_rows_leaves_the_original_unchanged():
    est = Estimates.empty(3, 2, 100, keep_weights=False)
    new = _with_rows(est, {1: (_row(0.7), 0.05)}, "refit")
    assert np.isneginf(est["eps"]).all() and list(est["method"]) == ["psis"] * 3
    np.testing.assert_array_equal(new["eps"][1], 0.7)
    assert new["refit_mcse"][1] == 0.05 and list(new["method"]) == ["psis", "refit", "psis"]
    assert new.epsilon()[1] == 0.7 and new.epsilon()[0] < -1e300
    copied = est.copy(pruned=np.array([2]))
    copied["eps"][0] = 1.0
    assert np.isneginf(est["eps"][0, 0]) and est.pruned.size == 0


def test_khat_now_and_method_used():
    est = Estimates.empty(3, 1, 10, keep_weights=False)
    est["khat"][:] = [0.2, 0.9, 1.2]
    est["khat_mm"][1] = 0.3
    np.testing.assert_array_equal(est.khat_now(), [0.2, 0.3, 1.2])
    assert method_used(np.array(["psis", "psis"], dtype=object)) == "psis"
    assert method_used(np.array(["psis", "moment_match"], dtype=object)) == "moment_match"
    assert method_used(np.array(["psis", "refit"], dtype=object)) == "auto"
    assert method_used(np.array(["refit", "refit"], dtype=object)) == "refit"


def test_intervals_of_own_and_reweighted_estimates():
    est = _with_rows(
        Estimates.empty(3, 2, 10, keep_weights=False),
        {0: (_row(1.0), 0.1), 2: (_row(0.5), float("nan"))},
        "refit",
    )
    est["eps"][1] = 0.4
    est["limit"][1] = 3  # at a limit: open above
    errors = Errors(np.array([np.nan, 0.05, np.nan]), np.full(3, 0.3), np.full(3, 0.6))
    lower, upper, se = intervals(est, errors)
    assert se[0] == 0.1 and lower[0] == 1.0 - 1.6448536269514722 * 0.1
    assert upper[1] == np.inf and lower[1] == 0.3 and se[1] == 0.05
    assert np.isnan(lower[2]) and np.isnan(upper[2])  # refitted without an error


def test_the_table_carries_the_labels_the_result_renames():
    est = Estimates.empty(np.array(["a", "b"], dtype=object), ["mu", "tau"], 10, False)
    assert list(est.labels) == ["a", "b"] and est.labels.dtype.kind == "U"  # netCDF-ready
    assert list(est.par_labels) == ["mu", "tau"]
    assert list(est.table["eps"].coords) == ["neighbour", "parameter"]
    assert list(Estimates.empty(3, 1, 10, False).labels) == [0, 1, 2]

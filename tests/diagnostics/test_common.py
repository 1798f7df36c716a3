"""What the diagnostics read from an audit (:mod:`pymc_edp.diagnostics._common`)."""

import dataclasses
import gc
import threading
import weakref
from types import SimpleNamespace

import numpy as np
import pytest

import pymc_edp as edp
from pymc_edp.diagnostics._common import (
    AuditData,
    bins_of,
    cache_of,
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
        self._cache = {}  # where the diagnostics keep what they compute, as on EDPResult


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


# ------------------------------------------------------------ the result's own cache
def test_diagnostics_are_computed_once_per_result(nn_result):
    """What a diagnostic computed is reused; a replaced result starts afresh."""
    res = dataclasses.replace(nn_result)  # a result of its own: nothing cached yet
    assert list(cache_of(res)) == []
    first = res.mcse()
    keys = list(cache_of(res))
    assert ("bins", res.bins) in keys and "order" in keys
    assert any(isinstance(k, tuple) and k[0] == "uncertainty" for k in keys)
    second = res.mcse()
    assert list(cache_of(res)) == keys  # nothing recomputed
    assert first is not second and first.equals(second)
    assert list(cache_of(dataclasses.replace(res, bins=res.bins))) == []
    assert res.emi() is res.emi()  # cached datasets come back as they are


def test_the_cache_is_never_compared_nor_shown(nn_result):
    res = dataclasses.replace(nn_result)
    res.mcse()
    assert res == dataclasses.replace(res)  # the copy's cache is empty
    cache = {f.name: f for f in dataclasses.fields(res)}["_cache"]
    assert not (cache.init or cache.repr or cache.compare)


def test_a_result_that_dies_leaves_nothing(nn_result):
    """The cache lives on its result: nothing outside keeps the result alive."""
    res = dataclasses.replace(nn_result)
    res.mcse()
    ref = weakref.ref(res)
    del res
    gc.collect()
    assert ref() is None


def test_objects_do_not_share_a_cache(nn_result):
    a, b = Data(nn_result), Data(nn_result)
    cache_of(a)["x"] = 1
    assert cache_of(b) == {} and cache_of(a) == {"x": 1}
    assert cache_of(a) is cache_of(a)


def test_clear_forgets(nn_result):
    a = Data(nn_result)
    cache_of(a)["x"] = 1
    cache_of(a).clear()
    assert list(cache_of(a)) == []


def test_an_object_without_a_cache_gets_a_fresh_one_each_time():
    obj = (1, 2)  # no _cache: nothing is kept
    cache = cache_of(obj)
    cache["x"] = 1
    assert cache_of(obj) == {}


@pytest.mark.parametrize("n_threads", [8])
def test_one_cache_per_object_across_threads(nn_result, n_threads):
    a = dataclasses.replace(nn_result)
    seen = []
    barrier = threading.Barrier(n_threads)

    def work():
        barrier.wait()
        seen.append(cache_of(a))

    threads = [threading.Thread(target=work) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(c is seen[0] for c in seen)

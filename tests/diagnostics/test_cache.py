"""The diagnostics' cache (:mod:`pymc_edp.diagnostics._cache`): as long as its result lives."""

import dataclasses
import gc
import threading

import pytest

from pymc_edp.diagnostics import _cache
from pymc_edp.diagnostics._cache import cache_of, cached_keys, clear


class Audit:
    pass


def test_diagnostics_are_computed_once_per_result(nn_result):
    """What a diagnostic computed is reused; a replaced result starts afresh."""
    res = dataclasses.replace(nn_result)  # a result of its own: nothing cached yet
    assert cached_keys(res) == []
    first = res.mcse()
    keys = cached_keys(res)
    assert ("bins", res.bins) in keys and "order" in keys
    assert any(isinstance(k, tuple) and k[0] == "uncertainty" for k in keys)
    second = res.mcse()
    assert cached_keys(res) == keys  # nothing recomputed
    assert first is not second and first.equals(second)
    assert cached_keys(dataclasses.replace(res, bins=res.bins)) == []
    assert res.emi() is res.emi()  # cached datasets come back as they are


def test_the_cache_goes_with_its_object():
    a = Audit()
    cache_of(a)["x"] = 1
    key = id(a)
    assert key in _cache._CACHES
    del a
    gc.collect()
    assert key not in _cache._CACHES


def test_a_result_that_dies_leaves_nothing(nn_result):
    res = dataclasses.replace(nn_result)
    res.mcse()
    key = id(res)
    assert key in _cache._CACHES
    del res
    gc.collect()
    assert key not in _cache._CACHES


def test_objects_do_not_share_a_cache():
    a, b = Audit(), Audit()
    cache_of(a)["x"] = 1
    assert cache_of(b) == {} and cache_of(a) == {"x": 1}
    assert cache_of(a) is cache_of(a)


def test_clear_forgets():
    a = Audit()
    cache_of(a)["x"] = 1
    clear(a)
    assert cached_keys(a) == []
    clear(Audit())  # nothing cached: nothing to do


def test_an_object_without_weak_references_gets_no_cache():
    obj = (1, 2)  # tuples cannot be weakly referenced
    cache = cache_of(obj)
    cache["x"] = 1
    assert cache_of(obj) == {} and id(obj) not in _cache._CACHES


@pytest.mark.parametrize("n_threads", [8])
def test_one_cache_per_object_across_threads(n_threads):
    a = Audit()
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

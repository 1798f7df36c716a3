"""Tests of the refit and verification options (:mod:`pymc_edp.refit.options`)."""

import dataclasses

import numpy as np
import pymc as pm
import pytest
from refit_support import sample

import pymc_edp as edp
from pymc_edp.model.compat import get_group
from pymc_edp.refit.options import VerifyOptions


def test_verify_options_defaults_and_coercion():
    opts = VerifyOptions()
    assert (opts.top, opts.max_refits, opts.time_budget, opts.z) == (5, 20, None, 3.0)
    assert VerifyOptions.coerce({"top": 2, "time_budget": 60}).time_budget == 60
    assert VerifyOptions.coerce(None) == opts
    with pytest.raises(TypeError, match="unknown verify option"):
        VerifyOptions.coerce({"k": 3})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"top": 0}, "top must be an integer >= 1"),
        ({"top": 6, "max_refits": 5}, "below top=6"),
        ({"time_budget": 0}, "time_budget must be"),
        ({"z": -1.0}, "z must be"),
    ],
)
def test_verify_options_refuse_nonsense(kwargs, match):
    with pytest.raises(ValueError, match=match):
        VerifyOptions(**kwargs)


def test_refit_options_retry_names_what_runs_again():
    opts = edp.RefitOptions()
    assert opts.retry == ("divergent", "failed")
    assert opts.retry_divergent and opts.retry_failed
    only = edp.RefitOptions(retry=["failed"])
    assert only.retry == ("failed",) and only.retry_failed and not only.retry_divergent
    assert only.config()["retry_divergent"] is False  # the checkpoint key of 0.4
    assert edp.RefitOptions(retry=False).retry == ()
    assert edp.RefitOptions(retry={"divergent", "failed"}) == edp.RefitOptions()
    with pytest.raises(TypeError, match="retry must be True, False or a collection"):
        edp.RefitOptions(retry="yes")
    with pytest.raises(ValueError, match=r"unknown kind\(s\) \['flaky'\]"):
        edp.RefitOptions(retry={"flaky"})


def test_verification_follows_the_method(rng):
    from test_auditing import fake_idata

    idata = fake_idata(rng)
    res = edp.audit(idata, method="psis", progressbar=False)
    assert res.verification == "unverified"
    assert res.verification_note == "unverified: method='psis' reweights only"
    off = edp.audit(idata, method=edp.Auto(verify=False), progressbar=False)
    assert "turned off (edp.Auto(verify=False))" in off.verification_note


# ------------------------------------ options that moved to the method (issue 41)
def test_verify_and_moment_match_moved_to_the_method():
    """0.8's RefitOptions(verify=) and ChunkOptions(moment_match=) say where they went."""
    with pytest.raises(TypeError, match=r"refit=\{'verify': ...\} moved .*edp.Auto\(verify="):
        edp.RefitOptions.coerce({"verify": False})
    with pytest.raises(TypeError, match=r"chunks=\{'moment_match': ...\} moved .*Auto\(match="):
        edp.ChunkOptions.coerce({"moment_match": False})
    # a moved key beside a misspelt one: where the moved one went, not a KeyError
    with pytest.raises(TypeError, match=r"chunks=\{'moment_match': ...\} moved"):
        edp.ChunkOptions.coerce({"moment_match": False, "memroy": "1GiB"})
    with pytest.raises(TypeError, match="unexpected keyword argument 'verify'"):
        edp.RefitOptions(verify=False)
    assert "verify" not in {f.name for f in dataclasses.fields(edp.RefitOptions)}
    assert "moment_match" not in {f.name for f in dataclasses.fields(edp.ChunkOptions)}


def test_executor_has_one_meaning_in_both_options():
    """None, an int (a local process pool), an Executor or a dask Client, in both."""
    import os

    assert edp.ChunkOptions(executor=2).n_workers() == 2
    assert edp.ChunkOptions(executor=-1).n_workers() == (os.cpu_count() or 1)
    assert edp.RefitOptions(executor=2).executor == 2
    for options in (edp.ChunkOptions, edp.RefitOptions):
        with pytest.raises(TypeError, match=r"must be None, an int \(a local process pool"):
            options(executor="threads")
        with pytest.raises(TypeError, match="must be None, an int"):
            options(executor=True)
        with pytest.raises(ValueError, match=r"executor=0\): give a worker count"):
            options(executor=0)


def test_chunk_options_hold_the_scale_options():
    """Memory, executor, pruning and weights: nothing else (issue 41)."""
    fields = {f.name for f in dataclasses.fields(edp.ChunkOptions) if f.init}
    assert fields == {"memory", "executor", "prune_above", "prune", "store_weights"}
    opts = edp.ChunkOptions()
    assert (opts.prune, opts.store_weights) == (None, None)
    opts = edp.ChunkOptions.coerce({"prune": False, "store_weights": True})
    assert opts.prune is False and opts.store_weights is True
    with pytest.raises(TypeError, match=r"prune must be True, False or None.*'yes'"):
        edp.ChunkOptions(prune="yes")
    with pytest.raises(TypeError, match="store_weights must be True, False or None"):
        edp.ChunkOptions(store_weights=1)
    with pytest.raises(TypeError, match=r"chunks=\{'log_likelihood': ...\} moved"):
        edp.ChunkOptions.coerce({"log_likelihood": "model"})
    with pytest.raises(ValueError, match=r"store_weights=True\) keeps every"):
        edp.ChunkOptions(prune=True, store_weights=True)


def test_neighbour_relations():
    opts = edp.Remove()
    assert (opts.relation, opts.groups, opts.observed, opts.records) == (
        "remove",
        None,
        None,
        "auto",
    )
    assert edp.Relation.coerce("replace") == edp.Replace()
    assert edp.Relation.coerce(None) == opts
    assert edp.Remove(observed="y").observed == ("y",)
    assert edp.Remove("school") == edp.Remove(groups="school")  # groups: the rows it acts on
    assert edp.Remove("school").label == "remove (groups)"
    assert edp.Replace(observed=["y", "z"]).observed == ("y", "z")
    assert edp.Relation.coerce({"relation": "replace", "replacements": [0]}) == edp.Replace([0])
    # version 0.8's spelling builds the same relations
    assert edp.NeighbourOptions() == edp.Remove()
    assert edp.NeighbourOptions("replace", replacements=[0], groups="g") == edp.Replace(
        [0], groups="g"
    )
    with pytest.raises(ValueError, match="neighbour must be one of"):
        edp.Relation.coerce("swap")
    with pytest.raises(ValueError, match="relation must be one of"):
        edp.NeighbourOptions("swap")
    with pytest.raises(ValueError, match="replacements= are for a relation that replaces"):
        edp.NeighbourOptions(replacements=[0.0])
    with pytest.raises(TypeError, match="unexpected keyword argument 'replacements'"):
        edp.Remove(replacements=[0.0])
    with pytest.raises(ValueError, match=r"observed=...\) is empty"):
        edp.Remove(observed=[])
    with pytest.raises(ValueError, match="records must be one of"):
        edp.Replace(records="cells")
    with pytest.raises(TypeError, match="unknown neighbour option"):
        edp.Relation.coerce({"group": "school"})
    with pytest.raises(TypeError, match="neighbour= takes"):
        edp.Relation.coerce(3)
    with pytest.raises(TypeError, match="Relation is a base class"):
        edp.Relation()


def test_neighbour_options_are_checked_before_any_work(rng):
    from test_auditing import fake_idata

    idata = fake_idata(rng)
    with pytest.raises(ValueError, match="replacements= are for a relation that replaces"):
        edp.audit(idata, neighbour={"replacements": [0.0]}, method="psis")
    with pytest.raises(ValueError, match="is empty"):
        edp.audit(idata, neighbour={"observed": []}, method="psis")


def test_refit_options_refuse_a_fork_pool_as_chunk_options_do(monkeypatch):
    # refits on a pool forked where numba's threads are GNU OpenMP: a worker that runs a
    # parallel kernel dies (BrokenProcessPool); refused before any work, with the fix
    import concurrent.futures as cf
    import multiprocessing

    from pymc_edp.runtime import parallel

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here")
    fork = cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
    spawn = cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    try:
        monkeypatch.setattr(parallel, "_numba_threading_layer", lambda: ("omp", "GNU"))
        with pytest.raises(ValueError, match=r"^RefitOptions\(executor=\.\.\.\) is a") as refit:
            edp.RefitOptions(executor=fork)
        with pytest.raises(ValueError, match=r"^ChunkOptions\(executor=\.\.\.\) is a") as chunk:
            edp.ChunkOptions(executor=fork)
        why = str(chunk.value).removeprefix("ChunkOptions(executor=...) ")
        assert str(refit.value) == f"RefitOptions(executor=...) {why}"
        assert "get_context('forkserver')" in why
        for fine in (spawn, 2, None):
            assert edp.RefitOptions(executor=fine).executor is fine
        monkeypatch.setattr(parallel, "_numba_threading_layer", lambda: ("tbb", None))
        assert edp.RefitOptions(executor=fork).executor is fork
    finally:
        fork.shutdown()
        spawn.shutdown()


def test_refit_sizes_default_to_the_fit():
    """Unset draws, tune and chains are the posterior's; set ones stay; PyMC's without one."""
    import xarray as xr

    post = xr.Dataset(
        {"mu": (("chain", "draw"), np.zeros((3, 150)))}, attrs={"tuning_steps": np.int64(120)}
    )
    opts = edp.RefitOptions().for_fit(post)
    assert (opts.draws, opts.tune, opts.chains) == (150, 120, 3)
    assert opts.size() == "3 chain(s) x 150 draws after 120 tuning steps"
    kept = edp.RefitOptions(draws=40, chains=1).for_fit(post)
    assert (kept.draws, kept.tune, kept.chains) == (40, 120, 1)
    bare = edp.RefitOptions().for_fit(post.drop_attrs())  # no tuning_steps recorded
    assert (bare.draws, bare.tune, bare.chains) == (150, 1000, 3)
    assert edp.RefitOptions().for_fit().config()["draws"] == 1000
    with pytest.raises(ValueError, match="draws"):
        edp.RefitOptions(draws=0)


@pytest.mark.slow
@pytest.mark.both_stacks
def test_refits_use_the_posteriors_own_draws_and_chains():
    """An audit's refits sample what the fit did: 3 chains x 300 draws after 100 tuning
    steps here, said in the verification note."""
    y = np.random.default_rng(5).normal(0.0, 1.0, 8)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        pm.Normal("y", mu, 1.0, observed=y)
    idata = sample(model, 300, chains=3, seed=2, tune=100)
    res = edp.audit(idata, model, bins=4, random_seed=1, progressbar=False)
    assert res.refits is not None and len(res.refits) >= 1
    for label in res.refits:
        post = get_group(res.refits[label], "posterior")
        assert dict(post.sizes)["chain"] == 3
        assert dict(post.sizes)["draw"] in (300, 100)  # full length, or short (a quarter, >= 100)
    assert "3 chain(s) x 300 draws after 100 tuning steps" in res.verification_note

"""Tests of the executor layer pymc_edp.runtime.parallel.map_tasks."""

import concurrent.futures as cf
import time

import pytest

from pymc_edp.runtime.parallel import map_tasks, progress_bar, resolve_n_workers


def _square(x):
    return x * x


def _slow_reverse(x):
    # Later tasks finish first, so completion order differs from task order.
    time.sleep(0.02 * (5 - x))
    return -x


def _boom(x):
    if x == 3:
        raise ValueError("task three failed")
    return x


def test_serial_in_order_with_callback():
    seen = []
    out = map_tasks(_square, range(6), progressbar=False, on_result=lambda i, r: seen.append(i))
    assert out == [0, 1, 4, 9, 16, 25]
    assert seen == list(range(6))


def test_progressbar_on_runs():
    # rich writes to the captured terminal; the result must not change.
    assert map_tasks(_square, [1, 2], progressbar=True, description="test") == [1, 4]


def test_progress_bar_disabled_is_silent(capsys):
    with progress_bar(3, enabled=False) as bar:
        bar.advance()
        bar.advance(2)
    assert capsys.readouterr() == ("", "")
    with progress_bar(3, enabled=True) as bar:  # the same calls with a bar do write
        bar.advance(3)
    shown = capsys.readouterr()
    assert shown.out or shown.err


def test_empty_tasks():
    assert map_tasks(_square, [], executor=2, progressbar=False) == []


def test_process_pool_int_and_lambda():
    seen = {}
    out = map_tasks(
        lambda x: x + 1,  # closures/lambdas travel by cloudpickle
        range(8),
        executor=2,
        progressbar=False,
        on_result=lambda i, r: seen.__setitem__(i, r),
    )
    assert out == list(range(1, 9))
    assert seen == {i: i + 1 for i in range(8)}


def test_int_one_is_serial():
    assert map_tasks(_square, [3], executor=1, progressbar=False) == [9]
    assert resolve_n_workers(-1) >= 1
    assert resolve_n_workers(0) == 1


def test_given_executor_results_in_task_order():
    order = []
    with cf.ThreadPoolExecutor(max_workers=5) as pool:
        out = map_tasks(
            _slow_reverse,
            range(5),
            executor=pool,
            progressbar=False,
            on_result=lambda i, r: order.append(i),
        )
    assert out == [0, -1, -2, -3, -4]
    assert sorted(order) == list(range(5))
    assert order != list(range(5))  # reported as completed, not in task order


def test_given_process_pool_executor():
    with cf.ProcessPoolExecutor(max_workers=2) as pool:
        assert map_tasks(lambda x: 2 * x, range(4), executor=pool, progressbar=False) == [
            0,
            2,
            4,
            6,
        ]


@pytest.mark.parametrize("executor", [None, "threads"])
def test_errors_propagate_with_task_index(executor):
    ctx = cf.ThreadPoolExecutor(2) if executor == "threads" else None
    try:
        with pytest.raises(ValueError, match="task three failed") as info:
            map_tasks(_boom, range(6), executor=ctx, progressbar=False)
    finally:
        if ctx is not None:
            ctx.shutdown()
    assert any("task 3" in note for note in getattr(info.value, "__notes__", []))


def test_bad_executor():
    with pytest.raises(TypeError):
        map_tasks(_square, [1], executor="nope", progressbar=False)
    with pytest.raises(TypeError):
        map_tasks(_square, [1], executor=True, progressbar=False)


def test_dask_client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1, processes=False, threads_per_worker=2, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        seen = []
        out = map_tasks(
            _square,
            range(7),
            executor=client,
            progressbar=False,
            on_result=lambda i, r: seen.append((i, r)),
        )
    assert out == [i * i for i in range(7)]
    assert sorted(seen) == [(i, i * i) for i in range(7)]


def _scaled(shared, task):
    return shared["scale"] * task


@pytest.mark.parametrize("executor", [None, 2, "threads"])
def test_shared_state_is_passed_first(executor):
    """``func(shared, task)``: the state is sent once per worker, not with every task."""
    if executor == "threads":
        with cf.ThreadPoolExecutor(2) as pool:
            out = map_tasks(
                _scaled, range(5), executor=pool, shared={"scale": 3}, progressbar=False
            )
    else:
        out = map_tasks(
            _scaled, range(5), executor=executor, shared={"scale": 3}, progressbar=False
        )
    assert out == [0, 3, 6, 9, 12]


def test_fork_unsafe_names_a_fork_pool_where_numba_s_openmp_threads_break_it():
    # numba's GNU OpenMP layer is not fork-safe: after any audit, a forked worker running a
    # parallel kernel is terminated and the pool breaks (BrokenProcessPool)
    import multiprocessing

    from pymc_edp.runtime.parallel import _numba_threading_layer, fork_unsafe

    if _numba_threading_layer() != ("omp", "GNU"):
        pytest.skip("numba's threading layer here is fork-safe")
    fork = cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
    others = [
        cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver")),
        cf.ThreadPoolExecutor(1),
        None,
    ]
    try:
        assert "get_context('forkserver')" in fork_unsafe(fork)
        assert all(fork_unsafe(pool) is None for pool in others)
    finally:
        for pool in (fork, *others[:2]):
            pool.shutdown()


def _mass_in_a_kernel(n):
    # the audit's parallel (prange) epsilon kernel: n rows of 8 uniform weights in one bin,
    # each row's bin holding 8 draws' worth of weight
    import numpy as np

    from pymc_edp.base import binning

    lw, index, log_p = np.zeros((n, 8)), np.zeros((1, 8), dtype=np.int32), np.zeros((1, 1))
    n_bins = np.ones(1, dtype=np.int64)
    _, _, _, bin_draws = binning._epsilon_kernel(lw, index, n_bins, log_p, log_p, 0.0)
    return float(bin_draws.sum() / 8)


def test_own_pool_runs_the_kernels_after_this_process_ran_them():
    # an audit runs the kernels here; the workers of map_tasks(executor=2) were forked from
    # this process, and where numba's threads are GNU OpenMP each died running one
    # ("fork() called from a process already using GNU OpenMP": BrokenProcessPool)
    assert _mass_in_a_kernel(3) == 3.0
    assert map_tasks(_mass_in_a_kernel, [2, 5], executor=2, progressbar=False) == [2.0, 5.0]


class _NotStarted(Exception):
    pass


@pytest.mark.parametrize("layer", [("omp", "GNU"), ("tbb", None), ("workqueue", None)])
def test_own_pool_forks_only_where_the_kernels_survive_it(monkeypatch, layer):
    # checked on the pool map_tasks(executor=2) asks for, without starting its workers
    import multiprocessing
    from multiprocessing import forkserver

    from pymc_edp.runtime import parallel

    if multiprocessing.get_start_method() != "fork":
        pytest.skip("processes do not fork by default here")
    monkeypatch.setattr(parallel, "_numba_threading_layer", lambda: layer)
    monkeypatch.setattr(forkserver._forkserver, "_preload_modules", ["__main__"])
    asked = {}

    def pool(**kwargs):
        asked.update(kwargs)
        raise _NotStarted

    monkeypatch.setattr(cf, "ProcessPoolExecutor", pool)
    with pytest.raises(_NotStarted):
        map_tasks(_square, range(3), executor=2, progressbar=False)
    method = asked["mp_context"].get_start_method()
    if layer == ("omp", "GNU"):
        assert method == "forkserver"
        # the forkserver imports pymc_edp once, not every worker; its own list is kept
        assert forkserver._forkserver._preload_modules == ["__main__", "pymc_edp"]
    else:  # fork is safe there, and cheaper
        assert method == "fork"
        assert forkserver._forkserver._preload_modules == ["__main__"]

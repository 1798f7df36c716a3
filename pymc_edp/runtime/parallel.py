"""A small executor layer: run independent tasks serially, on a process pool or on dask.

:func:`map_tasks` hands each result back as it completes (to save it at once) and
returns all in task order.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import logging
import multiprocessing
import os
import pickle
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["check_executor", "fork_unsafe", "map_tasks", "progress_bar", "resolve_n_workers"]

_log = logging.getLogger(__name__)

#: The function :func:`_init_worker` installs in the workers of the pools we start.
_WORKER_FUNC: Callable[[Any], Any] | None = None


def resolve_n_workers(n: int) -> int:
    """A worker count >= 1 from an ``int`` spec.

    Negative values count back from the cores, as in joblib (``-1`` all, ``-2`` all but one).
    """
    cores = os.cpu_count() or 1
    if n < 0:
        n = cores + 1 + n
    return max(int(n), 1)


def check_executor(executor, where: str):
    """``executor`` checked for ``where`` (``"ChunkOptions"``): what :func:`map_tasks` takes.

    None, an int (a local process pool of that many workers, ``-1`` all cores), a
    ``concurrent.futures.Executor`` or a dask ``Client``; a process pool that would ``fork``
    where it is unsafe (:func:`fork_unsafe`) is refused.

    Examples
    --------
    >>> from pymc_edp.runtime.parallel import check_executor
    >>> check_executor(2, "ChunkOptions")
    2
    """
    ok = executor is None or isinstance(executor, cf.Executor) or _is_dask_client(executor)
    if not ok and not (isinstance(executor, int) and not isinstance(executor, bool)):
        raise TypeError(
            f"{where}(executor=...) must be None, an int (a local process pool of that many "
            "workers), a concurrent.futures.Executor or a dask.distributed.Client, not "
            f"{type(executor).__name__}"
        )
    if isinstance(executor, int) and executor == 0:
        raise ValueError(f"{where}(executor=0): give a worker count >= 1, or -1 for all cores")
    unsafe = fork_unsafe(executor)
    if unsafe is not None:
        raise ValueError(f"{where}(executor=...) {unsafe}")
    return executor


def _numba_threading_layer() -> tuple[str, str | None]:
    """``(layer, OpenMP vendor or None)`` of numba's threading layer (launched, or to be)."""
    import importlib

    import numba
    from numba import config

    def vendor(layer: str) -> str | None:
        if layer != "omp":
            return None
        from numba.np.ufunc import omppool

        return str(getattr(omppool, "openmp_vendor", "GNU"))

    try:
        layer = numba.threading_layer()
        return layer, vendor(layer)
    except ValueError:  # not launched yet: numba's choice, as it makes it
        pass
    requested = str(config.THREADING_LAYER)
    if requested in ("tbb", "omp", "workqueue"):
        return requested, vendor(requested)
    for layer in config.THREADING_LAYER_PRIORITY:
        module = "workqueue" if layer == "workqueue" else f"{layer}pool"
        try:
            importlib.import_module(f"numba.np.ufunc.{module}")
        except ImportError:
            continue
        if requested == "forksafe" and layer == "omp" and vendor(layer) == "GNU":
            continue
        return layer, vendor(layer)
    return "workqueue", None


def fork_unsafe(executor: Any) -> str | None:
    """Why a process pool cannot run the numba kernels in its workers, or None.

    numba's GNU OpenMP layer is not fork-safe: once it has run here, a forked worker
    running a parallel kernel is killed (``BrokenProcessPool``).

    Returns
    -------
    str or None
        The reason and the fix; None for anything safe.

    Examples
    --------
    >>> import concurrent.futures as cf, multiprocessing
    >>> from pymc_edp.runtime.parallel import fork_unsafe
    >>> pool = cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    >>> fork_unsafe(pool) is None
    True
    >>> pool.shutdown()
    """
    if not isinstance(executor, cf.ProcessPoolExecutor):
        return None
    if not _forks_into_gnu_openmp(getattr(executor, "_mp_context", None)):
        return None
    return (
        "is a ProcessPoolExecutor that starts its workers with fork, which numba's GNU "
        "OpenMP threads (the audit's parallel kernels) do not survive: a forked worker that "
        "runs a kernel is terminated, and the pool breaks (BrokenProcessPool). Start its "
        "workers with forkserver or spawn instead: ProcessPoolExecutor(max_workers, "
        "mp_context=multiprocessing.get_context('forkserver'))"
    )


def _forks_into_gnu_openmp(context: Any = None) -> bool:
    """Whether processes of ``context`` (None: the default) fork into GNU OpenMP."""
    context = context or multiprocessing.get_context()
    return context.get_start_method() == "fork" and _numba_threading_layer() == ("omp", "GNU")


def _pool_context():
    """The pools' context: the default, or forkserver (else spawn) where a fork breaks."""
    context = multiprocessing.get_context()
    if _forks_into_gnu_openmp(context):
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if context.get_start_method() == "forkserver":
        _preload_in_forkserver(context)
    return context


def _preload_in_forkserver(context) -> None:
    """Add pymc_edp to the forkserver's preload modules (unless running, or unreadable)."""
    from multiprocessing import forkserver

    package = __name__.split(".")[0]
    modules = getattr(getattr(forkserver, "_forkserver", None), "_preload_modules", None)
    if isinstance(modules, list) and package not in modules:
        context.set_forkserver_preload([*modules, package])


def _dumps(obj: Any) -> bytes:
    try:
        import cloudpickle
    except ImportError:  # pragma: no cover - cloudpickle ships with dask
        return pickle.dumps(obj)
    return cloudpickle.dumps(obj)


def _init_worker(payload: bytes) -> None:
    global _WORKER_FUNC
    _WORKER_FUNC = pickle.loads(payload)


def _run_installed(task: Any) -> Any:
    assert _WORKER_FUNC is not None, "worker initializer did not run"
    return _WORKER_FUNC(task)


def _run_pickled(payload: bytes, task: Any) -> Any:
    return pickle.loads(payload)(task)


def _bar(step: Callable[[int], Any]) -> types.SimpleNamespace:
    """What :func:`progress_bar` yields: ``advance(n=1)`` calls ``step(n)``."""
    return types.SimpleNamespace(advance=lambda n=1: step(n))


@contextlib.contextmanager
def progress_bar(total: int, *, description: str = "Working", enabled: bool = True):
    """Context manager yielding an object with ``advance(n=1)``: rich, else tqdm, else silent.

    A missing or broken progress library never stops the computation.
    """
    if not enabled or total <= 0:
        yield _bar(lambda n: None)
        return
    try:
        from rich import progress as rich
    except ImportError:  # pragma: no cover - rich comes with PyMC
        rich = None
    if rich is not None:
        columns = (
            rich.TextColumn("{task.description}"),
            rich.BarColumn(),
            rich.MofNCompleteColumn(),
            rich.TimeElapsedColumn(),
            rich.TimeRemainingColumn(),
        )
        with rich.Progress(*columns, transient=False) as progress:
            task_id = progress.add_task(description, total=total)
            yield _bar(lambda n: progress.advance(task_id, n))
        return
    try:  # pragma: no cover - exercised only without rich
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover
        yield _bar(lambda n: None)
        return
    with tqdm(total=total, desc=description) as bar:  # pragma: no cover
        yield _bar(bar.update)


def _is_dask_client(obj: Any) -> bool:
    return hasattr(obj, "submit") and hasattr(obj, "gather") and not isinstance(obj, cf.Executor)


def _note(err: BaseException, index: int) -> None:
    err.add_note(f"raised by task {index} in map_tasks")


def _iter_serial(func, tasks) -> Iterator[tuple[int, Any]]:
    for i, task in enumerate(tasks):
        try:
            result = func(task)
        except Exception as err:
            _note(err, i)
            raise
        yield i, result


def _drain(completed, index_of, futures, shutdown=None) -> Iterator[tuple[int, Any]]:
    """Yield ``(index_of(future), result)`` in ``completed`` order; on exit cancel the rest."""
    try:
        for fut in completed:
            i = index_of(fut)
            try:
                result = fut.result()
            except Exception as err:
                _note(err, i)
                raise
            yield i, result
    finally:
        for fut in futures:
            fut.cancel()
        if shutdown is not None:
            shutdown()


def _start_executor(func, tasks, executor: cf.Executor) -> Iterator[tuple[int, Any]]:
    if isinstance(executor, cf.ProcessPoolExecutor):
        payload = _dumps(func)
        futures = {executor.submit(_run_pickled, payload, t): i for i, t in enumerate(tasks)}
    else:
        futures = {executor.submit(func, t): i for i, t in enumerate(tasks)}
    return _drain(cf.as_completed(futures), futures.__getitem__, futures)


def _start_pool(func, tasks, n_workers: int) -> Iterator[tuple[int, Any]]:
    pool = cf.ProcessPoolExecutor(
        max_workers=n_workers,
        mp_context=_pool_context(),
        initializer=_init_worker,
        initargs=(_dumps(func),),
    )
    # submitted before the caller starts a progress-bar thread: forking threads is unsafe
    futures = {pool.submit(_run_installed, t): i for i, t in enumerate(tasks)}
    shutdown = functools.partial(pool.shutdown, wait=True, cancel_futures=True)
    return _drain(cf.as_completed(futures), futures.__getitem__, futures, shutdown)


def _iter_dask(futures: list, client) -> Iterator[tuple[int, Any]]:
    index = {f.key: i for i, f in enumerate(futures)}
    try:
        from distributed import as_completed
    except ImportError:  # pragma: no cover - a client-like object without distributed
        yield from enumerate(client.gather(futures))
        return
    yield from _drain(as_completed(futures), lambda f: index[f.key], futures)


def _call_shared(func, shared, task):
    return func(shared, task)


def _start_dask(func, tasks, client, shared=None) -> Iterator[tuple[int, Any]]:
    if shared is None:
        futures = [client.submit(func, t, pure=False) for t in tasks]
    else:
        # sent to every worker once, not pickled again with every task
        (remote,) = client.scatter([shared], broadcast=True, hash=False)
        futures = [client.submit(_call_shared, func, remote, t, pure=False) for t in tasks]
    return _iter_dask(futures, client)


def map_tasks(
    func: Callable[[Any], Any],
    tasks: Iterable[Any],
    *,
    executor: int | cf.Executor | Any | None = None,
    progressbar: bool = True,
    description: str = "Working",
    on_result: Callable[[int, Any], None] | None = None,
    shared: Any = None,
) -> list[Any]:
    """Run ``func(task)`` for every task and return the results in task order.

    Parameters
    ----------
    func : callable
        For process pools picklable (by ``cloudpickle`` when installed), as its results.
    tasks : iterable
    executor : None, int, concurrent.futures.Executor or dask.distributed.Client, optional
        ``None`` serially; an ``int`` a fresh local process pool of that many workers
        (``-1`` all cores), started with ``forkserver`` where a fork is unsafe
        (:func:`fork_unsafe`; scripts then need ``if __name__ == "__main__":``); an
        ``Executor`` as given (not shut down); a dask ``Client``.
    progressbar : bool, default True
    description : str
        Label of the progress bar.
    on_result : callable, optional
        ``on_result(index, result)``, called here as each task finishes.
    shared : object, optional
        State every task needs, sent to each worker once; ``func(shared, task)`` is called.

    Returns
    -------
    list
        ``[func(t) for t in tasks]``, in task order.

    Raises
    ------
    Exception
        The first task's exception, with a note naming its index; the rest are cancelled.
    """
    tasks = list(tasks)
    n = len(tasks)
    if shared is not None and not _is_dask_client(executor):
        func = functools.partial(func, shared)
    if isinstance(executor, bool):
        raise TypeError("executor must be None, an int, an Executor or a dask Client")
    n_workers = min(resolve_n_workers(executor), max(n, 1)) if isinstance(executor, int) else None
    if executor is None or n_workers == 1:
        iterator = _iter_serial(func, tasks)
    elif n_workers is not None:
        iterator = _start_pool(func, tasks, n_workers)
    elif isinstance(executor, cf.Executor):
        iterator = _start_executor(func, tasks, executor)
    elif _is_dask_client(executor):
        iterator = _start_dask(func, tasks, executor, shared)
    else:
        raise TypeError(
            "executor must be None, an int, a concurrent.futures.Executor or a dask Client, "
            f"not {type(executor).__name__}"
        )

    results: list[Any] = [None] * n
    with progress_bar(n, description=description, enabled=progressbar) as bar:
        try:
            for i, result in iterator:
                results[i] = result
                if on_result is not None:
                    on_result(i, result)
                bar.advance()
        finally:
            iterator.close()
    _log.debug("map_tasks: %d tasks done", n)
    return results

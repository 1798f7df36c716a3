"""Running refits (serially, in processes or on dask) and estimating their epsilon."""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import signal
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import xarray as xr

from pymc_edp.base import binning
from pymc_edp.base.mcse import pooled_log_ratio_se, refit_log_ratio_se
from pymc_edp.core.loglik import LogLikelihood, NonFactorisedError, log_ratios, posterior_matrix
from pymc_edp.core.neighbours import Relation, Remove
from pymc_edp.model.stream import (
    ModelColumns,
    StreamingUnavailableError,
    _Graph,
    _posterior_draws,
)
from pymc_edp.model.transform import (
    NeighbourDataMaker,
    coupled_blocks,
    neighbour_changes,
    neighbour_model,
)
from pymc_edp.refit.checkpoint import Checkpoint, _brief
from pymc_edp.refit.engines import (
    STRICTER_TARGET_ACCEPT,
    Engine,
    RefitInterrupted,
    failed_to_start,
    make_engine,
    stricter,
)
from pymc_edp.refit.fingerprint import AuditFingerprint
from pymc_edp.refit.options import RefitOptions
from pymc_edp.refit.outcome import RefitOutcome, Refits, RefitTask, jsonable, refit_seed
from pymc_edp.refit.warm import WarmStart, cached_neighbour_model, current_data, warm_start
from pymc_edp.runtime.parallel import map_tasks, resolve_n_workers

_log = logging.getLogger("pymc_edp")

#: A refit's log density ratio is computed from its neighbour's own records only
#: (:class:`~pymc_edp.model.stream.ModelColumns`); False evaluates every record: the tests'
#: reference and the "before" of ``benchmarks/refit_records.py``.
_OWN_RECORDS = True

#: How the warning about failed refits begins (after their count).
FAILED_REFITS = "refit(s) failed and kept their reweighted estimate"

__all__ = [
    "FAILED_REFITS",
    "RefitEstimate",
    "RefitInterrupted",
    "RefitProblem",
    "RefitRun",
    "RefitSetupError",
    "cut_short",
    "refit_neighbours",
    "refit_pool",
    "run_refits",
    "starting_points",
]


def cut_short(posterior: xr.Dataset, draws: int, chains: int) -> str | None:
    """Why a refit's trace is incomplete (fewer chains or draws, NaN draws), or None.

    Examples
    --------
    >>> from pymc_edp.refit.run import cut_short
    >>> post = xr.Dataset({"mu": (("chain", "draw"), np.ones((2, 10)))})
    >>> cut_short(post, 10, 2) is None
    True
    >>> post["mu"][1, 6:] = np.nan
    >>> cut_short(post, 10, 2)
    "NaN draws of 'mu' (chain 1)"
    >>> cut_short(post.isel(draw=slice(0, 4)), 10, 2)
    '2 chain(s) x 4 draws of 2 x 10'
    """
    n_chain = int(posterior.sizes.get("chain", 1))
    n_draw = int(posterior.sizes.get("draw", 0))
    if n_chain < chains or n_draw < draws:
        return f"{n_chain} chain(s) x {n_draw} draws of {chains} x {draws}"
    for name, da in posterior.data_vars.items():
        values = np.asarray(da.values)
        if values.dtype.kind == "f" and np.isnan(values).any():
            axes = tuple(range(1, values.ndim))
            bad = np.flatnonzero(np.isnan(values).any(axis=axes)) if "chain" in da.dims else []
            where = f" (chain {', '.join(map(str, bad))})" if len(bad) else ""
            return f"NaN draws of {name!r}{where}"
    return None


def _run_one(engine, task: RefitTask, retry_divergent: bool = False) -> RefitOutcome:
    index, label, data, seed = task.index, task.label, task.data, task.seed
    start = time.perf_counter()
    notes: list[str] = []  # what it took to get the draws
    try:
        if callable(data):  # expanded here, not held for every task at once
            data = data()
        post, div, engine = _sample_started(engine, data, seed, label, notes)
        divergent: list[str] = []
        if div and retry_divergent:  # biased draws: smaller steps, as far as they help
            current = float(getattr(engine, "sampler_kwargs", {}).get("target_accept", 0.8))
            for target in STRICTER_TARGET_ACCEPT:
                strict = stricter(engine, target) if target > current else None
                if strict is None:
                    continue
                divergent.append(f"{div} divergent transitions at target_accept={current:g}")
                post, div = _sample_whole(strict, data, seed, label)
                current = target
                if not div:
                    break
    except Exception as err:  # recorded, never silently dropped
        reason = "; ".join([*notes, _brief(err)])  # one line each: never a backtrace
        return RefitOutcome(index, label, "error", reason, seed, time.perf_counter() - start, None)
    if div:
        status = "diverged"
        reason = "; ".join([*notes, *divergent, f"{div} divergent transitions"])
    else:
        if divergent:
            notes.append(f"rerun with target_accept={current:g} after {divergent[-1]}")
        status, reason = "ok", "; ".join(notes)
    return RefitOutcome(index, label, status, reason, seed, time.perf_counter() - start, post)


def _sample_started(engine, data, seed, label, notes: list[str]):
    """``(posterior, divergences, engine)``, from ``engine.restarted()`` if no chain can start."""
    try:
        return (*_sample_whole(engine, data, seed, label), engine)
    except Exception as err:
        restarted = getattr(engine, "restarted", None)
        restart = restarted() if restarted is not None and failed_to_start(err) else None
        if restart is None:
            raise
        notes.append(f"started at full-data posterior draws after: {_brief(err)}")
        return (*_sample_whole(restart, data, seed, label), restart)


#: Set by the SIGINT handler :func:`_watching_interrupts` installs while refits run.
_INTERRUPTED = threading.Event()


@contextlib.contextmanager
def _watching_interrupts():
    """Record Ctrl-C while refits run, then let the previous handler act.

    A sampler may catch the ``KeyboardInterrupt`` itself (nutpie returns the draws so far);
    the recorded interrupt still ends the refits. Only the main thread sets a handler.
    """
    _INTERRUPTED.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum, frame):
        _INTERRUPTED.set()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _INTERRUPTED.clear()


def _sample_whole(engine, data, seed, label):
    """``engine.sample``, refusing a trace cut short (an interrupt): it is never used."""
    post, div = engine.sample(data, seed)
    if _INTERRUPTED.is_set():  # the sampler caught Ctrl-C and returned
        raise RefitInterrupted(f"interrupted (Ctrl-C) during the refit of {label}")
    draws, chains = getattr(engine, "draws", None), getattr(engine, "chains", None)
    if draws is not None and chains is not None:
        short = cut_short(post, int(draws), int(chains))
        if short:
            raise RefitInterrupted(f"the refit of {label} was cut short ({short})")
    return post, div


def run_refits(
    engine,
    tasks: list[RefitTask],
    *,
    executor=None,
    checkpoint: Checkpoint | None = None,
    progressbar: bool = True,
    retry_failed: bool = True,
    retry_divergent: bool = False,
    deadline: float | None = None,
) -> dict[int, RefitOutcome]:
    """Run refit tasks, skipping those already checkpointed.

    Parameters
    ----------
    engine
        Any object with a ``sample(data, seed) -> (posterior, n_divergences)`` method.
    tasks : list of RefitTask
        ``data`` may be a callable returning the data.
    executor : optional
        Where refits run (:func:`pymc_edp.runtime.parallel.map_tasks`); by default serially, or
        in threads where the engine allows (:func:`refit_pool`).
    checkpoint : Checkpoint, optional
        Restores saved outcomes and saves each new one as it completes, with its task's
        ``fingerprint``; damaged or differently fingerprinted ones are refitted and described
        in its ``messages``.
    progressbar : bool, default True
    retry_failed : bool, default True
        Refit again neighbours whose saved outcome is an ``"error"``.
    retry_divergent : bool, default False
        Sample a divergent refit again at a higher ``target_accept``
        (:func:`pymc_edp.refit.engines.stricter`), keeping the first run without divergences
        (or the last).
    deadline : float, optional
        A :func:`time.monotonic` time after which no refit starts; those left are missing
        from the result (a refit under way finishes).

    Returns
    -------
    dict of int to RefitOutcome
        By task index: those restored and those run.

    Raises
    ------
    RefitInterrupted
        On Ctrl-C (or a refit cut short), with the refits that finished in ``outcomes``.

    Examples
    --------
    A toy engine returning a constant posterior instead of sampling:

    >>> from pymc_edp.refit import RefitTask, run_refits
    >>> class ToyEngine:
    ...     def sample(self, data, seed):
    ...         mu = np.full((1, 4), data["shift"])
    ...         return xr.Dataset({"mu": (("chain", "draw"), mu)}), 0
    >>> tasks = [RefitTask(0, "a", {"shift": 1.0}, 11), RefitTask(1, "b", {"shift": 2.0}, 12)]
    >>> done = run_refits(ToyEngine(), tasks, progressbar=False)
    >>> sorted(done), done[1].status, done[1].seed, float(done[1].posterior["mu"].mean())
    ([0, 1], 'ok', 12, 2.0)
    """
    done: dict[int, RefitOutcome] = {}
    todo = []
    retried = 0
    for task in tasks:
        saved = None if checkpoint is None else checkpoint.load(task.index, task.fingerprint)
        if saved is not None and saved.status == "error" and retry_failed:
            retried += 1
        elif saved is not None:
            done[task.index] = saved
            continue
        todo.append(task)
    if retried:
        _log.info("retrying %d refit(s) that failed in an earlier run", retried)
    if not todo:
        return done
    width = _side_by_side(engine, len(todo)) if executor is None else 1
    size = refit_size(engine)
    _log.info(
        "refitting %d neighbour(s)%s%s%s",
        len(todo),
        f" ({size})" if size else "",
        f", {width} at a time" if width > 1 else "",
        f" ({len(done)} restored from the checkpoint)" if done else "",
    )
    if executor is None:  # once, before the refits are timed
        _compile_first(engine)
    pool = refit_pool(engine, len(todo)) if executor is None else None
    prints = {task.index: task.fingerprint for task in todo}
    finished: dict[int, RefitOutcome] = {}
    pace = _Pace(len(todo), width)

    def on_result(i, out):
        if out is None:  # not started: the deadline had passed
            return
        finished[out.index] = out
        if checkpoint is not None:
            checkpoint.save(out, prints.get(out.index))
        pace.finished(out)

    run = partial(_run_one, engine, retry_divergent=retry_divergent)
    if deadline is not None:
        run = partial(_run_before, run, deadline)
    try:
        with _watching_interrupts():
            map_tasks(
                run,
                todo,
                executor=executor if pool is None else pool,
                progressbar=progressbar,
                description="EDP: refitting neighbours",
                on_result=on_result,
            )
    except KeyboardInterrupt as err:
        raise RefitInterrupted(*err.args, outcomes={**done, **finished}) from err
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    if len(finished) < len(todo):
        left = len(todo) - len(finished)
        _log.info("time budget spent: %d of %d refit(s) not started", left, len(todo))
    return {**done, **finished}


def _compile_first(engine) -> None:
    """Compile ``engine``'s model now, saying so when it is not compiled yet."""
    compile_model = getattr(engine, "compile", None)
    if not callable(compile_model):
        return
    if not getattr(engine, "is_compiled", True):
        _log.info("compiling the neighbour model (once per model in this process)")
    start = time.perf_counter()
    try:
        compile_model()
    except Exception as err:  # each refit meets it again, and records it as its outcome
        _log.debug("compiling before the refits failed: %s", _brief(err))
    else:
        took = time.perf_counter() - start
        _log.log(logging.INFO if took > 1.0 else logging.DEBUG, "compiled in %.1f s", took)


def _run_before(run, deadline: float, task: RefitTask) -> RefitOutcome | None:
    """``run(task)``, or None once :func:`time.monotonic` has passed ``deadline``."""
    return None if time.monotonic() > deadline else run(task)


def refit_size(engine) -> str:
    """What each refit of ``engine`` samples, in words ("" when the engine does not say)."""
    draws, chains = getattr(engine, "draws", None), getattr(engine, "chains", None)
    if draws is None or chains is None:
        return ""
    tune = getattr(engine, "tune_steps", getattr(engine, "tune", None))
    warm = ", warm-started" if getattr(engine, "warm", None) is not None else ""
    after = f" after {tune} tuning steps each" if tune is not None else ""
    return f"{chains} chain(s) x {draws} draws{after}{warm}"


class _Pace:
    """Logs the first refit's time and the time left; each later finish at DEBUG."""

    def __init__(self, total: int, width: int):
        self.total, self.width, self.seconds = total, max(1, width), []

    def finished(self, out: RefitOutcome) -> None:
        self.seconds.append(float(out.seconds))
        n = len(self.seconds)
        left = self.total - n
        eta = float(np.mean(self.seconds)) * left / self.width
        level = logging.INFO if n == 1 and left else logging.DEBUG
        message = "refit %d of %d (%s) took %.1f s: about %.0f s left for %d more"
        _log.log(level, message, n, self.total, out.label, out.seconds, eta, left)


def refit_pool(engine, n_refits: int, cores: int | None = None):
    """A thread pool running refits side by side on all cores, or None (one after another).

    Only for an engine whose sampler holds no GIL (nutpie, ``side_by_side``): ``cores //
    chains`` refits at once, the model compiled first. Python samplers run serially unless
    ``RefitOptions(executor=)`` says otherwise.
    """
    width = _side_by_side(engine, n_refits, cores)
    if width < 2:
        return None
    engine.compile()
    return concurrent.futures.ThreadPoolExecutor(width, thread_name_prefix="pymc_edp-refit")


def _side_by_side(engine, n_refits: int, cores: int | None = None) -> int:
    """How many refits :func:`refit_pool` runs at once (1: one after another)."""
    if not getattr(engine, "side_by_side", False) or n_refits < 2:
        return 1
    cores = resolve_n_workers(-1) if cores is None else int(cores)
    return max(1, min(n_refits, cores // max(1, int(getattr(engine, "chains", 1)))))


@dataclass(frozen=True)
class RefitProblem:
    """What the audit knows that its refits need.

    Attributes
    ----------
    model : pymc.Model or None
        The user's model (None with ``build_model``).
    ll : LogLikelihood
        The full-data pointwise log-likelihood.
    neighbours : Neighbours
    names : sequence of str
        Posterior variables audited.
    bins : Bins
    smoothing, count_smoothing : float
        Additive smoothing of weighted (pooled) and of count (raw) estimates.
    observed_y : dict
    relation : Relation
        The neighbour relation, its candidates bound to the data.
    worst_candidate : ndarray, optional
        Each neighbour's worst candidate (its refit uses that one).
    draws : ndarray, optional
        The full-data draws ``(parameter, sample)`` (for each refit's Monte-Carlo error).
    n_chains : int
        Chains of the full-data draws.
    density_ratio : bool
        Whether ``ll`` gives each neighbour's log density ratio (pooling needs it).
    rows : ndarray of int, optional
        The rows of ``posterior_matrix(posterior, names)`` binned; None for all.
    starts : tuple of dict
        Full-data draws of the free variables, one per chain, where a refit that cannot
        start restarts.
    posterior : xarray.Dataset, optional
        The full-data posterior, where warm refits start.
    """

    model: object
    ll: LogLikelihood
    neighbours: object
    names: tuple
    bins: binning.Bins
    smoothing: float
    observed_y: dict
    relation: Relation = field(default_factory=Remove)
    worst_candidate: np.ndarray | None = None
    draws: np.ndarray | None = None
    n_chains: int = 1
    count_smoothing: float = 0.01
    density_ratio: bool = True
    rows: np.ndarray | None = None
    starts: tuple = ()
    posterior: xr.Dataset | None = field(default=None, repr=False, compare=False)

    def _worst(self, k: int) -> int:
        return 0 if self.worst_candidate is None else int(self.worst_candidate[k])

    def candidate(self, k: int) -> dict | None:
        """Replacement values of neighbour ``k`` (its worst candidate), or None (removal)."""
        return self.relation.values(self._worst(k))

    def full_log_ratio(self, k: int) -> np.ndarray:
        """Neighbour ``k``'s log density ratio at the full-data draws."""
        repl = self.relation.replacement(self._worst(k))
        return log_ratios(self.ll, self.neighbours, k, k + 1, repl)[0]

    #: Per observed variable, ``(ModelColumns, free variable dtypes)`` or why its records go
    #: through ``loglik_fns`` (:meth:`_own_columns`).
    _own: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    #: ``(build_model, AuditFingerprint)`` pairs (:meth:`fingerprint`).
    _prints: list = field(default_factory=list, init=False, repr=False, compare=False)
    #: Warm starts by ``(neighbour-model token, tune)`` (:meth:`warm_start`).
    _warm: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def warm_start(self, nb_model, token: str, tune: int) -> WarmStart | None:
        """Where refits of ``nb_model`` start (:func:`~pymc_edp.refit.warm.warm_start`), once."""
        if self.posterior is None:
            return None
        key = (token, int(tune))
        if key not in self._warm:
            self._warm[key] = warm_start(nb_model, self.posterior, tune=int(tune))
        return self._warm[key]

    def fingerprint(self, build_model=None) -> AuditFingerprint:
        """The model and data part of the refits' fingerprints, hashed once per ``build_model``."""
        for builder, prints in self._prints:
            if builder is build_model:
                return prints
        observed = {n: self.observed_y[n] for n in self.ll.names}
        prints = AuditFingerprint(self.model, observed, build_model)
        self._prints.append((build_model, prints))
        return prints

    def refit_log_ratio(self, loglik_fns: Mapping, k: int, posterior: xr.Dataset) -> np.ndarray:
        """Neighbour ``k``'s log density ratio at the draws of a refit ``posterior``.

        Only ``k``'s records are evaluated (:data:`_OWN_RECORDS`); a variable that cannot be
        streamed goes through ``loglik_fns[name](posterior, y)`` over all its records.
        """
        if _OWN_RECORDS and self.model is not None:
            return self._own_records_log_ratio(loglik_fns, k, posterior)
        return self._all_records_log_ratio(loglik_fns, k, posterior)

    def _all_records_log_ratio(self, loglik_fns: Mapping, k: int, posterior: xr.Dataset):
        """:meth:`refit_log_ratio` from every record (the reference)."""
        names, cand = self.ll.names, self.candidate(k)
        at = [loglik_fns[n](posterior, self.observed_y[n]) for n in names]
        repl = None if cand is None else [loglik_fns[n](posterior, cand[n]) for n in names]
        return log_ratios(LogLikelihood.at_draws(self.ll, at), self.neighbours, k, k + 1, repl)[0]

    def _own_records_log_ratio(self, loglik_fns: Mapping, k: int, posterior: xr.Dataset):
        """:meth:`refit_log_ratio` with only ``k``'s rows computed (columns on demand)."""
        rows = np.asarray(self.neighbours.rows_of(k), dtype=np.int64)
        if rows.size == 0:
            return self._all_records_log_ratio(loglik_fns, k, posterior)
        touched = set(np.searchsorted(self.ll.offsets, rows, side="right") - 1)
        n_samples = int(posterior.sizes.get("chain", 1)) * int(posterior.sizes["draw"])
        cand = self.candidate(k)
        arrays, repl = [], None if cand is None else []
        for v, name in enumerate(self.ll.names):
            own = self._own_columns(name, posterior) if v in touched else None
            if own is None:  # no row of this neighbour: never read
                n_v = int(self.ll.offsets[v + 1] - self.ll.offsets[v])
                at = alt = np.broadcast_to(0.0, (n_samples, n_v))
            elif isinstance(own, str):  # not streamable: every record
                at = loglik_fns[name](posterior, self.observed_y[name])
                alt = None if cand is None else loglik_fns[name](posterior, cand[name])
            else:
                cols, dtypes = own
                at = cols.at_draws(_posterior_draws(posterior, cols.free, dtypes))
                shape = np.shape(self.observed_y[name])
                alt = None if cand is None else at.with_observed(np.reshape(cand[name], shape))
            arrays.append(at)
            if repl is not None:
                repl.append(alt)
        at = LogLikelihood(self.ll.names, tuple(arrays), self.ll.offsets, self.ll.datasets)
        return log_ratios(at, self.neighbours, k, k + 1, repl)[0]

    def _own_columns(self, name: str, posterior: xr.Dataset):
        """``(ModelColumns, dtypes)`` of ``name``, or why not; built at the first refit."""
        if name not in self._own:
            self._own[name] = _streamed_columns(
                self.model, name, posterior, self.observed_y[name], self.ll
            )
        return self._own[name]


def _streamed_columns(model, name: str, posterior: xr.Dataset, y, ll: LogLikelihood):
    """``(ModelColumns, dtypes)`` of ``name`` at observed values ``y``, or why not (a str)."""
    v = ll.names.index(name)
    n_rows = int(ll.offsets[v + 1] - ll.offsets[v])
    try:
        graph = _Graph(model, name)
        if graph.n != n_rows:
            return f"{graph.n} records in the model, {n_rows} in the log-likelihood"
        dtypes = list(graph.free_dtypes)
        draws = _posterior_draws(posterior, graph.free, dtypes)
        n_samples = int(posterior.sizes.get("chain", 1)) * int(posterior.sizes["draw"])
        cols = ModelColumns(graph, draws, n_samples)
        cols._check(graph)
        cols = cols.with_observed(np.reshape(np.asarray(y), np.shape(graph.data[0])))
    except (
        StreamingUnavailableError,
        KeyError,
        ValueError,
        TypeError,
        NotImplementedError,
    ) as err:
        _log.debug("refits evaluate every record of %r: %s", name, err)
        return f"{type(err).__name__}: {err}"
    return cols, dtypes


class _LoglikFunctions(dict):
    """``{name: elementwise_loglik(model, name)}``, each compiled when first read."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def __missing__(self, name):
        from pymc_edp.model.pymc import elementwise_loglik

        self[name] = elementwise_loglik(self.model, name)
        return self[name]


class RefitSetupError(ValueError):
    """The neighbour model (or its sampler) cannot be set up: no refit can run."""


@dataclass(frozen=True)
class RefitEstimate:
    """A refitted neighbour's per-parameter epsilon, its limits and the error of its maximum.

    Fields as :class:`pymc_edp.base.binning.EpsilonEstimate`; ``se`` is the Monte-Carlo
    standard error of the leading (parameter, bin) pair's log ratio.
    """

    eps: np.ndarray
    argbin: np.ndarray
    eps_unsmoothed: np.ndarray
    bin_draws: np.ndarray
    limit: np.ndarray
    se: float


def _estimate(problem: RefitProblem, refit_draws, log_ratios_k, posterior, order):
    """The :class:`RefitEstimate` of one refit.

    Pooled (``log_ratios_k`` given): weighted draws, the audit's ``smoothing``; raw: counted
    draws, ``count_smoothing`` (Charest & Han's ``alpha``).
    """
    bins = problem.bins
    if log_ratios_k is None:
        est = binning.refit_estimate(refit_draws, bins, problem.count_smoothing)
    else:
        lw_full, lw_nb, log_c = binning.pooled_log_weights(*log_ratios_k)
        est = binning.refit_estimate(
            refit_draws, bins, problem.smoothing, *log_ratios_k, pooled_weights=(lw_full, lw_nb)
        )
    se = np.nan
    if order is not None:
        p = int(np.argmax(est.eps))
        args = (refit_draws, bins, p, int(est.argbin[p]))
        common = dict(
            order=order,
            draws=problem.draws,
            n_chains=problem.n_chains,
            n_chains_refit=int(posterior.sizes.get("chain", 1)),
        )
        if log_ratios_k is None:
            _, se, _ = refit_log_ratio_se(*args, **common)
        else:
            log_ratio = np.concatenate(log_ratios_k)
            weights = dict(log_weights_full=lw_full, log_weights_neighbour=lw_nb)
            _, se, _ = pooled_log_ratio_se(
                *args, **weights, log_ratio=log_ratio, log_c=log_c, **common
            )
    fields = (est.eps, est.argbin, est.eps_unsmoothed, est.bin_draws, est.limit)
    return RefitEstimate(*fields, float(se))


@dataclass
class RefitRun:
    """Outcomes and estimates (:class:`RefitEstimate`, or None when failed) of the refits.

    ``missing``: the neighbours asked for that have neither (``stopped`` says why: an
    interruption, or the deadline).
    """

    outcomes: dict
    estimates: dict
    collection: Refits
    missing: tuple[int, ...] = ()
    stopped: str | None = None
    #: What each refit sampled, in words ("2 chain(s) x 1000 draws after 250 tuning steps,
    #: warm-started"; "" when the engine does not say).
    size: str = ""


def _engine_for(problem: RefitProblem, options: RefitOptions, messages: list, warm: bool):
    """The engine, and the log-likelihood functions the pooled estimator needs (or None)."""
    common = dict(
        draws=options.draws,
        tune=options.tune,
        chains=options.chains,
        sampler_kwargs=options.sampler_kwargs,
    )
    if options.build_model is not None:
        if options.estimator == "pooled":
            messages.append(
                "refits through build_model use the raw estimator (refit draws only): without a "
                "factorised likelihood the density ratio needed to pool the draws is unknown"
            )
        eng = make_engine(
            options.engine, build_model=options.build_model, var_names=problem.names, **common
        )
        return eng, None
    model = problem.model
    try:
        coupled = coupled_blocks(model, problem.ll, problem.neighbours)
        nb_model, token = cached_neighbour_model(
            model,
            problem.ll.names,
            coupled,
            build=neighbour_model,
            replace=problem.relation.replaces,
        )
    except NonFactorisedError as err:
        raise ValueError(str(err)) from None
    keep = tuple(dict.fromkeys([*problem.names, *(rv.name for rv in model.free_RVs)]))
    warm = problem.warm_start(nb_model, token, options.tune) if warm else None
    eng = make_engine(
        options.engine,
        model=nb_model,
        var_names=keep,
        starts=problem.starts,
        token=token,
        warm=warm,
        base_data=current_data(model, nb_model),
        **common,
    )
    if options.estimator != "pooled":
        return eng, None
    if not problem.density_ratio:  # said in the audit's records (coupled) or here
        if not coupled:
            messages.append(
                "the refits use the raw estimator (refit draws only): the density ratio "
                "needed to pool them with the full-data draws is not known for these "
                "neighbours"
            )
        return eng, None
    # compiled only for variables whose records are not streamed (:data:`_OWN_RECORDS`)
    return eng, _LoglikFunctions(model)


def starting_points(posterior: xr.Dataset, model, n: int = 4) -> tuple[dict, ...]:
    """The last draw of each of the first ``n`` chains, ``{free variable: value}``.

    Empty when the posterior lacks a free variable.

    Examples
    --------
    >>> from pymc_edp.refit.run import starting_points
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu")
    >>> post = xr.Dataset({"mu": (("chain", "draw"), np.arange(6.0).reshape(2, 3))})
    >>> [float(p["mu"]) for p in starting_points(post, model)]
    [2.0, 5.0]
    """
    names = [rv.name for rv in getattr(model, "free_RVs", ())]
    if not names or any(name not in posterior for name in names):
        return ()
    n_chains = int(posterior.sizes.get("chain", 1))
    points = []
    for c in range(min(n, n_chains)):
        at = {"draw": -1, **({"chain": c} if "chain" in posterior.dims else {})}
        points.append({name: np.asarray(posterior[name].isel(at).values) for name in names})
    return tuple(points)


def refit_neighbours(
    to_refit: np.ndarray,
    problem: RefitProblem,
    options: RefitOptions,
    *,
    random_seed: int,
    config: dict,
    progressbar: bool = True,
    warm_start: bool = False,
    deadline: float | None = None,
) -> tuple[RefitRun, list[str]]:
    """Refit neighbours ``to_refit`` and estimate their epsilon; used by :func:`audit`.

    Parameters
    ----------
    to_refit : numpy.ndarray
        Indices of the neighbours to refit.
    problem : RefitProblem
    options : RefitOptions
    random_seed : int
        Refit ``k`` uses :func:`refit_seed` ``(random_seed, k)``.
    config : dict
        What the refits depend on; checked against (and stored in) the checkpoint.
    progressbar : bool, default True
    warm_start : bool, default False
        Start every refit at full-data draws and tune for a quarter of ``options.tune``
        (:func:`pymc_edp.refit.warm.warm_tune`): the short verification refits. Not with
        ``build_model``.
    deadline : float, optional
        A :func:`time.monotonic` time after which no refit starts (:func:`run_refits`).

    Returns
    -------
    RefitRun
        An interruption (Ctrl-C) or the deadline leaves ``missing`` refits, and ``stopped``
        says which; the refits that finished are estimated and (with a checkpoint) saved.
    list of str
        Warnings: failed and divergent refits, damaged checkpoint files refitted.
    """
    messages: list[str] = []
    options = options.for_fit()  # sizes left unset: PyMC's
    ll, nbs = problem.ll, problem.neighbours
    absent = [n for n in ll.names if n not in problem.observed_y]
    if absent:
        raise RefitSetupError(f"cannot find the observed values of {absent} needed to refit")
    try:
        eng, loglik_fns = _engine_for(problem, options, messages, warm_start)
    except (ValueError, TypeError, NotImplementedError, ImportError) as err:
        raise RefitSetupError(str(err)) from err
    prints = None
    if options.checkpoint is not None:  # what a saved refit must have been computed from
        prints = problem.fingerprint(options.build_model)
    tasks = _refit_tasks(
        problem, to_refit, random_seed, builder=options.build_model is not None, prints=prints
    )
    stopped = None
    try:
        outcomes = _run_checkpointed(eng, tasks, options, config, progressbar, messages, deadline)
    except RefitInterrupted as err:
        outcomes, stopped = err.outcomes, str(err)
    missing = tuple(int(k) for k in to_refit if int(k) not in outcomes)
    if not missing:
        stopped = None
    elif stopped is None:
        stopped = f"the time budget was spent before they started: {_resume(options)}"
    order = None if problem.draws is None else np.argsort(problem.draws, axis=1, kind="stable")
    estimates: dict = {}
    failed = []
    for k in (int(k) for k in to_refit if int(k) in outcomes):
        out = outcomes[k]
        if out.posterior is None:
            estimates[k] = None
            failed.append(f"{nbs.labels[k]} ({out.reason})")
            continue
        refit_draws, _, _ = posterior_matrix(out.posterior, problem.names)
        if problem.rows is not None:  # constant elements are not binned
            refit_draws = refit_draws[problem.rows]
        log_ratios_k = None
        if loglik_fns is not None:
            log_ratios_k = (
                problem.full_log_ratio(k),
                problem.refit_log_ratio(loglik_fns, k, out.posterior),
            )
        estimates[k] = _estimate(problem, refit_draws, log_ratios_k, out.posterior, order)
    messages.extend(_outcome_messages(failed, outcomes, options))
    run = RefitRun(outcomes, estimates, Refits(outcomes), missing, stopped, refit_size(eng))
    return run, messages


def _refit_tasks(
    problem: RefitProblem,
    to_refit: np.ndarray,
    random_seed: int,
    *,
    builder: bool,
    prints: AuditFingerprint | None = None,
) -> list[RefitTask]:
    """One :class:`RefitTask` per neighbour, its data made lazily, with ``prints``' fingerprint."""
    ll, nbs = problem.ll, problem.neighbours
    maker = NeighbourDataMaker(
        observed_y={n: problem.observed_y[n] for n in ll.names},
        record_shapes={n: tuple(ll.datasets[n].shape[2:]) for n in ll.names},
        builder=builder,
        coupled={} if builder else coupled_blocks(problem.model, ll, nbs),
        replace=problem.relation.replaces,
    )
    tasks = []
    for k in map(int, to_refit):
        label = jsonable(nbs.labels[k])
        changes = neighbour_changes(ll, nbs, k, problem.candidate(k))
        lazy = partial(maker, k, label, changes)
        fingerprint = None if prints is None else prints.of(changes)
        tasks.append(RefitTask(k, label, lazy, refit_seed(random_seed, k), fingerprint))
    return tasks


def _resume(options: RefitOptions) -> str:
    """How a rerun finishes what an interruption or a time budget left."""
    if options.checkpoint is None:
        return (
            "pass refit=RefitOptions(checkpoint=folder) to keep finished refits across "
            "interruptions"
        )
    return (
        f"the refits that finished are saved in {options.checkpoint}, and a rerun with the "
        "same RefitOptions(checkpoint=...) refits only what is missing"
    )


def _run_checkpointed(
    eng: Engine,
    tasks: list[RefitTask],
    options: RefitOptions,
    config: dict,
    progressbar: bool,
    messages: list[str],
    deadline: float | None = None,
) -> dict[int, RefitOutcome]:
    """:func:`run_refits` with ``options``' checkpoint; an interruption says how to resume."""
    ckpt = Checkpoint(options.checkpoint, config) if options.checkpoint is not None else None
    try:
        return run_refits(
            eng,
            tasks,
            executor=options.executor,
            checkpoint=ckpt,
            progressbar=progressbar,
            retry_failed=options.retry_failed,
            retry_divergent=options.retry_divergent,
            deadline=deadline,
        )
    except KeyboardInterrupt as err:
        detail = f" ({err})" if str(err) else ""
        message = f"refits interrupted{detail}: {_resume(options)}"
        raise RefitInterrupted(message, outcomes=getattr(err, "outcomes", {})) from err
    finally:
        if ckpt is not None:
            messages.extend(ckpt.messages)


def _outcome_messages(
    failed: list[str], outcomes: dict[int, RefitOutcome], options: RefitOptions
) -> list[str]:
    """Warnings about failed refits (``failed`` describes them) and divergent ones."""
    messages = []
    if failed:
        messages.append(
            f"{len(failed)} {FAILED_REFITS}: "
            + "; ".join(failed[:5])
            + ("..." if len(failed) > 5 else "")
        )
    diverged = [o for o in outcomes.values() if o.status == "diverged"]
    if diverged:
        again = " even at a higher target_accept" if options.retry_divergent else ""
        messages.append(
            f"{len(diverged)} refit(s) had divergent transitions{again} (see "
            "res.pointwise['status'] and res.refits.status); their draws are used but may be "
            "biased: reparametrise the model (e.g. non-centred group effects)"
        )
    return messages

"""Running refits (serially, in processes or on dask) and estimating their epsilon."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import xarray as xr

from pymc_edp.base import binning
from pymc_edp.base.mcse import pooled_log_ratio_se, refit_log_ratio_se
from pymc_edp.base.parallel import map_tasks
from pymc_edp.model.loglik import LogLikelihood, NonFactorisedError, log_ratios, posterior_matrix
from pymc_edp.model.transform import NeighbourDataMaker, neighbour_changes, neighbour_model
from pymc_edp.refit.checkpoint import Checkpoint
from pymc_edp.refit.engines import make_engine
from pymc_edp.refit.options import RefitOptions
from pymc_edp.refit.outcome import RefitOutcome, Refits, RefitTask, jsonable, refit_seed

_log = logging.getLogger("pymc_edp")

__all__ = ["RefitProblem", "RefitRun", "refit_neighbours", "run_refits"]


def _run_one(engine, task: RefitTask) -> RefitOutcome:
    index, label, data, seed = task.index, task.label, task.data, task.seed
    start = time.perf_counter()
    try:
        if callable(data):  # expanded here, not held for every task at once
            data = data()
        post, div = engine.sample(data, seed)
    except Exception as err:  # recorded, never silently dropped
        return RefitOutcome(
            index,
            label,
            "error",
            f"{type(err).__name__}: {err}",
            seed,
            time.perf_counter() - start,
            None,
        )
    status, reason = ("diverged", f"{div} divergent transitions") if div else ("ok", "")
    return RefitOutcome(index, label, status, reason, seed, time.perf_counter() - start, post)


def run_refits(
    engine,
    tasks: list[RefitTask],
    *,
    executor=None,
    checkpoint: Checkpoint | None = None,
    progressbar: bool = True,
    retry_failed: bool = True,
) -> dict[int, RefitOutcome]:
    """Run refit tasks, skipping those already checkpointed.

    Each outcome is saved the moment it completes, so an interrupted run loses at most the
    refits in flight; rerunning with the same checkpoint refits only what is missing, what
    failed (unless ``retry_failed=False``) and what the checkpoint found damaged.

    Parameters
    ----------
    engine
        Any object with a ``sample(data, seed) -> (posterior, n_divergences)`` method.
    tasks : list of RefitTask
        ``data`` may be a callable returning the data.
    executor : optional
        Where refits run (see :func:`pymc_edp.base.parallel.map_tasks`); serially by default.
    checkpoint : Checkpoint, optional
        Restores saved outcomes and saves new ones as they complete. Damaged files it finds
        are refitted and described in ``checkpoint.messages``.
    progressbar : bool, default True
    retry_failed : bool, default True
        Refit again the neighbours whose saved outcome is a failure (status ``"error"``),
        so that a passing failure (a crashed worker, memory) does not stay in the
        checkpoint; False keeps saved failures as they are.

    Returns
    -------
    dict of int to RefitOutcome
        By task index.

    Examples
    --------
    Any engine with a ``sample(data, seed) -> (posterior, n_divergences)`` method works;
    this toy one returns a constant posterior instead of sampling:

    >>> import numpy as np, xarray as xr
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
        saved = checkpoint.load(task.index) if checkpoint is not None else None
        if saved is not None and saved.status == "error" and retry_failed:
            retried += 1
            saved = None
        if saved is not None:
            done[task.index] = saved
        else:
            todo.append(task)
    if retried:
        _log.info("retrying %d refit(s) that failed in an earlier run", retried)
    if todo:
        _log.info("refitting %d neighbour(s) (%d restored from checkpoint)", len(todo), len(done))

        def on_result(i, out):
            if checkpoint is not None:
                checkpoint.save(out)

        results = map_tasks(
            partial(_run_one, engine),
            todo,
            executor=executor,
            progressbar=progressbar,
            description="EDP: refitting neighbours",
            on_result=on_result,
        )
        for out in results:
            done[out.index] = out
    return done


@dataclass(frozen=True)
class RefitProblem:
    """What the audit knows that its refits need.

    Attributes
    ----------
    model : pymc.Model or None
        The user's model (None with ``build_model``).
    ll : LogLikelihood
        The full-data pointwise log-likelihood (its record layout, and the values that give
        each neighbour's log density ratio at the full-data draws).
    neighbours : Neighbours
    names : sequence of str
        Posterior variables audited (kept from each refit).
    bins : Bins
        Cut from the full-data draws.
    smoothing : float
    observed_y : dict
        Observed values per observed variable.
    candidates : dict, optional
        For replacement: candidate values per observed variable, ``(C, *shape)``.
    worst_candidate : ndarray, optional
        Each neighbour's worst candidate (its refit uses that one).
    replacement_sets : list, optional
        Per candidate, the log-likelihood arrays at the replacement values (full draws).
    draws : ndarray, optional
        The full-data draws ``(parameter, sample)`` the bins were cut from (for the
        Monte-Carlo error of each refit's estimate).
    n_chains : int
        Chains of the full-data draws.
    """

    model: object
    ll: LogLikelihood
    neighbours: object
    names: tuple
    bins: binning.Bins
    smoothing: float
    observed_y: dict
    candidates: dict | None = None
    worst_candidate: np.ndarray | None = None
    replacement_sets: list | None = None
    draws: np.ndarray | None = None
    n_chains: int = 1

    def candidate(self, k: int) -> dict | None:
        """Replacement values of neighbour ``k`` (its worst candidate), or None (removal)."""
        if self.candidates is None:
            return None
        c = int(self.worst_candidate[k])
        return {n: v[min(c, v.shape[0] - 1)] for n, v in self.candidates.items()}

    def full_log_ratio(self, k: int) -> np.ndarray:
        """Neighbour ``k``'s log density ratio at the full-data draws."""
        repl = None
        if self.replacement_sets:
            repl = self.replacement_sets[int(self.worst_candidate[k])] or None
        return log_ratios(self.ll, self.neighbours, k, k + 1, repl)[0]

    def refit_log_ratio(self, loglik_fns: dict, k: int, posterior: xr.Dataset) -> np.ndarray:
        """Neighbour ``k``'s log density ratio at the draws of a refit ``posterior``."""
        at = LogLikelihood.at_draws(
            self.ll, [loglik_fns[n](posterior, self.observed_y[n]) for n in self.ll.names]
        )
        cand = self.candidate(k)
        repl = None
        if cand is not None:
            repl = [loglik_fns[n](posterior, cand[n]) for n in self.ll.names]
        return log_ratios(at, self.neighbours, k, k + 1, repl)[0]


def _estimate(problem: RefitProblem, refit_draws, log_ratios_k, posterior, order):
    """Epsilon per parameter, its bin, and the Monte-Carlo error of the leading pair."""
    bins, smoothing = problem.bins, problem.smoothing
    pooled = None
    if log_ratios_k is None:
        eps, argbin = binning.refit_epsilon(refit_draws, bins, smoothing)
    else:
        pooled = binning.pooled_log_weights(*log_ratios_k)[:2]
        eps, argbin = binning.refit_epsilon(
            refit_draws, bins, smoothing, *log_ratios_k, pooled_weights=pooled
        )
    se = np.nan
    if order is not None:
        p = int(np.argmax(eps))
        common = dict(
            order=order,
            draws=problem.draws,
            n_chains=problem.n_chains,
            n_chains_refit=int(posterior.sizes.get("chain", 1)),
        )
        if pooled is None:
            _, se, _ = refit_log_ratio_se(refit_draws, bins, p, int(argbin[p]), **common)
        else:
            _, se, _ = pooled_log_ratio_se(
                refit_draws,
                bins,
                p,
                int(argbin[p]),
                log_weights_full=pooled[0],
                log_weights_neighbour=pooled[1],
                **common,
            )
    return eps, argbin, float(se)


@dataclass
class RefitRun:
    """Outcomes and estimates of the refitted neighbours.

    ``estimates[k]`` is ``(epsilon per parameter, its bin, standard error of the leading
    pair)``, or None for a failed refit.
    """

    outcomes: dict
    estimates: dict
    collection: Refits


def _engine_for(problem: RefitProblem, options: RefitOptions, messages: list):
    """The engine, and the log-likelihood functions the pooled estimator needs (or None)."""
    from pymc_edp.model.pymc import ElementwiseLogLik

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
        nb_model = neighbour_model(model, problem.ll.names)
    except NonFactorisedError as err:
        raise ValueError(str(err)) from None
    keep = tuple(dict.fromkeys([*problem.names, *(rv.name for rv in model.free_RVs)]))
    eng = make_engine(options.engine, model=nb_model, var_names=keep, **common)
    if options.estimator != "pooled":
        return eng, None
    return eng, {n: ElementwiseLogLik(model, n) for n in problem.ll.names}


def refit_neighbours(
    to_refit: np.ndarray,
    problem: RefitProblem,
    options: RefitOptions,
    *,
    random_seed: int,
    config: dict,
    progressbar: bool = True,
) -> tuple[RefitRun, list[str]]:
    """Refit neighbours ``to_refit`` and estimate their epsilon; used by :func:`audit`.

    Parameters
    ----------
    to_refit : numpy.ndarray
        Indices of the neighbours to refit.
    problem : RefitProblem
        What the audit prepared: log-likelihood, neighbours, bins, observed values.
    options : RefitOptions
        Sampler, engine, executor, checkpoint, estimator.
    random_seed : int
        Refit ``k`` uses :func:`refit_seed` ``(random_seed, k)``.
    config : dict
        What the refits depend on; checks (and is stored in) the checkpoint.
    progressbar : bool, default True

    Returns
    -------
    RefitRun
        Outcomes, bin-probability estimates and the :class:`Refits` collection.
    list of str
        Messages for the caller to show as warnings: failed and divergent refits, and the
        damaged checkpoint files (or manifest) that were set aside and refitted.
    """
    messages: list[str] = []
    ll, nbs = problem.ll, problem.neighbours
    missing = [n for n in ll.names if n not in problem.observed_y]
    if missing:
        raise ValueError(f"cannot find the observed values of {missing} needed to refit")
    eng, loglik_fns = _engine_for(problem, options, messages)
    maker = NeighbourDataMaker(
        observed_y={n: problem.observed_y[n] for n in ll.names},
        record_shapes={n: tuple(ll.datasets[n].shape[2:]) for n in ll.names},
        builder=options.build_model is not None,
    )
    order = None
    if problem.draws is not None:
        order = np.argsort(problem.draws, axis=1, kind="stable")
    tasks = []
    for k in map(int, to_refit):
        label = jsonable(nbs.labels[k])
        lazy = partial(maker, k, label, neighbour_changes(ll, nbs, k, problem.candidate(k)))
        tasks.append(RefitTask(k, label, lazy, refit_seed(random_seed, k)))
    ckpt = Checkpoint(options.checkpoint, config) if options.checkpoint is not None else None
    try:
        outcomes = run_refits(
            eng,
            tasks,
            executor=options.executor,
            checkpoint=ckpt,
            progressbar=progressbar,
            retry_failed=options.retry_failed,
        )
    finally:
        if ckpt is not None:
            messages.extend(ckpt.messages)

    estimates: dict = {}
    failed = []
    for k in map(int, to_refit):
        out = outcomes[k]
        if out.posterior is None:
            estimates[k] = None
            failed.append(f"{nbs.labels[k]} ({out.reason})")
            continue
        refit_draws, _, _ = posterior_matrix(out.posterior, problem.names)
        log_ratios_k = None
        if loglik_fns is not None:
            log_ratios_k = (
                problem.full_log_ratio(k),
                problem.refit_log_ratio(loglik_fns, k, out.posterior),
            )
        estimates[k] = _estimate(problem, refit_draws, log_ratios_k, out.posterior, order)
    if failed:
        messages.append(
            f"{len(failed)} refit(s) failed and kept their reweighted estimate: "
            + "; ".join(failed[:5])
            + ("..." if len(failed) > 5 else "")
        )
    diverged = [o for o in outcomes.values() if o.status == "diverged"]
    if diverged:
        messages.append(
            f"{len(diverged)} refit(s) had divergent transitions (see res.pointwise['status'] "
            "and res.refits.status); their draws are used but may be biased"
        )
    return RefitRun(outcomes, estimates, Refits(outcomes)), messages

"""Reweight every neighbour, chunk by chunk, pruning those that cannot set epsilon."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

import numpy as np

from pymc_edp.auditing.estimates import TOP_WEIGHTS, Estimates
from pymc_edp.auditing.inputs import Inputs
from pymc_edp.auditing.methods import PRUNE_NEEDS_REWEIGHTING
from pymc_edp.auditing.settings import Settings
from pymc_edp.base.psis import khat_threshold
from pymc_edp.core.loglik import LogLikelihood
from pymc_edp.core.reweight import Reweighter, prune_margin
from pymc_edp.runtime.parallel import map_tasks, progress_bar

__all__ = ["Reweighted", "reweight", "unprune"]

_log = logging.getLogger("pymc_edp")


@dataclass(frozen=True)
class Reweighted:
    """What reweighting gives: the estimates, whether it pruned, and how to reweight more."""

    estimates: Estimates
    pruning: bool
    reweighter: Reweighter


def reweight(inp: Inputs, settings: Settings) -> Reweighted:
    """Epsilon, k-hat, bound and weights of every neighbour (or, pruning, of those that matter).

    Chunks run on ``settings.chunks.executor``; pruning is :func:`_pruned_pass`.
    """
    chunks = settings.chunks
    n_nb = len(inp.neighbours)
    pruning = _pruning(settings, inp, n_nb * inp.n_samples)
    store_weights = chunks.store_weights
    if store_weights is None:
        big = n_nb * inp.n_samples * 8 > chunks.memory_bytes
        store_weights = not (pruning or (inp.ll.lazy and big))
    elif store_weights and pruning:
        raise ValueError(
            "ChunkOptions(store_weights=True) keeps every neighbour's weights, but pruning "
            "skips some: pass ChunkOptions(prune=False)"
        )
    rw = Reweighter(
        ll=inp.ll,
        neighbours=inp.neighbours,
        bins=inp.bins,
        smoothing=settings.smoothing.weighted,
        reff=inp.reff,
        relation=inp.relation,
        keep_weights=bool(store_weights) and inp.factorised,
        keep_top=TOP_WEIGHTS if inp.factorised else 0,
    )
    est = Estimates.empty(inp.neighbours.labels, inp.par_labels, inp.n_samples, rw.keep_weights)
    if inp.factorised:
        if pruning:
            # refits (method="auto") may replace the estimates of bad k-hat neighbours: only
            # the others give a lower bound on the final epsilon that pruning can stop at
            method = settings.method
            refit_later = (method.refits_unreliable and inp.can_refit) or (
                method.moment_match is not None and inp.model is not None
            )
            est = dataclasses.replace(est, pruned=_pruned_pass(rw, est, refit_later, settings))
            _log.info(_pruning_message(est, len(inp.neighbours)))
        else:
            _estimate(rw, est, _slices(rw, settings), n_nb, settings, settings.progressbar)
        est["method"][est.pruned] = "pruned"
    return Reweighted(est, pruning, rw)


def _run(rw: Reweighter, settings: Settings) -> dict:
    """How :func:`map_tasks` runs the chunks: on the audit's executor, sharing ``rw``."""
    return dict(executor=settings.chunks.executor, progressbar=False, shared=rw)


def _estimate(rw: Reweighter, est: Estimates, tasks, total: int, settings, enabled) -> None:
    """Reweight the neighbours of ``tasks`` (``total`` of them) into ``est``."""
    with progress_bar(total, description="EDP: reweighting records", enabled=enabled) as bar:
        run = _run(rw, settings)
        map_tasks(Reweighter.estimate, tasks, on_result=lambda _, r: _fill(est, r, bar), **run)
    if est.kept:
        est.trim_kept()


def _slices(rw: Reweighter, settings: Settings) -> list[slice]:
    n_nb = len(rw.neighbours)
    size = _aligned(settings.chunks.rows(rw.bins.n_samples), rw.ll)
    return [slice(a, min(a + size, n_nb)) for a in range(0, n_nb, size)]


def _pruned_pass(rw: Reweighter, est: Estimates, refit_later: bool, settings: Settings):
    """The neighbours pruned (sorted): reweighting stops when the next bound is below epsilon.

    Neighbours are reweighted in decreasing order of their bound, a wave of chunks at a
    time, each screened first by :func:`pymc_edp.core.reweight.mean_bound`; the epsilon it
    stops at is the largest that refits cannot replace.
    """
    chunks, enabled, n_nb = settings.chunks, settings.progressbar, len(rw.neighbours)
    run = _run(rw, settings)
    slices = _slices(rw, settings)
    with progress_bar(n_nb, description="EDP: bounding records", enabled=enabled) as bar:

        def got_bound(i, b):
            est["bound"][slices[i]] = b
            bar.advance(b.size)

        map_tasks(Reweighter.bound, slices, on_result=got_bound, **run)
    order = np.argsort(-est["bound"], kind="stable")
    threshold = khat_threshold(rw.bins.n_samples)
    lower, done = -np.inf, 0
    size = _aligned(chunks.rows(rw.bins.n_samples), rw.ll)
    # small chunks first, where the stopping point is decided, then doubling to full size;
    # from a stored (dask) group full chunks, as each read decompresses whole stored chunks
    stored = any(getattr(a, "chunks", None) for a in rw.ll.arrays)
    step = size if stored else min(size, max(16, size // 64))
    screened = []  # skipped by the tighter bound (module docstring of core.reweight)
    with progress_bar(n_nb, description="EDP: reweighting records", enabled=enabled) as bar:
        while done < n_nb and prune_margin(est["bound"][order[done]]) >= lower:
            todo = order[done : done + step * chunks.n_workers()]
            tasks = [np.sort(todo[a : a + step]) for a in range(0, todo.size, step)]
            step = min(2 * step, size)
            done += todo.size
            if np.isfinite(lower):
                tight = map_tasks(Reweighter.tight_bound, tasks, **run)
                skip = [t[prune_margin(b) < lower] for t, b in zip(tasks, tight, strict=True)]
                tasks = [t[prune_margin(b) >= lower] for t, b in zip(tasks, tight, strict=True)]
                screened.extend(skip)
                bar.advance(sum(t.size for t in skip))
                tasks = [t for t in tasks if t.size]
            for res in map_tasks(Reweighter.estimate, tasks, **run):
                _fill(est, res, bar)
                final = res.eps.max(axis=1)
                if refit_later:  # bad k-hat estimates may yet be replaced by refits
                    final = final[~(res.khat > threshold)]
                lower = max(lower, float(final.max(initial=-np.inf)))
    if est.kept:
        est.trim_kept()
    return np.sort(np.concatenate([order[done:], *screened]).astype(np.int64))


def _aligned(size: int, ll: LogLikelihood) -> int:
    """Chunk rows as a multiple of a lazy group's stored chunks (one up to 4x taken whole)."""
    stored = [a.chunks[1][0] for a in ll.arrays if getattr(a, "chunks", None)]
    if not stored:
        return size
    c = min(stored)
    if size >= c:
        return (size // c) * c
    return c if c <= 4 * size else size


#: What a chunk of :meth:`Reweighter.estimate` gives, as in :class:`Estimates`.
_CHUNK_RESULTS = "eps argbin khat eps_unsmoothed bin_draws limit worst_candidate bound".split()


def _fill(est: Estimates, res, bar) -> None:
    """Copy one chunk's results into the estimates (and keep the weights that count)."""
    i = res.index
    for name in _CHUNK_RESULTS:
        est[name][i] = getattr(res, name)
    if res.log_weights is not None:
        if est.log_weights is not None:
            est.log_weights[res.weights_index] = res.log_weights
        else:
            for k, row in zip(res.weights_index, res.log_weights, strict=True):
                est.kept[int(k)] = row
            if len(est.kept) > 4 * TOP_WEIGHTS:
                est.trim_kept()
    bar.advance(i.size)


def _pruning(settings: Settings, inp: Inputs, record_draws: int) -> bool:
    """Whether to prune: as asked, or (None) when the audit is large enough to matter."""
    prune = settings.chunks.prune
    possible = inp.factorised and not settings.method.refits_all
    if prune and not possible:
        raise ValueError(PRUNE_NEEDS_REWEIGHTING)
    if prune is None:
        return possible and record_draws > settings.chunks.prune_above
    return prune


def _pruning_message(est: Estimates, n_neighbours: int) -> str:
    if not est.pruned.size:
        return "pruning found no neighbour to skip: every neighbour was reweighted"
    return (
        f"pruned {est.pruned.size} of {n_neighbours} neighbours whose bound (at most "
        f"{np.max(est['bound'][est.pruned]):.3g}, in pointwise['epsilon_bound']) is below "
        "the epsilon found: epsilon is exact, a parameter's own where parameters[var]['exact']"
    )


def unprune(rw: Reweighter, est: Estimates, settings: Settings) -> Estimates | None:
    """Reweight the pruned neighbours whose bound reaches the epsilon that refits lowered.

    So pruning stays exact. The new estimates, or None when none was.
    """
    if not est.pruned.size:
        return None
    top = float(est.epsilon().max())
    again = est.pruned[prune_margin(est["bound"][est.pruned]) >= top]
    if not again.size:
        return None
    out = est.copy(pruned=np.setdiff1d(est.pruned, again))
    size = max(1, settings.chunks.rows(rw.bins.n_samples))
    tasks = [again[a : a + size] for a in range(0, again.size, size)]
    _estimate(rw, out, tasks, again.size, settings, enabled=False)
    out["method"][again] = "psis"
    return out

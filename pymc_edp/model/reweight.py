"""Reweighting neighbours chunk by chunk, and pruning those that cannot set epsilon.

A chunk of neighbours is the unit of work: read (or compute) its rows of the
log-likelihood, form the log ratios (:func:`pymc_edp.model.loglik.log_ratios`), smooth
them and reduce them to per-parameter epsilons, then drop them. No ``n x S`` array is
needed, so a chunk can run on any worker that can read its rows.

Pruning. For a neighbour with log ratios ``log r_s``, every reweighted bin ratio
``P'(b) / P(b)`` is the mean of the weights in ``b`` over their overall mean, and
Pareto-smoothed weights stay inside ``[min_s r_s, max_s r_s]`` (the smoothed tail starts
at the cutoff and is truncated at the largest raw weight); additive smoothing moves both
probabilities towards the same constant, which only shrinks the ratio. Hence::

    eps_i <= bound_i = max_s log r_s - min_s log r_s

(the maximum over candidates for replacements). One cheap pass computes every bound;
neighbours are then reweighted in full in decreasing order of their bound, until the next
bound is below the largest epsilon already found, which the remaining neighbours therefore
cannot reach.

A tighter bound screens each wave before it is reweighted. A bin ratio is a bin's mean
weight over the overall mean ``wbar``, so ``eps_i <= max(log max_s w_s - log wbar,
log wbar - log min_s w_s)``. Pareto smoothing changes at most the ``M`` draws of the tail
(:func:`pymc_edp.base.psis.psis_tail_length`), each to a value between the cutoff and the
largest raw weight, so the smoothed sum is within ``M (max_s r_s - min_s r_s)`` of the raw
sum ``sum_s r_s``. With ``A = sum_s r_s / max_s r_s`` and ``D = M (1 - min_s r_s / max_s
r_s)``::

    eps_i <= mean_bound_i = max(log S - log(A - D), log(A + D) - log S + range_i)

(the range bound where ``A <= D``). For a posterior that moves little, ``log r`` is close
to Gaussian with standard deviation ``sigma``: the range is about ``7 sigma`` at 4,000
draws and this bound about ``3.6 sigma``, while epsilon is about ``2 sigma``, so far fewer
neighbours need the full reweighting (Pareto smoothing, binning). It costs one ``exp`` per
draw, where the full reweighting costs a selection, a fit and the bins.

References
----------
.. [1] Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. "Pareto smoothed
   importance sampling." Journal of Machine Learning Research 25(72), 2024.
.. [2] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." Journal of Privacy and Confidentiality 7(3), 2017.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pymc_edp.base import binning
from pymc_edp.base.common import MEMORY_BUDGET, parse_bytes
from pymc_edp.base.parallel import _is_dask_client, fork_unsafe
from pymc_edp.base.psis import psis_tail_length
from pymc_edp.base.validate import as_options, check_choice, check_real
from pymc_edp.model.compat import PSIS_TAIL_RULE
from pymc_edp.model.loglik import (
    LogLikelihood,
    _read,
    is_lazy,
    log_ratio_range,
    log_ratios,
    neighbour_rows,
    smoothed_log_weights,
)
from pymc_edp.model.moment_match import MomentMatchOptions
from pymc_edp.model.neighbours import Neighbours

__all__ = [
    "ChunkOptions",
    "ChunkOutcome",
    "Reweighter",
    "mean_bound",
    "prune_margin",
    "top_rows",
]

#: ``(rows, draws)`` float64 arrays alive at once per chunk: the log ratios (smoothed in
#: place), PSIS's sort buffers, the stored weights, the log-likelihood read and the model's
#: intermediates when it is computed from the model.
WORKING_ARRAYS = 8
#: Where the pointwise log-likelihood comes from (``ChunkOptions(log_likelihood=)``).
LOG_LIKELIHOOD_SOURCES = ("auto", "group", "model")


def prune_margin(bound: np.ndarray) -> np.ndarray:
    """The bound widened by a few rounding errors, so that pruning is never decided by them."""
    return bound * (1 + 1e-9) + 1e-12


@dataclass(frozen=True)
class ChunkOptions:
    """How the reweighting stage works: chunk memory, workers, pruning, moment matching.

    Parameters
    ----------
    memory : int or str, default "512MiB"
        Working-memory budget of one chunk of records (bytes, or a string such as
        ``"2GiB"``): a chunk holds about ``memory / (8 * 8 * S)`` records. Peak memory is about
        this per worker, plus the posterior draws and the per-record results.
    executor : concurrent.futures.Executor or dask.distributed.Client, optional
        Where chunks run; default here (the kernels are already multi-threaded). With a
        dask ``Client`` each worker reads or computes its own chunks' log-likelihood (from
        the model or its slice of a zarr store) and returns a few numbers per record. A
        ``ProcessPoolExecutor`` must start its workers with ``forkserver`` or ``spawn``
        where numba's threads are GNU OpenMP (Linux): ``fork``, which they do not survive,
        is refused (:func:`pymc_edp.base.parallel.fork_unsafe`).
    prune_above : float, default 1e8
        ``prune=None`` prunes when records x draws exceeds this (1e8 is 25,000 records of
        4,000 draws, where the full audit takes about 5 s here).
    prune : bool, optional
        ``True`` reweights records in decreasing order of the bound
        ``max log r - min log r`` on their epsilon and stops when the next bound is below
        the largest epsilon found: the epsilon is exactly that of the full audit, and
        pruned records keep their bound (``pointwise["epsilon_bound"]``, method
        ``"pruned"``). ``False`` computes every record. ``None`` prunes when records x draws
        exceeds ``prune_above``.
    store_weights : bool, optional
        Keep every neighbour's smoothed log-weights on the result (``n_neighbours x S``
        floats) for later diagnostics (``res.curve()``, most plots). Default: yes, unless the
        audit prunes or reads the log-likelihood chunk by chunk (a large audit, where they
        would not fit in memory); it then keeps those of the ``TOP_WEIGHTS`` (32) neighbours
        with the largest epsilons, which is what ``res.interval()``, ``res.mcse()`` and the
        printed interval need. ``True`` needs ``prune=False`` when the audit would prune.
    log_likelihood : {"auto", "group", "model"}, default "auto"
        Where the pointwise log-likelihood comes from. ``"group"``: the ``log_likelihood``
        group (read chunk by chunk when it is lazy, e.g. opened from zarr with dask
        chunks). ``"model"``: computed from the model for each chunk of records over all
        draws and dropped, so the ``n x S`` array is never held. ``"auto"``: the group when
        there is one, else the model (streamed when its likelihood allows, else computed
        whole as ``pm.compute_log_likelihood`` does).
    moment_match : MomentMatchOptions, dict or False, optional
        How the reweighting stage improves the weights of the neighbours whose Pareto k-hat
        is too large before any refit: ``max_iters``, ``split``, ``cov`` and the k-hat
        threshold of moment matching (:class:`pymc_edp.MomentMatchOptions`, or a dict of its
        fields); default ``MomentMatchOptions()``. ``False`` leaves it out of
        ``method="auto"`` (reweight, then refit, as before version 0.3).

    Examples
    --------
    >>> from pymc_edp.model.reweight import ChunkOptions
    >>> ChunkOptions(memory="1GiB").rows(4000)
    4194
    >>> ChunkOptions.coerce({"prune": False, "log_likelihood": "model"}).prune
    False
    >>> ChunkOptions(moment_match={"max_iters": 5}).moment_match_options().max_iters
    5
    """

    memory: int | str = MEMORY_BUDGET
    executor: Any = None
    prune_above: float = 1e8
    prune: bool | None = None
    store_weights: bool | None = None
    log_likelihood: str = "auto"
    moment_match: MomentMatchOptions | Mapping | bool | None = None
    memory_bytes: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "memory_bytes", parse_bytes(self.memory, "memory"))
        check_real(self.prune_above, "prune_above", minimum=0)
        for name in ("prune", "store_weights"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise TypeError(f"{name} must be True, False or None, got {value!r}")
        check_choice(self.log_likelihood, "log_likelihood", LOG_LIKELIHOOD_SOURCES)
        if self.store_weights and self.prune:
            raise ValueError(
                "ChunkOptions(store_weights=True) keeps every neighbour's weights, but "
                "prune=True skips neighbours: pass prune=False to reweight (and keep) them all"
            )
        if not (self.moment_match is None or self.moment_match is False):
            if self.moment_match is True:
                raise TypeError(
                    "ChunkOptions(moment_match=) takes MomentMatchOptions, a dict of its "
                    "fields, False (no moment matching) or None (the defaults), not True"
                )
            object.__setattr__(self, "moment_match", MomentMatchOptions.coerce(self.moment_match))
        ex = self.executor
        if ex is not None and not (isinstance(ex, cf.Executor) or _is_dask_client(ex)):
            raise TypeError(
                "ChunkOptions(executor=...) must be None, a concurrent.futures.Executor or a "
                f"dask.distributed.Client, not {type(ex).__name__}"
            )
        unsafe = fork_unsafe(ex)
        if unsafe is not None:
            raise ValueError(f"ChunkOptions(executor=...) {unsafe}")

    @classmethod
    def coerce(cls, value: ChunkOptions | Mapping | None) -> ChunkOptions:
        """``value`` as options: an instance, a dict of its fields, or None (defaults)."""
        return as_options(cls, value, "chunks")

    def moment_match_options(self) -> MomentMatchOptions | None:
        """The moment-matching options, or None when it is turned off (``False``)."""
        if self.moment_match is False:
            return None
        return MomentMatchOptions.coerce(self.moment_match)

    def rows(self, n_samples: int) -> int:
        """Records per chunk at ``n_samples`` draws."""
        return max(1, self.memory_bytes // (8 * WORKING_ARRAYS * max(1, int(n_samples))))

    def n_workers(self) -> int:
        """Chunks worth running at once on the executor."""
        ex = self.executor
        if ex is None:
            return 1
        if hasattr(ex, "nthreads"):  # dask Client
            return max(1, sum(ex.nthreads().values()))
        return max(1, int(getattr(ex, "_max_workers", 1)))


@dataclass(frozen=True)
class ChunkOutcome:
    """What reweighting a chunk of neighbours gives (rows in the order of ``index``)."""

    index: np.ndarray
    eps: np.ndarray  # (k, n_parameters), max over candidates
    argbin: np.ndarray
    khat: np.ndarray  # worst over candidates
    eps_unsmoothed: np.ndarray  # (k, n_parameters), of the candidate that sets eps
    bin_draws: np.ndarray  # (k, n_parameters): effective draws in the bin that sets eps
    limit: np.ndarray  # (k, n_parameters) int8: pymc_edp.base.limits codes
    worst_cand: np.ndarray
    bound: np.ndarray  # (k,) max - min of the log ratios, max over candidates
    weights_index: np.ndarray  # neighbours whose log-weights are returned
    log_weights: np.ndarray | None  # (len(weights_index), S) of the worst candidate


@dataclass(frozen=True)
class Reweighter:
    """Everything a worker needs to reweight any chunk of neighbours.

    Picklable when the log-likelihood is (in-memory arrays, dask arrays, or columns
    computed from the model), so a dask ``Client`` can scatter it once.

    ``keep_weights`` returns every neighbour's smoothed log-weights; otherwise those of the
    ``keep_top`` neighbours of each chunk with the largest epsilon (and of any at a
    resolution limit, up to as many again), which are the ones that can set the audit's
    epsilon and its interval.
    """

    ll: LogLikelihood
    neighbours: Neighbours
    bins: binning.Bins
    smoothing: float
    reff: float
    replacement_sets: tuple = ((),)
    keep_weights: bool = False
    keep_top: int = 0

    def _span(self, index) -> tuple[Neighbours, int, int]:
        if isinstance(index, slice):
            return self.neighbours, index.start, index.stop
        sub = self.neighbours.subset(index)
        return sub, 0, len(sub)

    def _ratios(self, index, repl, base=None) -> np.ndarray:
        nb, start, stop = self._span(index)
        return log_ratios(self.ll, nb, start, stop, list(repl) or None, base)

    def _base(self, index) -> np.ndarray | None:
        """The neighbours' rows at the data, read once for several replacement candidates."""
        if len(self.replacement_sets) < 2 or not self.replacement_sets[0]:
            return None
        return neighbour_rows(self.ll, *self._span(index))

    def bound(self, index) -> np.ndarray:
        """``max - min`` of each neighbour's log ratios (max over candidates): the cheap pass."""
        out = None
        base = None if isinstance(index, slice) else self._base(index)
        for repl in self.replacement_sets:
            if isinstance(index, slice):
                b = log_ratio_range(
                    self.ll, self.neighbours, index.start, index.stop, list(repl) or None
                )
            else:
                b = np.ptp(self._ratios(index, repl, base), axis=1)
            out = b if out is None else np.fmax(out, b)
        return out

    def tight_bound(self, index) -> np.ndarray:
        """:func:`mean_bound` of each neighbour (max over candidates): the second screen."""
        n_tail = psis_tail_length(self.bins.n_samples, self.reff, PSIS_TAIL_RULE)
        nb, start, stop = self._span(index)
        out = None
        simple = _single_rows(self.ll, nb, start, stop)
        base = None if simple is not None else self._base(index)
        for repl in self.replacement_sets:
            if simple is not None:  # records of one variable: the (S, k) layout, no copy
                v, cols = simple
                array = self.ll.arrays[v]
                block = _read(array, cols)
                # computed (or read) for this call: a float64 block can be the work array
                own = is_lazy(array) and block.dtype == np.float64 and block.flags.writeable
                if repl:
                    alt = _read(repl[v], cols)
                    mine = is_lazy(repl[v]) and alt.dtype == np.float64 and alt.flags.writeable
                    work = alt if mine else None
                    lr = np.subtract(alt, block, out=work, dtype=np.float64)
                else:
                    lr = np.negative(block, out=block if own else None, dtype=np.float64)
                b = mean_bound(lr, n_tail, axis=0, overwrite=True)
            else:
                b = mean_bound(self._ratios(index, repl, base), n_tail, axis=1)
            out = b if out is None else np.fmax(out, b)
        return out

    def estimate(self, index) -> ChunkOutcome:
        """Epsilon, k-hat, bound (and weights) of the neighbours ``index`` (slice or array)."""
        idx = np.arange(index.start, index.stop) if isinstance(index, slice) else index
        k, n_par = idx.size, self.bins.index.shape[0]
        eps = np.full((k, n_par), -np.inf)
        argbin = np.zeros((k, n_par), dtype=np.int64)
        eps0 = np.full((k, n_par), -np.inf)
        draws = np.full((k, n_par), np.nan)
        limit = np.zeros((k, n_par), dtype=np.int8)
        khat = np.full(k, np.nan)
        worst = np.zeros(k, dtype=np.int64)
        bound = np.full(k, -np.inf)
        keep = self.keep_weights or self.keep_top > 0
        single = len(self.replacement_sets) == 1  # the weights kept are then lw itself
        lw_keep = np.empty((k, self.bins.n_samples)) if keep and not single else None
        base = self._base(index)
        for c, repl in enumerate(self.replacement_sets):
            lr = self._ratios(index, repl, base)
            spread = np.ptp(lr, axis=1)
            bound = np.fmax(bound, spread)
            lw, kh = smoothed_log_weights(lr, self.reff, spread)
            est = binning.epsilon_estimates(lw, self.bins, self.smoothing)
            e = est.eps
            # the neighbour's worst candidate (kept for its weights and label) ...
            better = e.max(axis=1) > eps.max(axis=1)
            # ... and, per parameter, the max over candidates
            upd = e > eps
            eps = np.where(upd, e, eps)
            argbin = np.where(upd, est.argbin, argbin)
            eps0 = np.where(upd, est.eps_unsmoothed, eps0)
            draws = np.where(upd, est.bin_draws, draws)
            limit = np.where(upd, est.limit, limit)
            # conservative reliability flag: the worst k-hat over candidates
            khat = np.fmax(khat, kh)
            worst[better] = c
            if keep and single:
                lw_keep = lw
            elif keep:
                lw_keep[better] = lw[better]
        rows = np.arange(k)
        if lw_keep is not None and not self.keep_weights:
            rows = top_rows(eps.max(axis=1), limit.any(axis=1), self.keep_top)
            lw_keep = lw_keep[rows]
        return ChunkOutcome(
            idx, eps, argbin, khat, eps0, draws, limit, worst, bound, idx[rows], lw_keep
        )


def mean_bound(
    log_ratio: np.ndarray, n_tail: int, axis: int = -1, *, overwrite: bool = False
) -> np.ndarray:
    """The bound of each neighbour's epsilon from the mean of its weights (module docstring).

    Parameters
    ----------
    log_ratio : ndarray
        Log ratios ``log r``, draws along ``axis``.
    n_tail : int
        Draws Pareto smoothing may change (the tail length ``M``).
    axis : int, default -1
    overwrite : bool, default False
        Use ``log_ratio`` (float64) as the work array, saving two arrays of its size.

    Returns
    -------
    ndarray
        ``min(range, mean_bound)`` for each neighbour; NaN or infinite ratios give ``inf``.

    Examples
    --------
    >>> from pymc_edp.model.reweight import mean_bound
    >>> z = np.random.default_rng(0).normal(size=(1, 4000)) * 0.01
    >>> bool(mean_bound(z, 190)[0] < 0.6 * np.ptp(z))
    True
    """
    lr = np.asarray(log_ratio, dtype=np.float64)
    n = lr.shape[axis]
    hi = lr.max(axis=axis, keepdims=True)
    lo = lr.min(axis=axis, keepdims=True)
    spread = np.squeeze(hi - lo, axis=axis)
    with np.errstate(invalid="ignore", over="ignore"):
        if overwrite and lr is log_ratio:
            scaled = np.subtract(lr, hi, out=lr)
            np.exp(scaled, out=scaled)
        else:
            scaled = np.exp(lr - hi)
        a = scaled.sum(axis=axis)
        d = n_tail * -np.expm1(-spread)
        with np.errstate(divide="ignore"):
            below = np.log(n) - np.log(a - d)
            above = np.log(a + d) - np.log(n) + spread
    out = np.where(a > d, np.fmin(np.fmax(below, above), spread), spread)
    return np.where(np.isfinite(spread), out, np.inf)


def top_rows(eps: np.ndarray, limited: np.ndarray, top: int) -> np.ndarray:
    """Rows of the ``top`` largest ``eps``, and of up to ``top`` more at a limit, sorted.

    Examples
    --------
    >>> from pymc_edp.model.reweight import top_rows
    >>> top_rows(np.array([0.1, 3.0, 0.2, 2.0]), np.array([True, False, False, False]), 1)
    array([0, 1])
    """
    eps = np.nan_to_num(np.asarray(eps, dtype=float), nan=-np.inf)
    order = np.argsort(-eps, kind="stable")
    best = order[:top]
    rest = order[top:]
    extra = rest[np.asarray(limited)[rest]][:top]
    return np.sort(np.concatenate([best, extra]))


def estimate_chunk(reweighter: Reweighter, index) -> ChunkOutcome:
    """:meth:`Reweighter.estimate` as a plain function (a task for an executor)."""
    return reweighter.estimate(index)


def tight_bound_chunk(reweighter: Reweighter, index) -> np.ndarray:
    """:meth:`Reweighter.tight_bound` as a plain function (a task for an executor)."""
    return reweighter.tight_bound(index)


def _single_rows(ll: LogLikelihood, nb: Neighbours, start: int, stop: int):
    """``(variable, columns)`` when neighbours ``start:stop`` are single records of one variable.

    ``columns`` is a slice (contiguous records) or an index array; else None.
    """
    lo, hi = nb.indptr[start], nb.indptr[stop]
    if hi - lo != stop - start or hi == lo:
        return None
    rows = nb.rows[lo:hi]
    var = np.searchsorted(ll.offsets, rows, side="right") - 1
    if var[0] != var[-1] or np.any(var != var[0]):
        return None
    v = int(var[0])
    cols = rows - ll.offsets[v]
    if cols[-1] - cols[0] == cols.size - 1 and np.all(np.diff(cols) == 1):
        return v, slice(int(cols[0]), int(cols[-1]) + 1)
    return v, cols


def bound_chunk(reweighter: Reweighter, index) -> np.ndarray:
    """:meth:`Reweighter.bound` as a plain function (a task for an executor)."""
    return reweighter.bound(index)

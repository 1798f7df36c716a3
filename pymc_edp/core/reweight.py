"""Reweighting neighbours chunk by chunk, and pruning those that cannot set epsilon.

A chunk of neighbours is the unit of work: read (or compute) its log-likelihood rows, form
the log ratios (:func:`pymc_edp.core.loglik.log_ratios`), smooth and bin them, drop them.

Pruning. Every reweighted bin ratio ``P'(b) / P(b)`` is a mean of weights over their
overall mean, and Pareto-smoothed weights stay inside ``[min_s r_s, max_s r_s]``;
additive smoothing only shrinks the ratio. Hence::

    eps_i <= bound_i = max_s log r_s - min_s log r_s

(the maximum over candidates for replacements). One cheap pass computes every bound;
neighbours are reweighted in decreasing order of it until the next bound is below the
largest epsilon found.

A tighter bound screens each wave: ``eps_i <= max(log max_s w_s - log wbar, log wbar -
log min_s w_s)``, and smoothing changes at most the ``M`` tail draws
(:func:`pymc_edp.base.psis.psis_tail_length`), so the smoothed sum is within ``M (max_s r_s
- min_s r_s)`` of ``sum_s r_s``. With ``A = sum_s r_s / max_s r_s`` and ``D = M (1 - min_s
r_s / max_s r_s)``::

    eps_i <= mean_bound_i = max(log S - log(A - D), log(A + D) - log S + range_i)

(the range where ``A <= D``). For Gaussian ``log r`` with sd ``sigma`` at 4,000 draws the
range is about ``7 sigma``, this bound ``3.6 sigma`` and epsilon ``2 sigma``, for one
``exp`` per draw.

References
----------
.. [1] Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. "Pareto smoothed
   importance sampling." Journal of Machine Learning Research 25(72), 2024.
.. [2] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." Journal of Privacy and Confidentiality 7(3), 2017.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from pymc_edp.base import binning
from pymc_edp.base.common import MEMORY_BUDGET, parse_bytes
from pymc_edp.base.psis import PSIS_TAIL_RULE, psis_tail_length
from pymc_edp.base.validate import as_options, check_real
from pymc_edp.core.loglik import (
    LogLikelihood,
    _read,
    is_lazy,
    log_ratio_range,
    log_ratios,
    neighbour_rows,
    smoothed_log_weights,
)
from pymc_edp.core.neighbours import Neighbours, Relation, Remove
from pymc_edp.runtime.parallel import check_executor, resolve_n_workers

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


def prune_margin(bound: np.ndarray) -> np.ndarray:
    """The bound widened by a few rounding errors, so that pruning is never decided by them."""
    return bound * (1 + 1e-9) + 1e-12


@dataclass(frozen=True)
class ChunkOptions:
    """How the reweighting stage works: chunk memory, workers, pruning, kept weights.

    Parameters
    ----------
    memory : int or str, default "512MiB"
        Working memory of one chunk of records (bytes, or ``"2GiB"``): about
        ``memory / (8 * 8 * S)`` records, per worker.
    executor : None, int, concurrent.futures.Executor or dask.distributed.Client, optional
        Where chunks run; default here. An int: a local process pool of that many workers
        (-1: all cores), as in :class:`pymc_edp.RefitOptions`. Dask workers read or compute
        their own chunks' log-likelihood. A ``ProcessPoolExecutor`` must not ``fork`` where
        numba's threads are GNU OpenMP (:func:`pymc_edp.runtime.parallel.fork_unsafe`).
    prune_above : float, default 1e8
        ``prune=None`` prunes above this many records x draws.
    prune : bool, optional
        ``True`` reweights records in decreasing order of the bound ``max log r - min log r``
        and stops below the largest epsilon found (the same epsilon; pruned records keep
        their bound, method ``"pruned"``). ``False`` computes every record.
    store_weights : bool, optional
        Keep every neighbour's smoothed log-weights (``n_neighbours x S``) for diagnostics.
        Default: yes unless the audit prunes or streams; then those of the ``TOP_WEIGHTS``
        largest epsilons (what intervals and MCSE need). ``True`` needs ``prune=False``.

    Examples
    --------
    >>> from pymc_edp.core.reweight import ChunkOptions
    >>> ChunkOptions(memory="1GiB").rows(4000)
    4194
    >>> ChunkOptions.coerce({"prune": False, "memory": "1GiB"}).prune
    False
    """

    memory: int | str = MEMORY_BUDGET
    executor: Any = None
    prune_above: float = 1e8
    prune: bool | None = None
    store_weights: bool | None = None
    memory_bytes: int = field(init=False, repr=False, compare=False)

    #: Options of version 0.8 that moved (``ChunkOptions.coerce`` says where).
    MOVED: ClassVar[dict[str, str]] = {
        "moment_match": "moved to the method in 0.9: method=edp.Auto(match=...) or "
        "edp.MomentMatch(...)",
        "log_likelihood": "moved to the reading of the fit in 0.9: audit(..., log_likelihood=...)",
    }

    def __post_init__(self):
        object.__setattr__(self, "memory_bytes", parse_bytes(self.memory, "memory"))
        check_real(self.prune_above, "prune_above", minimum=0)
        for name in ("prune", "store_weights"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise TypeError(f"{name} must be True, False or None, got {value!r}")
        if self.store_weights and self.prune:
            raise ValueError(
                "ChunkOptions(store_weights=True) keeps every neighbour's weights, but "
                "prune=True skips neighbours: pass prune=False to reweight (and keep) them all"
            )
        check_executor(self.executor, "ChunkOptions")

    @classmethod
    def coerce(cls, value: ChunkOptions | Mapping | None) -> ChunkOptions:
        """``value`` as options: an instance, a dict of its fields, or None (defaults)."""
        return as_options(cls, value, "chunks")

    def rows(self, n_samples: int) -> int:
        """Records per chunk at ``n_samples`` draws."""
        return max(1, self.memory_bytes // (8 * WORKING_ARRAYS * max(1, int(n_samples))))

    def n_workers(self) -> int:
        """Chunks worth running at once on the executor."""
        ex = self.executor
        if ex is None:
            return 1
        if isinstance(ex, int):
            return resolve_n_workers(ex)
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
    worst_candidate: np.ndarray
    bound: np.ndarray  # (k,) max - min of the log ratios, max over candidates
    weights_index: np.ndarray  # neighbours whose log-weights are returned
    log_weights: np.ndarray | None  # (len(weights_index), S) of the worst candidate


@dataclass(frozen=True)
class Reweighter:
    """Everything a worker needs to reweight any chunk of neighbours (picklable).

    Returns every neighbour's smoothed log-weights with ``keep_weights``, else those of the
    ``keep_top`` largest epsilons of each chunk (and as many at a resolution limit).
    """

    ll: LogLikelihood
    neighbours: Neighbours
    bins: binning.Bins
    smoothing: float
    reff: float
    relation: Relation = field(default_factory=Remove)
    keep_weights: bool = False
    keep_top: int = 0

    def _span(self, index) -> tuple[Neighbours, int, int]:
        if isinstance(index, slice):
            return self.neighbours, index.start, index.stop
        sub = self.neighbours.subset(index)
        return sub, 0, len(sub)

    def _ratios(self, index, c: int, base=None) -> np.ndarray:
        nb, start, stop = self._span(index)
        return log_ratios(self.ll, nb, start, stop, self.relation.replacement(c), base)

    def _base(self, index) -> np.ndarray | None:
        """The neighbours' rows at the data, read once for several replacement candidates."""
        if not self.relation.reads_rows_once():
            return None
        return neighbour_rows(self.ll, *self._span(index))

    def bound(self, index) -> np.ndarray:
        """``max - min`` of each neighbour's log ratios (max over candidates): the cheap pass."""
        out = None
        base = None if isinstance(index, slice) else self._base(index)
        for c in range(self.relation.n_candidates):
            if isinstance(index, slice):
                repl = self.relation.replacement(c)
                b = log_ratio_range(self.ll, self.neighbours, index.start, index.stop, repl)
            else:
                b = np.ptp(self._ratios(index, c, base), axis=1)
            out = b if out is None else np.fmax(out, b)
        return out

    def tight_bound(self, index) -> np.ndarray:
        """:func:`mean_bound` of each neighbour (max over candidates): the second screen."""
        n_tail = psis_tail_length(self.bins.n_samples, self.reff, PSIS_TAIL_RULE)
        nb, start, stop = self._span(index)
        out = None
        simple = _single_rows(self.ll, nb, start, stop)
        base = None if simple is not None else self._base(index)
        for c in range(self.relation.n_candidates):
            repl = self.relation.replacement(c)
            if simple is not None:  # records of one variable: the (S, k) layout, no copy
                v, cols = simple
                array = self.ll.arrays[v]
                block = _read(array, cols)
                if repl:
                    alt = _read(repl[v], cols)
                    lr = np.subtract(alt, block, out=_scratch(repl[v], alt), dtype=np.float64)
                else:
                    lr = np.negative(block, out=_scratch(array, block), dtype=np.float64)
                b = mean_bound(lr, n_tail, axis=0, overwrite=True)
            else:
                b = mean_bound(self._ratios(index, c, base), n_tail, axis=1)
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
        single = self.relation.n_candidates == 1  # the weights kept are then lw itself
        lw_keep = np.empty((k, self.bins.n_samples)) if keep and not single else None
        base = self._base(index)
        for c in range(self.relation.n_candidates):
            lr = self._ratios(index, c, base)
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
    """``min(range, mean_bound)`` of each neighbour's epsilon (module docstring), or ``inf``.

    ``n_tail`` is the tail length ``M``; ``overwrite`` uses ``log_ratio`` (float64) as work.

    Examples
    --------
    >>> from pymc_edp.core.reweight import mean_bound
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
    >>> from pymc_edp.core.reweight import top_rows
    >>> top_rows(np.array([0.1, 3.0, 0.2, 2.0]), np.array([True, False, False, False]), 1)
    array([0, 1])
    """
    eps = np.nan_to_num(np.asarray(eps, dtype=float), nan=-np.inf)
    order = np.argsort(-eps, kind="stable")
    best = order[:top]
    rest = order[top:]
    extra = rest[np.asarray(limited)[rest]][:top]
    return np.sort(np.concatenate([best, extra]))


def _scratch(array, block: np.ndarray) -> np.ndarray | None:
    """``block`` when it was computed (or read) for this call in float64: a work array."""
    own = is_lazy(array) and block.dtype == np.float64 and block.flags.writeable
    return block if own else None


def _single_rows(ll: LogLikelihood, nb: Neighbours, start: int, stop: int):
    """``(variable, columns)`` if neighbours ``start:stop`` are single records of one variable."""
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

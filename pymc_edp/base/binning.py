"""Equal-probability bins and B-EDP epsilon from weighted draws (NumPy/numba, sample axis last).

Nothing here knows about PyMC or xarray: inputs are plain arrays of posterior draws
(``(n_parameters, n_samples)``) and of normalised log importance weights
(``(n_neighbours, n_samples)``).

References
----------
.. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (eq. 2 and sec. 4).
.. [2] Abowd, J. M., Schneider, M. J. and Vilhuber, L. "Differential privacy applications to
   Bayesian and linear mixed model estimation." Journal of Privacy and Confidentiality 5(1),
   2013.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

__all__ = [
    "Bins",
    "assign_bins",
    "bin_log_ratios",
    "bin_probabilities",
    "epsilon_from_log_weights",
    "epsilon_from_masses",
    "pooled_log_weights",
    "quantile_bins",
    "refit_epsilon",
    "smoothed_log_probabilities",
]


@dataclass(frozen=True)
class Bins:
    """Equal-probability bins of the full-data draws of each scalar parameter.

    Attributes
    ----------
    index : ndarray of int32, shape (n_parameters, n_samples)
        Bin of every draw, in ``0 .. n_bins[p] - 1``.
    n_bins : ndarray of int64, shape (n_parameters,)
        Effective number of bins after tied edges were merged (equals the requested ``B``
        for continuous draws).
    counts : ndarray of int64, shape (n_parameters, max(n_bins))
        Number of full-data draws in each bin (zero past ``n_bins[p]``).
    edges : ndarray, shape (n_parameters, B - 1)
        Interior cut points, NaN-padded where tied edges were merged.
    """

    index: np.ndarray
    n_bins: np.ndarray
    counts: np.ndarray
    edges: np.ndarray

    @property
    def n_samples(self) -> int:
        """Number of draws the bins were built from."""
        return self.index.shape[-1]


def quantile_bins(draws: np.ndarray, bins: int) -> Bins:
    """Cut each row of ``draws`` into ``bins`` equal-probability bins.

    The cut points are the empirical ``k / B`` quantiles (the order statistics of rank
    ``ceil(k S / B)``); a draw equal to a cut point goes to the upper bin. Tied cut points
    (discrete or heavily tied draws) are merged, and cut points at or below the minimum are
    dropped, so no bin is empty by construction; the effective number of bins is reported.

    Parameters
    ----------
    draws : array_like, shape (n_parameters, n_samples)
        Full-data posterior draws, sample axis last.
    bins : int
        Requested number of bins ``B >= 2``.

    Returns
    -------
    Bins
    """
    draws = np.atleast_2d(np.asarray(draws, dtype=float))
    n_par, n_samples = draws.shape
    if not np.all(np.isfinite(draws)):
        raise ValueError("posterior draws contain NaN or infinite values; cannot build bins")
    ranks = np.ceil(np.arange(1, bins) * n_samples / bins).astype(np.int64)
    ranks = np.clip(ranks, 0, n_samples - 1)
    sorted_draws = np.sort(draws, axis=-1)
    raw_edges = sorted_draws[:, ranks]
    index = np.empty((n_par, n_samples), dtype=np.int32)
    n_bins = np.empty(n_par, dtype=np.int64)
    edges = np.full((n_par, bins - 1), np.nan)
    for p in range(n_par):
        cut = np.unique(raw_edges[p])
        cut = cut[cut > sorted_draws[p, 0]]
        edges[p, : cut.size] = cut
        n_bins[p] = cut.size + 1
        index[p] = np.searchsorted(cut, draws[p], side="right")
    counts = np.zeros((n_par, int(n_bins.max())), dtype=np.int64)
    for p in range(n_par):
        counts[p, : n_bins[p]] = np.bincount(index[p], minlength=n_bins[p])
    return Bins(index=index, n_bins=n_bins, counts=counts, edges=edges)


def smoothed_log_probabilities(
    mass: np.ndarray, n_bins: np.ndarray, n_samples: int, smoothing: float
) -> np.ndarray:
    """Additively smoothed log bin probabilities.

    ``mass`` holds bin probabilities (rows sum to one over the first ``n_bins`` entries).
    Following Charest & Han (sec. 4), ``smoothing`` is Johnson's additive constant in units of
    draws: ``p_j = (S m_j + alpha) / (S + B alpha)``. For uniform weights ``S m_j`` is the raw
    bin count, so this is exactly their estimator. Entries past ``n_bins`` are ``NaN``.

    Parameters
    ----------
    mass : ndarray, shape (..., n_parameters, max_bins)
    n_bins : ndarray, shape (n_parameters,)
    n_samples : int
    smoothing : float

    Returns
    -------
    ndarray
        Same shape as ``mass``.
    """
    denom = n_samples + n_bins * smoothing
    with np.errstate(divide="ignore"):
        out = np.log(n_samples * mass + smoothing) - np.log(denom)[:, None]
    valid = np.arange(mass.shape[-1]) < n_bins[:, None]
    return np.where(valid, out, np.nan)


def bin_probabilities(log_weights: np.ndarray, bins: Bins) -> np.ndarray:
    """Self-normalised weighted bin probabilities for every neighbour and parameter.

    Parameters
    ----------
    log_weights : ndarray, shape (n_neighbours, n_samples)
        Log importance weights (need not be normalised).
    bins : Bins

    Returns
    -------
    ndarray, shape (n_neighbours, n_parameters, max_bins)
    """
    lw = np.ascontiguousarray(np.atleast_2d(log_weights), dtype=np.float64)
    return _bin_mass(lw, bins.index, bins.counts.shape[1])


def bin_log_ratios(log_weights: np.ndarray, bins: Bins, smoothing: float = 0.01) -> np.ndarray:
    """Log ratio of neighbour to full-data bin probabilities, ``log P(b | D') - log P(b | D)``.

    Parameters
    ----------
    log_weights : ndarray, shape (n_neighbours, n_samples)
    bins : Bins
    smoothing : float, default 0.01

    Returns
    -------
    ndarray, shape (n_neighbours, n_parameters, max_bins)
        NaN past each parameter's effective number of bins.
    """
    n_samples = bins.n_samples
    full = smoothed_log_probabilities(bins.counts / n_samples, bins.n_bins, n_samples, smoothing)
    neigh = smoothed_log_probabilities(
        bin_probabilities(log_weights, bins), bins.n_bins, n_samples, smoothing
    )
    return neigh - full


def epsilon_from_log_weights(
    log_weights: np.ndarray,
    bins: Bins,
    smoothing: float = 0.01,
    *,
    with_unsmoothed: bool = False,
):
    """Per-neighbour, per-parameter B-EDP epsilon and the bin that attains it.

    ``eps[i, p] = max_j |log P_i(b_pj) - log P(b_pj)|`` with both probabilities additively
    smoothed (:func:`smoothed_log_probabilities`), ``P`` from the counts of the full-data
    draws and ``P_i`` the self-normalised weighted counts under neighbour ``i``. The work is
    fused (no ``(n, P, B)`` array is formed) and parallel over neighbours.

    Parameters
    ----------
    log_weights : ndarray, shape (n_neighbours, n_samples)
        Log importance weights of each neighbour posterior relative to the full-data one.
    bins : Bins
    smoothing : float, default 0.01
        Additive smoothing in units of draws; 0 gives the raw estimator (``inf`` when a bin
        receives no weight).

    with_unsmoothed : bool, default False
        Also return, from the same pass, the epsilon without smoothing.

    Returns
    -------
    eps : ndarray, shape (n_neighbours, n_parameters)
    argbin : ndarray of int64, shape (n_neighbours, n_parameters)
    eps_unsmoothed : ndarray, shape (n_neighbours, n_parameters)
        Only with ``with_unsmoothed``; ``inf`` where a bin receives no weight.
    """
    lw = np.ascontiguousarray(np.atleast_2d(log_weights), dtype=np.float64)
    n_samples = bins.n_samples
    if lw.shape[-1] != n_samples:
        raise ValueError(
            f"log_weights have {lw.shape[-1]} samples but the bins were built from {n_samples}"
        )
    full = smoothed_log_probabilities(bins.counts / n_samples, bins.n_bins, n_samples, smoothing)
    full0 = smoothed_log_probabilities(bins.counts / n_samples, bins.n_bins, n_samples, 0.0)
    eps, argbin, eps0 = _epsilon_kernel(lw, bins.index, bins.n_bins, full, full0, float(smoothing))
    return (eps, argbin, eps0) if with_unsmoothed else (eps, argbin)


@numba.njit(cache=True)
def _row_weights(lw_row, buf):
    """Normalised weights of one row into ``buf``."""
    mx = -np.inf
    for s in range(lw_row.shape[0]):
        if lw_row[s] > mx:
            mx = lw_row[s]
    tot = 0.0
    for s in range(lw_row.shape[0]):
        w = np.exp(lw_row[s] - mx)
        buf[s] = w
        tot += w
    for s in range(lw_row.shape[0]):
        buf[s] /= tot


@numba.njit(parallel=True, cache=True)
def _bin_mass(lw, index, max_bins):
    n, n_samples = lw.shape
    n_par = index.shape[0]
    out = np.zeros((n, n_par, max_bins))
    for i in numba.prange(n):
        w = np.empty(n_samples)
        _row_weights(lw[i], w)
        for p in range(n_par):
            for s in range(n_samples):
                out[i, p, index[p, s]] += w[s]
    return out


@numba.njit(parallel=True, cache=True)
def _epsilon_kernel(lw, index, n_bins, full, full0, smoothing):
    n, n_samples = lw.shape
    n_par = index.shape[0]
    max_bins = full.shape[1]
    eps = np.empty((n, n_par))
    eps0 = np.empty((n, n_par))
    argbin = np.empty((n, n_par), dtype=np.int64)
    for i in numba.prange(n):
        w = np.empty(n_samples)
        _row_weights(lw[i], w)
        mass = np.empty(max_bins)
        for p in range(n_par):
            mass[:] = 0.0
            for s in range(n_samples):
                mass[index[p, s]] += w[s]
            log_denom = np.log(n_samples + n_bins[p] * smoothing)
            best = -1.0
            best0 = -1.0
            best_j = 0
            for j in range(n_bins[p]):
                num = n_samples * mass[j] + smoothing
                if num > 0.0:
                    d = abs(np.log(num) - log_denom - full[p, j])
                else:
                    d = np.inf
                if d > best:
                    best = d
                    best_j = j
                # the same bin without smoothing (full-data bins are never empty)
                if mass[j] > 0.0:
                    d0 = abs(np.log(mass[j]) - full0[p, j])
                else:
                    d0 = np.inf
                if d0 > best0:
                    best0 = d0
            eps[i, p] = best
            eps0[i, p] = best0
            argbin[i, p] = best_j
    return eps, argbin, eps0


def pooled_log_weights(
    log_ratio_full: np.ndarray, log_ratio_refit: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """Multiple-importance weights of pooled full-data and refit draws, for both posteriors.

    With ``S1`` draws from ``p = p(theta | D) = f / Z`` and ``S2`` from
    ``p' = p(theta | D') = f r / Z'`` (``r`` the known likelihood ratio), the pooled draws
    come from the mixture ``q = (S1 p + S2 p') / (S1 + S2)``; the balance-heuristic weights
    are ``p / q ∝ 1 / (S1 c + S2 r)`` and ``p' / q ∝ r / (S1 c + S2 r)`` with ``c = Z' / Z``,
    the unique root of ``sum_k r_k / (S1 c + S2 r_k) = 1`` (Meng & Wong's optimal bridge
    sampling fixed point), solved in log space. Estimating both posteriors' bin masses from
    the same pooled draws makes their Monte-Carlo errors cancel in the log ratio, as they do
    for plain reweighting; with ``S2 = 0`` it reduces to importance reweighting.

    Parameters
    ----------
    log_ratio_full : ndarray, shape (S1,)
        ``log r`` at the full-data draws.
    log_ratio_refit : ndarray, shape (S2,)
        ``log r`` at the refit draws.

    Returns
    -------
    log_w_full : ndarray, shape (S1 + S2,)
        Normalised log-weights targeting ``p(theta | D)``, full-data draws first.
    log_w_neighbour : ndarray, shape (S1 + S2,)
        Normalised log-weights targeting ``p(theta | D')``.
    log_c : float
        Estimate of ``log(Z' / Z)``.

    References
    ----------
    .. [1] Veach, E. and Guibas, L. "Optimally combining sampling techniques for Monte Carlo
       rendering." SIGGRAPH 1995 (the balance heuristic).
    .. [2] Meng, X.-L. and Wong, W. H. "Simulating ratios of normalizing constants via a
       simple identity." Statistica Sinica 6, 1996.
    """
    from scipy.optimize import brentq
    from scipy.special import logsumexp

    lr = np.concatenate([np.asarray(log_ratio_full, float), np.asarray(log_ratio_refit, float)])
    if not np.all(np.isfinite(lr)):
        raise ValueError("log likelihood ratios must be finite")
    log_s1 = np.log(len(log_ratio_full))
    log_s2 = np.log(len(log_ratio_refit))

    def log_denom(log_c):
        return np.logaddexp(log_s1 + log_c, log_s2 + lr)

    def equation(log_c):
        return logsumexp(lr - log_denom(log_c))

    # sum r / (S1 c + S2 r) falls from (S1 + S2) / S2 > 1 (c -> 0) to 0 (c -> inf)
    lo, hi = lr.min() - 1.0, lr.max() + 1.0
    while equation(lo) < 0:
        lo -= 10.0
    while equation(hi) > 0:
        hi += 10.0
    log_c = brentq(equation, lo, hi, xtol=1e-12)
    lw_full = -log_denom(log_c)
    lw_nb = lr + lw_full
    return lw_full - logsumexp(lw_full), lw_nb - logsumexp(lw_nb), float(log_c)


def assign_bins(values: np.ndarray, bins: Bins) -> np.ndarray:
    """Bin index of new draws ``(n_parameters, m)`` in the bins cut from the full-data draws."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    out = np.empty(values.shape, dtype=np.int32)
    for p in range(values.shape[0]):
        cut = bins.edges[p, : bins.n_bins[p] - 1]
        out[p] = np.searchsorted(cut, values[p], side="right")
    return out


def epsilon_from_masses(
    mass_neighbour: np.ndarray,
    mass_full: np.ndarray,
    n_bins: np.ndarray,
    n_pseudo: float,
    smoothing: float = 0.01,
    n_pseudo_full: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Epsilon and its bin from two sets of bin probabilities ``(..., n_parameters, max_bins)``.

    Both are smoothed with :func:`smoothed_log_probabilities`, the neighbour's against
    ``n_pseudo`` draws and the full-data one against ``n_pseudo_full`` (default the same).
    """
    n_pseudo_full = n_pseudo if n_pseudo_full is None else n_pseudo_full
    neigh = smoothed_log_probabilities(mass_neighbour, n_bins, n_pseudo, smoothing)
    full = smoothed_log_probabilities(mass_full, n_bins, n_pseudo_full, smoothing)
    diff = np.where(np.isnan(full), -np.inf, np.abs(neigh - full))
    return diff.max(axis=-1), diff.argmax(axis=-1)


def refit_epsilon(
    refit_draws: np.ndarray,
    bins: Bins,
    smoothing: float = 0.01,
    log_ratio_full: np.ndarray | None = None,
    log_ratio_refit: np.ndarray | None = None,
    *,
    pooled_weights: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-parameter epsilon of one refitted neighbour, and the bin that attains it.

    Without log likelihood ratios this is Charest & Han's estimator: the refit draws counted
    in the full-data bins, against the full-data counts. With them, the pooled estimator:
    both posteriors' bin masses from the pooled full-data and refit draws, weighted by
    :func:`pooled_log_weights`, so that their Monte-Carlo errors cancel in the log ratio.

    Parameters
    ----------
    refit_draws : ndarray, shape (n_parameters, S2)
    bins : Bins
        Cut from the full-data draws (``S1`` of them).
    smoothing : float, default 0.01
    log_ratio_full, log_ratio_refit : ndarray, optional
        ``log r`` at the full-data (S1) and refit (S2) draws.
    pooled_weights : (ndarray, ndarray), optional
        :func:`pooled_log_weights` of those log ratios when the caller already has them.

    Returns
    -------
    eps : ndarray, shape (n_parameters,)
    argbin : ndarray, shape (n_parameters,)
    """
    idx_refit = assign_bins(refit_draws, bins)
    n_par, max_bins = bins.counts.shape
    mass_nb = np.zeros((n_par, max_bins))
    if log_ratio_refit is None:
        n_pseudo = refit_draws.shape[1]
        for p in range(n_par):
            mass_nb[p, : bins.n_bins[p]] = (
                np.bincount(idx_refit[p], minlength=bins.n_bins[p]) / n_pseudo
            )
        return epsilon_from_masses(
            mass_nb,
            bins.counts / bins.n_samples,
            bins.n_bins,
            n_pseudo,
            smoothing,
            bins.n_samples,
        )
    if pooled_weights is None:
        lw_full, lw_nb, _ = pooled_log_weights(log_ratio_full, log_ratio_refit)
    else:
        lw_full, lw_nb = pooled_weights
    idx = np.concatenate([bins.index, idx_refit], axis=1)
    w_full, w_nb = np.exp(lw_full), np.exp(lw_nb)
    mass_full = np.zeros((n_par, max_bins))
    for p in range(n_par):
        nb_p = bins.n_bins[p]
        mass_nb[p, :nb_p] = np.bincount(idx[p], weights=w_nb, minlength=nb_p)
        mass_full[p, :nb_p] = np.bincount(idx[p], weights=w_full, minlength=nb_p)
    return epsilon_from_masses(mass_nb, mass_full, bins.n_bins, idx.shape[1], smoothing)

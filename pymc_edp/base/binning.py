"""Equal-probability bins and B-EDP epsilon from weighted draws (NumPy/numba, sample axis last).

Inputs are plain arrays: draws ``(n_parameters, n_samples)``, log importance weights
``(n_neighbours, n_samples)``.

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

from pymc_edp.base.limits import classify

__all__ = [
    "Bins",
    "EpsilonEstimate",
    "assign_bins",
    "bin_log_ratios",
    "epsilon_estimates",
    "epsilon_from_log_masses",
    "log_bin_masses",
    "log_bin_probabilities",
    "pooled_log_weights",
    "quantile_bins",
    "refit_estimate",
    "smoothed_log_probabilities",
]


@dataclass(frozen=True)
class Bins:
    """Equal-probability bins of the full-data draws of each scalar parameter.

    Attributes
    ----------
    index : ndarray of int32, shape (n_parameters, n_samples)
        Bin of every draw.
    n_bins : ndarray of int64, shape (n_parameters,)
        Effective number of bins after tied edges were merged.
    counts : ndarray of int64, shape (n_parameters, max(n_bins))
        Full-data draws per bin (zero past ``n_bins[p]``).
    edges : ndarray, shape (n_parameters, B - 1)
        Interior cut points, NaN-padded.
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

    Cut points: the order statistics of rank ``ceil(k S / B)`` (a tie goes up). Tied cut
    points are merged and those at the minimum dropped, so no bin is empty.
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
    """``log p_j = log((S m_j + alpha) / (S + B alpha))`` of bin probabilities ``mass``.

    Charest & Han's (sec. 4), ``alpha`` in draws. ``mass`` ``(..., n_parameters,
    max_bins)``; NaN past ``n_bins``.
    """
    denom = n_samples + n_bins * smoothing
    with np.errstate(divide="ignore"):
        out = np.log(n_samples * mass + smoothing) - np.log(denom)[:, None]
    valid = np.arange(mass.shape[-1]) < n_bins[:, None]
    return np.where(valid, out, np.nan)


def bin_log_ratios(log_weights: np.ndarray, bins: Bins, smoothing: float = 0.01) -> np.ndarray:
    """Smoothed ``log P(b | D') - log P(b | D)``, ``(n_neighbours, n_parameters, max_bins)``.

    NaN past each parameter's bins; masses summed in log space (:func:`log_bin_masses`).
    """
    n_samples = bins.n_samples
    full = smoothed_log_probabilities(bins.counts / n_samples, bins.n_bins, n_samples, smoothing)
    log_m = log_bin_probabilities(log_weights, bins)
    return _smoothed_log_mass(log_m, n_samples, bins.n_bins, smoothing) - full


def _smoothed_log_mass(log_mass, n_samples, n_bins, smoothing):
    """:func:`smoothed_log_probabilities` of normalised log masses, in log space."""
    if smoothing <= 0:
        return log_mass
    denom = np.log(n_samples + n_bins * smoothing)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.logaddexp(np.log(n_samples) + log_mass, np.log(smoothing)) - denom


def log_bin_probabilities(log_weights: np.ndarray, bins: Bins) -> np.ndarray:
    """Log self-normalised weighted bin probabilities, ``(n_neighbours, n_parameters, max_bins)``.

    ``-inf`` only for a bin whose draws all have weight 0; NaN past ``n_bins``.
    """
    lw = np.atleast_2d(np.asarray(log_weights, dtype=float))
    out = np.empty((lw.shape[0], *bins.counts.shape))
    for i in range(lw.shape[0]):
        out[i] = log_bin_masses(lw[i], bins.index, bins.n_bins)[0]
    return out


@dataclass(frozen=True)
class EpsilonEstimate:
    """Per-neighbour, per-parameter epsilon and what is needed to judge it.

    Attributes
    ----------
    eps : ndarray, shape (n_neighbours, n_parameters)
        ``max_j |log P_i(b_pj) - log P(b_pj)|``, smoothed as asked.
    argbin : ndarray of int64
        The bin that attains ``eps``.
    eps_unsmoothed : ndarray
        Without smoothing (``inf`` where a bin receives no weight).
    bin_draws : ndarray
        Kish's effective number ``(sum w)^2 / sum w^2`` of the neighbour's draws in ``argbin``.
    limit : ndarray of int8
        :func:`pymc_edp.base.limits.classify`: where the estimate is a lower bound.
    """

    eps: np.ndarray
    argbin: np.ndarray
    eps_unsmoothed: np.ndarray
    bin_draws: np.ndarray
    limit: np.ndarray


def epsilon_estimates(
    log_weights: np.ndarray, bins: Bins, smoothing: float = 0.0
) -> EpsilonEstimate:
    """Epsilon of every neighbour and parameter from log importance weights, with its limits.

    ``eps[i, p] = max_j |log P_i(b_pj) - log P(b_pj)|``, parallel over neighbours. A bin
    holding draws never has zero mass (:func:`log_bin_masses`), so without smoothing the
    estimate is finite and not capped.

    Parameters
    ----------
    log_weights : ndarray, shape (n_neighbours, n_samples)
    bins : Bins
    smoothing : float, default 0.0
        Additive smoothing of both probabilities (:func:`smoothed_log_probabilities`).

    Examples
    --------
    All mass moved out of the lowest of 4 bins but for one draw weighted ``e^-30``: the
    log ratio is finite but rests on one draw (limit code 2, ``few_draws``).

    >>> from pymc_edp.base.binning import epsilon_estimates, quantile_bins
    >>> draws = np.arange(400.0)[None, :]
    >>> bins = quantile_bins(draws, 4)
    >>> lw = np.where(draws[0] < 100, -1e4, 0.0)[None, :]
    >>> lw[0, 99] = -30.0
    >>> est = epsilon_estimates(lw, bins)
    >>> round(float(est.eps[0, 0]), 2), int(est.argbin[0, 0]), int(est.limit[0, 0])
    (34.32, 0, 2)
    >>> capped = epsilon_estimates(lw, bins, smoothing=0.01)
    >>> round(float(capped.eps[0, 0]), 2), int(capped.limit[0, 0])  # log(100 / 0.01): capped
    (9.21, 1)
    """
    lw = np.ascontiguousarray(np.atleast_2d(log_weights), dtype=np.float64)
    n_samples = bins.n_samples
    if lw.shape[-1] != n_samples:
        raise ValueError(
            f"log_weights have {lw.shape[-1]} samples but the bins were built from {n_samples}"
        )
    smoothing = float(smoothing)
    full = smoothed_log_probabilities(bins.counts / n_samples, bins.n_bins, n_samples, smoothing)
    full0 = smoothed_log_probabilities(bins.counts / n_samples, bins.n_bins, n_samples, 0.0)
    eps, argbin, eps0, draws = _epsilon_kernel(lw, bins.index, bins.n_bins, full, full0, smoothing)
    return EpsilonEstimate(eps, argbin, eps0, draws, classify(eps, eps0, draws, smoothing))


#: Below this a bin's sum of row-normalised weights may have lost precision to underflow;
#: its mass is then summed again with the bin's own largest weight factored out.
_TINY = 1e-150


@numba.njit(cache=True)
def _exact_bin(row, index_p, j):
    """``log sum_{s in b_j} e^row_s`` and Kish's effective count, the bin's max factored out."""
    mx = -np.inf
    for s in range(row.shape[0]):
        if index_p[s] == j and row[s] > mx:
            mx = row[s]
    if mx == -np.inf:
        return -np.inf, 0.0
    s1 = 0.0
    s2 = 0.0
    for s in range(row.shape[0]):
        if index_p[s] == j:
            w = np.exp(row[s] - mx)
            s1 += w
            s2 += w * w
    return mx + np.log(s1), s1 * s1 / s2


@numba.njit(cache=True)
def _log_add(a, b):
    """``log(e^a + e^b)``."""
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    hi = max(a, b)
    return hi + np.log1p(np.exp(-abs(a - b)))


@numba.njit(parallel=True, cache=True)
def _epsilon_kernel(lw, index, n_bins, full, full0, smoothing):
    n, n_samples = lw.shape
    n_par = index.shape[0]
    max_bins = full.shape[1]
    eps = np.empty((n, n_par))
    eps0 = np.empty((n, n_par))
    draws = np.empty((n, n_par))
    argbin = np.empty((n, n_par), dtype=np.int64)
    log_s = np.log(n_samples)
    log_alpha = np.log(smoothing) if smoothing > 0.0 else -np.inf
    for i in numba.prange(n):
        row = lw[i]
        mx = -np.inf
        for s in range(n_samples):
            if row[s] > mx:
                mx = row[s]
        w = np.empty(n_samples)
        tot = 0.0
        for s in range(n_samples):
            w[s] = np.exp(row[s] - mx)
            tot += w[s]
        log_tot = mx + np.log(tot)
        mass = np.empty(max_bins)
        mass2 = np.empty(max_bins)
        log_m = np.empty(max_bins)
        ess = np.empty(max_bins)
        for p in range(n_par):
            mass[:] = 0.0
            mass2[:] = 0.0
            for s in range(n_samples):
                j = index[p, s]
                mass[j] += w[s]
                mass2[j] += w[s] * w[s]
            for j in range(n_bins[p]):
                if mass[j] > _TINY:
                    log_m[j] = np.log(mass[j]) + mx - log_tot
                    ess[j] = mass[j] * mass[j] / mass2[j]
                else:  # summed again without underflow
                    lsum, e = _exact_bin(row, index[p], j)
                    log_m[j] = lsum - log_tot
                    ess[j] = e
            log_denom = np.log(n_samples + n_bins[p] * smoothing)
            best = -1.0
            best0 = -1.0
            best_j = 0
            for j in range(n_bins[p]):
                if smoothing > 0.0:
                    d = abs(_log_add(log_s + log_m[j], log_alpha) - log_denom - full[p, j])
                else:
                    d = abs(log_m[j] - full0[p, j])
                if d > best:
                    best = d
                    best_j = j
                d0 = abs(log_m[j] - full0[p, j])  # full-data bins are never empty
                if d0 > best0:
                    best0 = d0
            # no bin compared (NaN weights): no estimate, never the -1 it started at
            eps[i, p] = best if best >= 0.0 else np.nan
            eps0[i, p] = best0 if best0 >= 0.0 else np.nan
            argbin[i, p] = best_j
            draws[i, p] = ess[best_j]
    return eps, argbin, eps0, draws


@numba.njit(cache=True)
def _log_masses(lw, index, n_bins, max_bins):
    """Normalised log bin masses and Kish's effective counts of one weight vector."""
    n_par, n_samples = index.shape
    log_m = np.full((n_par, max_bins), np.nan)
    ess = np.full((n_par, max_bins), np.nan)
    mx_all = -np.inf
    for s in range(n_samples):
        if lw[s] > mx_all:
            mx_all = lw[s]
    tot = 0.0
    for s in range(n_samples):
        tot += np.exp(lw[s] - mx_all)
    log_tot = mx_all + np.log(tot)
    bmax = np.empty(max_bins)
    s1 = np.empty(max_bins)
    s2 = np.empty(max_bins)
    for p in range(n_par):
        bmax[:] = -np.inf
        for s in range(n_samples):
            j = index[p, s]
            if lw[s] > bmax[j]:
                bmax[j] = lw[s]
        s1[:] = 0.0
        s2[:] = 0.0
        for s in range(n_samples):
            j = index[p, s]
            if bmax[j] > -np.inf:
                w = np.exp(lw[s] - bmax[j])
                s1[j] += w
                s2[j] += w * w
        for j in range(n_bins[p]):
            if bmax[j] == -np.inf:
                log_m[p, j] = -np.inf
                ess[p, j] = 0.0
            else:
                log_m[p, j] = bmax[j] + np.log(s1[j]) - log_tot
                ess[p, j] = s1[j] * s1[j] / s2[j]
    return log_m, ess


def log_bin_masses(
    log_weights: np.ndarray, index: np.ndarray, n_bins: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Self-normalised log bin masses of one set of weighted draws, and effective counts.

    Each bin's own largest weight is factored out, so no mass underflows to zero.

    Parameters
    ----------
    log_weights : ndarray, shape (S,)
    index : ndarray of int, shape (n_parameters, S)
        Bin of every draw (:func:`assign_bins`).
    n_bins : ndarray, shape (n_parameters,)

    Returns
    -------
    log_mass : ndarray, shape (n_parameters, max(n_bins))
        ``log sum_{s in b} w_s / sum_s w_s``; ``-inf`` for a bin without draws, NaN past
        ``n_bins``.
    ess : ndarray, shape (n_parameters, max(n_bins))
        Kish's effective number of draws in each bin.

    Examples
    --------
    >>> from pymc_edp.base.binning import log_bin_masses
    >>> lw, index = np.array([0.0, 0.0, -800.0]), np.array([[0, 0, 1]])
    >>> lm, ess = log_bin_masses(lw, index, np.array([2]))
    >>> round(float(lm[0, 1]), 3), ess[0].tolist()
    (-800.693, [2.0, 1.0])
    """
    lw = np.ascontiguousarray(np.asarray(log_weights, dtype=np.float64).ravel())
    idx = np.ascontiguousarray(np.atleast_2d(index), dtype=np.int64)
    n_bins = np.asarray(n_bins, dtype=np.int64)
    return _log_masses(lw, idx, n_bins, int(n_bins.max()))


def epsilon_from_log_masses(
    log_mass_neighbour: np.ndarray,
    log_mass_full: np.ndarray,
    n_bins: np.ndarray,
    n_pseudo: float,
    smoothing: float = 0.0,
    *,
    bin_draws: np.ndarray | None = None,
    n_pseudo_full: float | None = None,
) -> EpsilonEstimate:
    """Epsilon per parameter from two sets of normalised log bin masses.

    Both smoothed in log space as in :func:`smoothed_log_probabilities`.

    Parameters
    ----------
    log_mass_neighbour, log_mass_full : ndarray, shape (n_parameters, max_bins)
        NaN past ``n_bins``.
    n_bins : ndarray, shape (n_parameters,)
    n_pseudo : float
        Draws the neighbour's masses stand for (the units of ``smoothing``).
    smoothing : float, default 0.0
    bin_draws : ndarray, optional
        Effective number of the neighbour's draws per bin; default ``n_pseudo`` times mass.
    n_pseudo_full : float, optional
        As ``n_pseudo``, for ``log_mass_full``; default ``n_pseudo``.

    Returns
    -------
    EpsilonEstimate
        Arrays of shape ``(n_parameters,)``.
    """
    n_pseudo_full = n_pseudo if n_pseudo_full is None else n_pseudo_full
    lm_nb = np.asarray(log_mass_neighbour, dtype=float)
    lm_full = np.asarray(log_mass_full, dtype=float)
    n_bins = np.asarray(n_bins)
    valid = np.arange(lm_nb.shape[-1]) < n_bins[:, None]
    if bin_draws is None:
        with np.errstate(over="ignore"):
            bin_draws = n_pseudo * np.exp(lm_nb)
    with np.errstate(invalid="ignore"):
        diff = np.abs(
            _smoothed_log_mass(lm_nb, n_pseudo, n_bins, smoothing)
            - _smoothed_log_mass(lm_full, n_pseudo_full, n_bins, smoothing)
        )
        diff0 = np.abs(lm_nb - lm_full)
    diff = np.where(valid, np.nan_to_num(diff, nan=np.inf, posinf=np.inf), -np.inf)
    diff0 = np.where(valid, np.nan_to_num(diff0, nan=np.inf, posinf=np.inf), -np.inf)
    argbin = diff.argmax(axis=-1)
    eps = np.take_along_axis(diff, argbin[:, None], -1)[:, 0]
    eps0 = diff0.max(axis=-1)
    draws = np.take_along_axis(np.asarray(bin_draws, dtype=float), argbin[:, None], -1)[:, 0]
    return EpsilonEstimate(
        eps, argbin.astype(np.int64), eps0, draws, classify(eps, eps0, draws, smoothing)
    )


def pooled_log_weights(
    log_ratio_full: np.ndarray, log_ratio_refit: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """Multiple-importance weights of pooled full-data and refit draws, for both posteriors.

    ``S1`` draws of ``p = f / Z`` and ``S2`` of ``p' = f r / Z'`` come from the mixture
    ``(S1 p + S2 p') / (S1 + S2)``: balance-heuristic weights ``∝ 1 / (S1 c + S2 r)`` and
    ``∝ r / (S1 c + S2 r)``, ``c = Z' / Z`` the root of ``sum_k r_k / (S1 c + S2 r_k) = 1``
    (Meng & Wong's bridge), solved in log space.

    Parameters
    ----------
    log_ratio_full : ndarray, shape (S1,)
        ``log r`` at the full-data draws.
    log_ratio_refit : ndarray, shape (S2,)
        ``log r`` at the refit draws.

    Returns
    -------
    log_w_full, log_w_neighbour : ndarray, shape (S1 + S2,)
        Normalised log-weights targeting ``p(theta | D)`` and ``p(theta | D')``, full-data
        draws first.
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


def refit_estimate(
    refit_draws: np.ndarray,
    bins: Bins,
    smoothing: float = 0.0,
    log_ratio_full: np.ndarray | None = None,
    log_ratio_refit: np.ndarray | None = None,
    *,
    pooled_weights: tuple[np.ndarray, np.ndarray] | None = None,
) -> EpsilonEstimate:
    """Per-parameter epsilon of one refitted neighbour.

    Without log likelihood ratios, Charest & Han's: refit draws counted in the full-data
    bins (a missed bin needs ``smoothing > 0``). With them, pooled (:func:`pooled_log_weights`).

    Parameters
    ----------
    refit_draws : ndarray, shape (n_parameters, S2)
    bins : Bins
        Cut from the ``S1`` full-data draws.
    smoothing : float, default 0.0
    log_ratio_full, log_ratio_refit : ndarray, optional
        ``log r`` at the full-data and refit draws.
    pooled_weights : (ndarray, ndarray), optional
        Their :func:`pooled_log_weights`, if known.

    Returns
    -------
    EpsilonEstimate
        Arrays of shape ``(n_parameters,)``.
    """
    idx_refit = assign_bins(refit_draws, bins)
    n_par = bins.counts.shape[0]
    with np.errstate(divide="ignore"):
        log_full = np.log(bins.counts / bins.n_samples)
    if log_ratio_refit is None:
        n_pseudo = refit_draws.shape[1]
        counts = np.zeros(bins.counts.shape)
        for p in range(n_par):
            nb_p = bins.n_bins[p]
            counts[p, :nb_p] = np.bincount(idx_refit[p], minlength=nb_p)[:nb_p]
        with np.errstate(divide="ignore"):
            log_nb = np.log(counts / n_pseudo)
        return epsilon_from_log_masses(
            log_nb,
            log_full,
            bins.n_bins,
            n_pseudo,
            smoothing,
            bin_draws=counts,
            n_pseudo_full=bins.n_samples,
        )
    if pooled_weights is None:
        lw_full, lw_nb, _ = pooled_log_weights(log_ratio_full, log_ratio_refit)
    else:
        lw_full, lw_nb = pooled_weights
    idx = np.concatenate([bins.index, idx_refit], axis=1)
    log_nb, ess_nb = log_bin_masses(lw_nb, idx, bins.n_bins)
    log_full, _ = log_bin_masses(lw_full, idx, bins.n_bins)
    return epsilon_from_log_masses(
        log_nb, log_full, bins.n_bins, idx.shape[1], smoothing, bin_draws=ess_nb
    )

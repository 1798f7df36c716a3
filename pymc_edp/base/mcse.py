"""Monte-Carlo error of bin log-ratios: effective sample sizes, influence functions, intervals.

References
----------
.. [1] Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Bürkner, P.-C.
   "Rank-normalization, folding, and localization: an improved R-hat for assessing
   convergence of MCMC." Bayesian Analysis 16(2), 2021.
.. [2] Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. "Pareto smoothed
   importance sampling." Journal of Machine Learning Research 25(72), 2024.
"""

from __future__ import annotations

import numba
import numpy as np

from pymc_edp.base.binning import Bins, bin_log_ratios
from pymc_edp.base.common import chunk_slices

__all__ = [
    "abs_interval",
    "bin_log_ratio_se",
    "ess_mean",
    "interval_of_max",
    "kish_ess",
    "kish_ess_from_log",
    "leading_pairs",
    "max_interval",
    "normal_interval",
    "normal_quantile",
    "normalised_weights",
    "pooled_log_ratio_se",
    "refit_log_ratio_se",
]


def _split_chains(x: np.ndarray, n_chains: int) -> np.ndarray:
    """Chain-major ``(rows, S)`` as ``(rows, 2 n_chains, S / (2 n_chains))`` (as arviz.ess)."""
    rows, n_samples = x.shape
    n_draws = n_samples // n_chains
    x = x[:, : n_chains * n_draws].reshape(rows, n_chains, n_draws)
    half = n_draws // 2
    first = x[:, :, :half]
    second = x[:, :, n_draws - half :]
    return np.concatenate([first, second], axis=1)


@numba.njit(parallel=True, cache=True)
def _geyer_tau(acov, chain_mean_var, n_draw):  # pragma: no cover - compiled
    """Integrated autocorrelation time per row from chain-averaged autocovariances."""
    rows = acov.shape[0]
    tau = np.empty(rows)
    for r in numba.prange(rows):
        mean_var = acov[r, 0] * n_draw / (n_draw - 1.0)
        var_plus = mean_var * (n_draw - 1.0) / n_draw + chain_mean_var[r]
        if not var_plus > 0.0:
            tau[r] = np.nan
            continue
        rho = np.zeros(n_draw)
        rho_even = 1.0
        rho[0] = rho_even
        rho_odd = 1.0 - (mean_var - acov[r, 1]) / var_plus
        rho[1] = rho_odd
        t = 1
        while t < n_draw - 3 and rho_even + rho_odd > 0.0:
            rho_even = 1.0 - (mean_var - acov[r, t + 1]) / var_plus
            rho_odd = 1.0 - (mean_var - acov[r, t + 2]) / var_plus
            if rho_even + rho_odd >= 0:
                rho[t + 1] = rho_even
                rho[t + 2] = rho_odd
            t += 2
        max_t = t - 2
        if rho_even > 0 and max_t + 1 < n_draw:
            rho[max_t + 1] = rho_even
        t = 1
        while t <= max_t - 2:
            if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
                rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
                rho[t + 2] = rho[t + 1]
            t += 2
        s = 0.0
        for k in range(max_t + 1):
            s += rho[k]
        tail = rho[max_t + 1] if max_t + 1 < n_draw else 0.0
        tau[r] = -1.0 + 2.0 * s + tail
    return tau


def ess_mean(x: np.ndarray, n_chains: int = 1) -> np.ndarray:
    """Effective sample size for the mean of every row of chain-major draws.

    ArviZ's ``ess(method="mean")`` (split chains, Geyer's initial monotone sequence; see
    the module's references), vectorised over rows; agrees to 1e-14 (``benchmarks/bench_ess.py``).

    Parameters
    ----------
    x : array_like, shape (n_rows, n_samples)
        ``n_chains`` consecutive chains of equal length.
    n_chains : int, default 1

    Returns
    -------
    ndarray, shape (n_rows,)
        NaN for chains under 8 draws; the split draws' number for a constant row.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    rows = x.shape[0]
    split = _split_chains(x, int(n_chains))
    m, n_draw = split.shape[1], split.shape[2]
    if n_draw < 4:
        return np.full(rows, np.nan)
    out = np.full(rows, float(m * n_draw))  # a constant row: as ArviZ, the split draws
    spread = split.max(axis=(1, 2)) - split.min(axis=(1, 2))
    varying = spread >= np.finfo(float).resolution
    if not varying.any():
        return out
    y = split[varying]
    y = y - y.mean(axis=-1, keepdims=True)
    from scipy.fft import next_fast_len

    n_fft = next_fast_len(2 * n_draw)
    f = np.fft.rfft(y, n=n_fft, axis=-1)
    acov = np.fft.irfft(f * np.conjugate(f), n=n_fft, axis=-1)[..., :n_draw] / n_draw
    acov = acov.mean(axis=1)  # over chains
    chain_means = split[varying].mean(axis=-1)
    chain_mean_var = chain_means.var(axis=1, ddof=1) if m > 1 else np.zeros(chain_means.shape[0])
    tau = _geyer_tau(np.ascontiguousarray(acov), chain_mean_var, n_draw)
    total = m * n_draw
    tau = np.maximum(tau, 1.0 / np.log10(total))
    out[varying] = total / tau
    return out


def normalised_weights(log_weights: np.ndarray) -> np.ndarray:
    """``exp(log_weights)`` normalised to sum to one along the last axis."""
    lw = np.atleast_2d(np.asarray(log_weights, dtype=float))
    w = np.exp(lw - lw.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True)


def kish_ess(weights: np.ndarray, axis: int = -1, *, normalised: bool = False) -> np.ndarray:
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` of weights along ``axis``.

    Parameters
    ----------
    weights : array_like
        Non-negative weights, not all zero, the draws along ``axis``.
    axis : int, default -1
    normalised : bool, default False
        The weights sum to one: ``1 / sum w^2`` (their sum is not recomputed).

    Returns
    -------
    ndarray
        The shape of ``weights`` without ``axis``.

    Examples
    --------
    >>> from pymc_edp.base.mcse import kish_ess
    >>> float(kish_ess(np.ones(4))), float(kish_ess(np.array([3.0, 1.0])))
    (4.0, 1.6)
    >>> kish_ess(np.array([[0.5, 0.5], [0.9, 0.1]]), normalised=True).round(3).tolist()
    [2.0, 1.22]
    """
    w = np.asarray(weights, dtype=float)
    if normalised:
        return 1.0 / (w**2).sum(axis=axis)
    return w.sum(axis=axis) ** 2 / (w**2).sum(axis=axis)


def kish_ess_from_log(
    log_weights: np.ndarray, axis: int = -1, *, normalised: bool = False
) -> np.ndarray:
    """:func:`kish_ess` of the weights ``exp(log_weights)``, their largest factored out.

    With ``normalised`` (the weights sum to one), ``1 / sum exp(2 log_weights)``.

    Examples
    --------
    >>> from pymc_edp.base.mcse import kish_ess_from_log
    >>> float(kish_ess_from_log(np.full(3, -800.0)))  # equal weights far below 1e-300
    3.0
    >>> round(float(kish_ess_from_log(np.log([0.5, 0.25, 0.25]), normalised=True)), 4)
    2.6667
    """
    lw = np.asarray(log_weights, dtype=float)
    if normalised:
        return 1.0 / np.exp(2 * lw).sum(axis=axis)
    return kish_ess(np.exp(lw - lw.max(axis=axis, keepdims=True)), axis=axis)


def bin_log_ratio_se(
    log_weights: np.ndarray,
    bins: Bins,
    parameter: np.ndarray,
    bin_index: np.ndarray,
    *,
    order: np.ndarray,
    smoothing: float = 0.01,
    n_chains: int = 1,
    n_local: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reweighted bin log-ratio, its Monte-Carlo standard error and effective sample size.

    For neighbour ``i``, parameter ``p`` and bin ``j`` the estimate is
    ``l = log(S m + alpha) - log(c_j + alpha)`` with ``m = sum_s w_s 1[theta_ps in b_j]`` the
    self-normalised weighted mass and ``c_j`` the full-data count. Its first-order error is
    ``(1 / S) sum_s psi_s`` with the influence function (``r_s = S w_s``)::

        psi_s = r_s 1[s in b_j] - m r_s                              (importance sampling)
              + r(q_hi) (F_hi - 1[theta_s < q_hi])                   (upper cut point)
              - r(q_lo) (F_lo - 1[theta_s < q_lo])                   (lower cut point)

    with ``q`` the empirical quantiles the bins were cut at, ``F`` their levels and ``r(q)``
    the mean of ``r`` over the ``n_local`` draws nearest the cut [1]_. The cut-point terms
    cancel most of the importance-sampling term. ``var(mean(psi)) = var(psi) / ESS(psi)``
    (:func:`ess_mean`).

    Parameters
    ----------
    log_weights : ndarray, shape (n, S)
    bins : Bins
    parameter, bin_index : ndarray of int, shape (n, k)
        The ``k`` (parameter, bin) pairs of every neighbour.
    order : ndarray of int, shape (n_parameters, S)
        ``argsort`` of the full-data draws of each parameter.
    smoothing : float, default 0.01
    n_chains : int, default 1
    n_local : int, optional
        Draws averaged for ``r(q)`` (:func:`_window_size`).

    Returns
    -------
    log_ratio, se, ess : ndarray, shape (n, k)

    References
    ----------
    .. [1] Bahadur, R. R. "A note on quantiles in large samples." Annals of Mathematical
       Statistics 37(3), 1966.
    """
    lw = np.atleast_2d(np.asarray(log_weights, dtype=float))
    n, n_samples = lw.shape
    parameter = np.atleast_2d(np.asarray(parameter, dtype=np.int64))
    bin_index = np.atleast_2d(np.asarray(bin_index, dtype=np.int64))
    k = parameter.shape[1]
    n_local = _window_size(bins, None, n_samples, n_local)
    cum = np.concatenate(
        [np.zeros((bins.counts.shape[0], 1), dtype=np.int64), np.cumsum(bins.counts, axis=1)],
        axis=1,
    )
    log_ratio = np.empty((n, k))
    se = np.empty((n, k))
    ess = np.empty((n, k))
    # in log space: a bin's mass may be far below the smallest float (e^-1000)
    lw = lw - _logsumexp_rows(lw)[:, None]  # normalised: w = exp(lw)
    r = n_samples * np.exp(lw)
    rows = np.arange(n)[:, None]
    half = n_local // 2
    log_s = np.log(n_samples)
    for c in range(k):
        p = parameter[:, c]
        j = bin_index[:, c]
        idx = bins.index[p]  # (n, S)
        in_bin = idx == j[:, None]
        log_m = _logsumexp_rows(np.where(in_bin, lw, -np.inf))
        # psi / m: the influence relative to the mass (see above), computed without m itself
        with np.errstate(over="ignore", invalid="ignore"):
            rel = np.where(in_bin, n_samples * np.exp(lw - log_m[:, None]), 0.0) - r
            for side in ("lo", "hi"):
                edge = j if side == "lo" else j + 1
                has = (edge > 0) & (edge < bins.n_bins[p])
                if not has.any():
                    continue
                rank = cum[p, edge]  # draws below the cut point
                start = np.clip(rank - half, 0, n_samples - n_local)
                near = order[p[:, None], start[:, None] + np.arange(n_local)[None, :]]
                log_rq = log_s + _logsumexp_rows(lw[rows, near]) - np.log(n_local)
                rq_over_m = np.exp(log_rq - log_m)
                level = rank / n_samples
                below = idx < edge[:, None]
                term = rq_over_m[:, None] * (level[:, None] - below)
                sign = 1.0 if side == "hi" else -1.0
                rel += np.where(has[:, None], sign * term, 0.0)
            var = np.mean(rel**2, axis=1)
            e = ess_mean(np.nan_to_num(rel, posinf=0.0, neginf=0.0), n_chains)
            se_rel = np.sqrt(var / e)  # standard error of log m
        se_rel = np.where(np.isfinite(se_rel), se_rel, np.inf)
        count = bins.counts[p, j].astype(float)
        log_sm = log_s + log_m
        if smoothing > 0:
            log_num = np.logaddexp(log_sm, np.log(smoothing))
            shrink = np.exp(log_sm - log_num)  # S m / (S m + alpha)
        else:
            log_num, shrink = log_sm, 1.0
        log_ratio[:, c] = log_num - np.log(count + smoothing)
        se[:, c] = se_rel * shrink
        ess[:, c] = e
    return log_ratio, se, ess


def _logsumexp_rows(x: np.ndarray) -> np.ndarray:
    """``log sum exp`` along the last axis; ``-inf`` for a row of ``-inf``."""
    mx = np.max(x, axis=-1)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(x - safe[..., None]), axis=-1)) + safe


def _window_size(bins: Bins, parameter: int | None, n_samples: int, n_local: int | None) -> int:
    """Draws averaged for ``r(q)``: ``clip(sqrt(S), 10, 200)``, at most half the smallest bin."""
    if n_local is None:
        params = range(bins.counts.shape[0]) if parameter is None else [parameter]
        smallest = min(int(bins.counts[q, : bins.n_bins[q]].min()) for q in params)
        n_local = int(min(np.clip(np.sqrt(n_samples), 10, 200), max(5, smallest // 2)))
    return int(min(n_local, n_samples))


def _cut_points(bins: Bins, parameter: int, bin_index: int, n_local: int):
    """A bin's interior edges: ``(edge, draws below it, +1 if upper, slice of sorted draws)``."""
    n_samples = bins.index.shape[1]
    cum = np.concatenate([[0], np.cumsum(bins.counts[parameter])])
    for edge, sign in ((bin_index + 1, 1.0), (bin_index, -1.0)):
        if 0 < edge < bins.n_bins[parameter]:
            rank = int(cum[edge])
            start = int(np.clip(rank - n_local // 2, 0, n_samples - n_local))
            yield edge, rank, sign, slice(start, start + n_local)


def _add_cut_point_terms(
    psi, theta, bins, parameter, bin_index, *, draws, order, n_local, weights=None
):
    """Add each cut point's ``sign r(q) (F - 1[theta_s < q])`` to ``psi`` in place."""
    p = parameter
    n_samples = psi.shape[0]
    n_local = _window_size(bins, p, n_samples, n_local)
    for edge, rank, sign, window in _cut_points(bins, p, bin_index, n_local):
        near = draws[p, order[p, window]]
        is_near = (theta >= near.min()) & (theta <= near.max())
        share = np.mean(is_near) if weights is None else float(weights @ is_near)
        r_q = share / (n_local / n_samples)
        psi += sign * r_q * (rank / n_samples - (bins.index[p] < edge))


def refit_log_ratio_se(
    refit_draws: np.ndarray,
    bins: Bins,
    parameter: int,
    bin_index: int,
    *,
    order: np.ndarray,
    draws: np.ndarray,
    n_chains: int = 1,
    n_chains_refit: int = 1,
    n_local: int | None = None,
) -> tuple[float, float, float]:
    """Standard error of a refitted neighbour's bin log-ratio (delta method).

    ``P'(b) = mean_s' 1[theta'_s' in b]`` has two independent error parts, each
    ``var(psi) / ESS(psi)``: the refit draws', ``psi' = 1[theta' in b] - P'``, and the cut
    points' as in :func:`bin_log_ratio_se`, ``r(q)`` the share of refit over full-data
    draws near the cut. Conservative for the pooled estimator.

    Parameters
    ----------
    refit_draws : ndarray, shape (n_parameters, S')
    bins : Bins
    parameter, bin_index : int
    order : ndarray of int, shape (n_parameters, S)
        ``argsort`` of the full-data ``draws``.
    draws : ndarray, shape (n_parameters, S)
    n_chains, n_chains_refit : int, default 1
    n_local : int, optional
        As in :func:`bin_log_ratio_se`.

    Returns
    -------
    mass, se, ess : float
        ``P'(b)``, the standard error of ``log P'(b)``, the ESS of ``psi'``.

    References
    ----------
    .. [1] Bahadur, R. R. "A note on quantiles in large samples." Annals of Mathematical
       Statistics 37(3), 1966.
    .. [2] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (sec. 4).
    """
    p, j = int(parameter), int(bin_index)
    n_samples = draws.shape[1]
    theta = np.asarray(refit_draws[p], dtype=float)
    cut = bins.edges[p, : bins.n_bins[p] - 1]
    idx = np.searchsorted(cut, theta, side="right")
    in_bin = (idx == j).astype(float)
    mass = float(in_bin.mean())
    psi_refit = in_bin - mass
    ess_refit = float(ess_mean(psi_refit[None], n_chains_refit)[0])
    var = float(np.mean(psi_refit**2)) / ess_refit if ess_refit > 0 else np.inf
    psi_full = np.zeros(n_samples)
    _add_cut_point_terms(psi_full, theta, bins, p, j, draws=draws, order=order, n_local=n_local)
    if np.any(psi_full):
        ess_full = float(ess_mean(psi_full[None], n_chains)[0])
        var += float(np.mean(psi_full**2)) / ess_full
    se = np.sqrt(var) / mass if mass > 0 else np.inf
    return mass, float(se), ess_refit


def pooled_log_ratio_se(
    refit_draws: np.ndarray,
    bins: Bins,
    parameter: int,
    bin_index: int,
    *,
    log_weights_full: np.ndarray,
    log_weights_neighbour: np.ndarray,
    order: np.ndarray,
    draws: np.ndarray,
    n_chains: int = 1,
    n_chains_refit: int = 1,
    n_local: int | None = None,
    log_ratio: np.ndarray | None = None,
    log_c: float | None = None,
) -> tuple[float, float, float]:
    """Standard error of a refit's pooled bin log-ratio (delta method).

    The pooled draws are weighted by :func:`pymc_edp.base.binning.pooled_log_weights`:
    ``u_s = 1 / d_s`` (full data), ``v_s = r_s / d_s`` (neighbour), ``d_s = S1 c + S2 r_s``.
    Linearising the estimating equations ``sum v = 1``, ``sum v (1_b - m') = 0`` and
    ``sum u (1_b - m) = 0`` (a sandwich) gives each draw's contribution ``phi_s`` to the
    error of ``log m' - log m``, including that of ``c``, which dominates when the
    posteriors barely overlap (left out, understating the error, without ``log_ratio``).
    The cut points add ``(r(q) / m' - 1 / m) (F - 1[theta_s < q]) / S1``, ``r(q)`` the mean
    of ``w' / w`` near the cut. Each set of draws contributes ``n^2 var(phi) / ESS(phi)``.

    Parameters
    ----------
    refit_draws : ndarray, shape (n_parameters, S2)
    bins : Bins
        Cut from ``draws``.
    parameter, bin_index : int
    log_weights_full, log_weights_neighbour : ndarray, shape (S1 + S2,)
        Normalised pooled log-weights for the full-data and the neighbour posterior,
        full-data draws first.
    order, draws, n_chains, n_chains_refit, n_local
        As in :func:`refit_log_ratio_se` (``S1`` full-data draws).
    log_ratio : ndarray, shape (S1 + S2,), optional
    log_c : float, optional
        ``log r`` at the pooled draws and ``pooled_log_weights``' third output; together
        they include the error of ``c``.

    Returns
    -------
    log_ratio, se, ess : float
        The pooled log ratio (no smoothing), its standard error, the refit draws' ESS.

    References
    ----------
    .. [1] Veach, E. and Guibas, L. "Optimally combining sampling techniques for Monte Carlo
       rendering." SIGGRAPH 1995 (the balance heuristic).
    .. [2] Meng, X.-L. and Wong, W. H. "Simulating ratios of normalizing constants via a
       simple identity." Statistica Sinica 6, 1996.
    .. [3] Bahadur, R. R. "A note on quantiles in large samples." Annals of Mathematical
       Statistics 37(3), 1966.
    """
    p, j = int(parameter), int(bin_index)
    n_full = draws.shape[1]
    cut = bins.edges[p, : bins.n_bins[p] - 1]
    idx = np.concatenate([bins.index[p], np.searchsorted(cut, refit_draws[p], side="right")])
    ind = (idx == j).astype(float)
    w_f = np.exp(np.asarray(log_weights_full, dtype=float))
    w_n = np.exp(np.asarray(log_weights_neighbour, dtype=float))
    m_f, m_n = float(w_f @ ind), float(w_n @ ind)
    if log_ratio is None or log_c is None:
        phi = w_n * (ind - m_n) / m_n - w_f * (ind - m_f) / m_f
    else:
        phi = _pooled_influence(np.asarray(log_ratio, float), float(log_c), ind, n_full, m_f, m_n)
    n_local = _window_size(bins, p, n_full, n_local)
    log_ratio_w = np.asarray(log_weights_neighbour, float) - np.asarray(log_weights_full, float)
    for edge, rank, sign, window in _cut_points(bins, p, j, n_local):
        r_q = float(np.mean(np.exp(log_ratio_w[:n_full][order[p, window]])))
        below = bins.index[p] < edge
        phi[:n_full] += sign * (r_q / m_n - 1.0 / m_f) * (rank / n_full - below) / n_full
    var = 0.0
    ess_refit = np.nan
    for part, chains in ((phi[:n_full], n_chains), (phi[n_full:], n_chains_refit)):
        if part.size < 4:
            continue
        centred = part - part.mean()
        e = float(ess_mean(centred[None], chains)[0])
        var += part.size**2 * float(np.mean(centred**2)) / e
        ess_refit = e
    return float(np.log(m_n) - np.log(m_f)), float(np.sqrt(var)), float(ess_refit)


def _pooled_influence(lr, log_c, ind, n_full, m_f, m_n) -> np.ndarray:
    """:func:`pooled_log_ratio_se`'s ``phi``, in log space rescaled by ``min d`` (no overflow)."""
    n1, n2 = n_full, lr.size - n_full
    log_d = np.logaddexp(np.log(n1) + log_c, np.log(n2) + lr)
    u = np.exp(log_d.min() - log_d)  # K / d, K = min d
    v = np.exp(lr - log_d)  # r / d, unchanged by the rescaling
    su = u.sum()
    a11 = -n1 * np.sum(v * u)
    a21 = -n1 * np.sum(v * u * (ind - m_n))
    a31 = -n1 * np.sum(u * u * (ind - m_f))
    psi1, psi2, psi3 = v, v * (ind - m_n), u * (ind - m_f)
    dc = -psi1 / a11
    d_mn = psi2 + a21 * dc
    d_mf = (psi3 + a31 * dc) / su
    return d_mn / m_n - d_mf / m_f


def leading_pairs(
    log_weights: np.ndarray,
    bins: Bins,
    *,
    order: np.ndarray,
    smoothing: float = 0.0,
    n_chains: int = 1,
    candidates: int = 5,
) -> dict:
    """Each neighbour's ``candidates`` largest ``|bin log ratio|``, leader first, with errors.

    Parameters
    ----------
    log_weights, bins, order, smoothing, n_chains
        As in :func:`bin_log_ratio_se`.
    candidates : int, default 5

    Returns
    -------
    dict
        ``log_ratio``, ``se``, ``ess``, ``parameter``, ``bin``, each ``(n, k)``; NaN for
        pairs past a parameter's bins.
    """
    lw = np.atleast_2d(np.asarray(log_weights, dtype=float))
    n, n_samples = lw.shape
    max_bins = bins.counts.shape[1]
    n_pairs = bins.counts.shape[0] * max_bins
    k = int(min(candidates, n_pairs))
    out = {name: np.full((n, k), np.nan) for name in ("log_ratio", "se", "ess")}
    par = np.zeros((n, k), dtype=np.int64)
    jbin = np.zeros((n, k), dtype=np.int64)
    for sl in chunk_slices(n, n_samples, factor=8):
        ratios = bin_log_ratios(lw[sl], bins, smoothing)
        flat = np.abs(ratios.reshape(ratios.shape[0], -1))
        flat = np.where(np.isnan(flat), -np.inf, flat)
        if k < n_pairs:
            top = np.argpartition(-flat, k - 1, axis=1)[:, :k]
        else:
            top = np.tile(np.arange(n_pairs), (flat.shape[0], 1))
        top = np.take_along_axis(top, np.argsort(-np.take_along_axis(flat, top, 1), 1), 1)
        p, j = np.divmod(top, max_bins)
        valid = j < bins.n_bins[p]
        p0, j0 = np.where(valid, p, 0), np.where(valid, j, 0)
        kw = {"order": order, "smoothing": smoothing, "n_chains": n_chains}
        for name, v in zip(out, bin_log_ratio_se(lw[sl], bins, p0, j0, **kw), strict=True):
            out[name][sl] = np.where(valid, v, np.nan)
        par[sl], jbin[sl] = p, j
    return dict(**out, parameter=par, bin=jbin)


def normal_quantile(prob: float, n: np.ndarray | int | None = None) -> float | np.ndarray:
    """The standard normal quantile ``z`` of a central interval of probability ``prob``.

    ``z = Phi^-1(1/2 + prob / 2)``. With ``n``, Bonferroni's over ``n`` intervals,
    ``z_n = Phi^-1(1 - (1 - prob) / (2 n))``: all ``n`` hold with probability at least
    ``prob``.

    Examples
    --------
    >>> from pymc_edp.base.mcse import normal_quantile
    >>> float(normal_quantile(0.9)), float(normal_quantile(0.9, 1))
    (1.6448536269514722, 1.6448536269514722)
    >>> normal_quantile(0.9, np.array([2, 50])).round(3).tolist()
    [1.96, 3.09]
    """
    from scipy.special import ndtri

    if n is None:
        return ndtri(0.5 + prob / 2)
    return ndtri(1 - (1 - prob) / (2 * n))


def normal_interval(
    estimate: np.ndarray, se: np.ndarray, z: float | np.ndarray, *, floor: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The normal interval ``estimate +- z se``, its lower end raised to ``floor`` if given.

    ``z`` from :func:`normal_quantile`. A NaN standard error gives a NaN interval.

    Examples
    --------
    >>> from pymc_edp.base.mcse import normal_interval
    >>> lo, hi = normal_interval(np.array([2.0, 0.1]), np.array([0.5, 0.5]), 2.0, floor=0.0)
    >>> lo.tolist(), hi.tolist()
    ([1.0, 0.0], [3.0, 1.1])
    """
    lower, upper = estimate - z * se, estimate + z * se
    if floor is not None:
        lower = np.maximum(lower, floor)
    return lower, upper


def abs_interval(log_ratio: np.ndarray, se: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Interval of each ``|l|`` from the normal interval ``l +- z se``; 0 below if it straddles 0.

    Examples
    --------
    >>> from pymc_edp.base.mcse import abs_interval
    >>> lo, hi = abs_interval(np.array([-2.0, 0.1]), np.array([0.5, 0.5]), 2.0)
    >>> lo.tolist(), hi.tolist()
    ([1.0, 0.0], [3.0, 1.1])
    """
    lo, hi = normal_interval(log_ratio, se, z)
    upper = np.maximum(np.abs(lo), np.abs(hi))
    lower = np.where(lo > 0, lo, np.where(hi < 0, -hi, 0.0))
    return lower, upper


def max_interval(
    estimate: np.ndarray, se: np.ndarray, prob: float, *, signed: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Interval of ``max_k |l_k|`` along the last axis, from each ``l_k``'s normal interval.

    The upper end is the largest upper end. The largest lower end is too high when any
    misses (near-ties), so it is taken at a Bonferroni level over the ``m`` contenders,
    ``z_m = Phi^-1(1 - (1 - prob) / (2 m))``: the items whose upper end at that level reaches
    it (a fixed point). One clear leader keeps the nominal level.

    Parameters
    ----------
    estimate, se : ndarray, shape (..., k)
        Estimates ``l_k`` (or ``|l_k|``) and standard errors; NaN items are ignored.
    prob : float
        Nominal two-sided level of each item's interval.
    signed : bool, default False
        ``estimate`` holds signed log ratios.

    Returns
    -------
    lower, upper : ndarray, shape (...)
        NaN where every item is NaN.

    Examples
    --------
    >>> from pymc_edp.base.mcse import max_interval
    >>> lo, hi = max_interval(np.array([2.0, 0.5]), np.array([0.1, 0.1]), 0.9)
    >>> round(float(lo), 3), round(float(hi), 3)  # one leader: its own interval
    (1.836, 2.164)
    >>> lo, hi = max_interval(np.full(50, 1.0), np.full(50, 0.1), 0.9)
    >>> round(float(lo), 3), round(float(hi), 3)  # 50 ties: a lower end at z = 3.09
    (0.691, 1.164)
    """
    est, se = np.asarray(estimate, dtype=float), np.asarray(se, dtype=float)
    z = float(normal_quantile(prob))
    if not signed:
        est = np.abs(est)
    lower, upper = abs_interval(est, se, z)
    valid = ~np.isnan(upper)
    upper_max = np.where(valid, upper, -np.inf).max(axis=-1)
    lower_max = _bonferroni_lower(
        lambda zz: abs_interval(est, se, zz[..., None]), valid, lower, prob
    )
    none = ~valid.any(axis=-1)
    return np.where(none, np.nan, lower_max), np.where(none, np.nan, upper_max)


def _bonferroni_lower(intervals, valid, lower_nominal, prob):
    """The largest lower end at the contenders' Bonferroni level (see :func:`max_interval`)."""
    m = np.maximum(valid.sum(axis=-1), 1)
    for _ in range(64):
        z_m = normal_quantile(prob, m)
        low, up = intervals(np.asarray(z_m, dtype=float))
        low = np.where(np.isnan(low), lower_nominal, low)
        best = np.where(valid, low, -np.inf).max(axis=-1)
        contender = valid & (up >= best[..., None])
        m_new = np.maximum(contender.sum(axis=-1), 1)
        if np.array_equal(m_new, m):
            break
        m = m_new
    return best


def interval_of_max(
    estimate: np.ndarray,
    se: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    prob: float,
) -> tuple[float, float]:
    """As :func:`max_interval`, for items with their own ``lower`` and ``upper``.

    An item without a standard error contributes its own lower end.

    Examples
    --------
    >>> from pymc_edp.base.mcse import interval_of_max
    >>> est, se = np.array([2.0, 1.0]), np.array([0.1, 0.1])
    >>> lo, hi = interval_of_max(est, se, est - 0.1645, np.array([2.1645, np.inf]), 0.9)
    >>> round(lo, 3), hi  # the second is a lower bound (open above): both contend
    (1.804, inf)
    """
    est, se, lower, upper = (np.asarray(a, dtype=float) for a in (estimate, se, lower, upper))
    valid = ~np.isnan(upper)
    if not valid.any():
        return float("nan"), float("nan")
    hi = float(upper[valid].max())

    def intervals(z_m):
        with np.errstate(invalid="ignore"):
            low, up = normal_interval(est, se, z_m, floor=0.0)
            low = np.where(np.isnan(se), lower, low)
            up = np.where(np.isnan(se) | np.isinf(upper), upper, up)
        return np.nan_to_num(low, nan=0.0), up

    lo = _bonferroni_lower(intervals, valid, np.nan_to_num(lower, nan=0.0), prob)
    return float(lo), hi

"""Hockey-stick divergences between weighted draws: the bin-free (epsilon, delta) view.

References
----------
.. [1] Burchard, P., Daoud, A. and Dotterrer, D. "Empirical Differential Privacy."
   arXiv:2001.09190, 2020.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["hockey_stick_delta", "hockey_stick_from_prepared", "hockey_stick_prepare"]


@numba.njit(parallel=True, cache=True)
def _hockey_stick_kernel(wq_cum, wp_cum, log_t_sorted, epsilons):
    """Both hockey-stick divergences per row from weights sorted by their ratio."""
    n = log_t_sorted.shape[0]
    n_samples = log_t_sorted.shape[1]
    n_eps = epsilons.shape[0]
    out = np.empty((n, n_eps))
    for i in numba.prange(n):
        tot_q = wq_cum[i, n_samples]
        tot_p = wp_cum[i, n_samples]
        for e in range(n_eps):
            eps = epsilons[e]
            ee = np.exp(eps)
            # (q - e^eps p)_+ : draws with log t > eps
            hi = np.searchsorted(log_t_sorted[i], eps, side="right")
            up = (tot_q - wq_cum[i, hi]) - ee * (tot_p - wp_cum[i, hi])
            # (p - e^eps q)_+ : draws with log t < -eps
            lo = np.searchsorted(log_t_sorted[i], -eps, side="left")
            down = wp_cum[i, lo] - ee * wq_cum[i, lo]
            out[i, e] = max(up, down, 0.0)
    return out


def hockey_stick_delta(
    log_weights: np.ndarray,
    epsilons: np.ndarray,
    log_weights_reference: np.ndarray | None = None,
) -> np.ndarray:
    """Bin-free failure probability ``delta_i(eps)`` of every neighbour from its weights.

    ``delta_i(eps) = max(E_p[(r - e^eps)_+], E_p[(1 - e^eps r)_+])``, the hockey-stick
    divergence between the neighbour posterior ``q`` and the full-data posterior ``p`` in
    both directions (Burchard, Daoud & Dotterrer), estimated without density estimates:
    with the draws weighted ``w_p`` for ``p`` (uniform for the full-data draws) and ``w_q``
    for ``q`` (the normalised importance weights), ``sum_s (w_q - e^eps w_p)_+`` and
    ``sum_s (w_p - e^eps w_q)_+``. Pass ``log_weights_reference`` for draws pooled from
    both posteriors (multiple importance sampling, :func:`pooled_log_weights`).

    Parameters
    ----------
    log_weights : ndarray, shape (n, S)
        Log-weights targeting each neighbour posterior (need not be normalised).
    epsilons : array_like, shape (E,)
        Non-negative epsilons.
    log_weights_reference : ndarray, shape (n, S) or (S,), optional
        Log-weights targeting the full-data posterior; default uniform.

    Returns
    -------
    ndarray, shape (n, E)

    References
    ----------
    .. [1] Burchard, P., Daoud, A. and Dotterrer, D. "Empirical Differential Privacy."
       arXiv:2001.09190, 2020 (Theorem 1).
    """
    epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if np.any(epsilons < 0) or not np.all(np.isfinite(epsilons)):
        raise ValueError("epsilons must be finite and non-negative")
    prepared = hockey_stick_prepare(log_weights, log_weights_reference)
    return _hockey_stick_kernel(*prepared, epsilons)


def hockey_stick_prepare(
    log_weights: np.ndarray, log_weights_reference: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted log density ratios and cumulative weights for :func:`hockey_stick_delta`.

    Evaluate many epsilons later with ``hockey_stick_from_prepared(prepared, epsilons)``
    without sorting again.

    Returns
    -------
    wq_cum, wp_cum : ndarray, shape (n, S + 1)
        Cumulative neighbour and reference weights in the order of the ratio.
    log_t_sorted : ndarray, shape (n, S)
    """
    from scipy.special import logsumexp

    lw = np.atleast_2d(np.asarray(log_weights, dtype=float))
    n, n_samples = lw.shape
    log_q = lw - logsumexp(lw, axis=1, keepdims=True)
    if log_weights_reference is None:
        log_p = np.full_like(log_q, -np.log(n_samples))
    else:
        ref = np.broadcast_to(np.asarray(log_weights_reference, dtype=float), lw.shape)
        log_p = ref - logsumexp(ref, axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        log_t = log_q - log_p
    log_t = np.where(np.isnan(log_t), -np.inf, log_t)  # both weights zero: no mass
    order = np.argsort(log_t, axis=1, kind="stable")
    log_t_sorted = np.ascontiguousarray(np.take_along_axis(log_t, order, axis=1))
    zero = np.zeros((n, 1))
    wq_cum = np.concatenate([zero, np.cumsum(np.exp(np.take_along_axis(log_q, order, 1)), 1)], 1)
    wp_cum = np.concatenate([zero, np.cumsum(np.exp(np.take_along_axis(log_p, order, 1)), 1)], 1)
    return wq_cum, wp_cum, log_t_sorted


def hockey_stick_from_prepared(prepared: tuple, epsilons: np.ndarray) -> np.ndarray:
    """:func:`hockey_stick_delta` from the output of :func:`hockey_stick_prepare`."""
    epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))
    return _hockey_stick_kernel(*prepared, epsilons)

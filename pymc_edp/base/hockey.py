"""Hockey-stick divergences from weighted draws, total risk, and the epsilon at a delta.

The bin-free ``(eps, delta)`` view of Burchard, Daoud & Dotterrer [1]_: the draws are the
atoms of a privacy loss distribution (delta by :mod:`pymc_edp.base.pld`).

References
----------
.. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020). Empirical Differential Privacy.
   arXiv:2011.05418.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from pymc_edp.base.pld import _delta_sorted, _tail_sums
from pymc_edp.base.validate import check_choice

__all__ = [
    "hockey_stick_delta",
    "hockey_stick_from_prepared",
    "hockey_stick_prepare",
    "smallest_epsilon",
    "total_risk",
]


def hockey_stick_delta(
    log_weights: ArrayLike,
    epsilons: ArrayLike,
    log_weights_reference: ArrayLike | None = None,
    *,
    normalize: bool = True,
    direction: str = "both",
) -> np.ndarray:
    """Hockey-stick divergence between two distributions known through weighted draws.

    With ``S`` draws, weights ``w_p`` targeting ``p`` (``log_weights_reference``; uniform by
    default, i.e. draws from ``p``) and ``w_q`` targeting ``q`` (``log_weights``),

    ``delta(eps) = max( sum_s (w_p - e^eps w_q)_+ , sum_s (w_q - e^eps w_p)_+ )``,

    ([1]_, Theorem 1); the draws are sorted once and each epsilon is a binary search. Pass
    importance log-weights, pooled log-weights of both posteriors with
    ``log_weights_reference``, or the exact ``log q - log p`` at draws of ``p`` with
    ``normalize=False``.

    Parameters
    ----------
    log_weights : array_like, shape (..., S)
        Log-weights targeting ``q``; leading axes are batch axes.
    epsilons : array_like, shape (E,) or scalar
        Non-negative.
    log_weights_reference : array_like, broadcastable to ``log_weights``, optional
        Log-weights targeting ``p``; default uniform.
    normalize : bool, default True
        Each set of weights normalised on its own; ``False``: both share the reference's
        constant, ``w_q = exp(log_weights) / sum_s exp(log_weights_reference)``.
    direction : {"both", "forward", "backward"}, default "both"
        ``"forward"``: only ``sum (w_p - e^eps w_q)_+``; ``"backward"``: only the other.

    Returns
    -------
    ndarray, shape (..., E) (or (...) for a scalar ``epsilons``)
        In [0, 1].

    References
    ----------
    .. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020). Empirical Differential Privacy.
       arXiv:2011.05418 (Theorem 1).

    Examples
    --------
    ``N(1, 1)`` against ``N(0, 1)``; at ``eps = 0`` the total variation ``0.383``:

    >>> from scipy import stats
    >>> from pymc_edp.base.hockey import hockey_stick_delta
    >>> draws = np.random.default_rng(0).normal(size=100_000)
    >>> log_ratio = stats.norm.logpdf(draws, loc=1.0) - stats.norm.logpdf(draws)
    >>> hockey_stick_delta(log_ratio, [0.0, 0.5, 1.0], normalize=False).round(2)
    array([0.38, 0.24, 0.13])
    """
    eps = np.asarray(epsilons, dtype=float)
    if np.any(eps < 0) or not np.all(np.isfinite(eps)):
        raise ValueError("epsilons must be finite and non-negative")
    lw = np.asarray(log_weights, dtype=float)
    prepared = hockey_stick_prepare(
        lw, log_weights_reference, normalize=normalize, direction=direction
    )
    out = hockey_stick_from_prepared(prepared, np.atleast_1d(eps), direction=direction)
    out = out.reshape((*lw.shape[:-1], out.shape[-1]))
    return out[..., 0] if eps.ndim == 0 else out


def _directions(direction: str) -> tuple[str, ...]:
    check_choice(direction, "direction", ("both", "forward", "backward"))
    return ("forward", "backward") if direction == "both" else (direction,)


def hockey_stick_prepare(
    log_weights: ArrayLike,
    log_weights_reference: ArrayLike | None = None,
    *,
    normalize: bool = True,
    direction: str = "both",
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Sorted privacy losses and their tail sums for :func:`hockey_stick_from_prepared`.

    Arguments as for :func:`hockey_stick_delta`, batch axes flattened into rows. Forward
    the atoms are losses ``log(w_p / w_q)`` with masses ``w_p``; backward the reverse.

    Returns
    -------
    dict
        ``{direction: (loss, a, log_b)}``: the losses sorted per row, shape (n, S), and
        their tail sums, shape (n, S + 1).

    Examples
    --------
    >>> from pymc_edp.base.hockey import hockey_stick_from_prepared, hockey_stick_prepare
    >>> prepared = hockey_stick_prepare(np.log([[0.1, 0.2, 0.3, 0.4]]))
    >>> prepared["forward"][1][0].tolist()  # mass of the reference above each loss
    [1.0, 0.75, 0.5, 0.25, 0.0]
    >>> hockey_stick_from_prepared(prepared, [0.0]).round(6)  # total variation distance
    array([[0.2]])
    """
    from scipy.special import logsumexp

    lw = np.atleast_1d(np.asarray(log_weights, dtype=float))
    batch, n_samples = lw.shape[:-1], lw.shape[-1]
    lw = lw.reshape(-1, n_samples)
    if log_weights_reference is None:
        ref = None
        log_c = np.log(n_samples)
        log_p = np.full_like(lw, -log_c)
    else:
        ref = np.asarray(log_weights_reference, dtype=float)
        ref = np.broadcast_to(ref, (*batch, n_samples)).reshape(lw.shape)
        log_c = logsumexp(ref, axis=1, keepdims=True)
        log_p = ref - log_c
    with np.errstate(invalid="ignore"):
        if normalize:
            log_q = lw - logsumexp(lw, axis=1, keepdims=True)
            log_t = log_q - log_p
        else:  # one normalising constant for both: that of the reference
            log_q = lw - log_c
            log_t = lw if ref is None else lw - ref
    log_t = np.where(np.isnan(log_t), -np.inf, log_t)  # both weights zero: no mass
    order = np.argsort(log_t, axis=1, kind="stable")  # one sort serves both directions
    prepared = {}
    for name in _directions(direction):
        if name == "forward":  # losses -log_t, ascending: the order reversed
            rev = order[:, ::-1]
            loss = -np.take_along_axis(log_t, rev, axis=1)
            mass = np.exp(np.take_along_axis(log_p, rev, axis=1))
        else:
            loss = np.take_along_axis(log_t, order, axis=1)
            mass = np.exp(np.take_along_axis(log_q, order, axis=1))
        prepared[name] = (loss, *_tail_sums(loss, mass))
    return prepared


def hockey_stick_from_prepared(
    prepared: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    epsilons: ArrayLike,
    *,
    direction: str = "both",
) -> np.ndarray:
    """:func:`hockey_stick_delta` from the output of :func:`hockey_stick_prepare`.

    Returns
    -------
    ndarray, shape (n, E)

    Examples
    --------
    >>> from pymc_edp.base.hockey import hockey_stick_from_prepared, hockey_stick_prepare
    >>> prepared = hockey_stick_prepare(np.log([[0.1, 0.2, 0.3, 0.4]]))
    >>> # at eps = 0.2: (0.25 - e^0.2 0.1) + (0.25 - e^0.2 0.2)
    >>> hockey_stick_from_prepared(prepared, [0.0, 0.2], direction="forward").round(4)
    array([[0.2   , 0.1336]])
    """
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    names = _directions(direction)
    if not set(names) <= set(prepared):
        raise ValueError(f"direction {direction!r} was not prepared (only {list(prepared)})")
    deltas = [_delta_sorted(*prepared[name], 0.0, eps) for name in names]
    return np.maximum(*deltas) if len(deltas) == 2 else deltas[0]


def total_risk(delta_i: ArrayLike, axis: int = 0) -> np.ndarray:
    """Total risk ``delta* = 1 - prod_i (1 - delta_i)`` over ``axis``: anyone exposed.

    Computed as ``-expm1(sum_i log1p(-delta_i))``, accurate for tiny ``delta_i``.

    References
    ----------
    .. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020). Empirical Differential Privacy.
       arXiv:2011.05418 (Definition 3).

    Examples
    --------
    >>> from pymc_edp.base.hockey import total_risk
    >>> total_risk(np.array([[0.5, 0.1], [0.5, 0.0]]))
    array([0.75, 0.1 ])
    >>> print(f"{total_risk(np.full(1000, 1e-18)):.4g}")  # 1 - prod(1 - d) gives 0
    1e-15
    """
    with np.errstate(divide="ignore"):
        log_keep = np.log1p(-np.clip(np.asarray(delta_i, dtype=float), 0.0, 1.0)).sum(axis=axis)
    return -np.expm1(log_keep)


def smallest_epsilon(
    delta: Callable[[np.ndarray], np.ndarray],
    targets: ArrayLike,
    lower: ArrayLike,
    upper: ArrayLike,
    *,
    rtol: float = 1e-9,
    atol: float = 0.0,
    max_iter: int = 60,
) -> np.ndarray:
    """Smallest ``eps`` in ``[lower, upper]`` with ``delta(eps) <= target``, by bisection.

    For any non-increasing ``delta``, all targets at once. Returns ``lower`` where
    ``delta(lower) <= target``, ``upper`` where ``delta(upper) > target``, else the upper
    end of a bracket with ``hi - lo <= max(atol, rtol * hi)`` (or after ``max_iter`` steps).

    Parameters
    ----------
    delta : callable
        ``delta(eps)``, ``eps`` and the values of the shape of ``targets``.
    targets : array_like, shape (T,) or scalar
    lower, upper : array_like, broadcastable to ``(T,)``
    rtol, atol : float
    max_iter : int, default 60

    Returns
    -------
    ndarray
        The shape of ``targets``.

    Examples
    --------
    ``delta(eps) = exp(-eps)`` reaches ``0.01`` at ``log(100)``:

    >>> from pymc_edp.base.hockey import smallest_epsilon
    >>> smallest_epsilon(lambda e: np.exp(-e), [0.01, 0.5, 2.0], 0.0, 10.0).round(4)
    array([4.6052, 0.6931, 0.    ])
    """
    tg = np.asarray(targets, dtype=float)
    lo = np.array(np.broadcast_to(np.asarray(lower, dtype=float), tg.shape))
    hi = np.array(np.broadcast_to(np.asarray(upper, dtype=float), tg.shape))
    start = lo.copy()
    at_lower = np.asarray(delta(start)) <= tg
    for _ in range(int(max_iter)):
        if np.all(hi - lo <= np.maximum(atol, rtol * np.abs(hi))):
            break
        mid = 0.5 * (lo + hi)
        ok = np.asarray(delta(mid)) <= tg
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    return np.where(at_lower, start, hi)

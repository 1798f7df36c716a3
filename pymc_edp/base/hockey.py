"""Hockey-stick divergences from weighted draws, total risk, and the epsilon at a delta.

The bin-free ``(eps, delta)`` view of Burchard, Daoud & Dotterrer [1]_: for two
distributions ``p`` and ``q`` known through draws and their weights under each,

* :func:`hockey_stick_delta` (with :func:`hockey_stick_prepare` and
  :func:`hockey_stick_from_prepared` for many epsilons): the hockey-stick divergence
  ``max(int (p - e^eps q)_+, int (q - e^eps p)_+)`` (Theorem 1), by one sort of the draws by
  their density ratio;
* :func:`total_risk`: ``delta* = 1 - prod_i (1 - delta_i)`` (Definition 3);
* :func:`smallest_epsilon`: the smallest ``eps`` with ``delta(eps) <= target``, by
  bisection.

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

    the sample version of ``max(int (p - e^eps q)_+, int (q - e^eps p)_+)`` ([1]_, Theorem 1)
    -- with ``r = q / p`` at draws from ``p``, ``max(E_p[(1 - e^eps r)_+], E_p[(r -
    e^eps)_+])``. No bins and no density estimate: the draws are sorted once by their log
    ratio ``log(w_q / w_p)`` and each epsilon costs two binary searches.

    For a neighbour posterior ``q`` and the full-data posterior ``p``, pass the neighbour's
    importance log-weights (self-normalised: ``normalize=True``), or log-weights of draws
    pooled from both posteriors (multiple importance sampling) with
    ``log_weights_reference``. For the exact log density ratio ``log q - log p`` at draws of
    ``p`` pass it with ``normalize=False``.

    Parameters
    ----------
    log_weights : array_like, shape (..., S)
        Log-weights of the draws targeting ``q``, sample axis last; leading axes are batch
        axes (neighbours, individuals).
    epsilons : array_like, shape (E,) or scalar
        Non-negative epsilons.
    log_weights_reference : array_like, broadcastable to ``log_weights``, optional
        Log-weights targeting ``p``; default uniform.
    normalize : bool, default True
        ``True``: each set of weights is normalised to sum to one on its own (unknown
        normalising constants, as for importance weights). ``False``: ``log_weights`` and
        ``log_weights_reference`` share one normalising constant (exact log densities, up to
        the same constant), so only the reference is normalised and
        ``w_q = exp(log_weights) / sum_s exp(log_weights_reference)``; with the default
        reference, ``log_weights`` is the log density ratio at draws of ``p``.
    direction : {"both", "forward", "backward"}, default "both"
        ``"forward"``: only ``sum (w_p - e^eps w_q)_+`` (``int (p - e^eps q)_+``);
        ``"backward"``: only ``sum (w_q - e^eps w_p)_+``.

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
    Draws of ``N(0, 1)`` and the log density ratio of ``N(1, 1)`` to it; at ``eps = 0`` the
    divergence is the total variation distance ``2 Phi(1/2) - 1 = 0.383``:

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

    Evaluate many epsilons later without sorting again. Arguments as for
    :func:`hockey_stick_delta`; batch axes are flattened into the rows. For each
    ``direction``, the rows of draws are atoms of a privacy loss distribution (losses
    ``log(w_p / w_q)`` with masses ``w_p`` forward, ``log(w_q / w_p)`` with ``w_q``
    backward), and ``delta(eps)`` is :mod:`pymc_edp.base.pld`'s of those atoms.

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
    """Total risk ``delta* = 1 - prod_i (1 - delta_i)``, the chance that anyone is exposed.

    ``-expm1(sum_i log1p(-delta_i))``: accurate when every ``delta_i`` is tiny (where
    ``1 - prod`` would lose all digits) and when there are many individuals. ``delta_i`` are
    clipped to [0, 1] first; one ``delta_i = 1`` gives ``delta* = 1``.

    Parameters
    ----------
    delta_i : array_like
        Failure probabilities of the individuals (or neighbours) along ``axis``.
    axis : int, default 0
        The axis of the individuals.

    Returns
    -------
    ndarray
        ``delta_i`` without ``axis``.

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

    For a non-increasing ``delta`` (a hockey-stick divergence, its maximum over individuals
    or the total risk), every target is bisected on its own bracket, all targets in one call
    of ``delta`` per step. Returns ``lower`` where ``delta(lower) <= target`` already, and
    otherwise the upper end of a bracket ``(lo, hi]`` with ``delta(lo) > target >=
    delta(hi)`` and ``hi - lo <= max(atol, rtol * hi)`` (or after ``max_iter`` steps).
    ``upper`` is returned where even ``delta(upper) > target``: bracket the targets first.

    Parameters
    ----------
    delta : callable
        ``delta(eps) -> values``: ``eps`` has the shape of ``targets`` (one epsilon per
        target; a 0-d array for a scalar target), and so have the values.
    targets : array_like, shape (T,) or scalar
        The deltas to reach.
    lower, upper : array_like, broadcastable to ``(T,)``
        The bracket of each target.
    rtol, atol : float
        Stop when every bracket is shorter than ``max(atol, rtol * hi)``.
    max_iter : int, default 60
        At most this many bisection steps (60 halve any bracket below ``2^-60`` of its
        length).

    Returns
    -------
    ndarray
        The shape of ``targets``.

    Examples
    --------
    ``delta(eps) = exp(-eps)`` reaches ``0.01`` at ``eps = log(100) = 4.6052``:

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

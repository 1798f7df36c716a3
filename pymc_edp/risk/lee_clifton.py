"""Lee & Clifton (2011): the adversary's beliefs over possible worlds and the choice of epsilon.

The adversary knows the universe of n records and that the released dataset is the
universe with one record missing (a *possible world*); the release is a Laplace mechanism
on any query. The running example (absence days {1, 2, 3, 10}) is theirs.

References
----------
.. [1] Lee, J. and Clifton, C. (2011). "How Much Is Enough? Choosing epsilon for
   Differential Privacy." *Information Security (ISC 2011)*, LNCS 7001, 325-340.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import special

from pymc_edp.base.validate import check_int
from pymc_edp.risk._common import as_float_or_array

__all__ = [
    "PossibleWorlds",
    "lee_clifton_epsilon_bound",
    "lee_clifton_max_epsilon",
    "lee_clifton_risk",
    "lee_clifton_sensitivity",
    "lee_clifton_worst_case_belief",
    "possible_world_beliefs",
    "possible_worlds",
]


def _universe(universe) -> np.ndarray:
    u = np.asarray(universe)
    if u.ndim == 0 or u.shape[0] < 3:
        raise ValueError("The universe needs at least 3 records.")
    return u


def _epsilons(epsilon) -> np.ndarray:
    eps = np.asarray(epsilon, dtype=float)
    if eps.ndim > 1 or np.any(~(eps >= 0)) or not np.all(np.isfinite(eps)):
        raise ValueError("`epsilon` must be a finite non-negative scalar or 1-D array.")
    return eps


def _query_value(query: Callable, world: np.ndarray) -> np.ndarray:
    v = np.atleast_1d(np.asarray(query(world), dtype=float))
    if v.ndim != 1 or not np.all(np.isfinite(v)):
        raise ValueError("`query` must return a finite scalar or 1-D vector.")
    return v


def lee_clifton_sensitivity(universe: Sequence | np.ndarray, query: Callable) -> float:
    """Global L1 sensitivity of ``query`` over the possible worlds of ``universe``.

    ``Delta f = max over worlds w and records t in w of ||f(w) - f(w minus t)||_1``.

    Parameters
    ----------
    universe : array_like
        The n >= 3 records (first axis) the adversary knows.
    query : callable
        ``query(records) -> float or 1-D array``.

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). *ISC 2011*, LNCS 7001, Sec. 4.1 and 6 (Table 4).

    Examples
    --------
    >>> round(lee_clifton_sensitivity([1, 2, 3, 10], np.mean), 4)  # 17/6
    2.8333
    >>> lee_clifton_sensitivity([1, 2, 3, 10], np.median)
    4.0
    """
    u = _universe(universe)
    best = 0.0
    for i in range(u.shape[0]):
        world = np.delete(u, i, axis=0)
        f_w = _query_value(query, world)
        for t in range(world.shape[0]):
            d = np.abs(f_w - _query_value(query, np.delete(world, t, 0))).sum()
            best = max(best, float(d))
    return best


@dataclass(frozen=True)
class PossibleWorlds:
    """The adversary's possible worlds: world i is the universe without record i.

    ``values`` holds the query's value on each world, shape ``(n, k)``; ``sensitivity`` is
    the ``Delta f`` of the Laplace scale.

    Examples
    --------
    >>> worlds = possible_worlds([1, 2, 3, 10], np.mean)
    >>> worlds.n, worlds.delta_v
    (4, 3.0)
    >>> worlds.distances[3].round(4).tolist()  # world {1, 2, 3} against the others
    [3.0, 2.6667, 2.3333, 0.0]
    """

    universe: np.ndarray
    values: np.ndarray
    sensitivity: float

    @property
    def n(self) -> int:
        """Number of possible worlds (= records in the universe)."""
        return int(self.values.shape[0])

    @property
    def distances(self) -> np.ndarray:
        """L1 distances ``||f(w_i) - f(w_k)||_1`` between the worlds' query values."""
        return np.abs(self.values[:, None, :] - self.values[None, :, :]).sum(axis=2)

    @property
    def delta_v(self) -> float:
        """``Delta v``: the largest distance between two worlds' query values."""
        return float(self.distances.max())


def possible_worlds(
    universe: Sequence | np.ndarray,
    query: Callable,
    *,
    sensitivity: float | None = None,
) -> PossibleWorlds:
    """Evaluate ``query`` on every possible world of ``universe`` (Lee & Clifton Sec. 4.3).

    Parameters
    ----------
    universe, query
        As in :func:`lee_clifton_sensitivity`.
    sensitivity : float, optional
        ``Delta f``; by default :func:`lee_clifton_sensitivity` (``O(n^2)`` query calls).

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). *ISC 2011*, LNCS 7001, Sec. 4.3.

    Examples
    --------
    >>> worlds = possible_worlds([1, 2, 3, 10], np.mean)  # Lee & Clifton's absence days
    >>> worlds.values[:, 0].round(4).tolist()  # mean without 1, 2, 3, 10
    [5.0, 4.6667, 4.3333, 2.0]
    >>> round(worlds.sensitivity, 4), worlds.delta_v
    (2.8333, 3.0)
    """
    u = _universe(universe)
    values = np.stack([_query_value(query, np.delete(u, i, axis=0)) for i in range(u.shape[0])])
    if sensitivity is None:
        sensitivity = lee_clifton_sensitivity(u, query)
    sensitivity = float(sensitivity)
    if not (sensitivity > 0 and np.isfinite(sensitivity)):
        raise ValueError(f"The sensitivity must be finite and > 0, got {sensitivity}.")
    return PossibleWorlds(universe=u, values=values, sensitivity=sensitivity)


def _world_prior(prior, n: int) -> np.ndarray:
    if prior is None:
        return np.full(n, 1.0 / n)
    p = np.asarray(prior, dtype=float)
    if p.shape != (n,) or np.any(p < 0) or not p.sum() > 0:
        raise ValueError(f"`prior` must hold {n} non-negative weights.")
    return p / p.sum()


def possible_world_beliefs(
    universe: Sequence | np.ndarray,
    query: Callable,
    response: float | Sequence[float] | np.ndarray,
    epsilon: float | Sequence[float] | np.ndarray,
    sensitivity: float | None = None,
    *,
    prior: Sequence[float] | np.ndarray | None = None,
) -> xr.DataArray:
    """Adversary's posterior belief over possible worlds after a Laplace release.

    For ``response = f(X') + Laplace(Delta f / eps)`` the adversary's posterior on
    ``X' = w_i`` is (Definition 3)

        beta(w_i) = pi_i exp(-||response - f(w_i)||_1 eps / Delta f) / sum_k (same).

    Parameters
    ----------
    universe, query, sensitivity
        As in :func:`possible_worlds`.
    response : float or 1-D array_like
        The released (noisy) query answer.
    epsilon : float or 1-D array_like
        DP epsilon(s) of the Laplace mechanism.
    prior : array_like, optional
        Prior weights ``pi_i`` on the worlds (default uniform, as in the paper).

    Returns
    -------
    xarray.DataArray
        ``belief`` over ``"world"`` (after ``"epsilon"`` for an array ``epsilon``), with
        coordinates ``missing`` (the record, 1-D universe) and ``query_value`` (``f(w_i)``,
        scalar query).

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). *ISC 2011*, LNCS 7001, Definitions 3 and 5,
       Sec. 4.4.

    Examples
    --------
    >>> b = possible_world_beliefs([1, 2, 3, 10], np.mean, response=2.2013, epsilon=2.0)
    >>> b["missing"].values.tolist()
    [1, 2, 3, 10]
    >>> b.round(4).values.tolist()
    [0.0988, 0.125, 0.1582, 0.618]
    """
    worlds = possible_worlds(universe, query, sensitivity=sensitivity)
    eps = _epsilons(epsilon)
    gamma = np.atleast_1d(np.asarray(response, dtype=float))
    if gamma.shape != (worlds.values.shape[1],):
        raise ValueError("`response` must have the shape of the query's value.")
    dist = np.abs(gamma[None, :] - worlds.values).sum(axis=1)  # (n,)
    log_prior = np.log(_world_prior(prior, worlds.n))
    logits = log_prior - np.atleast_1d(eps)[:, None] * dist[None, :] / worlds.sensitivity
    belief = np.exp(logits - special.logsumexp(logits, axis=1, keepdims=True))

    coords: dict = {"world": np.arange(worlds.n)}
    if worlds.universe.ndim == 1:
        coords["missing"] = ("world", worlds.universe)
    if worlds.values.shape[1] == 1:
        coords["query_value"] = ("world", worlds.values[:, 0])
    attrs = {"sensitivity": worlds.sensitivity}
    if eps.ndim == 0:
        return xr.DataArray(belief[0], dims=("world",), coords=coords, name="belief", attrs=attrs)
    coords["epsilon"] = eps
    return xr.DataArray(
        belief, dims=("epsilon", "world"), coords=coords, name="belief", attrs=attrs
    )


def lee_clifton_risk(
    universe: Sequence | np.ndarray,
    query: Callable,
    response: float | Sequence[float] | np.ndarray,
    epsilon: float | Sequence[float] | np.ndarray,
    sensitivity: float | None = None,
) -> float | np.ndarray:
    """Risk of disclosure Gamma: the adversary's largest posterior belief (Definition 5).

    ``max over worlds of beta(w)`` (:func:`possible_world_beliefs`, same parameters), per
    epsilon when ``epsilon`` is an array.

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). *ISC 2011*, LNCS 7001, Definition 5.

    Examples
    --------
    >>> round(lee_clifton_risk([1, 2, 3, 10], np.mean, 2.2013, 2.0), 4)
    0.618
    >>> lee_clifton_risk([1, 2, 3, 10], np.mean, 2.2013, [0.5, 2.0]).round(4).tolist()
    [0.3318, 0.618]
    """
    beliefs = possible_world_beliefs(universe, query, response, epsilon, sensitivity)
    return as_float_or_array(beliefs.max("world").values)


def _worst_case_from_worlds(worlds: PossibleWorlds, eps: np.ndarray, prior) -> np.ndarray:
    w = _world_prior(prior, worlds.n)
    d = worlds.distances
    # sup over responses of beta(w_i) is attained at response = f(w_i) (triangle inequality)
    den = np.einsum("k,eik->ei", w, np.exp(-eps[:, None, None] * d[None] / worlds.sensitivity))
    return np.max(w[None, :] / den, axis=1)


def lee_clifton_worst_case_belief(
    universe: Sequence | np.ndarray,
    query: Callable,
    epsilon: float | Sequence[float] | np.ndarray,
    sensitivity: float | None = None,
    *,
    prior: Sequence[float] | np.ndarray | None = None,
) -> float | np.ndarray:
    """Largest belief any response can give the adversary in any world (eq. 19).

    ``max_i 1 / (1 + sum_{k != i} exp(-||f(w_i) - f(w_k)||_1 eps / Delta f))``: the
    supremum over responses of ``beta(w_i)`` is at ``response = f(w_i)`` (triangle
    inequality, eqs. 1-3), so this is exact, unlike the ``Delta v`` bound of eq. (5).

    Parameters as in :func:`possible_world_beliefs`.

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). *ISC 2011*, LNCS 7001, eqs. (1)-(3), (10)-(12),
       (19)-(21).

    Examples
    --------
    >>> round(lee_clifton_worst_case_belief([1, 2, 3, 4], np.mean, 0.5), 4)  # eq. (12)
    0.3292
    """
    worlds = possible_worlds(universe, query, sensitivity=sensitivity)
    eps = _epsilons(epsilon)
    out = _worst_case_from_worlds(worlds, np.atleast_1d(eps), prior)
    return float(out[0]) if eps.ndim == 0 else out


def lee_clifton_epsilon_bound(delta_f: float, delta_v: float, n: int, rho: float) -> float:
    """Largest epsilon guaranteed by Lee & Clifton's bound (eq. 7).

    ``eps <= (Delta f / Delta v) ln((n - 1) rho / (1 - rho))`` keeps the adversary's
    belief in every world at most ``rho``. Sufficient, not necessary (every distance
    between worlds is taken as ``Delta v``); :func:`lee_clifton_max_epsilon` is exact.

    Parameters
    ----------
    delta_f, delta_v : float
        Sensitivity of the query, and :attr:`PossibleWorlds.delta_v`.
    n : int
        Number of possible worlds (records in the universe).
    rho : float
        Tolerated probability of identifying the missing record, ``1/n <= rho < 1``.

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). *ISC 2011*, LNCS 7001, eqs. (6)-(9), (16)-(18).

    Examples
    --------
    >>> round(lee_clifton_epsilon_bound(17 / 6, 3.0, n=4, rho=1 / 3), 4)  # mean, absence days
    0.3829
    >>> round(lee_clifton_epsilon_bound(4.0, 1.0, n=4, rho=1 / 3), 4)  # median
    1.6219
    """
    n = check_int(n, "n", 2)
    if not (delta_f > 0 and delta_v > 0):
        raise ValueError("`delta_f` and `delta_v` must be > 0.")
    if not (1.0 / n <= rho < 1.0):
        raise ValueError(
            f"`rho` must lie in [1/n, 1) = [{1.0 / n:.4g}, 1): below 1/n no epsilon >= 0 "
            "can keep the belief that low."
        )
    return float(delta_f / delta_v * math.log((n - 1) * rho / (1.0 - rho)))


def lee_clifton_max_epsilon(
    universe: Sequence | np.ndarray,
    query: Callable,
    rho: float,
    *,
    sensitivity: float | None = None,
    prior: Sequence[float] | np.ndarray | None = None,
    tol: float = 1e-12,
) -> float:
    """Largest epsilon whose worst-case belief is at most ``rho`` (binary search).

    The worst-case belief (:func:`lee_clifton_worst_case_belief`) increases with epsilon:
    bisection (Sec. 5.2) from the always admissible bound of eq. (7).

    Parameters
    ----------
    universe, query, sensitivity, prior
        As in :func:`possible_world_beliefs`.
    rho : float
        Tolerated belief, at least the largest prior weight (``1/n`` for uniform).
    tol : float, default 1e-12
        Relative width of the final bracket.

    Returns
    -------
    float
        ``inf`` if even a noiseless release keeps every belief at most ``rho`` (worlds
        that share a query value cannot be told apart).

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). *ISC 2011*, LNCS 7001, Sec. 5.2 and 6.

    Examples
    --------
    >>> round(lee_clifton_max_epsilon([1, 2, 3, 10], np.median, 1 / 3), 4)  # 4 ln 2
    2.7726
    >>> round(lee_clifton_max_epsilon([1, 2, 3, 10], np.mean, 1 / 3), 4)  # eq. (7) gives 0.3829
    0.4317
    """
    worlds = possible_worlds(universe, query, sensitivity=sensitivity)
    w = _world_prior(prior, worlds.n)
    if not (w.max() <= rho < 1.0):
        raise ValueError(
            f"`rho` must lie in [max prior weight, 1) = [{w.max():.4g}, 1): even eps = 0 "
            "leaves the adversary's prior belief above rho."
        )
    d = worlds.distances
    limit = np.max(w / np.array([w[d[i] == 0].sum() for i in range(worlds.n)]))
    if limit <= rho:
        return math.inf

    def worst(e: float) -> float:
        return float(_worst_case_from_worlds(worlds, np.array([e]), prior)[0])

    lo = 0.0
    if prior is None and worlds.delta_v > 0:
        lo = max(0.0, lee_clifton_epsilon_bound(worlds.sensitivity, worlds.delta_v, worlds.n, rho))
    hi = max(2.0 * lo, 1.0)
    while worst(hi) <= rho:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        if hi - lo <= tol * hi:
            break
        mid = 0.5 * (lo + hi)
        if worst(mid) > rho:
            hi = mid
        else:
            lo = mid
    return lo

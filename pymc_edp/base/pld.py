"""Privacy loss distributions (PLDs) on a grid: discretisation, FFT composition, delta(eps).

The privacy loss of an output ``o ~ P`` is ``L(o) = log P(o) - log Q(o)``, and
``delta(eps) = E_P[(1 - e^(eps - L))_+] + P(Q(o) = 0)`` for every real ``eps``. The k-fold
composition adds k independent losses: its PLD is the k-fold convolution [1]_ [2]_.
:func:`discretise` rounds atoms to a grid [3]_, :class:`DiscretePLD` composes by FFT;
:func:`exact_delta` and :func:`exact_epsilon` work on raw atoms.

References
----------
.. [1] Meiser, S. and Mohammadi, E. (2018). Tight on budget? Tight bounds for r-fold
   approximate differential privacy. CCS 2018, 247-264.
.. [2] Koskela, A., Jälkö, J. and Honkela, A. (2020). Computing tight differential privacy
   guarantees using FFT. AISTATS 2020, PMLR 108, 2560-2569.
.. [3] Doroshenko, V., Ghazi, B., Kamath, P., Kumar, R. and Manurangsi, P. (2022). Connect
   the dots: tighter discrete approximations of privacy loss distributions. PETS 2022 (4),
   552-570.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np
import scipy.fft
from numpy.typing import ArrayLike

from pymc_edp.base.validate import check_int, check_real

__all__ = [
    "DiscretePLD",
    "discretise",
    "exact_delta",
    "exact_epsilon",
]

#: Largest grid (number of points) a PLD may have, before or after composition.
MAX_POINTS = 2**24
#: Slack on ``sum(probs) <= 1`` for round-off.
_MASS_SLACK = 1e-9


def _check_epsilons(epsilon: ArrayLike) -> np.ndarray:
    eps = np.asarray(epsilon, dtype=float)
    if np.any(np.isnan(eps)):
        raise ValueError("epsilon must not be NaN")
    return eps


def _check_deltas(delta: ArrayLike) -> np.ndarray:
    d = np.asarray(delta, dtype=float)
    if np.any(np.isnan(d)) or np.any(d < 0):
        raise ValueError(f"delta must be non-negative (not NaN), got {delta!r}")
    return d


def _solve(solve, tails: tuple, inf_mass: float, values: np.ndarray) -> np.ndarray | float:
    """``solve(*tails, inf_mass, values)`` in the shape of ``values``; a float for a scalar."""
    out = solve(*tails, inf_mass, values.ravel()).reshape(values.shape)
    return float(out) if values.ndim == 0 else out


def _atoms(losses: ArrayLike, probs: ArrayLike | None) -> tuple[np.ndarray, np.ndarray]:
    """Validated 1-D losses and probabilities (uniform by default)."""
    loss = np.atleast_1d(np.asarray(losses, dtype=float))
    if loss.ndim != 1 or loss.size == 0:
        raise ValueError(f"losses must be a non-empty 1-D array, got shape {loss.shape}")
    if np.any(np.isnan(loss)):
        raise ValueError("losses must not be NaN")
    if probs is None:
        return loss, np.full(loss.size, 1.0 / loss.size)
    p = np.atleast_1d(np.asarray(probs, dtype=float))
    if p.shape != loss.shape:
        raise ValueError(f"probs must have the shape of losses {loss.shape}, got {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("probs must be finite and non-negative")
    if p.sum() > 1 + _MASS_SLACK:
        raise ValueError(f"probs must sum to at most 1, got {p.sum()!r}")
    return loss, p


def _split_infinite(loss: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Finite atoms with positive mass, sorted, and the mass at ``+inf`` (``-inf`` dropped)."""
    inf_mass = min(float(p[loss == np.inf].sum()), 1.0)
    keep = np.isfinite(loss) & (p > 0)
    order = np.argsort(loss[keep], kind="stable")
    return loss[keep][order], p[keep][order], inf_mass


def _tail_sums(loss: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``A_j = sum_{i>=j} p_i`` and ``log B_j = log sum_{i>=j} p_i e^(-l_i)`` along the last axis.

    ``loss`` sorted (length n); outputs of length n + 1, ``log B`` summed from the top so
    ``e^(-loss)`` never overflows.
    """
    n = loss.shape[-1]
    a = np.zeros((*loss.shape[:-1], n + 1))
    log_b = np.full((*loss.shape[:-1], n + 1), -np.inf)
    if n:
        a[..., :n] = np.cumsum(p[..., ::-1], axis=-1)[..., ::-1]
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.where(p > 0, np.log(p) - loss, -np.inf)
        log_b[..., :n] = np.logaddexp.accumulate(x[..., ::-1], axis=-1)[..., ::-1]
    return a, log_b


@numba.njit(parallel=True, cache=True)
def _searchsorted_rows(rows, values):  # pragma: no cover - compiled
    """``np.searchsorted(rows[i], values, side="right")`` for every row ``i``."""
    out = np.empty((rows.shape[0], values.shape[0]), dtype=np.int64)
    for i in numba.prange(rows.shape[0]):
        out[i] = np.searchsorted(rows[i], values, side="right")
    return out


def _delta_sorted(
    loss: np.ndarray, a: np.ndarray, log_b: np.ndarray, inf_mass: float, eps: np.ndarray
) -> np.ndarray:
    """``sum_{l_i > eps} p_i (1 - e^(eps - l_i)) + inf_mass``, clipped to [0, 1].

    The one ``delta(eps)`` from sorted atoms (:mod:`pymc_edp.base.hockey`'s too): ``loss``
    ``(n,)`` or ``(rows, n)`` with its :func:`_tail_sums`, ``eps`` ``(E,)``.
    """
    if loss.ndim == 1:
        j = np.searchsorted(loss, eps, side="right")
    else:
        j = _searchsorted_rows(loss, eps)
    top = j == loss.shape[-1]
    with np.errstate(invalid="ignore", over="ignore"):
        # eps < l_j, so eps + log B_j <= log A_j <= 0: no overflow
        log_term = np.where(top, -np.inf, eps + np.take_along_axis(log_b, j, -1))
        term = np.where(top, 0.0, np.exp(log_term))
    return np.clip(np.take_along_axis(a, j, -1) - term + inf_mass, 0.0, 1.0)


def _epsilon_sorted(
    loss: np.ndarray, a: np.ndarray, log_b: np.ndarray, inf_mass: float, delta: np.ndarray
) -> np.ndarray:
    """Smallest ``eps >= 0`` with ``delta(eps) <= delta``, solved exactly in its segment."""
    n = loss.size
    if n == 0:  # delta(eps) = inf_mass for every eps
        return np.where(delta < inf_mass, np.inf, 0.0)
    d_grid = np.minimum.accumulate(_delta_sorted(loss, a, log_b, inf_mass, loss))
    d_zero = _delta_sorted(loss, a, log_b, inf_mass, np.zeros(1))[0]
    # first grid loss with delta(l_j) <= delta; the answer lies in (l_{j-1}, l_j]
    j = np.searchsorted(-d_grid, -delta, side="left")
    jc = np.minimum(j, n - 1)
    upper = loss[jc]
    lower = np.where(jc > 0, loss[np.maximum(jc - 1, 0)], -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        # A_j + inf_mass - e^(eps) B_j = delta on [l_{j-1}, l_j)
        eps = np.log(a[jc] + inf_mass - delta) - log_b[jc]
    eps = np.where(np.isnan(eps), lower, eps)
    eps = np.maximum(np.clip(eps, lower, upper), 0.0)
    eps = np.where(delta >= d_zero, 0.0, eps)
    return np.where((delta < inf_mass) | ((j >= n) & (delta < d_zero)), np.inf, eps)


@dataclass(frozen=True, eq=False)
class DiscretePLD:
    """A PLD on the grid ``loss = (offset + j) * interval``, plus a mass at ``+inf``.

    Parameters
    ----------
    interval : float
        Grid spacing, > 0.
    offset : int
        Grid index of ``pmf[0]``.
    pmf : array_like, shape (n,)
        Non-negative masses of the grid losses :attr:`losses`.
    infinity_mass : float, default 0.0
        Mass at ``loss = +inf`` (outputs impossible under ``Q``).

    Notes
    -----
    Masses need not sum to one (a dropped ``-inf`` atom adds to no delta). Equality is
    identity.

    Examples
    --------
    >>> from pymc_edp.base.pld import DiscretePLD
    >>> pld = DiscretePLD(interval=0.5, offset=-2, pmf=[0.25, 0.0, 0.0, 0.0, 0.75])
    >>> pld.losses.tolist()
    [-1.0, -0.5, 0.0, 0.5, 1.0]
    >>> round(pld.delta(0.0), 6)  # 0.75 (1 - e^-1)
    0.47409
    """

    interval: float
    offset: int
    pmf: np.ndarray
    infinity_mass: float = 0.0

    def __post_init__(self) -> None:
        interval = check_real(self.interval, "interval", positive=True)
        offset = check_int(self.offset, "offset")
        pmf = np.array(self.pmf, dtype=np.float64)
        if pmf.ndim != 1 or pmf.size == 0:
            raise ValueError(f"pmf must be a non-empty 1-D array, got shape {pmf.shape}")
        if not np.all(np.isfinite(pmf)) or np.any(pmf < 0):
            raise ValueError("pmf must be finite and non-negative")
        inf_mass = check_real(self.infinity_mass, "infinity_mass", minimum=0.0)
        if inf_mass > 1:
            raise ValueError(f"infinity_mass must be in [0, 1], got {inf_mass!r}")
        pmf.setflags(write=False)
        object.__setattr__(self, "interval", interval)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "pmf", pmf)
        object.__setattr__(self, "infinity_mass", inf_mass)

    @property
    def losses(self) -> np.ndarray:
        """Grid loss ``(offset + j) * interval`` of each ``pmf`` entry.

        Examples
        --------
        >>> from pymc_edp.base.pld import DiscretePLD
        >>> DiscretePLD(0.1, 3, [0.5, 0.5]).losses.round(12).tolist()
        [0.3, 0.4]
        """
        return (self.offset + np.arange(self.pmf.size)) * self.interval

    @cached_property
    def _tails(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        losses = self.losses
        return (losses, *_tail_sums(losses, self.pmf))

    def delta(self, epsilon: ArrayLike) -> np.ndarray | float:
        """``delta(eps) = sum_j pmf_j (1 - e^(eps - l_j))_+ + infinity_mass``, any real eps.

        Exact, in ``O(n + E log n)`` for ``E`` epsilons (Meiser & Mohammadi, Lemma 5).

        Parameters
        ----------
        epsilon : array_like
            ``+-inf`` allowed, not NaN.

        Returns
        -------
        float or ndarray
            In [0, 1]; a float for a scalar ``epsilon``.

        Examples
        --------
        dp-accounting's ``test_delta_for_epsilon`` fixture:

        >>> from pymc_edp.base.pld import DiscretePLD
        >>> pld = DiscretePLD(0.1, -1, [0.2, 0.3, 0.0, 0.4], infinity_mass=0.1)
        >>> pld.delta([-20.0, 0.1, 3.0]).round(6)
        array([1.      , 0.138065, 0.1     ])
        """
        return _solve(_delta_sorted, self._tails, self.infinity_mass, _check_epsilons(epsilon))

    def epsilon(self, delta: ArrayLike) -> np.ndarray | float:
        """Smallest ``eps >= 0`` with ``delta(eps) <= delta``, solved exactly.

        Between grid losses ``l_{j-1} <= eps < l_j``, ``delta(eps) = A_j - e^eps B_j``.

        Parameters
        ----------
        delta : array_like
            Non-negative targets.

        Returns
        -------
        float or ndarray
            ``0.0`` where ``delta(0) <= delta``; ``+inf`` where ``delta < infinity_mass``.

        Examples
        --------
        dp-accounting's ``test_epsilon_for_delta`` fixture:

        >>> from pymc_edp.base.pld import DiscretePLD
        >>> pld = DiscretePLD(0.1, -1, [0.2, 0.3, 0.0, 0.4], infinity_mass=0.1)
        >>> pld.epsilon([0.05, 0.1]).round(12)
        array([inf, 0.2])
        """
        return _solve(_epsilon_sorted, self._tails, self.infinity_mass, _check_deltas(delta))

    def self_compose(self, k: int) -> DiscretePLD:
        """PLD of the k-fold composition, by one real FFT raised to the power ``k``.

        Zero-padded against wrap-around, negative round-off set to 0; the infinity mass
        becomes ``1 - (1 - a)^k``. ``k = 1`` returns ``self``.

        Raises
        ------
        ValueError
            If the result would have more than ``MAX_POINTS`` (2**24) grid points.

        Examples
        --------
        dp-accounting's ``test_self_compose_dense_probs`` fixture:

        >>> from pymc_edp.base.pld import DiscretePLD
        >>> pld = DiscretePLD(0.1, -1, [0.2, 0.7], infinity_mass=0.1).self_compose(2)
        >>> pld.offset, pld.pmf.round(12).tolist(), round(pld.infinity_mass, 12)
        (-2, [0.04, 0.28, 0.49], 0.19)
        """
        k = check_int(k, "k", 1)
        if k == 1:
            return self
        n = self.pmf.size
        m = k * (n - 1) + 1
        if m > MAX_POINTS:
            raise ValueError(
                f"the {k}-fold composition would have {m} grid points (> {MAX_POINTS}); "
                "use a coarser interval"
            )
        size = scipy.fft.next_fast_len(m, real=True)
        spectrum = scipy.fft.rfft(self.pmf, size)
        pmf = np.maximum(scipy.fft.irfft(spectrum**k, size)[:m], 0.0)
        a = self.infinity_mass
        inf_mass = 1.0 if a >= 1 else float(-np.expm1(k * np.log1p(-a)))
        return DiscretePLD(self.interval, k * self.offset, pmf, inf_mass)


def discretise(
    losses: ArrayLike,
    probs: ArrayLike | None = None,
    *,
    interval: float,
    pessimistic: bool = True,
    lower: float | None = None,
) -> DiscretePLD:
    """Round a PLD given as atoms to the grid ``loss = j * interval``.

    Pessimistic rounds each loss up, so ``delta(eps)`` of the grid PLD and its compositions
    is never below the exact one (optimistic: never above). Atoms at ``+inf`` go to
    ``infinity_mass``; those at ``-inf`` are dropped.

    Parameters
    ----------
    losses : array_like, shape (n,)
        Privacy losses ``log P(o) - log Q(o)`` of the atoms (``+-inf`` allowed, not NaN).
    probs : array_like, shape (n,), optional
        Their masses under ``P`` (>= 0, sum <= 1); default ``1 / n`` each.
    interval : float
        Grid spacing, > 0.
    pessimistic : bool, default True
    lower : float, optional
        Finite losses below it are raised to it (still pessimistic; bounds the grid).

    Raises
    ------
    ValueError
        For a grid over ``MAX_POINTS`` (2**24) points, or invalid atoms.

    References
    ----------
    .. [1] Doroshenko, V., Ghazi, B., Kamath, P., Kumar, R. and Manurangsi, P. (2022).
       Connect the dots: tighter discrete approximations of privacy loss distributions.
       PETS 2022 (Section 3).

    Examples
    --------
    Randomized response with ``e^eps = 3``; the grid delta bounds the exact 0.5:

    >>> from pymc_edp.base.pld import discretise
    >>> losses = np.log([3.0, 1 / 3])
    >>> up = discretise(losses, [0.75, 0.25], interval=0.01)
    >>> down = discretise(losses, [0.75, 0.25], interval=0.01, pessimistic=False)
    >>> up.offset, up.pmf[[0, -1]].tolist()
    (-109, [0.25, 0.75])
    >>> round(down.delta(0.0), 4), round(up.delta(0.0), 4)
    (0.4978, 0.5003)
    """
    loss, p = _atoms(losses, probs)
    interval = check_real(interval, "interval", positive=True)
    if lower is not None:
        lower = check_real(lower, "lower")
        loss = np.where(loss == -np.inf, loss, np.maximum(loss, lower))
    loss, p, inf_mass = _split_infinite(loss, p)
    if loss.size == 0:
        return DiscretePLD(interval, 0, np.zeros(1), inf_mass)
    scaled = loss / interval
    idx = np.ceil(scaled) if pessimistic else np.floor(scaled)
    lo, hi = idx[0], idx[-1]
    if hi - lo + 1 > MAX_POINTS or max(abs(lo), abs(hi)) > 2**62:
        raise ValueError(
            f"losses in [{loss[0]!r}, {loss[-1]!r}] need {hi - lo + 1:.0f} grid points at "
            f"interval {interval!r} (> {MAX_POINTS}); use a coarser interval or `lower`"
        )
    offset = int(lo)
    pmf = np.bincount((idx - lo).astype(np.int64), weights=p, minlength=int(hi - lo) + 1)
    return DiscretePLD(interval, offset, pmf, inf_mass)


def exact_delta(
    losses: ArrayLike, probs: ArrayLike | None, epsilon: ArrayLike
) -> np.ndarray | float:
    """``delta(eps) = sum_i p_i (1 - e^(eps - L_i))_+`` of atoms, without a grid.

    Atoms at ``+inf`` count fully, at ``-inf`` not at all; arguments as for
    :func:`discretise` and :meth:`DiscretePLD.delta`.

    Returns
    -------
    float or ndarray
        In [0, 1]; a float for a scalar ``epsilon``.

    Examples
    --------
    >>> from pymc_edp.base.pld import exact_delta
    >>> exact_delta(np.log([3.0, 1 / 3]), [0.75, 0.25], [-1.0, 0.0, np.log(3)]).round(6)
    array([0.65803, 0.5    , 0.     ])
    """
    eps = _check_epsilons(epsilon)
    loss, p, inf_mass = _split_infinite(*_atoms(losses, probs))
    return _solve(_delta_sorted, (loss, *_tail_sums(loss, p)), inf_mass, eps)


def exact_epsilon(
    losses: ArrayLike, probs: ArrayLike | None, delta: ArrayLike
) -> np.ndarray | float:
    """Smallest ``eps >= 0`` with :func:`exact_delta` ``<= delta``, without a grid.

    Arguments as for :func:`exact_delta`; returns as :meth:`DiscretePLD.epsilon`.

    Examples
    --------
    Randomized response with ``e^eps = 3`` is ``(log 3, 0)``-DP:

    >>> from pymc_edp.base.pld import exact_epsilon
    >>> exact_epsilon(np.log([3.0, 1 / 3]), [0.75, 0.25], [0.0, 0.5]).round(6)
    array([1.098612, 0.      ])
    """
    d = _check_deltas(delta)
    loss, p, inf_mass = _split_infinite(*_atoms(losses, probs))
    return _solve(_epsilon_sorted, (loss, *_tail_sums(loss, p)), inf_mass, d)

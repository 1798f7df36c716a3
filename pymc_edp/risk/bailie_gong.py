"""Bailie & Gong (2023): epsilon-DP as an interval of measures, and its inferential limits.

Bounds that hold for any epsilon-DP mechanism, data model and proper prior.

References
----------
.. [1] Bailie, J. and Gong, R. (2023). "Differential Privacy: General Inferential Limits
   via Intervals of Measures." *Proceedings of the Thirteenth International Symposium on
   Imprecise Probability: Theories and Applications (ISIPTA 2023)*, PMLR 215.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pymc_edp.risk._common import as_float_or_array

__all__ = [
    "DensityBounds",
    "bailie_gong_posterior_bounds",
    "bailie_gong_power_bound",
    "bailie_gong_prior_predictive_bounds",
    "hamming_distances",
]


@dataclass(frozen=True)
class DensityBounds:
    """Pointwise bounds ``lower <= upper`` (arrays of equal shape) on a density or probability.

    Examples
    --------
    >>> bounds = DensityBounds(lower=np.array([0.1, 0.2]), upper=np.array([0.3, 0.4]))
    >>> bounds.upper.tolist()
    [0.3, 0.4]
    >>> bounds.contains([0.2, 0.4]), bounds.contains([0.2, 0.5])
    (True, False)
    """

    lower: np.ndarray
    upper: np.ndarray

    def contains(self, values, *, rtol: float = 1e-12) -> bool:
        """Whether every value lies within the bounds (with relative slack ``rtol``)."""
        v = np.asarray(values, dtype=float)
        return bool(np.all(v >= self.lower * (1 - rtol)) and np.all(v <= self.upper * (1 + rtol)))


def _check_eps_d(epsilon, d_star_star) -> tuple[np.ndarray, np.ndarray]:
    """Both as float arrays, refused if negative or NaN."""
    eps = np.asarray(epsilon, dtype=float)
    d = np.asarray(d_star_star, dtype=float)
    if np.any(~(eps >= 0)) or np.any(~(d >= 0)):
        raise ValueError("`epsilon` and `d_star_star` must be >= 0.")
    return eps, d


def _eps_times_d(eps: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``eps * d`` with ``inf * 0 = 0`` (``exp(0 * d) = exp(eps * 0) = 1`` for finite d, eps)."""
    with np.errstate(invalid="ignore"):
        return np.where((d == 0) | (eps == 0), 0.0, eps * d)


def _times_exp(p: np.ndarray, log_factor: np.ndarray) -> np.ndarray:
    """``p exp(log_factor)``: ``inf`` where the exponential overflows, 0 wherever ``p`` is."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(p > 0, p * np.exp(log_factor), 0.0)


def _check_density(values, name: str, what: str) -> np.ndarray:
    """``values`` as floats; negative, NaN and infinite entries refused, with their position."""
    try:
        v = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"`{name}` must be numeric {what}, got {values!r} ({err}).") from err
    bad = ~(np.isfinite(v) & (v >= 0))
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if v.ndim else ()
        where = f" at index {idx if len(idx) != 1 else idx[0]}" if idx else ""
        first = float(v[bad].ravel()[0])
        raise ValueError(
            f"`{name}` must hold finite, non-negative {what}; found {first!r}{where} "
            f"({int(bad.sum())} invalid value{'s' if bad.sum() > 1 else ''}). Pass the "
            f"{what} themselves (not their logarithms) and drop or fix NaN/inf entries."
        )
    return v


def bailie_gong_posterior_bounds(
    prior: float | np.ndarray,
    epsilon: float,
    d_star_star: float,
) -> DensityBounds:
    """Bounds on any posterior after an epsilon-DP release (Bailie & Gong).

    ``pi(theta | t)`` lies in ``pi(theta) exp(+-eps d**)`` for every parameter value,
    every data model and every proper prior, where ``d** = sup d(x, x')`` over the data
    sets x, x' the release t could have come from.

    Parameters
    ----------
    prior : float or array_like
        Prior density or probability ``pi(theta)`` at the parameter values of interest.
    epsilon : float
        DP epsilon of the mechanism.
    d_star_star : float
        Diameter of ``supp(x | t)`` in the DP metric (e.g. n for binary vectors of length
        n under the Hamming distance).

    Returns
    -------
    DensityBounds
        ``prior exp(-eps d**)`` and ``prior exp(eps d**)`` (not clipped at 1; ``inf`` where
        the exponential overflows and the prior is positive).

    References
    ----------
    .. [1] Bailie, J. and Gong, R. (2023). ISIPTA 2023, PMLR 215, posterior bounds.

    Examples
    --------
    >>> bounds = bailie_gong_posterior_bounds(0.5, epsilon=0.1, d_star_star=3)
    >>> round(float(bounds.lower), 4), round(float(bounds.upper), 4)
    (0.3704, 0.6749)
    >>> bounds.contains(0.6), bounds.contains(0.7)
    (True, False)
    """
    p = _check_density(prior, "prior", "prior densities or probabilities")
    eps, d = _check_eps_d(epsilon, d_star_star)
    log_factor = _eps_times_d(eps, d)
    lower = p * np.exp(-log_factor)
    # a posterior is 0 wherever the prior is, also where exp(eps d**) overflows
    return DensityBounds(lower=lower, upper=_times_exp(p, log_factor)[()])


def hamming_distances(datasets: Sequence | np.ndarray) -> np.ndarray:
    """``(m, m)`` counts of differing records between m datasets of n records (``(m, n, ...)``).

    Examples
    --------
    >>> hamming_distances([[0, 0], [0, 1], [1, 0], [1, 1]]).tolist()
    [[0, 1, 1, 2], [1, 0, 2, 1], [1, 2, 0, 1], [2, 1, 1, 0]]
    """
    if not isinstance(datasets, np.ndarray):
        datasets = list(datasets)
        lengths = [len(ds) if hasattr(ds, "__len__") else None for ds in datasets]
        if len(set(lengths)) > 1:
            found = sorted({n for n in lengths if n is not None})
            scalars = " and datasets that are single values" if None in lengths else ""
            raise ValueError(
                "all datasets must have the same number of records (the Hamming distance "
                f"compares them record by record); found lengths {found}{scalars} "
                f"(dataset lengths in order: {lengths[:10]}{' ...' if len(lengths) > 10 else ''}"
                "). Pad or trim the datasets to one length, or compare them in groups of "
                "equal length."
            )
    try:
        x = np.asarray(datasets)
    except ValueError as err:
        raise ValueError(
            "all records must have the same shape across the datasets (each dataset an "
            f"equal-length sequence of equally shaped records); numpy reports: {err}"
        ) from err
    if x.ndim < 2:
        raise ValueError(
            f"`datasets` must be 2-D or more, shape (m datasets, n records, ...), got shape "
            f"{x.shape}; wrap a single dataset as [dataset]."
        )
    m, n = x.shape[:2]
    if x.size == 0:  # no datasets, or datasets without records: nothing differs
        return np.zeros((m, m), dtype=np.intp)
    x = x.reshape(m, n, -1)
    return np.any(x[:, None] != x[None, :], axis=3).sum(axis=2)


def bailie_gong_prior_predictive_bounds(
    densities: np.ndarray,
    distances: np.ndarray,
    epsilon: float,
) -> DensityBounds:
    """Bounds on the prior predictive density of an epsilon-DP release (Bailie & Gong).

    For any data model and prior supported on the datasets ``x_1..x_m``,

        max_k exp(-eps d*_k) p_{x_k}(t) <= p(t) <= min_k exp(eps d*_k) p_{x_k}(t),

    with ``d*_k = max_l d(x_k, x_l)``; the same interval bounds the marginal likelihood
    ``p(t | theta)`` when the datasets are ``supp(x | t, theta)``.

    Parameters
    ----------
    densities : array_like, shape (m, T)
        Mechanism density (or pmf) ``p_{x_k}(t)`` of each candidate dataset (rows) at each
        release t (columns).
    distances : array_like, shape (m, m)
        DP-metric distances between the candidate datasets (e.g. :func:`hamming_distances`).
    epsilon : float
        DP epsilon of the mechanism.

    Returns
    -------
    DensityBounds
        Bounds of shape ``(T,)``.

    References
    ----------
    .. [1] Bailie, J. and Gong, R. (2023). ISIPTA 2023, PMLR 215, bounds on the privatised
       data probability and on the prior predictive.

    Examples
    --------
    The sum of two binary records released with Laplace noise (eps = 0.5), evaluated at
    t = 0, 1, 2; the uniform prior's predictive density lies within the bounds:

    >>> datasets = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    >>> mech = edp.conjugate.laplace_mechanism(epsilon=0.5, sensitivity=1.0)
    >>> dens = np.exp(mech.log_density([0.0, 1.0, 2.0], datasets.sum(axis=1)[:, None]))
    >>> bounds = bailie_gong_prior_predictive_bounds(dens, hamming_distances(datasets), 0.5)
    >>> bounds.lower.round(4).tolist(), bounds.upper.round(4).tolist()
    ([0.092, 0.092, 0.092], [0.25, 0.4122, 0.25])
    >>> bounds.contains(dens.mean(axis=0))
    True
    """
    p = np.asarray(densities, dtype=float)
    d = np.asarray(distances, dtype=float)
    if p.ndim != 2 or d.shape != (p.shape[0], p.shape[0]):
        raise ValueError("Need `densities` of shape (m, T) and `distances` of shape (m, m).")
    p = _check_density(p, "densities", "mechanism densities or probabilities")
    d = _check_density(d, "distances", "distances")
    eps, _ = _check_eps_d(epsilon, 0.0)
    log_factor = _eps_times_d(eps, d.max(axis=1)[:, None])
    return DensityBounds(
        lower=np.max(np.exp(-log_factor) * p, axis=0),
        upper=np.min(_times_exp(p, log_factor), axis=0),
    )


def bailie_gong_power_bound(
    alpha: float | np.ndarray,
    epsilon: float | np.ndarray,
    d_star_star: float | np.ndarray,
) -> float | np.ndarray:
    """Largest power of a level-alpha test from an epsilon-DP release (Bailie & Gong).

    Testing ``theta_0`` against ``theta_1`` from an epsilon-DP release, any level-alpha test
    has power at most ``alpha exp(d** eps)`` (generalising Wasserman & Zhou 2010 beyond
    i.i.d. records).

    Returns ``min(1, alpha exp(d** eps))``, broadcast over the arguments; ``d_star_star``
    is ``sup d(x, x')`` over ``x in supp(x | t, theta_0)``, ``x' in supp(x | t, theta_1)``.

    References
    ----------
    .. [1] Bailie, J. and Gong, R. (2023). ISIPTA 2023, PMLR 215, Neyman-Pearson
       hypothesis testing.

    Examples
    --------
    >>> round(bailie_gong_power_bound(0.05, epsilon=0.5, d_star_star=1), 4)
    0.0824
    >>> bailie_gong_power_bound(0.05, [0.5, 1.0, 5.0], 1).round(4).tolist()
    [0.0824, 0.1359, 1.0]
    """
    a = np.asarray(alpha, dtype=float)
    if np.any(~((a >= 0) & (a <= 1))):
        raise ValueError("`alpha` must lie in [0, 1].")
    eps, d = _check_eps_d(epsilon, d_star_star)
    return as_float_or_array(np.minimum(1.0, _times_exp(a, _eps_times_d(eps, d))))

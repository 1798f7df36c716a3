"""DP and conditional DP (CDP) epsilon of a finite mechanism given by its transition matrix.

Rows of the transition matrix are indexed by the confidential statistic (the count x),
columns by the released value.

References
----------
.. [1] Charest, A.-S. and Han, Y. (2017). "On the Meaning and Limits of Empirical
   Differential Privacy." *Journal of Privacy and Confidentiality* 7(3). Eq. (1),
   Sec. 3.1, Table 1, Figure 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from pymc_edp.conjugate.posteriors import _max_abs_log_ratio
from pymc_edp.risk._common import as_float_or_array

__all__ = [
    "conditional_dp_distribution",
    "conditional_dp_epsilon",
    "dp_epsilon",
]


def _log_transition(transition, log: bool = False) -> np.ndarray:
    t = np.asarray(transition, dtype=float)
    if t.ndim != 2 or t.shape[0] < 2 or t.shape[1] < 1:
        raise ValueError(f"`transition` must be 2-D with at least two rows, got {t.shape}.")
    if log:
        if np.any(np.isnan(t)) or np.any(np.isposinf(t)):
            raise ValueError("A log `transition` must not hold nan or +inf.")
        return t
    if np.any(np.isnan(t)) or np.any(t < 0) or np.any(np.isinf(t)):
        raise ValueError("`transition` must hold finite, non-negative probabilities.")
    with np.errstate(divide="ignore"):
        return np.log(t)


def _check_pairs(pairs, n_rows: int) -> np.ndarray:
    p = np.asarray(pairs)
    if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] == 0:
        raise ValueError("`pairs` must be a non-empty sequence of (row, row) index pairs.")
    if not np.issubdtype(p.dtype, np.integer):
        raise ValueError("`pairs` must hold integer row indices.")
    if np.any(p < 0) or np.any(p >= n_rows):
        raise ValueError(f"`pairs` indices must lie in [0, {n_rows - 1}].")
    return p.astype(np.intp)


def _pair_epsilons(log_t: np.ndarray, pairs: np.ndarray | None) -> np.ndarray:
    """``max_c |log T[i, c] - log T[j, c]|`` for each neighbouring pair of rows (i, j).

    A column zero in both rows contributes 0; zero in one only gives ``inf``.
    """
    if pairs is None:
        return _max_abs_log_ratio(log_t[1:], log_t[:-1], axis=1)
    return _max_abs_log_ratio(log_t[pairs[:, 0]], log_t[pairs[:, 1]], axis=1)


def dp_epsilon(
    transition: np.ndarray | xr.DataArray,
    *,
    pairs: Sequence[tuple[int, int]] | np.ndarray | None = None,
    log: bool = False,
) -> float:
    """DP epsilon of a finite mechanism given by its transition matrix.

    Row x is ``P(output | x)``; neighbouring datasets are adjacent rows (one record
    changed), so::

        eps = max over x, c of |log T[x + 1, c] - log T[x, c]|,

    which for a finite output space is also the maximum over events. Rows may also be
    densities on a grid of outputs (the sup of the log density ratio over that grid).

    Parameters
    ----------
    transition : array_like, shape (n_rows, n_outputs)
        Non-negative probabilities (rows need not be normalised).
    pairs : sequence of (int, int), optional
        Neighbouring rows for a general neighbour graph (e.g. the compositions of a
        Dirichlet-Multinomial synthesizer). Default: adjacent rows.
    log : bool, default False
        ``transition`` holds log-probabilities (``-inf`` for zeros); use for mechanisms
        whose probabilities underflow.

    Returns
    -------
    float
        ``inf`` if a column is zero in one row of a neighbouring pair only.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). *Journal of Privacy and Confidentiality*
       7(3), eq. (1), Table 1 (epsilon = log 11).
    .. [2] McClure, D. and Reiter, J. P. (2012). "Differential Privacy and Statistical
       Disclosure Risk Measures: An Investigation with Binary Synthetic Data."
       *Transactions on Data Privacy* 5, Appendix A.

    Examples
    --------
    >>> rr = np.array([[0.75, 0.25], [0.25, 0.75]])  # randomized response
    >>> round(dp_epsilon(rr), 4), round(float(np.log(3)), 4)
    (1.0986, 1.0986)
    >>> t = edp.conjugate.beta_binomial_synthesizer_matrix(5, 0.5, 0.5)
    >>> round(dp_epsilon(t), 4)  # log 11, Charest & Han's Table 1
    2.3979
    >>> log_t = edp.conjugate.beta_binomial_synthesizer_matrix(5, 0.5, 0.5, log=True)
    >>> round(dp_epsilon(log_t, log=True), 4)
    2.3979
    """
    log_t = _log_transition(transition, log)
    p = None if pairs is None else _check_pairs(pairs, log_t.shape[0])
    return float(_pair_epsilons(log_t, p).max())


def conditional_dp_epsilon(
    transition: np.ndarray | xr.DataArray,
    x: int | Sequence[int] | np.ndarray,
    *,
    pairs: Sequence[tuple[int, int]] | np.ndarray | None = None,
    log: bool = False,
) -> float | np.ndarray:
    """Conditional DP (CDP) epsilon of a finite mechanism for the observed dataset(s) x.

    Only the neighbours of the observed dataset are compared with it (Sec. 3.1)::

        cdp(x) = max over x' in {x - 1, x + 1}, c of |log T[x', c] - log T[x, c]|.

    (The paper writes the definition with D^{-i}; its Table 1 compares adjacent rows of
    equal size, one record changed, as here.) Its maximum over x is :func:`dp_epsilon`.

    Parameters
    ----------
    transition, pairs, log
        As in :func:`dp_epsilon`.
    x : int or array_like of int
        Observed row(s).

    Returns
    -------
    float or numpy.ndarray
        Shaped like ``x``.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). *Journal of Privacy and Confidentiality*
       7(3), Sec. 3.1, Table 1 (1.466 for x = 2, 3; 2.398 for x = 0, 1, 4, 5).

    Examples
    --------
    >>> t = edp.conjugate.beta_binomial_synthesizer_matrix(5, 0.5, 0.5)  # Table 1
    >>> round(conditional_dp_epsilon(t, 2), 3)
    1.466
    >>> conditional_dp_epsilon(t, [0, 1, 2, 3, 4, 5]).round(3).tolist()
    [2.398, 2.398, 1.466, 1.466, 2.398, 2.398]
    """
    log_t = _log_transition(transition, log)
    n_rows = log_t.shape[0]
    x_arr = np.asarray(x)
    if not np.issubdtype(x_arr.dtype, np.integer):
        raise ValueError(f"`x` must be integer row indices, got {x!r}.")
    if np.any(x_arr < 0) or np.any(x_arr >= n_rows):
        raise ValueError(f"`x` must lie in [0, {n_rows - 1}].")
    if pairs is None:
        e = _pair_epsilons(log_t, None)  # e[k]: rows k and k + 1
        left = np.concatenate([[-np.inf], e])  # neighbour x - 1
        right = np.concatenate([e, [-np.inf]])  # neighbour x + 1
        per_row = np.maximum(left, right)
    else:
        p = _check_pairs(pairs, n_rows)
        e = _pair_epsilons(log_t, p)
        per_row = np.full(n_rows, -np.inf)
        np.maximum.at(per_row, p[:, 0], e)
        np.maximum.at(per_row, p[:, 1], e)
    out = per_row[x_arr]
    if np.any(np.isneginf(out)):
        raise ValueError("Some observed rows have no neighbour in `pairs`.")
    return as_float_or_array(out)


def conditional_dp_distribution(
    transition: np.ndarray | xr.DataArray, *, log: bool = False
) -> xr.DataArray:
    """CDP epsilon of every possible dataset of a count mechanism (Charest & Han, Fig. 1).

    ``transition`` and ``log`` as in :func:`dp_epsilon`, rows indexed by the count
    ``x = 0..n``.

    Returns
    -------
    xarray.DataArray
        ``cdp_epsilon`` over ``"x"``, each count once as in Charest & Han's dotplots (not
        weighted by how many binary datasets share it); ``attrs["dp_epsilon"]`` is the max.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). *Journal of Privacy and Confidentiality*
       7(3), Sec. 3.1, Figure 1.

    Examples
    --------
    >>> t = edp.conjugate.beta_binomial_synthesizer_matrix(5, 0.5, 0.5)
    >>> cdp = conditional_dp_distribution(t)
    >>> cdp.dims, round(cdp.attrs["dp_epsilon"], 4)
    (('x',), 2.3979)
    >>> cdp.round(3).values.tolist()
    [2.398, 2.398, 1.466, 1.466, 2.398, 2.398]
    """
    n_rows = np.asarray(transition).shape[0]
    cdp = conditional_dp_epsilon(transition, np.arange(n_rows), log=log)
    return xr.DataArray(
        cdp,
        dims=("x",),
        coords={"x": np.arange(n_rows)},
        name="cdp_epsilon",
        attrs={"dp_epsilon": float(np.max(cdp))},
    )

"""The independence pre-check across databases (Burchard, Daoud & Dotterrer, sec. 5).

Empirical DP is estimated from the spread of the query across databases: valid only if they
are independent draws from one distribution. Three nonparametric tests of the per-database
query values, in database order, check it:

* Ljung-Box on the ranks (serial correlation up to ``lags``);
* Wald-Wolfowitz runs above/below the median (any serial dependence, trends);
* two-sample Kolmogorov-Smirnov between the first and second half (a change of
  distribution, i.e. not identically distributed).

References
----------
.. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020). Empirical Differential Privacy.
   arXiv:2011.05418, section 5 ("Independent Databases").
.. [2] Ljung, G. M. and Box, G. E. P. (1978). On a measure of lack of fit in time series
   models. Biometrika 65(2), 297-303.
.. [3] Wald, A. and Wolfowitz, J. (1940). On a test whether two samples are from the same
   population. Annals of Mathematical Statistics 11(2), 147-162.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

__all__ = ["IndependenceWarning", "independence_check"]


class IndependenceWarning(UserWarning):
    """The databases do not look like independent draws from one distribution."""


def _ljung_box_ranks(x: np.ndarray, lags: int) -> tuple[float, float]:
    r = stats.rankdata(x)
    r = r - r.mean()
    n = r.size
    denom = float(np.dot(r, r))
    if denom == 0:
        return 0.0, 1.0
    acf = np.array([np.dot(r[k:], r[:-k]) / denom for k in range(1, lags + 1)])
    q = n * (n + 2) * float(np.sum(acf**2 / (n - np.arange(1, lags + 1))))
    return q, float(stats.chi2.sf(q, lags))


def _runs_test(x: np.ndarray) -> tuple[float, float]:
    med = np.median(x)
    signs = x[x != med] > med
    n1, n2 = int(signs.sum()), int((~signs).sum())
    n = n1 + n2
    if n1 == 0 or n2 == 0:
        return 0.0, 1.0
    runs = 1 + int(np.count_nonzero(signs[1:] != signs[:-1]))
    mean = 2.0 * n1 * n2 / n + 1.0
    var = 2.0 * n1 * n2 * (2.0 * n1 * n2 - n) / (n * n * (n - 1))
    if var <= 0:
        return 0.0, 1.0
    z = (runs - mean) / math.sqrt(var)
    return z, float(2 * stats.norm.sf(abs(z)))


def independence_check(
    values: ArrayLike,
    *,
    lags: int | None = None,
    alpha: float = 0.05,
    warn: bool = True,
) -> pd.DataFrame:
    """Test that per-database query values look i.i.d. (in database order).

    Parameters
    ----------
    values : array_like, shape (n,)
        One query value per database, in the databases' natural order (time, say).
    lags : int, optional
        Ljung-Box lags; ``min(10, n // 5)`` (at least 1) by default.
    alpha : float, default 0.05
        Family-wise level: each of the three tests is judged at ``alpha / 3`` (Bonferroni).
    warn : bool, default True
        Emit an :class:`IndependenceWarning` when a test rejects.

    Returns
    -------
    pandas.DataFrame
        Indexed by test (``ljung_box_ranks``, ``runs``, ``ks_halves``) with columns
        ``statistic``, ``pvalue`` and ``reject``.

    Examples
    --------
    Independent draws pass; a trend fails all three tests (and warns unless ``warn=False``):

    >>> import warnings
    >>> values = np.random.default_rng(1).normal(size=50)
    >>> independence_check(values)["reject"].tolist()
    [False, False, False]
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always", IndependenceWarning)
    ...     table = independence_check(values + np.arange(50))
    >>> table["reject"].to_dict()
    {'ljung_box_ranks': True, 'runs': True, 'ks_halves': True}
    >>> [w.category.__name__ for w in caught]
    ['IndependenceWarning']
    """
    x = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(x)):
        raise ValueError("the independence check needs finite values")
    n = x.size
    if n < 6:
        raise ValueError("the independence check needs at least 6 databases")
    lags = max(1, min(10, n // 5)) if lags is None else int(lags)
    lb = _ljung_box_ranks(x, lags)
    runs = _runs_test(x)
    half = n // 2
    ks = stats.ks_2samp(x[:half], x[half:])
    table = pd.DataFrame(
        {
            "statistic": [lb[0], runs[0], float(ks.statistic)],
            "pvalue": [lb[1], runs[1], float(ks.pvalue)],
        },
        index=pd.Index(["ljung_box_ranks", "runs", "ks_halves"], name="test"),
    )
    table["reject"] = table["pvalue"] < alpha / len(table)
    if warn and table["reject"].any():
        failed = ", ".join(table.index[table["reject"]])
        warnings.warn(
            f"the databases do not look independent and identically distributed ({failed} "
            f"reject at family-wise level {alpha}); empirical DP estimates assume i.i.d. "
            "databases (Burchard et al. 2020, sec. 5)",
            IndependenceWarning,
            stacklevel=2,
        )
    return table

"""Epsilon against the number of bins, and its continuous limit ``B -> inf``."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import xarray as xr

from pymc_edp.base import binning
from pymc_edp.base.common import MIN_DRAWS_PER_BIN, NEIGHBOUR_DIM, EDPWarning, chunk_slices
from pymc_edp.base.validate import check_int
from pymc_edp.diagnostics._common import (
    DEFAULT_CANDIDATES,
    AuditData,
    bins_of,
    cached,
    neighbour_coords,
    refitted,
    weights_of,
)
from pymc_edp.diagnostics.uncertainty import leading_pair_errors, summarise_errors

DEFAULT_CURVE_BINS = (5, 10, 20, 50, 100, 250)


def continuous_limit(result: AuditData) -> xr.Dataset:
    """The ``B -> infinity`` reference: the largest absolute log density ratio over the draws.

    ``sup_s |log r_i(theta_s)|`` with ``r_i = S w_i`` the density ratio
    ``p(theta | D') / p(theta | D)`` bounds every B-EDP (a bin's ratio is an average of
    ``r``) and, for one parameter, is the ``B -> inf`` limit. Often infinite (normal
    posteriors with different means), its sample maximum then grows with S: on thinned
    subsamples of ``S / 64 .. S / 4`` draws, a growth over the last two doublings of at
    least 0.6 of that over the two before is reported as diverging (a bounded ratio's
    maximum converges geometrically, by a factor <= 0.5).

    Returns
    -------
    xarray.Dataset
        ``sup_log_ratio`` (``neighbour``), ``epsilon_inf`` (scalar), ``growth_per_doubling``
        and ``diverges`` (bool, or False with ``note`` saying the check could not be run);
        attribute ``note``.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017), sec. 3.3 (B-EDP grows with B).

    Examples
    --------
    >>> lim = edp.diagnostics.continuous_limit(res)
    >>> round(float(lim["epsilon_inf"]), 2)
    2.83
    >>> bool(lim["diverges"])  # normal posteriors: the log density ratio is unbounded
    True
    >>> lim["sup_log_ratio"].dims
    ('neighbour',)
    """
    return cached(result, "continuous_limit", lambda: _continuous_limit(result))


def _continuous_limit(result: AuditData) -> xr.Dataset:
    from scipy.special import logsumexp

    lw = weights_of(result)
    n, n_samples = lw.shape
    sup = np.empty(n)
    for sl in chunk_slices(n, n_samples, factor=2):
        lr = lw[sl] - logsumexp(lw[sl], axis=1, keepdims=True) + np.log(n_samples)
        sup[sl] = np.abs(lr).max(axis=1)
    worst = int(np.argmax(sup))
    lr = lw[worst] - logsumexp(lw[worst]) + np.log(n_samples)
    a = np.abs(lr)
    levels = [k for k in (6, 4, 2) if n_samples >> k >= 16]
    growth, diverges, note = np.nan, False, ""
    if len(levels) == 3:
        # mean over the 2**k thinned subsamples of each one's maximum
        mean_max = {k: float(np.mean([a[o :: 2**k].max() for o in range(2**k)])) for k in levels}
        early = mean_max[4] - mean_max[6]
        late = mean_max[2] - mean_max[4]
        growth = late / 2
        diverges = bool(late > 0 and early > 0 and late >= 0.6 * early)
    else:
        note = f"too few draws ({n_samples}) to check whether the supremum converges"
    if diverges:
        note = (
            "the continuous limit diverges: the largest |log density ratio| keeps growing "
            f"with the number of draws (about +{growth:.2g} per doubling of S), as when "
            "the log density ratio is unbounded (normal tails, a Beta density at 0 or 1). "
            "B-EDP grows without bound as B -> inf; the value shown is only the supremum "
            "over these draws."
        )
    return xr.Dataset(
        {
            "sup_log_ratio": (NEIGHBOUR_DIM, sup),
            "epsilon_inf": ((), float(sup[worst])),
            "growth_per_doubling": ((), float(growth)),
            "diverges": ((), diverges),
        },
        coords=neighbour_coords(result),
        attrs={"note": note},
    )


def _bins_grid(bins) -> np.ndarray:
    """``bins`` as a 1-D integer array, each ``>= 2`` (a non-integer is refused, not cut)."""
    message = f"bins must be a non-empty list of integers >= 2, got {bins!r}"
    try:
        values = list(np.atleast_1d(np.asarray(bins, dtype=object)).ravel())
    except TypeError:
        raise ValueError(message) from None
    if not values or np.ndim(bins) != 1:
        raise ValueError(message)
    try:
        return np.array([check_int(b, "bins", 2) for b in values], dtype=np.int64)
    except (TypeError, ValueError):
        raise ValueError(message) from None


def epsilon_curve(
    result: AuditData,
    bins: Sequence[int] = DEFAULT_CURVE_BINS,
    *,
    prob: float | None = 0.9,
    candidates: int = DEFAULT_CANDIDATES,
    smoothing: float | None = None,
) -> xr.DataArray:
    """Epsilon as a function of the number of bins B, from the stored weights (no refits).

    Parameters
    ----------
    prob : float or None, default 0.9
        Coverage of the Monte-Carlo interval drawn as error bars; None skips the errors.
    smoothing : float, optional
        Additive smoothing constant; default the audit's.

    Returns
    -------
    xarray.DataArray
        Epsilon over ``bins``, with coordinates ``mcse``, ``lower``, ``upper`` and
        ``worst_neighbour``; attributes ``continuous_limit``, ``continuous_limit_diverges``
        (:func:`continuous_limit`), ``note``, ``prob`` and ``smoothing``.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017), sec. 3.3, Table 2, Figure 2.

    Examples
    --------
    >>> curve = edp.diagnostics.epsilon_curve(res, bins=(5, 10, 20))
    >>> curve.round(3).values.tolist()
    [0.562, 0.75..., 0.875]
    >>> list(curve.coords)
    ['bins', 'mcse', 'lower', 'upper', 'worst_neighbour']

    A B leaving fewer than 10 draws per bin gives NaN and an
    :class:`~pymc_edp.EDPWarning`:

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     curve = edp.diagnostics.epsilon_curve(res, bins=(10, 250), prob=None)
    >>> [w.category.__name__ for w in caught]
    ['EDPWarning']
    >>> curve.round(3).values.tolist()
    [0.75..., nan]
    """
    grid = _bins_grid(bins)
    lw = weights_of(result)
    n_samples = lw.shape[1]
    alpha = float(result.smoothing if smoothing is None else smoothing)
    labels = result.pointwise[NEIGHBOUR_DIM].values
    eps, mcse, lower, upper = (np.full(grid.size, np.nan) for _ in range(4))
    worst = np.empty(grid.size, dtype=labels.dtype)
    skipped = []
    for g, b in enumerate(grid):
        if n_samples < MIN_DRAWS_PER_BIN * b:
            skipped.append(int(b))
            worst[g] = labels[0]
            continue
        bo = bins_of(result, int(b))
        e = np.empty(lw.shape[0])
        for sl in chunk_slices(lw.shape[0], n_samples, factor=2):
            e[sl] = binning.epsilon_estimates(lw[sl], bo, alpha).eps.max(1)
        i = int(np.argmax(e))
        eps[g] = e[i]
        worst[g] = labels[i]
        if prob is not None:
            unc = leading_pair_errors(result, int(b), candidates, alpha)
            _, se_i, _, lo, hi = summarise_errors(result, unc, prob)
            mcse[g] = se_i[i]
            lower[g] = np.nanmax(lo)
            upper[g] = np.nanmax(hi)
    lim = continuous_limit(result)
    notes = [lim.attrs["note"]] if lim.attrs["note"] else []
    if refitted(result).any():
        notes.append(
            "refitted neighbours enter this curve through their importance weights, so at "
            "the audit's B it can differ from result.epsilon"
        )
    if skipped:
        msg = (
            f"bins={skipped} leave fewer than {MIN_DRAWS_PER_BIN} draws per bin "
            f"({n_samples} draws): not computed"
        )
        notes.append(msg)
        warnings.warn(msg, EDPWarning, stacklevel=3)
    return xr.DataArray(
        eps,
        dims=("bins",),
        coords={
            "bins": grid,
            "mcse": ("bins", mcse),
            "lower": ("bins", lower),
            "upper": ("bins", upper),
            "worst_neighbour": ("bins", worst),
        },
        name="epsilon",
        attrs={
            "continuous_limit": float(lim["epsilon_inf"]),
            "continuous_limit_diverges": bool(lim["diverges"]),
            "note": " ".join(notes),
            "prob": float("nan") if prob is None else float(prob),
            "smoothing": alpha,
        },
    )

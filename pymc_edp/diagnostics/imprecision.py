"""Abowd's empirical measure of imprecision (EMI), empty bins and the smoothing constant."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import xarray as xr

from pymc_edp.base import binning
from pymc_edp.base.common import PARAMETER_DIM, EDPWarning, chunk_slices
from pymc_edp.diagnostics._common import (
    AuditData,
    bins_of,
    cached,
    draws_of,
    flat_parameters,
    n_bins_of,
    refitted,
    weights_of,
)


def emi(result: AuditData, *, bins: int | None = None) -> xr.Dataset:
    """Abowd's empirical measure of imprecision: the noise floor of refit-and-count.

    The EDP procedure with D as its own neighbour: bins cut from the first half of every
    chain, counts from the second halves (Charest & Han, sec. 4). The true value is 0, so
    this is the noise of counting ``S / 2`` draws: a verdict on *refit-and-count* estimates
    only (within 2 EMI of zero is noise), not an error of reweighted ones
    (:func:`epsilon_interval`). One independent set (Abowd et al. take a maximum over n).

    Returns
    -------
    xarray.Dataset
        ``emi`` (scalar, the maximum over parameters), ``emi_parameter`` (``parameter``);
        attributes ``n_draws`` (draws per half), ``bins``, ``smoothing``, ``epsilon`` and
        ``within_two_emi`` (epsilon <= 2 EMI: would be noise, were it refit-and-count).

    References
    ----------
    .. [1] Abowd, J. M., Schneider, M. J. and Vilhuber, L. (2013), Journal of Privacy and
       Confidentiality 5(1).
    .. [2] Charest, A.-S. and Han, Y. (2017), Journal of Privacy and Confidentiality 7(3),
       sec. 4, Tables 3-4.

    Examples
    --------
    >>> em = edp.diagnostics.emi(res)
    >>> round(float(em["emi"]), 2), em.attrs["n_draws"], em.attrs["within_two_emi"]
    (0.27, 1000, 0)
    """
    n_bins = n_bins_of(result, bins)
    return cached(result, ("emi", n_bins), lambda: _emi(result, n_bins))


def _emi(result: AuditData, n_bins: int) -> xr.Dataset:
    draws = draws_of(result)
    n_par, n_samples = draws.shape
    n_chains = max(int(result.n_chains), 1)
    per_chain = n_samples // n_chains
    half = per_chain // 2
    if half < 2:
        raise ValueError("too few draws per chain to split them in two halves")
    starts = np.arange(n_chains) * per_chain
    first = (starts[:, None] + np.arange(half)[None, :]).ravel()
    second = (starts[:, None] + per_chain - half + np.arange(half)[None, :]).ravel()
    cut = binning.quantile_bins(draws[:, first], n_bins)
    idx = binning.assign_bins(draws[:, second], cut)
    out = np.empty(n_par)
    alpha = float(getattr(result, "count_smoothing", result.smoothing))
    for p in range(n_par):
        nb = int(cut.n_bins[p])
        c1 = cut.counts[p, :nb].astype(float)
        c2 = np.bincount(idx[p], minlength=nb)[:nb].astype(float)
        with np.errstate(divide="ignore"):
            d = np.abs(np.log(c2 + alpha) - np.log(c1 + alpha))
        out[p] = d.max()
    value = float(out.max())
    return xr.Dataset(
        {"emi": ((), value), "emi_parameter": (PARAMETER_DIM, out)},
        coords={PARAMETER_DIM: flat_parameters(result)[PARAMETER_DIM].values},
        attrs={
            "n_draws": int(first.size),
            "bins": n_bins,
            "smoothing": alpha,
            "epsilon": result.epsilon,
            "within_two_emi": int(not result.epsilon > 2 * value),
        },
    )


# ------------------------------------------------------------ empty bins, smoothing
def empty_bins(result: AuditData, *, bins: int | None = None) -> xr.Dataset:
    """Bins that receive no (or almost no) weight under a neighbour, per parameter.

    An empty bin makes the raw (``smoothing=0``) epsilon infinite; under one draw's worth
    of weight, a smoothing constant starts to set the estimate.

    Returns
    -------
    xarray.Dataset
        Over ``parameter``: ``n_empty`` ((neighbour, bin) pairs with zero weight),
        ``n_under_one_draw`` (weight below one draw, ``S m_j < 1``),
        ``neighbours_with_empty`` and the coordinate ``var_name``; attributes
        ``smoothing``, ``bins``, ``n_pairs`` (neighbours x bins per parameter) and
        ``refit_neighbours`` (their counts come from the reweighting estimate).

    Examples
    --------
    >>> eb = edp.diagnostics.empty_bins(res)
    >>> eb["n_empty"].values.tolist(), eb["n_under_one_draw"].values.tolist()
    ([0], [0])
    >>> eb.attrs["bins"]
    10
    """
    n_bins = n_bins_of(result, bins)
    lw = weights_of(result)
    b = bins_of(result, n_bins)
    n, n_samples = lw.shape
    n_par = b.counts.shape[0]
    empty, sparse, nb_empty = (np.zeros(n_par, dtype=np.int64) for _ in range(3))
    valid = np.arange(b.counts.shape[1])[None, :] < b.n_bins[:, None]
    for sl in chunk_slices(n, n_samples, factor=2):
        log_mass = binning.log_bin_probabilities(lw[sl], b) + np.log(n_samples)
        zero = np.isneginf(log_mass) & valid
        empty += zero.sum(axis=(0, 2))
        sparse += ((log_mass < 0) & valid).sum(axis=(0, 2))
        nb_empty += zero.any(axis=2).sum(axis=0)
    flat = flat_parameters(result)
    return xr.Dataset(
        {
            "n_empty": (PARAMETER_DIM, empty),
            "n_under_one_draw": (PARAMETER_DIM, sparse),
            "neighbours_with_empty": (PARAMETER_DIM, nb_empty),
        },
        coords={
            PARAMETER_DIM: flat[PARAMETER_DIM].values,
            "var_name": (PARAMETER_DIM, flat["var_name"].values),
        },
        attrs={
            "smoothing": result.smoothing,
            "bins": n_bins,
            "n_pairs": n * b.n_bins,
            "refit_neighbours": int(refitted(result).sum()),
        },
    )


def smoothing_sensitivity(
    result: AuditData,
    smoothing: Sequence[float] = (0.0, 0.001, 0.01, 0.1, 1.0),
    *,
    bins: int | None = None,
) -> xr.DataArray:
    """Epsilon recomputed from the stored weights for several additive smoothing constants.

    ``0`` is the raw estimator (the audit's default), infinite only for an empty bin, which
    warns (:class:`~pymc_edp.EDPWarning`). A positive constant caps every log ratio near
    ``log(S / (B alpha))``: where the values fall as it grows, smoothing sets them.

    Parameters
    ----------
    smoothing : sequence of float, default (0, 0.001, 0.01, 0.1, 1)
        In units of draws.

    Returns
    -------
    xarray.DataArray
        Epsilon over ``smoothing``; attributes ``bins``, ``audit_smoothing``.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017), sec. 4 (additive smoothing, alpha = 0.01).

    Examples
    --------
    >>> eps = edp.diagnostics.smoothing_sensitivity(res, (0.0, 0.01, 1.0))
    >>> eps.round(3).values.tolist()
    [0.75..., 0.75..., 0.751]
    >>> eps.attrs["audit_smoothing"]
    0.0
    """
    n_bins = n_bins_of(result, bins)
    lw = weights_of(result)
    b = bins_of(result, n_bins)
    values = np.asarray(smoothing, dtype=float)
    if np.any(values < 0) or not np.all(np.isfinite(values)):
        raise ValueError("smoothing values must be finite and >= 0")
    out = np.full(values.size, -np.inf)
    for sl in chunk_slices(lw.shape[0], lw.shape[1], factor=2):
        for a, alpha in enumerate(values):
            e = binning.epsilon_estimates(lw[sl], b, alpha).eps
            out[a] = max(out[a], float(e.max()))
    if np.any(np.isinf(out)):
        n_empty = int(empty_bins(result, bins=n_bins)["n_empty"].sum())
        warnings.warn(
            f"smoothing = 0 gives an infinite epsilon: {n_empty} (neighbour, bin) pair(s) "
            "receive no weight at all, and log(0) is -inf. The infinity says nothing about "
            "the posterior, only that the bin was empty in this sample; keep a positive "
            "smoothing constant (Charest & Han use 0.01) or use fewer bins.",
            EDPWarning,
            stacklevel=3,
        )
    return xr.DataArray(
        out,
        dims=("smoothing",),
        coords={"smoothing": values},
        name="epsilon",
        attrs={"bins": n_bins, "audit_smoothing": result.smoothing},
    )

"""Monte-Carlo standard error and interval of epsilon (one method: the delta method)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from pymc_edp.base.common import NEIGHBOUR_DIM
from pymc_edp.base.mcse import interval_of_max, leading_pairs, max_interval, normal_interval
from pymc_edp.diagnostics._common import (
    DEFAULT_CANDIDATES,
    INTERVAL_DIM,
    KEEP_ALL_WEIGHTS,
    AuditData,
    bins_of,
    cached,
    keep_weights_advice,
    kept_weights,
    n_bins_of,
    neighbour_coords,
    no_weights_error,
    order_of,
    refitted,
    scalar,
    z_value,
)

#: The interval probability the audit computes and stores with its result.
STORED_PROB = 0.9


def leading_pair_errors(
    result: AuditData, n_bins: int, candidates: int, smoothing: float | None = None
) -> dict:
    """Estimates, standard errors and ESS of the kept ``rows``' leading (parameter, bin) pairs."""
    alpha = float(result.smoothing if smoothing is None else smoothing)

    def compute():
        lw, rows = kept_weights(result)
        out = leading_pairs(
            lw,
            bins_of(result, n_bins),
            order=order_of(result),
            smoothing=alpha,
            n_chains=result.n_chains,
            candidates=candidates,
        )
        out.update(rows=rows, n_bins=n_bins)
        return out

    return cached(result, ("uncertainty", int(n_bins), int(candidates), alpha), compute)


def refit_errors(result: AuditData) -> dict:
    """``{neighbour index: (estimate, se)}`` of the refitted neighbours' own estimates."""
    if "refit_mcse" not in result.pointwise:
        return {}
    se = np.asarray(result.pointwise["refit_mcse"].values, dtype=float)
    eps = np.asarray(result.pointwise["epsilon"].values, dtype=float)
    rows = np.flatnonzero(refitted(result) & np.isfinite(se))
    return {int(i): (float(eps[i]), float(se[i])) for i in rows}


def lower_bound_rows(result: AuditData) -> np.ndarray:
    """True for the neighbours whose epsilon is a lower bound (at a resolution limit)."""
    pw = result.pointwise
    if "lower_bound" in pw:
        return np.asarray(pw["lower_bound"].values, dtype=bool)
    return np.zeros(pw.sizes[NEIGHBOUR_DIM], dtype=bool)


def own_intervals(estimate, se, lower, upper, own, limited, z: float) -> None:
    """The interval rule of estimates with their own error, in place on ``lower``, ``upper``.

    Rows ``own`` (refitted or moment-matched) take ``estimate +- z se``, clipped at 0 below
    (NaN without an error); rows ``limited`` (lower bounds) are open above.
    """
    with np.errstate(invalid="ignore"):
        lower[own], upper[own] = normal_interval(estimate[own], se[own], z, floor=0.0)
    upper[limited] = np.inf


def summarise_errors(result: AuditData, unc: dict, prob: float | None):
    """Per-neighbour estimate, error, ESS and (with ``prob``) interval from the leading pairs.

    NaN where no weights were kept; at the audit's B, refitted neighbours take
    :func:`refit_errors` and :func:`own_intervals`.
    """
    n = result.pointwise.sizes[NEIGHBOUR_DIM]
    rows = unc["rows"]
    lr, se = unc["log_ratio"], unc["se"]
    est, se_i, ess_i = (np.full(n, np.nan) for _ in range(3))
    est[rows], se_i[rows], ess_i[rows] = np.abs(lr[:, 0]), se[:, 0], unc["ess"][:, 0]
    lower = upper = None
    if prob is not None:
        lower, upper = np.full(n, np.nan), np.full(n, np.nan)
        lower[rows], upper[rows] = max_interval(lr, se, prob, signed=True)
    if unc["n_bins"] == result.bins:
        own = np.zeros(n, dtype=bool)
        for i, (e, s) in refit_errors(result).items():
            est[i], se_i[i], ess_i[i], own[i] = e, s, np.nan, True
        if prob is not None:
            limited = lower_bound_rows(result)
            own_intervals(est, se_i, lower, upper, own, limited, z_value(prob))
            eps = np.asarray(result.pointwise["epsilon"].values, dtype=float)
            fill = limited & np.isnan(est)
            est[fill] = eps[fill]
    return est, se_i, ess_i, lower, upper


def _stored(result: AuditData, prob: float | None, bins: int | None, what: str) -> bool:
    """Whether ``what`` must come from the columns the audit stored (no weights to recompute)."""
    if result.log_weights is not None:
        return False
    pw = result.pointwise
    if "epsilon_upper" not in pw:
        raise no_weights_error(result)
    if (bins is not None and int(bins) != result.bins) or (
        prob is not None and abs(prob - STORED_PROB) > 1e-12
    ):
        raise ValueError(
            f"this result keeps no importance weights, only the {what} the audit computed "
            f"at B = {result.bins} and {100 * STORED_PROB:.0f}%: ask for those, or "
            f"{keep_weights_advice(result)} (results read back from netCDF need "
            "to_netcdf(..., include_weights=True))"
        )
    return True


def epsilon_mcse(
    result: AuditData, *, bins: int | None = None, candidates: int = DEFAULT_CANDIDATES
) -> xr.Dataset:
    """Monte-Carlo standard error of epsilon and of every per-record epsilon.

    Each bin log-ratio's error is the delta method's, ``var(psi) / ESS(psi)`` of its
    influence function (:func:`pymc_edp.base.mcse.bin_log_ratio_se`, so autocorrelation
    counts); ``epsilon_i`` takes its leading (parameter, bin) pair's, epsilon its leading
    neighbour's, a refitted neighbour its refit's. Without weights, the errors the audit
    stored (at its own B) are returned; neighbours whose weights were not kept get NaN.

    Parameters
    ----------
    candidates : int, default 5
        Leading (parameter, bin) pairs per neighbour whose errors are computed.

    Returns
    -------
    xarray.Dataset
        ``epsilon`` and ``epsilon_i`` (standard errors), ``estimate_i``, ``ess_i``,
        ``refit``; attributes ``bins``, ``estimate`` and ``worst_neighbour``.

    References
    ----------
    .. [1] Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Bürkner, P.-C. (2021),
       Bayesian Analysis 16(2) (effective sample size).
    .. [2] Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. (2024), JMLR 25(72).
    .. [3] Charest, A.-S. and Han, Y. (2017), Journal of Privacy and Confidentiality 7(3).

    Examples
    --------
    >>> se = edp.diagnostics.epsilon_mcse(res)
    >>> round(float(se["epsilon"]), 2), str(se.attrs["worst_neighbour"])
    (0.07, "St. Paul's")
    >>> se["ess_i"].dims
    ('neighbour',)
    """
    if _stored(result, None, bins, "standard errors"):
        pw = result.pointwise
        est = np.asarray(pw["epsilon"].values, dtype=float)
        se_i = np.asarray(pw["epsilon_mcse"].values, dtype=float)
        est = np.where(np.isnan(se_i), np.nan, est)
        ess_i = np.full(est.size, np.nan)
        n_bins = result.bins
    else:
        n_bins = n_bins_of(result, bins)
        unc = leading_pair_errors(result, n_bins, candidates)
        est, se_i, ess_i, _, _ = summarise_errors(result, unc, None)
    worst = int(np.nanargmax(est))
    labels = result.pointwise[NEIGHBOUR_DIM].values
    return xr.Dataset(
        {
            "epsilon": ((), float(se_i[worst])),
            "epsilon_i": (NEIGHBOUR_DIM, se_i),
            "estimate_i": (NEIGHBOUR_DIM, est),
            "ess_i": (NEIGHBOUR_DIM, ess_i),
            "refit": (NEIGHBOUR_DIM, refitted(result)),
        },
        coords=neighbour_coords(result),
        attrs={
            "bins": n_bins,
            "estimate": float(est[worst]),
            "worst_neighbour": scalar(labels[worst]),
            "smoothing": result.smoothing,
            **_unavailable_note(result, se_i, "standard error"),
        },
    )


def _unavailable_note(result: AuditData, values: np.ndarray, what: str) -> dict:
    """``{"note": ...}`` saying why some neighbours with an estimate have no ``what``, or {}."""
    pw = result.pointwise
    estimated = ~np.isnan(np.asarray(pw["epsilon"].values, dtype=float))
    missing = np.isnan(np.asarray(values, dtype=float)) & estimated
    if not missing.any():
        return {}
    n = int(estimated.sum())
    if result.log_weights is None:
        source = (
            "this result carries no importance weights (saved without them, or audited with "
            "store_weights=False), only the errors the audit stored for the neighbours that "
            f"can set epsilon ({n - int(missing.sum())})"
        )
    else:
        source = (
            f"the audit kept the importance weights of {result.log_weights.sizes[NEIGHBOUR_DIM]} "
            "neighbours only, those that can set epsilon (a large or pruned audit keeps no more)"
        )
    return {
        "note": (
            f"{int(missing.sum())} of {n} neighbours have no {what} (NaN): {source}, and "
            f"epsilon's is over those. For every neighbour's, rerun {KEEP_ALL_WEIGHTS} and, "
            "to read it back from netCDF, save it with to_netcdf(..., include_weights=True)."
        )
    }


def epsilon_interval(
    result: AuditData,
    prob: float = 0.9,
    *,
    bins: int | None = None,
    candidates: int = DEFAULT_CANDIDATES,
) -> xr.Dataset:
    """Monte-Carlo interval of epsilon and of every per-record epsilon.

    Each leading (parameter, bin) pair gets the normal interval ``l +- z se``
    (:func:`epsilon_mcse`), mapped to ``|l|``; the maximum being monotone,
    ``[max lower, max upper]`` is the interval of ``epsilon_i`` (over its pairs) and of
    epsilon (over neighbours), widened by near-ties. A lower bound
    (:mod:`pymc_edp.base.limits`) is open above; refits and results without weights as in
    :func:`epsilon_mcse`.

    Parameters
    ----------
    prob : float, default 0.9
        Nominal coverage.

    Returns
    -------
    xarray.Dataset
        ``epsilon`` over ``interval`` (``"lower"``, ``"upper"``), ``epsilon_i`` over
        (``neighbour``, ``interval``), ``estimate``, ``estimate_i``, ``refit`` and
        ``lower_bound``; attribute ``prob``.

    References
    ----------
    .. [1] Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Bürkner, P.-C. (2021),
       Bayesian Analysis 16(2).

    Examples
    --------
    >>> iv = edp.diagnostics.epsilon_interval(res, prob=0.9)
    >>> iv["epsilon"].round(2).values.tolist()
    [0.61, 0.87]
    >>> iv["epsilon_i"].sel(interval="upper").dims
    ('neighbour',)
    """
    if _stored(result, prob, bins, "90% intervals"):
        pw = result.pointwise
        lower = np.asarray(pw["epsilon_lower"].values, dtype=float)
        upper = np.asarray(pw["epsilon_upper"].values, dtype=float)
        est = np.where(np.isnan(upper), np.nan, np.asarray(pw["epsilon"].values, dtype=float))
        se = np.asarray(pw["epsilon_mcse"].values, dtype=float)
        n_bins = result.bins
    else:
        n_bins = n_bins_of(result, bins)
        unc = leading_pair_errors(result, n_bins, candidates)
        est, se, _, lower, upper = summarise_errors(result, unc, prob)
    return interval_dataset(result, lower, upper, est, se, prob, n_bins)


def interval_dataset(result: AuditData, lower, upper, est, se, prob: float, n_bins: int):
    """The Dataset :func:`epsilon_interval` returns, from per-neighbour arrays."""
    both = np.stack([lower, upper], axis=-1)
    coords = neighbour_coords(result)
    coords[INTERVAL_DIM] = ["lower", "upper"]
    known = ~np.isnan(upper)
    lo, hi = interval_of_max(est, se, lower, upper, prob)
    return xr.Dataset(
        {
            "epsilon": (INTERVAL_DIM, [lo, hi]),
            "epsilon_i": ((NEIGHBOUR_DIM, INTERVAL_DIM), both),
            "estimate": ((), float(np.max(est[~np.isnan(est)])) if known.any() else np.nan),
            "estimate_i": (NEIGHBOUR_DIM, est),
            "refit": (NEIGHBOUR_DIM, refitted(result)),
            "lower_bound": (NEIGHBOUR_DIM, lower_bound_rows(result)),
        },
        coords=coords,
        attrs={
            "prob": float(prob),
            "bins": n_bins,
            "smoothing": result.smoothing,
            **_unavailable_note(result, upper, "Monte-Carlo interval"),
        },
    )

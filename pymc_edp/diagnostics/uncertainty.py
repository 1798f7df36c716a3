"""Monte-Carlo standard error and interval of epsilon (one method: the delta method)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from pymc_edp.base.common import NEIGHBOUR_DIM
from pymc_edp.base.mcse import interval_of_max, leading_pairs, max_interval
from pymc_edp.diagnostics._cache import cache_of
from pymc_edp.diagnostics._common import (
    DEFAULT_CANDIDATES,
    INTERVAL_DIM,
    AuditData,
    bins_of,
    keep_weights_advice,
    kept_weights,
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
    """Estimates, standard errors and ESS of the leading (parameter, bin) pairs.

    Over the neighbours whose weights the result keeps (``rows``: their positions).
    """
    cache = cache_of(result)
    alpha = float(result.smoothing if smoothing is None else smoothing)
    key = ("uncertainty", int(n_bins), int(candidates), alpha)
    if key in cache:
        return cache[key]
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
    cache[key] = out
    return out


def refit_errors(result: AuditData) -> dict:
    """``{neighbour index: (estimate, se)}`` of the refitted neighbours' own estimates.

    The audit computes each refit's error with its estimate, by the same delta method
    (:func:`pymc_edp.base.mcse.pooled_log_ratio_se` for the pooled estimator,
    :func:`pymc_edp.base.mcse.refit_log_ratio_se` for the raw one), and keeps it in
    ``pointwise["refit_mcse"]``.
    """
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
        lower[own] = np.maximum(estimate[own] - z * se[own], 0.0)
        upper[own] = estimate[own] + z * se[own]
    upper[limited] = np.inf


def summarise_errors(result: AuditData, unc: dict, prob: float | None):
    """Per-neighbour estimate, error, ESS and (with ``prob``) interval from the leading pairs.

    Neighbours whose weights were not kept get NaN. At the audit's own number of bins,
    refitted neighbours take their refit estimate and its error (:func:`refit_errors`) and
    the intervals follow :func:`own_intervals`.
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

    The reweighted bin log-ratio ``l = log P_i(b) - log P(b)`` is a smooth function of
    weighted means over the draws *and* of the empirical quantiles that cut the bins; its
    first-order error is the mean of an influence function ``psi_s`` over the draws
    (:func:`pymc_edp.base.mcse.bin_log_ratio_se`). Its variance is ``var(psi) / ESS(psi)``,
    with the effective sample size of the ``psi`` series (chains split as in
    :func:`arviz.ess`), so autocorrelated MCMC draws get a proportionally larger error. The
    standard error of ``epsilon_i = max |l|`` is that of the leading (parameter, bin) pair,
    and the overall epsilon's that of the leading neighbour.

    A result without weights (read back from netCDF, or made with ``store_weights=False``)
    gives the errors the audit stored for the neighbours that can set epsilon
    (``pointwise["epsilon_mcse"]``), at its own B only. A large audit keeps the weights of
    those neighbours only: the others get NaN.

    Parameters
    ----------
    result : AuditData
        An audit result (:class:`pymc_edp.EDPResult`).
        With ``log_weights`` and ``draws``, or the audit's stored errors.
    bins : int, optional
        Number of bins; default the audit's.
    candidates : int, default 5
        Leading (parameter, bin) pairs per neighbour whose errors are computed (used by
        :func:`epsilon_interval`).

    Returns
    -------
    xarray.Dataset
        ``epsilon`` (scalar) and ``epsilon_i`` (``neighbour``): standard errors;
        ``estimate_i`` (the estimate they refer to), ``ess_i`` (effective sample size of
        the leading pair's influence series), ``refit`` (True where the audit's epsilon_i
        came from a refit: at the audit's bins its estimate and error are then the refit's,
        ``pointwise["refit_mcse"]``, by the same delta method; at other bins they describe
        the reweighting estimate). Attributes
        ``bins``, ``estimate`` and ``worst_neighbour``.

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
        n_bins = result.bins if bins is None else int(bins)
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
    """``{"note": ...}`` saying why some neighbours with an estimate have no ``what``, or {}.

    A large (pruned or streamed) audit keeps the importance weights of the neighbours that
    can set epsilon only; a result read back from netCDF without its weights, the errors the
    audit stored for those. The others' errors are NaN, which the note explains.
    """
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
            f"epsilon's is over those. For every neighbour's, rerun edp.audit(..., "
            "chunks={'store_weights': True, 'prune': False}) and, to read it back from "
            "netCDF, save it with to_netcdf(..., include_weights=True)."
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

    Each leading (parameter, bin) pair gets the normal interval ``l +- z se`` of its log
    ratio (:func:`epsilon_mcse`), mapped to ``|l|``. Because the maximum is monotone, if
    every pair's interval covers its true value then ``[max lower, max upper]`` covers the
    true maximum; that is the interval of ``epsilon_i`` (over the ``candidates`` leading
    pairs of neighbour i) and of epsilon (over neighbours). When one pair clearly leads it
    is that pair's interval; near-ties widen it, as they should.

    A neighbour whose estimate is a lower bound (at a resolution limit, see
    :mod:`pymc_edp.base.limits`) has an interval open above (``inf``), and so has epsilon
    when it is one of them. Refitted neighbours take ``refit +- z se`` of their own
    estimate. A result without weights gives the 90% intervals the audit stored for the
    neighbours that can set epsilon (``pointwise["epsilon_lower"]``, ``["epsilon_upper"]``);
    a large audit keeps the weights of those neighbours only, and the others get NaN: the
    interval of epsilon is then over the neighbours kept (the
    :data:`pymc_edp.auditing.TOP_WEIGHTS` largest estimates), which set it unless a
    lower-ranked neighbour has a much larger error.

    Parameters
    ----------
    result : AuditData
        An audit result (:class:`pymc_edp.EDPResult`).
    prob : float, default 0.9
        Nominal coverage.
    bins : int, optional
        Number of bins; default the audit's.
    candidates : int, default 5

    Returns
    -------
    xarray.Dataset
        ``epsilon`` over ``interval`` (``"lower"``, ``"upper"``), ``epsilon_i`` over
        (``neighbour``, ``interval``), ``estimate`` and ``estimate_i`` (the estimates the
        intervals are about), ``refit`` and ``lower_bound`` per neighbour; attribute
        ``prob``.

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
        n_bins = result.bins if bins is None else int(bins)
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

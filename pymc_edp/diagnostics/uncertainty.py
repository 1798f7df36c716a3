"""Monte-Carlo standard error and interval of epsilon (one method: the delta method)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from pymc_edp.base import binning
from pymc_edp.base.common import NEIGHBOUR_DIM, chunk_slices
from pymc_edp.base.mcse import bin_log_ratio_se
from pymc_edp.diagnostics._common import (
    DEFAULT_CANDIDATES,
    INTERVAL_DIM,
    bins_of,
    neighbour_coords,
    order_of,
    refitted,
    scalar,
    weights_of,
    z_value,
)

if TYPE_CHECKING:
    from pymc_edp.result import EDPResult


def leading_pair_errors(
    result: EDPResult, n_bins: int, candidates: int, smoothing: float | None = None
) -> dict:
    """Estimates, standard errors and ESS of the leading (parameter, bin) pairs."""
    cache = result.memo()
    alpha = float(result.smoothing if smoothing is None else smoothing)
    key = ("uncertainty", int(n_bins), int(candidates), alpha)
    if key in cache:
        return cache[key]
    lw = weights_of(result)
    bins = bins_of(result, n_bins)
    order = order_of(result)
    n, n_samples = lw.shape
    max_bins = bins.counts.shape[1]
    n_pairs = bins.counts.shape[0] * max_bins
    k = int(min(candidates, n_pairs))
    log_ratio = np.full((n, k), np.nan)
    se = np.full((n, k), np.nan)
    ess = np.full((n, k), np.nan)
    par = np.zeros((n, k), dtype=np.int64)
    jbin = np.zeros((n, k), dtype=np.int64)
    for sl in chunk_slices(n, n_samples, factor=8):
        ratios = binning.bin_log_ratios(lw[sl], bins, alpha)
        flat = np.abs(ratios.reshape(ratios.shape[0], -1))
        flat = np.where(np.isnan(flat), -np.inf, flat)
        top = np.argpartition(-flat, k - 1, axis=1)[:, :k] if k < n_pairs else None
        if top is None:
            top = np.tile(np.arange(n_pairs), (flat.shape[0], 1))
        # leading pair first
        top = np.take_along_axis(top, np.argsort(-np.take_along_axis(flat, top, 1), 1), 1)
        p, j = np.divmod(top, max_bins)
        valid = j < bins.n_bins[p]
        p_safe = np.where(valid, p, 0)
        j_safe = np.where(valid, j, 0)
        lr, s, e = bin_log_ratio_se(
            lw[sl],
            bins,
            p_safe,
            j_safe,
            order=order,
            smoothing=alpha,
            n_chains=result.n_chains,
        )
        log_ratio[sl] = np.where(valid, lr, np.nan)
        se[sl] = np.where(valid, s, np.nan)
        ess[sl] = np.where(valid, e, np.nan)
        par[sl], jbin[sl] = p, j
    out = dict(log_ratio=log_ratio, se=se, ess=ess, parameter=par, bin=jbin, n_bins=n_bins)
    cache[key] = out
    return out


def _abs_interval(log_ratio: np.ndarray, se: np.ndarray, z: float):
    lo, hi = log_ratio - z * se, log_ratio + z * se
    upper = np.maximum(np.abs(lo), np.abs(hi))
    lower = np.where(lo > 0, lo, np.where(hi < 0, -hi, 0.0))
    return lower, upper


def refit_errors(result: EDPResult) -> dict:
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


def summarise_errors(result: EDPResult, unc: dict, prob: float | None):
    """Per-neighbour estimate, error, ESS and (with ``prob``) interval from the leading pairs.

    At the audit's own number of bins, refitted neighbours take their refit estimate and
    its error (:func:`refit_errors`) in place of the reweighting ones.
    """
    lr, se = unc["log_ratio"], unc["se"]
    est = np.abs(lr[:, 0])
    se_i = se[:, 0].copy()
    ess_i = unc["ess"][:, 0].copy()
    lower = upper = None
    if prob is not None:
        lower, upper = _abs_interval(lr, se, z_value(prob))
        lower, upper = np.nanmax(lower, axis=1), np.nanmax(upper, axis=1)
    if unc["n_bins"] == result.bins:
        for i, (e, s) in refit_errors(result).items():
            est[i], se_i[i], ess_i[i] = e, s, np.nan
            if prob is not None:
                z = z_value(prob)
                lower[i], upper[i] = max(e - z * s, 0.0), e + z * s
    return est, se_i, ess_i, lower, upper


def epsilon_mcse(
    result: EDPResult, *, bins: int | None = None, candidates: int = DEFAULT_CANDIDATES
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

    Parameters
    ----------
    result : EDPResult
        With ``log_weights`` and ``draws``.
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
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    >>> se = edp.diagnostics.epsilon_mcse(res)
    >>> round(float(se["epsilon"]), 2), str(se.attrs["worst_neighbour"])
    (0.07, "St. Paul's")
    >>> se["ess_i"].dims
    ('neighbour',)
    """
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
        },
    )


def epsilon_interval(
    result: EDPResult,
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

    Parameters
    ----------
    result : EDPResult
    prob : float, default 0.9
        Nominal coverage.
    bins : int, optional
        Number of bins; default the audit's.
    candidates : int, default 5

    Returns
    -------
    xarray.Dataset
        ``epsilon`` over ``interval`` (``"lower"``, ``"upper"``), ``epsilon_i`` over
        (``neighbour``, ``interval``), ``estimate`` and ``estimate_i`` (the reweighting
        estimates), ``refit`` per neighbour; attribute ``prob``.

    References
    ----------
    .. [1] Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Bürkner, P.-C. (2021),
       Bayesian Analysis 16(2).

    Examples
    --------
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    >>> iv = edp.diagnostics.epsilon_interval(res, prob=0.9)
    >>> iv["epsilon"].round(2).values.tolist()
    [0.64, 0.87]
    >>> iv["epsilon_i"].sel(interval="upper").dims
    ('neighbour',)
    """
    n_bins = result.bins if bins is None else int(bins)
    unc = leading_pair_errors(result, n_bins, candidates)
    est, _, _, lower, upper = summarise_errors(result, unc, prob)
    both = np.stack([lower, upper], axis=-1)
    coords = neighbour_coords(result)
    coords[INTERVAL_DIM] = ["lower", "upper"]
    return xr.Dataset(
        {
            "epsilon": (INTERVAL_DIM, [float(np.nanmax(lower)), float(np.nanmax(upper))]),
            "epsilon_i": ((NEIGHBOUR_DIM, INTERVAL_DIM), both),
            "estimate": ((), float(np.nanmax(est))),
            "estimate_i": (NEIGHBOUR_DIM, est),
            "refit": (NEIGHBOUR_DIM, refitted(result)),
        },
        coords=coords,
        attrs={"prob": float(prob), "bins": n_bins, "smoothing": result.smoothing},
    )

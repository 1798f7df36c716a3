"""How far to trust an EDP audit: Monte-Carlo error, imprecision, bins and the bin-free view.

Every function takes an :class:`~pymc_edp.result.EDPResult` that kept its importance weights
(``audit(..., store_weights=True)``, the default) and returns xarray objects; the
:class:`~pymc_edp.result.EDPResult` methods ``mcse``, ``interval``, ``emi``, ``empty_bins``,
``curve``, ``delta_profile``, ... are thin wrappers around them. The numerical work is in
:mod:`pymc_edp.base` (plain NumPy/numba, sample axis last).

What is computed, and why:

* **Monte-Carlo standard error and interval** of epsilon and of every per-record
  ``epsilon_i`` (:func:`epsilon_mcse`, :func:`epsilon_interval`): a delta-method error from
  the influence function of the reweighted bin probability, *including the randomness of the
  quantile cut points*, scaled by the effective sample size of that influence series, so
  MCMC autocorrelation is accounted for. The interval of a maximum is the maximum of the
  intervals of its leading candidates.
* **EMI**, Abowd's empirical measure of imprecision (:func:`emi`): the procedure with D in
  place of the neighbour, on independent draws (bins from the first half of every chain,
  counts from the second half).
* **Empty bins and smoothing** (:func:`empty_bins`, :func:`smoothing_sensitivity`).
* **eps(B)** (:func:`epsilon_curve`) from the stored weights, no refitting, with the
  continuous limit ``B -> inf`` (:func:`continuous_limit`) as its reference.
* **The (eps, delta) profile** (:func:`delta_profile`): ``delta_i(eps)``, ``delta(eps)``,
  total risk ``delta*(eps)`` from the weights, without bins and without density estimates.

Neighbours refitted exactly (``pointwise["method"] == "refit"``) keep their Pareto-smoothed
importance weights in ``log_weights``; everything here is computed from those weights, so for
refitted neighbours it describes the *reweighting* estimate, not the refit one (flagged in
the outputs).

References
----------
.. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." Journal of Privacy and Confidentiality 7(3), 2017.
.. [2] Abowd, J. M., Schneider, M. J. and Vilhuber, L. "Differential privacy applications to
   Bayesian and linear mixed model estimation." Journal of Privacy and Confidentiality 5(1),
   2013.
.. [3] Burchard, P., Daoud, A. and Dotterrer, D. "Empirical Differential Privacy."
   arXiv:2001.09190, 2020.
.. [4] Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Bürkner, P.-C.
   "Rank-normalization, folding, and localization: an improved R-hat for assessing
   convergence of MCMC." Bayesian Analysis 16(2), 2021.
.. [5] Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. "Pareto smoothed
   importance sampling." Journal of Machine Learning Research 25(72), 2024.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from pymc_edp.base import binning, hockey
from pymc_edp.base.mcse import bin_log_ratio_se
from pymc_edp.result import NEIGHBOUR_DIM, PARAMETER_DIM, EDPWarning

if TYPE_CHECKING:
    from pymc_edp.result import EDPResult

__all__ = [
    "DEFAULT_CURVE_BINS",
    "bin_log_ratios",
    "continuous_limit",
    "delta_profile",
    "diagnose",
    "emi",
    "empty_bins",
    "epsilon_curve",
    "epsilon_interval",
    "epsilon_mcse",
    "smoothing_sensitivity",
]

DEFAULT_CURVE_BINS = (5, 10, 20, 50, 100, 250)
#: (parameter, bin) pairs per neighbour whose intervals enter the interval of the maximum.
DEFAULT_CANDIDATES = 5
MIN_DRAWS_PER_BIN = 10
INTERVAL_DIM = "interval"
_CHUNK_BYTES = 32 * 2**20


# --------------------------------------------------------------------------- plumbing
def _cache(result: EDPResult) -> dict:
    """A private per-result cache (the dataclass is frozen; this is not a field)."""
    try:
        return result.__dict__["_diagnostics_cache"]
    except KeyError:
        cache: dict = {}
        object.__setattr__(result, "_diagnostics_cache", cache)
        return cache


def _weights(result: EDPResult) -> np.ndarray:
    if result.log_weights is None:
        raise ValueError(
            "this diagnostic needs the importance weights of the audit, which were not kept: "
            "rerun edp.audit(..., store_weights=True) (the default). Results read back with "
            "EDPResult.from_netcdf need to_netcdf(..., include_weights=True)."
        )
    lw = result.log_weights.transpose(NEIGHBOUR_DIM, ...).values
    return np.asarray(lw, dtype=float)


def _draws(result: EDPResult) -> np.ndarray:
    if result.draws is None:
        raise ValueError(
            "this diagnostic needs the full-data draws the bins were cut from "
            "(result.draws), which this result does not carry"
        )
    return np.asarray(result.draws.transpose(PARAMETER_DIM, ...).values, dtype=float)


def _bins(result: EDPResult, n_bins: int) -> binning.Bins:
    cache = _cache(result)
    key = ("bins", int(n_bins))
    if key not in cache:
        cache[key] = binning.quantile_bins(_draws(result), int(n_bins))
    return cache[key]


def _order(result: EDPResult) -> np.ndarray:
    cache = _cache(result)
    if "order" not in cache:
        cache["order"] = np.argsort(_draws(result), axis=1, kind="stable")
    return cache["order"]


def _chunks(n: int, n_samples: int, factor: int = 8):
    size = max(1, _CHUNK_BYTES // (8 * n_samples * factor))
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def _neighbour_coords(result: EDPResult) -> dict:
    return {NEIGHBOUR_DIM: result.pointwise[NEIGHBOUR_DIM].values}


def _refitted(result: EDPResult) -> np.ndarray:
    if "method" in result.pointwise:
        return np.asarray(result.pointwise["method"].values).astype(str) == "refit"
    return np.zeros(result.pointwise.sizes[NEIGHBOUR_DIM], dtype=bool)


def _scalar(value):
    return value.item() if hasattr(value, "item") else value


def _z(prob: float) -> float:
    from scipy.stats import norm

    if not 0 < prob < 1:
        raise ValueError(f"prob must be in (0, 1), got {prob!r}")
    return float(norm.ppf(0.5 + prob / 2))


# ------------------------------------------------------------- Monte-Carlo error
def _uncertainty(
    result: EDPResult, n_bins: int, candidates: int, smoothing: float | None = None
) -> dict:
    """Estimates, standard errors and ESS of the leading (parameter, bin) pairs."""
    cache = _cache(result)
    alpha = float(result.smoothing if smoothing is None else smoothing)
    key = ("uncertainty", int(n_bins), int(candidates), alpha)
    if key in cache:
        return cache[key]
    lw = _weights(result)
    bins = _bins(result, n_bins)
    order = _order(result)
    n, n_samples = lw.shape
    max_bins = bins.counts.shape[1]
    n_pairs = bins.counts.shape[0] * max_bins
    k = int(min(candidates, n_pairs))
    log_ratio = np.full((n, k), np.nan)
    se = np.full((n, k), np.nan)
    ess = np.full((n, k), np.nan)
    par = np.zeros((n, k), dtype=np.int64)
    jbin = np.zeros((n, k), dtype=np.int64)
    for sl in _chunks(n, n_samples, factor=8):
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


def _summarise(result: EDPResult, unc: dict, prob: float | None):
    lr, se = unc["log_ratio"], unc["se"]
    est = np.abs(lr[:, 0])
    se_i = se[:, 0]
    ess_i = unc["ess"][:, 0]
    if prob is None:
        return est, se_i, ess_i, None, None
    lower, upper = _abs_interval(lr, se, _z(prob))
    return est, se_i, ess_i, np.nanmax(lower, axis=1), np.nanmax(upper, axis=1)


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
        ``estimate_i`` (the reweighting estimate they refer to), ``ess_i`` (effective
        sample size of the leading pair's influence series), ``refit`` (True where the
        audit's epsilon_i came from a refit, so the error describes the reweighting
        estimate instead). Attributes ``bins``, ``estimate`` and ``worst_neighbour``.

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
    unc = _uncertainty(result, n_bins, candidates)
    est, se_i, ess_i, _, _ = _summarise(result, unc, None)
    worst = int(np.nanargmax(est))
    labels = result.pointwise[NEIGHBOUR_DIM].values
    return xr.Dataset(
        {
            "epsilon": ((), float(se_i[worst])),
            "epsilon_i": (NEIGHBOUR_DIM, se_i),
            "estimate_i": (NEIGHBOUR_DIM, est),
            "ess_i": (NEIGHBOUR_DIM, ess_i),
            "refit": (NEIGHBOUR_DIM, _refitted(result)),
        },
        coords=_neighbour_coords(result),
        attrs={
            "bins": n_bins,
            "estimate": float(est[worst]),
            "worst_neighbour": _scalar(labels[worst]),
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
    unc = _uncertainty(result, n_bins, candidates)
    est, _, _, lower, upper = _summarise(result, unc, prob)
    both = np.stack([lower, upper], axis=-1)
    coords = _neighbour_coords(result)
    coords[INTERVAL_DIM] = ["lower", "upper"]
    return xr.Dataset(
        {
            "epsilon": (INTERVAL_DIM, [float(np.nanmax(lower)), float(np.nanmax(upper))]),
            "epsilon_i": ((NEIGHBOUR_DIM, INTERVAL_DIM), both),
            "estimate": ((), float(np.nanmax(est))),
            "estimate_i": (NEIGHBOUR_DIM, est),
            "refit": (NEIGHBOUR_DIM, _refitted(result)),
        },
        coords=coords,
        attrs={"prob": float(prob), "bins": n_bins, "smoothing": result.smoothing},
    )


# ------------------------------------------------------------------------- EMI
def emi(result: EDPResult, *, bins: int | None = None, warn: bool = True) -> xr.Dataset:
    """Abowd's empirical measure of imprecision, with a warning when epsilon is not above it.

    The EDP procedure run with the full data D in place of the neighbour, on independent
    draws: the bins are cut from the first half of every chain and the bin probabilities of
    "D" are the counts of the second halves (Charest & Han, sec. 4). The true value is 0, so
    what comes out is the noise floor of counting ``S / 2`` independent draws. It is the
    imprecision of the *refit* procedure at ``M = S / 2``; the reweighting estimate is far
    more precise (use :func:`epsilon_interval` for its error), and Charest & Han show a small
    EMI does not imply an accurate epsilon. A single independent set is used; Abowd et al.
    take the maximum over n such sets (one per neighbour), which is larger.

    Parameters
    ----------
    result : EDPResult
    bins : int, optional
        Number of bins; default the audit's.
    warn : bool, default True
        Issue an :class:`~pymc_edp.result.EDPWarning` when ``epsilon <= 2 EMI``.

    Returns
    -------
    xarray.Dataset
        ``emi`` (scalar, the maximum over parameters), ``emi_parameter`` (``parameter``);
        attributes ``n_draws`` (draws per half), ``bins``, ``smoothing``, ``epsilon`` and
        ``message`` (empty when epsilon is clearly above the EMI).

    References
    ----------
    .. [1] Abowd, J. M., Schneider, M. J. and Vilhuber, L. (2013), Journal of Privacy and
       Confidentiality 5(1).
    .. [2] Charest, A.-S. and Han, Y. (2017), Journal of Privacy and Confidentiality 7(3),
       sec. 4, Tables 3-4.

    Examples
    --------
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    >>> em = edp.diagnostics.emi(res, warn=False)
    >>> round(float(em["emi"]), 2), em.attrs["n_draws"]
    (0.27, 1000)
    >>> em.attrs["message"]  # empty: epsilon is clearly above 2 EMI
    ''
    """
    cache = _cache(result)
    n_bins = result.bins if bins is None else int(bins)
    key = ("emi", n_bins)
    if key not in cache:
        draws = _draws(result)
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
        alpha = result.smoothing
        for p in range(n_par):
            nb = int(cut.n_bins[p])
            c1 = cut.counts[p, :nb].astype(float)
            c2 = np.bincount(idx[p], minlength=nb)[:nb].astype(float)
            m = float(first.size)
            with np.errstate(divide="ignore"):
                d = np.abs(
                    np.log(c2 + alpha)
                    - np.log(m + nb * alpha)
                    - np.log(c1 + alpha)
                    + np.log(m + nb * alpha)
                )
            out[p] = d.max()
        value = float(out.max())
        message = ""
        if not result.epsilon > 2 * value and n_bins == result.bins:
            message = (
                f"epsilon = {result.epsilon:.3g} is not clearly above the noise floor: the "
                f"empirical measure of imprecision (the same procedure with the data compared "
                f"to itself, true value 0) is {value:.3g}, and epsilon is within 2 EMI of "
                "zero. By Abowd's criterion epsilon cannot be told apart from Monte-Carlo "
                "noise at this number of draws and bins: check result.interval() for the "
                "estimate's own error, and draw more samples or use fewer bins before "
                "quoting it."
            )
        cache[key] = xr.Dataset(
            {"emi": ((), value), "emi_parameter": (PARAMETER_DIM, out)},
            coords={PARAMETER_DIM: result.parameters[PARAMETER_DIM].values},
            attrs={
                "n_draws": int(first.size),
                "bins": n_bins,
                "smoothing": alpha,
                "epsilon": result.epsilon,
                "message": message,
            },
        )
    ds = cache[key]
    if warn and ds.attrs["message"]:
        warnings.warn(ds.attrs["message"], EDPWarning, stacklevel=3)
    return ds


# ------------------------------------------------------------ empty bins, smoothing
def empty_bins(result: EDPResult, *, bins: int | None = None) -> xr.Dataset:
    """Bins that receive no (or almost no) weight under a neighbour, per parameter.

    A bin whose neighbour probability estimate is zero makes the raw (``smoothing=0``)
    epsilon infinite; Charest & Han met this constantly with counts of independent draws and
    added ``alpha = 0.01`` draws to every bin. With reweighting every bin holds ``S / B``
    full-data draws with positive weight, so exact zeros only come from weights underflowing;
    bins with less than one draw's worth of weight are where the smoothing constant starts
    to matter.

    Parameters
    ----------
    result : EDPResult
    bins : int, optional
        Number of bins; default the audit's.

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
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    >>> eb = edp.diagnostics.empty_bins(res)
    >>> eb["n_empty"].values.tolist(), eb["n_under_one_draw"].values.tolist()
    ([0], [0])
    >>> eb.attrs["bins"]
    10
    """
    n_bins = result.bins if bins is None else int(bins)
    lw = _weights(result)
    b = _bins(result, n_bins)
    n, n_samples = lw.shape
    n_par = b.counts.shape[0]
    empty = np.zeros(n_par, dtype=np.int64)
    sparse = np.zeros(n_par, dtype=np.int64)
    nb_empty = np.zeros(n_par, dtype=np.int64)
    valid = np.arange(b.counts.shape[1])[None, :] < b.n_bins[:, None]
    for sl in _chunks(n, n_samples, factor=2):
        mass = binning.bin_probabilities(lw[sl], b) * n_samples
        zero = (mass <= 0) & valid
        empty += zero.sum(axis=(0, 2))
        sparse += ((mass < 1) & valid).sum(axis=(0, 2))
        nb_empty += zero.any(axis=2).sum(axis=0)
    return xr.Dataset(
        {
            "n_empty": (PARAMETER_DIM, empty),
            "n_under_one_draw": (PARAMETER_DIM, sparse),
            "neighbours_with_empty": (PARAMETER_DIM, nb_empty),
        },
        coords={
            PARAMETER_DIM: result.parameters[PARAMETER_DIM].values,
            "var_name": (PARAMETER_DIM, result.parameters["var_name"].values),
        },
        attrs={
            "smoothing": result.smoothing,
            "bins": n_bins,
            "n_pairs": n * b.n_bins,
            "refit_neighbours": int(_refitted(result).sum()),
        },
    )


def smoothing_sensitivity(
    result: EDPResult,
    smoothing: Sequence[float] = (0.0, 0.001, 0.01, 0.1, 1.0),
    *,
    bins: int | None = None,
) -> xr.DataArray:
    """Epsilon recomputed from the stored weights for several additive smoothing constants.

    ``smoothing = 0`` is the raw estimator: infinite as soon as one bin of one neighbour
    receives no weight. Rather than return ``inf`` silently this warns
    (:class:`~pymc_edp.result.EDPWarning`) with the number of such bins.

    Parameters
    ----------
    result : EDPResult
    smoothing : sequence of float, default (0, 0.001, 0.01, 0.1, 1)
        Additive constants in units of draws.
    bins : int, optional
        Number of bins; default the audit's.

    Returns
    -------
    xarray.DataArray
        Epsilon over ``smoothing``; attributes ``bins``, ``audit_smoothing``.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017), sec. 4 (additive smoothing, alpha = 0.01).

    Examples
    --------
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    >>> eps = edp.diagnostics.smoothing_sensitivity(res, (0.0, 0.01, 1.0))
    >>> eps.round(3).values.tolist()
    [0.75..., 0.75..., 0.751]
    >>> eps.attrs["audit_smoothing"]
    0.01
    """
    n_bins = result.bins if bins is None else int(bins)
    lw = _weights(result)
    b = _bins(result, n_bins)
    values = np.asarray(smoothing, dtype=float)
    if np.any(values < 0) or not np.all(np.isfinite(values)):
        raise ValueError("smoothing values must be finite and >= 0")
    out = np.full(values.size, -np.inf)
    for sl in _chunks(lw.shape[0], lw.shape[1], factor=2):
        for a, alpha in enumerate(values):
            e, _ = binning.epsilon_from_log_weights(lw[sl], b, alpha)
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


# ---------------------------------------------------------------- eps(B) and B -> inf
def continuous_limit(result: EDPResult) -> xr.Dataset:
    """The ``B -> infinity`` reference: the largest absolute log density ratio over the draws.

    ``sup_s |log r_i(theta_s)|`` with ``r_i = S w_i`` the normalised importance weight times
    S, the density ratio ``p(theta | D') / p(theta | D)`` up to Monte-Carlo error in its
    normaliser. It bounds every parameter's B-EDP for every B (a bin's probability ratio is an
    average of ``r`` over the bin), and for a single parameter it is the ``B -> inf`` limit.
    For many models the supremum is infinite (two normal posteriors with different means have
    an unbounded log ratio): the sample maximum then keeps growing with S. This is checked on
    nested thinned subsamples of ``S / 64 .. S / 4`` draws (averaged over the disjoint
    subsamples of each size): if the growth over the last two doublings is at least 0.6 of
    the growth over the two before, the limit is reported as diverging (a bounded ratio's
    maximum converges geometrically, so the growth shrinks by a factor <= 0.5 there).

    Parameters
    ----------
    result : EDPResult

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
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    >>> lim = edp.diagnostics.continuous_limit(res)
    >>> round(float(lim["epsilon_inf"]), 2)
    2.83
    >>> bool(lim["diverges"])  # normal posteriors: the log density ratio is unbounded
    True
    >>> lim["sup_log_ratio"].dims
    ('neighbour',)
    """
    cache = _cache(result)
    if "continuous_limit" in cache:
        return cache["continuous_limit"]
    from scipy.special import logsumexp

    lw = _weights(result)
    n, n_samples = lw.shape
    sup = np.empty(n)
    for sl in _chunks(n, n_samples, factor=2):
        lr = lw[sl] - logsumexp(lw[sl], axis=1, keepdims=True) + np.log(n_samples)
        sup[sl] = np.abs(lr).max(axis=1)
    worst = int(np.argmax(sup))
    lr = lw[worst] - logsumexp(lw[worst]) + np.log(n_samples)
    a = np.abs(lr)
    levels = [k for k in (6, 4, 2) if n_samples >> k >= 16]
    growth = np.nan
    diverges = False
    note = ""
    if len(levels) == 3:
        mean_max = {}
        for k in levels:
            step = 2**k
            mean_max[k] = float(np.mean([a[o::step].max() for o in range(step)]))
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
            "B-EDP grows "
            "without bound as B -> inf; the value shown is only the supremum over these "
            "draws."
        )
    ds = xr.Dataset(
        {
            "sup_log_ratio": (NEIGHBOUR_DIM, sup),
            "epsilon_inf": ((), float(sup[worst])),
            "growth_per_doubling": ((), float(growth)),
            "diverges": ((), diverges),
        },
        coords=_neighbour_coords(result),
        attrs={"note": note},
    )
    cache["continuous_limit"] = ds
    return ds


def epsilon_curve(
    result: EDPResult,
    bins: Sequence[int] = DEFAULT_CURVE_BINS,
    *,
    prob: float | None = 0.9,
    candidates: int = DEFAULT_CANDIDATES,
    smoothing: float | None = None,
) -> xr.DataArray:
    """Epsilon as a function of the number of bins B, from the stored weights (no refits).

    Parameters
    ----------
    result : EDPResult
    bins : sequence of int, default (5, 10, 20, 50, 100, 250)
    prob : float or None, default 0.9
        Coverage of the Monte-Carlo interval drawn as error bars; None skips the errors.
    candidates : int, default 5
    smoothing : float, optional
        Additive smoothing constant; default the audit's.

    Returns
    -------
    xarray.DataArray
        Epsilon over ``bins``, with coordinates ``mcse``, ``lower``, ``upper`` and
        ``worst_neighbour``; attributes ``continuous_limit`` (the ``B -> inf`` reference of
        :func:`continuous_limit`), ``continuous_limit_diverges``, ``note``, ``prob`` and
        ``smoothing``. A B leaving fewer than 10 draws per bin gives NaN (and a warning).
        For refitted neighbours the curve uses their importance weights.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017), sec. 3.3, Table 2, Figure 2.

    Examples
    --------
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    >>> curve = edp.diagnostics.epsilon_curve(res, bins=(5, 10, 20))
    >>> curve.round(3).values.tolist()
    [0.562, 0.75..., 0.875]
    >>> list(curve.coords)
    ['bins', 'mcse', 'lower', 'upper', 'worst_neighbour']

    A B leaving fewer than 10 draws per bin gives NaN and an
    :class:`~pymc_edp.result.EDPWarning`:

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     curve = edp.diagnostics.epsilon_curve(res, bins=(10, 250), prob=None)
    >>> [w.category.__name__ for w in caught]
    ['EDPWarning']
    >>> curve.round(3).values.tolist()
    [0.75..., nan]
    """
    grid = np.asarray(list(bins), dtype=np.int64)
    if grid.ndim != 1 or grid.size == 0 or np.any(grid < 2):
        raise ValueError(f"bins must be a non-empty list of integers >= 2, got {bins!r}")
    lw = _weights(result)
    n_samples = lw.shape[1]
    alpha = float(result.smoothing if smoothing is None else smoothing)
    labels = result.pointwise[NEIGHBOUR_DIM].values
    eps = np.full(grid.size, np.nan)
    mcse = np.full(grid.size, np.nan)
    lower = np.full(grid.size, np.nan)
    upper = np.full(grid.size, np.nan)
    worst = np.empty(grid.size, dtype=labels.dtype)
    skipped = []
    for g, b in enumerate(grid):
        if n_samples < MIN_DRAWS_PER_BIN * b:
            skipped.append(int(b))
            worst[g] = labels[0]
            continue
        bo = _bins(result, int(b))
        e = np.empty(lw.shape[0])
        for sl in _chunks(lw.shape[0], n_samples, factor=2):
            e[sl] = binning.epsilon_from_log_weights(lw[sl], bo, alpha)[0].max(1)
        i = int(np.argmax(e))
        eps[g] = e[i]
        worst[g] = labels[i]
        if prob is not None:
            unc = _uncertainty(result, int(b), candidates, alpha)
            _, se_i, _, lo, hi = _summarise(result, unc, prob)
            mcse[g] = se_i[i]
            lower[g] = np.nanmax(lo)
            upper[g] = np.nanmax(hi)
    lim = continuous_limit(result)
    notes = [lim.attrs["note"]] if lim.attrs["note"] else []
    if _refitted(result).any():
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


# ----------------------------------------------------------------- (eps, delta) profile
def _delta_star(delta_i: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return -np.expm1(np.sum(np.log1p(-np.clip(delta_i, 0.0, 1.0)), axis=0))


def delta_profile(
    result: EDPResult,
    epsilons: Sequence[float] | np.ndarray,
    *,
    targets: Sequence[float] | None = None,
) -> xr.Dataset:
    """The bin-free (eps, delta) profile and total risk from the importance weights.

    For neighbour i, ``delta_i(eps) = max(E[(r_i - e^eps)_+], E[(1 - e^eps r_i)_+])`` with
    ``r_i = S w_i`` the density ratio of the neighbour to the full-data posterior and the
    expectation over the full-data draws (the hockey-stick divergence in both directions).
    ``delta(eps) = max_i delta_i(eps)`` and the total risk
    ``delta*(eps) = 1 - prod_i (1 - delta_i(eps))``. No bins and no kernel density estimate.

    Parameters
    ----------
    result : EDPResult
    epsilons : array_like
        Non-negative epsilons.
    targets : sequence of float, optional
        Deltas for which the smallest epsilon with ``delta(eps) <= target`` (and with
        ``delta*(eps) <= target``) is found by bisection.

    Returns
    -------
    xarray.Dataset
        ``delta_i`` (``neighbour``, ``epsilon``), ``delta`` and ``delta_star``
        (``epsilon``), ``worst_neighbour`` (``epsilon``); with ``targets``,
        ``epsilon_delta`` and ``epsilon_delta_star`` over ``target``. Attribute
        ``refit_neighbours``: refitted neighbours enter through their importance weights
        (use :func:`pymc_edp.base.hockey.hockey_stick_delta` with pooled weights for a refit).

    References
    ----------
    .. [1] Burchard, P., Daoud, A. and Dotterrer, D. "Empirical Differential Privacy."
       arXiv:2001.09190, 2020 (Theorem 1, Definition 3).

    Examples
    --------
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    >>> prof = edp.diagnostics.delta_profile(res, [0.0, 0.5, 1.0], targets=[0.01])
    >>> prof["delta"].round(3).values.tolist()
    [0.252, 0.135, 0.063]
    >>> bool((prof["delta_star"] >= prof["delta"]).all())
    True
    >>> round(float(prof["epsilon_delta"][0]), 2)
    1.87
    """
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    lw = _weights(result)
    n, n_samples = lw.shape
    delta_i = np.empty((n, eps.size))
    for sl in _chunks(n, n_samples, factor=4):
        delta_i[sl] = hockey.hockey_stick_delta(lw[sl], eps)
    labels = result.pointwise[NEIGHBOUR_DIM].values
    data = {
        "delta_i": ((NEIGHBOUR_DIM, "epsilon"), delta_i),
        "delta": ("epsilon", delta_i.max(axis=0)),
        "delta_star": ("epsilon", _delta_star(delta_i)),
        "worst_neighbour": ("epsilon", labels[np.argmax(delta_i, axis=0)]),
    }
    coords = {NEIGHBOUR_DIM: labels, "epsilon": eps}
    if targets is not None:
        tg = np.atleast_1d(np.asarray(targets, dtype=float))
        if np.any(tg < 0) or np.any(tg >= 1):
            raise ValueError("targets must be in [0, 1)")
        top = float(continuous_limit(result)["sup_log_ratio"].max()) + 1e-9
        prepared = [
            (sl, hockey.hockey_stick_prepare(lw[sl])) for sl in _chunks(n, n_samples, factor=4)
        ]
        data["epsilon_delta"] = ("target", _invert(prepared, n, tg, top, star=False))
        data["epsilon_delta_star"] = ("target", _invert(prepared, n, tg, top, star=True))
        coords["target"] = tg
    return xr.Dataset(
        data, coords=coords, attrs={"refit_neighbours": int(_refitted(result).sum())}
    )


def _invert(prepared: list, n: int, targets: np.ndarray, top: float, star: bool) -> np.ndarray:
    """Smallest eps with delta(eps) (or delta*) <= target, by bisection on [0, top]."""

    def f(e: np.ndarray) -> np.ndarray:
        d = np.empty((n, e.size))
        for sl, prep in prepared:
            d[sl] = hockey.hockey_stick_from_prepared(prep, e)
        return _delta_star(d) if star else d.max(axis=0)

    lo = np.zeros(targets.size)
    hi = np.full(targets.size, top)
    at_zero = f(lo) <= targets
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        ok = f(mid) <= targets
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
        if np.all(hi - lo < 1e-7 * max(top, 1.0)):
            break
    return np.where(at_zero, 0.0, hi)


# --------------------------------------------------------------------- inspection
def bin_log_ratios(result: EDPResult, neighbour=None, *, bins: int | None = None) -> xr.DataArray:
    """Bin log ratios ``log P_i(b) - log P(b)`` of one neighbour, over (parameter, bin).

    Parameters
    ----------
    result : EDPResult
    neighbour : optional
        Coordinate value of the neighbour; default the one attaining epsilon.
    bins : int, optional
        Number of bins; default the audit's.

    Returns
    -------
    xarray.DataArray
        Over (``parameter``, ``bin``); NaN past a parameter's effective number of bins.

    Examples
    --------
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    >>> lr = edp.diagnostics.bin_log_ratios(res, "Choate")
    >>> lr.dims, lr.sizes["bin"]
    (('parameter', 'bin'), 10)
    >>> bool(abs(lr).max() <= res.epsilon)
    True
    >>> edp.diagnostics.bin_log_ratios(res, bins=5).sizes["bin"]
    5
    """
    n_bins = result.bins if bins is None else int(bins)
    labels = result.pointwise[NEIGHBOUR_DIM].values
    if neighbour is None:
        neighbour = result.worst_neighbour
    hits = np.flatnonzero(labels == neighbour)
    if hits.size == 0:
        raise KeyError(f"no neighbour {neighbour!r}; neighbours are e.g. {list(labels[:5])}")
    lw = _weights(result)[hits[:1]]
    b = _bins(result, n_bins)
    ratios = binning.bin_log_ratios(lw, b, result.smoothing)[0]
    return xr.DataArray(
        ratios,
        dims=(PARAMETER_DIM, "bin"),
        coords={
            PARAMETER_DIM: result.parameters[PARAMETER_DIM].values,
            "bin": np.arange(ratios.shape[1]),
        },
        name="log_ratio",
        attrs={"neighbour": neighbour, "bins": n_bins, "smoothing": result.smoothing},
    )


def diagnose(result: EDPResult, prob: float = 0.9) -> str:
    """A plain-language report of how far to trust the audit's epsilon.

    Parameters
    ----------
    result : EDPResult
    prob : float, default 0.9

    Returns
    -------
    str

    Examples
    --------
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    >>> report = edp.diagnostics.diagnose(res, prob=0.9)
    >>> print(report.splitlines()[0])
    epsilon = 0.75... (B = 10, smoothing = 0.01)
    >>> "90% interval" in report
    True
    """
    iv = epsilon_interval(result, prob)
    se = epsilon_mcse(result)
    em = emi(result, warn=False)
    eb = empty_bins(result)
    lim = continuous_limit(result)
    lo, hi = (float(v) for v in iv["epsilon"].values)
    lines = [
        f"epsilon = {result.epsilon:.3f} (B = {result.bins}, smoothing = {result.smoothing:g})",
        f"  Monte-Carlo s.e. {float(se['epsilon']):.3g}, {100 * prob:.0f}% interval "
        f"[{lo:.3f}, {hi:.3f}] (effective sample size of the worst bin's estimate: "
        f"{float(se['ess_i'].values[np.nanargmax(se['estimate_i'].values)]):.0f} of "
        f"{result.n_samples} draws)",
        f"  EMI (Abowd's noise floor of counting {em.attrs['n_draws']} independent draws): "
        f"{float(em['emi']):.3g}",
        f"  bins with no weight: {int(eb['n_empty'].sum())}; with under one draw's weight: "
        f"{int(eb['n_under_one_draw'].sum())}",
        f"  B -> inf reference (largest |log density ratio| over the draws): "
        f"{float(lim['epsilon_inf']):.3f}",
    ]
    if em.attrs["message"]:
        lines.append("  WARNING: " + em.attrs["message"])
    if lim.attrs["note"]:
        lines.append("  Note: " + lim.attrs["note"])
    if _refitted(result).any():
        lines.append(
            "  Note: refitted neighbours' errors describe their reweighting estimate (their "
            "importance weights are what the result keeps)."
        )
    return "\n".join(lines)

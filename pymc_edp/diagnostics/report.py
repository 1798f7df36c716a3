"""One neighbour's bin log ratios, and the one report of the audit's headline.

:func:`headline` says, from what the result holds, what the headline epsilon is worth: its
90% Monte-Carlo interval, whether it is a lower bound (a resolution limit, and why),
whether refits confirmed it, and the one statement about noise, which comes from that
interval. The printout, the HTML view and :func:`diagnose` all use it, so they say the
same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from pymc_edp.base import binning, limits
from pymc_edp.base.common import (
    NEIGHBOUR_DIM,
    PARAMETER_DIM,
)
from pymc_edp.diagnostics._common import (
    bins_of,
    kept_weights,
    refitted,
)
from pymc_edp.diagnostics.curve import continuous_limit
from pymc_edp.diagnostics.imprecision import emi, empty_bins
from pymc_edp.diagnostics.uncertainty import epsilon_interval, epsilon_mcse

if TYPE_CHECKING:
    from pymc_edp.results.edp import EDPResult


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
    lw_all, rows = kept_weights(result)
    at = np.flatnonzero(rows == hits[0])
    if at.size == 0:
        raise ValueError(
            f"the weights of neighbour {neighbour!r} were not kept (a large audit keeps those "
            "of the neighbours that can set epsilon): rerun edp.audit(..., "
            "store_weights=True, prune=False)"
        )
    lw = lw_all[at]
    b = bins_of(result, n_bins)
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


@dataclass(frozen=True)
class Headline:
    """What the headline epsilon is worth, in the words every view uses.

    Attributes
    ----------
    epsilon : float
    interval : (float, float) or None
        Its 90% Monte-Carlo interval (upper end ``inf`` when epsilon is a lower bound); None
        when the result holds neither weights nor stored intervals.
    lower_bound : bool
        Some neighbour's estimate is at a resolution limit: the truth may be larger.
    limit_lines : tuple of str
        One sentence per kind of limit met: how many neighbours, why, and the remedy.
    verification : str
        Whether refits confirmed the headline, or why it is unverified.
    caution : str
        The noise statement, from the interval ("" when there is nothing to say).

    Examples
    --------
    >>> from pymc_edp.diagnostics import Headline
    >>> head = Headline(9.9, (4.2, float("inf")), True, ("1 neighbour(s) ...",), "unverified", "")
    >>> for line in head.lines():
    ...     print(line)
    90% Monte-Carlo interval of epsilon: [4.200, inf)
    Verification: unverified
    Lower bound: 1 neighbour(s) ...
    """

    epsilon: float
    interval: tuple[float, float] | None
    lower_bound: bool
    limit_lines: tuple[str, ...]
    verification: str
    caution: str

    def lines(self) -> list[str]:
        """The lines printed under epsilon."""
        out = []
        if self.interval is not None:
            out.append(f"90% Monte-Carlo interval of epsilon: {format_interval(self.interval)}")
        out.append(f"Verification: {self.verification}")
        out += [f"Lower bound: {line}" for line in self.limit_lines]
        if self.caution:
            out.append(f"Caution: {self.caution}")
        return out

    def notes(self) -> list[str]:
        """Lower-bound and noise statements, as the warnings list of a view shows them."""
        out = [f"Lower bound: {line}" for line in self.limit_lines]
        if self.caution:
            out.append(f"Caution: {self.caution}")
        return out


def format_interval(interval: tuple[float, float]) -> str:
    """``[a, b]``, or ``[a, inf)`` for an interval open above."""
    lo, hi = interval
    return f"[{lo:.3f}, {hi:.3f}]" if np.isfinite(hi) else f"[{lo:.3f}, inf)"


def noise_caution(epsilon: float, interval: tuple[float, float] | None, prob: float = 0.9) -> str:
    """The one statement about Monte-Carlo noise, read off the estimator's own interval.

    Nothing when the interval is narrow and clear of zero; when it reaches zero, epsilon is
    not distinguishable from zero; when it is wider than epsilon itself, epsilon is
    imprecise. An interval open above is a lower bound, said elsewhere.

    Examples
    --------
    >>> from pymc_edp.diagnostics.report import noise_caution
    >>> noise_caution(0.99, (0.955, 1.033))
    ''
    >>> noise_caution(0.05, (0.0, 0.21))[:45]
    'the 90% Monte-Carlo interval of epsilon reach'
    """
    if interval is None or not np.isfinite(epsilon):
        return ""
    lo, hi = interval
    pct = f"{100 * prob:.0f}%"
    if not np.isfinite(hi):
        return ""
    if lo <= 0:
        return (
            f"the {pct} Monte-Carlo interval of epsilon reaches 0: at this number of draws "
            "and bins epsilon cannot be told apart from zero (draw more samples or use fewer "
            "bins before quoting it)"
        )
    if hi - lo > epsilon:
        return (
            f"the {pct} Monte-Carlo interval of epsilon is wider than epsilon itself: the "
            "estimate is imprecise (draw more samples or use fewer bins)"
        )
    return ""


def _limit_lines(result: EDPResult) -> tuple[str, ...]:
    pw = result.pointwise
    if "limit" not in pw:
        return ()
    codes = np.asarray(pw["limit"].values)
    eps = np.nan_to_num(np.asarray(pw["epsilon"].values, dtype=float), nan=-np.inf)
    labels = pw[NEIGHBOUR_DIM].values
    out = []
    for code in (limits.EMPTY_BIN, limits.SMOOTHING, limits.FEW_DRAWS, limits.UNVERIFIED):
        hit = np.flatnonzero(codes == code)
        if not hit.size:
            continue
        worst = hit[np.argmax(eps[hit])]
        out.append(
            f"{hit.size} neighbour(s) at a resolution limit: {limits.REASONS[code]} (worst: "
            f"{labels[worst]}, {eps[worst]:.3f}). Remedy: {limits.REMEDIES[code]}."
        )
    hit = np.flatnonzero(codes == limits.NOT_EVALUATED)
    if hit.size:
        out.append(
            f"{hit.size} neighbour(s) not evaluated: {limits.REASONS[limits.NOT_EVALUATED]} "
            f"(e.g. {labels[hit[0]]}). Remedy: {limits.REMEDIES[limits.NOT_EVALUATED]}."
        )
    return tuple(out)


def headline(result: EDPResult) -> Headline:
    """The headline epsilon with its interval, limits, verification and noise statement.

    Parameters
    ----------
    result : EDPResult

    Returns
    -------
    Headline

    Examples
    --------
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> from pymc_edp.diagnostics import headline
    >>> res = edp.audit(load_eight_schools(), var_names="mu", bins=10, method="psis",
    ...                 progressbar=False)
    >>> h = headline(res)
    >>> h.lower_bound, h.caution
    (False, '')
    >>> h.verification
    "unverified: method='psis' reweights only"
    """
    interval = result.mc_interval90
    if interval is None and result.log_weights is not None:
        iv = epsilon_interval(result, 0.9)["epsilon"].values
        interval = (float(iv[0]), float(iv[1]))
    lower_bound = result.lower_bound
    if interval is not None and lower_bound:
        interval = (interval[0], float("inf"))
    note = result.verification_note or result.verification
    return Headline(
        epsilon=result.epsilon,
        interval=interval,
        lower_bound=lower_bound,
        limit_lines=_limit_lines(result),
        verification=note,
        caution=noise_caution(result.epsilon, interval),
    )


def diagnose(result: EDPResult, prob: float = 0.9) -> str:
    """A plain-language report of how far to trust the audit's epsilon.

    The headline's interval, limits, verification and noise statement (:func:`headline`,
    the same sentences as the printout and the HTML view), then the Monte-Carlo error of
    the worst neighbour, Abowd's EMI (labelled: the noise floor of refit-and-count, not an
    error of this estimate), bins without weight and the ``B -> inf`` reference, as far as
    the result holds the weights they need.

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
    epsilon = 0.75... (B = 10, smoothing = none)
    >>> "90% Monte-Carlo interval" in report and "EMI" in report
    True
    """
    head = headline(result)
    smoothing = f"{result.smoothing:g}" if result.smoothing > 0 else "none"
    bound = " (a lower bound)" if head.lower_bound else ""
    lines = [
        f"epsilon = {result.epsilon:.3f}{bound} (B = {result.bins}, smoothing = {smoothing})",
        *[f"  {line}" for line in head.lines()],
    ]
    if prob != 0.9 or result.log_weights is not None:
        try:
            iv = epsilon_interval(result, prob)
            se = epsilon_mcse(result)
        except ValueError as err:
            lines.append(f"  (no further Monte-Carlo detail: {err})")
        else:
            lo, hi = (float(v) for v in iv["epsilon"].values)
            worst = int(np.nanargmax(se["estimate_i"].values))
            ess = float(se["ess_i"].values[worst])
            ess_text = f"{ess:.0f} of {result.n_samples} draws" if np.isfinite(ess) else "a refit"
            lines.append(
                f"  Monte-Carlo s.e. {float(se['epsilon']):.3g}, {100 * prob:.0f}% interval "
                f"{format_interval((lo, hi))} (effective sample size of the worst bin's "
                f"estimate: {ess_text})"
            )
    if result.draws is not None:
        em = emi(result)
        lines.append(
            f"  Abowd's EMI, the noise floor of refit-and-count with {em.attrs['n_draws']} "
            f"independent draws (not an error of this estimate): {float(em['emi']):.3g}"
        )
    if result.log_weights is not None and result.draws is not None:
        try:
            eb = empty_bins(result)
            lim = continuous_limit(result)
        except ValueError:  # only the weights of the neighbours that can set epsilon
            pass
        else:
            lines += [
                f"  bins with no weight: {int(eb['n_empty'].sum())}; with under one draw's "
                f"weight: {int(eb['n_under_one_draw'].sum())}",
                f"  B -> inf reference (largest |log density ratio| over the draws): "
                f"{float(lim['epsilon_inf']):.3f}",
            ]
            if lim.attrs["note"]:
                lines.append("  Note: " + lim.attrs["note"])
    if refitted(result).any():
        lines.append(
            "  Note: refitted and moment-matched neighbours' errors are their own estimates' "
            "(pointwise['refit_mcse'])."
        )
    return "\n".join(lines)

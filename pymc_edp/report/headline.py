"""The audit's headline, for every view: what its epsilon is worth, in words (:func:`headline`).

Whether the fit converged, epsilon's 90% Monte-Carlo interval, whether it is a lower bound
and why, whether refits confirmed it, and the one statement about noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymc_edp.base import limits
from pymc_edp.base.common import NEIGHBOUR_DIM
from pymc_edp.core.select import left_out_message
from pymc_edp.diagnostics import epsilon_interval
from pymc_edp.report._common import AuditSummary

__all__ = ["Headline", "format_interval", "headline", "noise_caution"]


@dataclass(frozen=True)
class Headline:
    """What the headline epsilon is worth, in the words every view uses.

    Attributes
    ----------
    epsilon : float
    interval : (float, float) or None
        Its 90% Monte-Carlo interval (open above for a lower bound); None without weights
        or stored intervals.
    lower_bound : bool
        Some neighbour's estimate is at a resolution limit.
    limit_lines : tuple of str
        One sentence per kind of limit met: how many neighbours, why, and the remedy.
    verification : str
        Whether refits confirmed the headline, or why it is unverified.
    caution : str
        The noise statement ("" when there is nothing to say).
    left_out : str
        What was not binned and why (:func:`pymc_edp.core.select.left_out_message`).
    fit : str
        What PyMC's convergence checks find ("" for nothing): the audit's warning, or what
        the sampler already reported
        (:meth:`pymc_edp.model.convergence.FitConvergence.note`).
    records : tuple of str
        What a record is, where it is not simply a value (``res.records``).

    Examples
    --------
    >>> from pymc_edp.report import Headline
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
    left_out: str = ""
    fit: str = ""
    records: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        """The lines printed under epsilon."""
        out = [self.fit] if self.fit else []
        if self.interval is not None:
            out.append(f"90% Monte-Carlo interval of epsilon: {format_interval(self.interval)}")
        out.append(f"Verification: {self.verification}")
        out += [f"Lower bound: {line}" for line in self.limit_lines]
        if self.caution:
            out.append(f"Caution: {self.caution}")
        if self.left_out:
            out.append(self.left_out)
        out += [f"Records: {line}" for line in self.records]
        return out


def format_interval(interval: tuple[float, float]) -> str:
    """``[a, b]``, or ``[a, inf)`` for an interval open above.

    Examples
    --------
    >>> edp.report.format_interval((0.61, 0.875))
    '[0.610, 0.875]'
    >>> edp.report.format_interval((4.2, float("inf")))
    '[4.200, inf)'
    """
    lo, hi = interval
    return f"[{lo:.3f}, {hi:.3f}]" if np.isfinite(hi) else f"[{lo:.3f}, inf)"


def noise_caution(epsilon: float, interval: tuple[float, float] | None, prob: float = 0.9) -> str:
    """The one statement about Monte-Carlo noise, read off the estimator's own interval.

    Said when the interval reaches zero or is wider than epsilon; nothing otherwise (nor for
    an interval open above: a lower bound is said elsewhere).

    Examples
    --------
    >>> edp.report.noise_caution(0.99, (0.955, 1.033))
    ''
    >>> edp.report.noise_caution(0.05, (0.0, 0.21))[:45]
    'the 90% Monte-Carlo interval of epsilon reach'
    """
    if interval is None or not np.isfinite(epsilon) or not np.isfinite(interval[1]):
        return ""
    lo, hi = interval
    pct = f"{100 * prob:.0f}%"
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


def _limit_lines(result: AuditSummary) -> tuple[str, ...]:
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


def headline(result: AuditSummary) -> Headline:
    """The headline epsilon with its interval, limits, verification and noise statement.

    Examples
    --------
    >>> h = edp.report.headline(res)
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
    fit = getattr(result, "convergence", None)  # None: not recorded (an older result)
    return Headline(
        epsilon=result.epsilon,
        interval=interval,
        lower_bound=lower_bound,
        limit_lines=_limit_lines(result),
        verification=note,
        caution=noise_caution(result.epsilon, interval),
        left_out=left_out_message(getattr(result, "left_out", ())),
        fit="" if fit is None else fit.note(),
        records=tuple(getattr(result, "records", ())),
    )

"""What ``k`` published releases give away, in words: :func:`release_facts`, for every view."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

from pymc_edp.core.neighbours import neighbour_words
from pymc_edp.report.headline import format_interval

__all__ = ["POST_PROCESSING", "ReleaseFacts", "release_facts", "release_text"]

#: The post-processing sentence under the comparison of release levels.
POST_PROCESSING = (
    "Each level is computed from the one before it (draws -> synthetic datasets -> a "
    "statistic of them), so a later level can be no less private than an earlier one: "
    "its epsilon is at most the earlier level's."
)

#: ``details`` keys shown, in this order, with their labels.
_DETAILS = (
    ("draws", "posterior draws"),
    ("chains", "chains"),
    ("outputs", "outputs"),
    ("listed", "outputs listed"),
    ("size", "synthetic dataset size"),
    ("observed", "observed"),
    ("statistic", "statistic"),
    ("bins", "bins"),
    ("bootstrap", "bootstrap replicates"),
    ("accuracy", "accuracy"),
    ("log_mean_bias", "log-mean bias"),
    ("discretisation", "discretisation"),
    ("contributing", "effective draws (worst pair)"),
    ("verification", "verification"),
)


@dataclass(frozen=True)
class ReleaseFacts:
    """What a release audit says, formatted once for the printout and the HTML view."""

    title: str
    published: str  # what each release publishes
    setting: str  # k and the neighbour relation
    epsilon: str
    interval: str
    delta: str
    lower_bound: bool  # flagged, or the interval is open above
    headline: str  # the headline sentence
    bound: str  # why the headline is a lower bound ("" when it is not)
    worst_neighbour: str
    comparison: tuple[tuple[str, str, str], ...]  # (level, publishes, "≥ " if a bound + eps)
    post_processing: str  # POST_PROCESSING and why a level is a bound ("" without levels)
    details: tuple[tuple[str, str], ...]  # (label, value)
    notes: tuple[str, ...]


def _format(value: Any) -> str:
    if isinstance(value, float | np.floating):
        return f"{float(value):.4g}"
    return str(value.item() if isinstance(value, np.generic) else value)


def _comparison(res: Any) -> tuple[tuple[str, str, str], ...]:
    comp = res.comparison
    if "level" not in comp.dims or "worst" not in comp:
        return ()
    levels = comp["level"].values.astype(str)
    publishes = comp["publishes"].values if "publishes" in comp.coords else levels
    bounds = comp.get("worst_lower_bound", np.zeros(levels.size, dtype=bool))
    rows = []
    for level, what, eps, bound in zip(
        levels, publishes, comp["worst"].values, np.asarray(bounds), strict=True
    ):
        what, value = str(what), f"{float(eps):.3f}"
        if bound:
            value, what = f"≥ {value}", f"{what}; a lower bound"
        rows.append((level, what, value))
    return tuple(rows)


def _comparison_bound(res: Any, comparison) -> str:
    """Why a level of the comparison is a lower bound ("" when none is)."""
    if not any(eps.startswith("≥") for _, _, eps in comparison):
        return ""
    text = (
        "≥: a lower bound, resting on fewer than 10 effective draws or outputs; the true "
        "epsilon may be larger"
    )
    if float(res.target_delta) == 0:
        text += (
            " (at delta = 0 a sampled level's epsilon is the largest loss among the draws: "
            "the truth is infinite when the loss is unbounded, e.g. a posterior's density "
            "ratio)"
        )
    return text + "."


def release_facts(res: Any) -> ReleaseFacts:
    """The facts every view of a release audit (a :class:`~pymc_edp.ReleaseResult`) shows.

    Examples
    --------
    >>> res = edp.ReleaseResult("draws", 5, 1e-3, 6.65, (5.67, float("inf")), 0.9, False,
    ...                         "St. Paul's", "remove", *[xr.Dataset()] * 4)
    >>> facts = release_facts(res)
    >>> facts.lower_bound, facts.interval
    (True, '[5.670, inf)')
    >>> print(facts.headline)
    epsilon = 6.650 [5.670, inf) (90% MC interval; a lower bound) at delta = 0.001 for 5 releases
    """
    lo, hi = (float(v) for v in res.interval)
    lower = bool(res.lower_bound) or not np.isfinite(hi)
    interval = format_interval((lo, hi))
    pct = f"{100 * float(res.prob):.0f}%"
    plural = "release" if int(res.k) == 1 else "releases"
    epsilon, delta = f"{float(res.headline):.3f}", f"{float(res.target_delta):g}"
    headline = (
        f"epsilon = {epsilon} {interval} ({pct} MC interval{'; a lower bound' if lower else ''})"
        f" at delta = {delta} for {int(res.k)} {plural}"
    )
    bound = (
        "Lower bound: the draws (or outputs) cannot resolve a delta this small (fewer than "
        "10 effective draws set it), so the true epsilon may be larger"
        if lower
        else ""
    )
    comparison = _comparison(res)
    published = res.publishes or str(res.release)
    details = tuple(
        (label, _format(res.details[key])) for key, label in _DETAILS if key in res.details
    )
    return ReleaseFacts(
        title=f"Empirical DP of a release ({res.release}: {published})",
        published=published,
        setting=(
            f"k = {int(res.k)} independent {plural}, neighbour: "
            f"one {neighbour_words(res.neighbour)}"
        ),
        epsilon=epsilon,
        interval=interval,
        delta=delta,
        lower_bound=lower,
        headline=headline,
        bound=bound,
        worst_neighbour=str(res.worst_neighbour),
        comparison=comparison,
        post_processing=(
            " ".join(t for t in (POST_PROCESSING, _comparison_bound(res, comparison)) if t)
            if comparison
            else ""
        ),
        details=details,
        notes=tuple(str(n) for n in res.notes),
    )


def release_text(res: Any) -> str:
    """The printout of a release audit (``repr(res)``): the facts of :func:`release_facts`.

    Examples
    --------
    >>> res = edp.ReleaseResult("draws", 5, 1e-3, 6.65, (5.67, 7.8), 0.9, False, "St. Paul's",
    ...                         "remove", *[xr.Dataset()] * 4, notes=("a note",),
    ...                         publishes="posterior draws")
    >>> print(release_text(res))  # doctest: +NORMALIZE_WHITESPACE
    Empirical DP of a release (draws: posterior draws)
    k = 5 independent releases, neighbour: one record removed
    <BLANKLINE>
    epsilon = 6.650 [5.670, 7.800] (90% MC interval) at delta = 0.001 for 5 releases
    worst neighbour: St. Paul's
    <BLANKLINE>
    Notes:
    - a note
    """
    facts = release_facts(res)
    lines = [facts.title, facts.setting, "", facts.headline]
    if facts.bound:
        lines.append(facts.bound)
    lines.append(f"worst neighbour: {facts.worst_neighbour}")
    if facts.comparison:
        lines += ["", "Post-processing (epsilon at the same delta and k):"]
        lines += [f"  {level:<10} {eps:>9}  ({what})" for level, what, eps in facts.comparison]
        lines.append(
            textwrap.fill(facts.post_processing, 88, initial_indent="  ", subsequent_indent="  ")
        )
    if facts.details:
        lines += ["", "Details:"]
        lines += [f"  {label}: {value}" for label, value in facts.details]
    if facts.notes:
        lines += ["", "Notes:"] + [f"- {note}" for note in facts.notes]
    return "\n".join(lines)

"""The Pareto k-hat classes of an audit's neighbours, for every view: :func:`khat_counts`.

ArviZ's classes against ``khat_threshold`` (:func:`pymc_edp.base.psis.khat_classes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pymc_edp.base.common import NEIGHBOUR_DIM
from pymc_edp.base.psis import KHAT_CLASSES, khat_classes, khat_table
from pymc_edp.diagnostics._common import neighbour_maximum

__all__ = ["NOT_COMPUTED", "KhatCounts", "khat_counts"]

#: The class of a neighbour without a k-hat (pruned, or refitted without weights).
NOT_COMPUTED = "not computed"


@dataclass(frozen=True)
class KhatCounts:
    """Every neighbour's Pareto k-hat class, and how many there are of each.

    Attributes
    ----------
    threshold : float
        ``khat_threshold``.
    classes : numpy.ndarray of str
        One per neighbour: ``"good"``, ``"bad"``, ``"very bad"`` or ``"not computed"``.
    rows : tuple of (range, class, count, percent)
        As the tables print them; percentages of the neighbours with a k-hat.
    not_computed : int
        Neighbours without a k-hat.

    Examples
    --------
    >>> counts = edp.report.KhatCounts.from_values([0.2, 0.8, 1.4, float("nan")], 0.7)
    >>> counts.classes.tolist()
    ['good', 'bad', 'very bad', 'not computed']
    >>> counts.count("bad"), counts.above_threshold, counts.not_computed
    (1, 2, 1)
    >>> rng, cls, count, pct = counts.rows[0]
    >>> rng, cls, count, round(pct, 1)
    ('(-Inf, 0.70]', 'good', 1, 33.3)
    """

    threshold: float
    classes: np.ndarray
    rows: tuple[tuple[str, str, int, float], ...]
    not_computed: int

    @classmethod
    def from_values(cls, pareto_k: Any, threshold: float) -> KhatCounts:
        """Classify k-hat values (one per neighbour) against ``threshold``."""
        khat = np.asarray(pareto_k, dtype=float).reshape(-1)
        raw = khat_classes(khat, threshold)
        rows, not_computed = khat_table(khat, threshold)
        classes = np.where(raw == "", NOT_COMPUTED, raw).astype(str)
        return cls(float(threshold), classes, tuple(rows), int(not_computed))

    def count(self, cls: str) -> int:
        """How many neighbours are in class ``cls`` (``"not computed"`` included)."""
        return int(np.sum(self.classes == cls))

    @property
    def above_threshold(self) -> int:
        """Neighbours whose k-hat is above the threshold (``"bad"`` and ``"very bad"``)."""
        return sum(self.count(c) for c in KHAT_CLASSES[1:])

    def as_dict(self) -> dict[str, int]:
        """``{class: count}`` over the three k-hat classes and ``"not computed"``."""
        return {c: self.count(c) for c in (*KHAT_CLASSES, NOT_COMPUTED)}


def khat_counts(result: Any, dim: str = NEIGHBOUR_DIM) -> KhatCounts:
    """The k-hat class of every neighbour of an audit, and the counts every view shows.

    ``pointwise["pareto_k"]`` (max over other dimensions) against ``khat_threshold`` (0.7
    if none); neighbours without one are ``"not computed"``.

    Examples
    --------
    >>> edp.report.khat_counts(res).as_dict()
    {'good': 8, 'bad': 0, 'very bad': 0, 'not computed': 0}
    """
    pw = result.pointwise
    threshold = float(getattr(result, "khat_threshold", 0.7))
    if "pareto_k" not in pw:
        return KhatCounts.from_values(np.full(pw.sizes.get(dim, 0), np.nan), threshold)
    return KhatCounts.from_values(neighbour_maximum(pw["pareto_k"], dim), threshold)

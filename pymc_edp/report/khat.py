"""The Pareto k-hat classes of an audit's neighbours, counted once for every view.

The printout (``print(res)``), the HTML view (``res._repr_html_()``) and the figures
(:func:`pymc_edp.plots.plot_pointwise_epsilon`, ...) all take their classes and counts
from :func:`khat_counts`, which classifies with :func:`pymc_edp.base.psis.khat_classes`
(ArviZ's PSIS-LOO classes against the result's ``khat_threshold``): they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pymc_edp.base.common import NEIGHBOUR_DIM
from pymc_edp.base.psis import KHAT_CLASSES, khat_classes, khat_table

__all__ = ["NOT_COMPUTED", "KhatCounts", "khat_counts"]

#: The class of a neighbour without a k-hat (pruned, or refitted without weights).
NOT_COMPUTED = "not computed"


@dataclass(frozen=True)
class KhatCounts:
    """Every neighbour's Pareto k-hat class, and how many there are of each.

    Attributes
    ----------
    threshold : float
        The reliability threshold the classes are cut at (``khat_threshold``).
    classes : numpy.ndarray of str
        One per neighbour: ``"good"``, ``"bad"``, ``"very bad"`` or ``"not computed"``.
    rows : tuple of (range, class, count, percent)
        One row per class with a k-hat, as the tables print them (:func:`khat_table`);
        percentages of the neighbours that have one.
    not_computed : int
        Neighbours without a k-hat: in no percentage.

    Examples
    --------
    >>> from pymc_edp.report import KhatCounts
    >>> counts = KhatCounts.from_values([0.2, 0.8, 1.4, float("nan")], 0.7)
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
        """Classify k-hat values (one per neighbour) against ``threshold``.

        Examples
        --------
        >>> from pymc_edp.report import KhatCounts
        >>> KhatCounts.from_values([0.5, float("nan")], 0.7).not_computed
        1
        """
        khat = np.asarray(pareto_k, dtype=float).reshape(-1)
        raw = khat_classes(khat, threshold)
        rows, not_computed = khat_table(khat, threshold)
        classes = np.where(raw == "", NOT_COMPUTED, raw).astype(str)
        return cls(float(threshold), classes, tuple(rows), int(not_computed))

    def count(self, cls: str) -> int:
        """How many neighbours are in class ``cls`` (``"not computed"`` included).

        Examples
        --------
        >>> from pymc_edp.report import KhatCounts
        >>> KhatCounts.from_values([0.2, 0.3, 0.9], 0.7).count("good")
        2
        """
        return int(np.sum(self.classes == cls))

    @property
    def above_threshold(self) -> int:
        """Neighbours whose k-hat is above the threshold (``"bad"`` and ``"very bad"``)."""
        return sum(self.count(c) for c in KHAT_CLASSES[1:])

    def as_dict(self) -> dict[str, int]:
        """``{class: count}`` over the three k-hat classes and ``"not computed"``.

        Examples
        --------
        >>> from pymc_edp.report import KhatCounts
        >>> KhatCounts.from_values([0.2, float("nan")], 0.7).as_dict()
        {'good': 1, 'bad': 0, 'very bad': 0, 'not computed': 1}
        """
        return {c: self.count(c) for c in (*KHAT_CLASSES, NOT_COMPUTED)}


def khat_counts(result: Any, dim: str = NEIGHBOUR_DIM) -> KhatCounts:
    """The k-hat class of every neighbour of an audit, and the counts every view shows.

    One k-hat per neighbour: ``pointwise["pareto_k"]`` (its maximum over any other
    dimension); neighbours without one (pruned, refitted without weights), or all of them
    when the result has no ``pareto_k``, are ``"not computed"``. The threshold is the
    result's ``khat_threshold`` (0.7 if it has none).

    Parameters
    ----------
    result : AuditSummary
        An audit result (:class:`pymc_edp.EDPResult`): needs ``pointwise``.
    dim : str, default "neighbour"
        The neighbour dimension of ``result.pointwise``.

    Returns
    -------
    KhatCounts

    Examples
    --------
    >>> from pymc_edp.report import khat_counts
    >>> khat_counts(res).as_dict()
    {'good': 8, 'bad': 0, 'very bad': 0, 'not computed': 0}
    """
    pw = result.pointwise
    threshold = float(getattr(result, "khat_threshold", 0.7))
    if "pareto_k" not in pw:
        n = pw.sizes[dim] if dim in pw.sizes else 0
        return KhatCounts.from_values(np.full(n, np.nan), threshold)
    khat = pw["pareto_k"]
    extra = [d for d in khat.dims if d != dim]
    if extra:
        khat = khat.max(dim=extra)
    return KhatCounts.from_values(khat.values, threshold)

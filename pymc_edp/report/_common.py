"""What the report and the views read from the results: two read-only protocols.

The report sits above the results but does not need their classes: it reads the
attributes listed here, which :class:`pymc_edp.EDPResult` and
:class:`pymc_edp.PriorTuningResult` have (any object with them will do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pymc_edp.diagnostics._common import AuditData

if TYPE_CHECKING:
    import pandas as pd
    import xarray as xr

__all__ = ["AuditSummary", "TuningSummary"]


@runtime_checkable
class AuditSummary(AuditData, Protocol):
    """An audit as the report, the HTML view and the figures read it.

    The attributes of :class:`~pymc_edp.diagnostics._common.AuditData` and those of the
    headline and the tables: ``khat_threshold``, ``n_samples``, ``n_neighbours``,
    ``lower_bound``, ``mc_interval90``, ``verification``, ``verification_note``,
    ``warnings``, ``neighbour``, ``method`` and ``summary()``.

    Examples
    --------
    >>> from pymc_edp.report._common import AuditSummary
    >>> isinstance(res, AuditSummary)
    True
    """

    @property
    def khat_threshold(self) -> float: ...

    @property
    def n_samples(self) -> int: ...

    @property
    def n_neighbours(self) -> int: ...

    @property
    def lower_bound(self) -> bool: ...

    @property
    def mc_interval90(self) -> tuple | None: ...

    @property
    def verification(self) -> str: ...

    @property
    def verification_note(self) -> str: ...

    @property
    def warnings(self) -> tuple: ...

    @property
    def neighbour(self) -> str: ...

    @property
    def method(self) -> str: ...

    def summary(self) -> pd.DataFrame: ...


@runtime_checkable
class TuningSummary(Protocol):
    """A prior tuning as its printout and HTML view read it (a ``PriorTuningResult``).

    Examples
    --------
    >>> from pymc_edp import PriorTuningResult
    >>> from pymc_edp.report._common import TuningSummary
    >>> res = PriorTuningResult(
    ...     value=1.2, epsilon=0.31, mcse=0.01, target_epsilon=0.3, hyperparameter="sigma0",
    ...     initial_value=1.73, initial_epsilon=0.45, search_epsilon=0.3, bins=20,
    ...     neighbour="remove", method="psis", direction="increasing", monotone=True,
    ...     stopped="tolerance", trials=xr.Dataset({"value": ("trial", [1.73, 1.2])}),
    ...     utility=xr.Dataset())
    >>> isinstance(res, TuningSummary)
    True
    """

    @property
    def value(self) -> float: ...

    @property
    def epsilon(self) -> float: ...

    @property
    def mcse(self) -> float: ...

    @property
    def target_epsilon(self) -> float: ...

    @property
    def relative_error(self) -> float: ...

    @property
    def hyperparameter(self) -> str | None: ...

    @property
    def initial_value(self) -> float: ...

    @property
    def initial_epsilon(self) -> float: ...

    @property
    def bins(self) -> int: ...

    @property
    def neighbour(self) -> str: ...

    @property
    def method(self) -> str: ...

    @property
    def direction(self) -> str: ...

    @property
    def monotone(self) -> bool: ...

    @property
    def stopped(self) -> str: ...

    @property
    def trials(self) -> xr.Dataset: ...

    @property
    def utility(self) -> xr.Dataset: ...

    @property
    def warnings(self) -> tuple: ...

    @property
    def audit(self) -> Any: ...

    def summary(self) -> pd.DataFrame: ...

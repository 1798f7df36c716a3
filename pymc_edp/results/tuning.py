"""The result of :func:`~pymc_edp.tune_prior`: the tuned value and the evidence."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import xarray as xr

from pymc_edp.base.common import TRIAL_DIM
from pymc_edp.core.loglik import flat_view
from pymc_edp.plots.html import tuning_result_html
from pymc_edp.report import tuning_result_text
from pymc_edp.results.edp import EDPResult

__all__ = ["LEAKAGE_CAVEAT", "TRIAL_DIM", "PriorTuningResult"]

LEAKAGE_CAVEAT = (
    "The prior was tuned on the data: the chosen hyperparameter is itself a function of the "
    "data and leaks information about it that the audited epsilon does not count (Charest & "
    "Han 2017, sec. 2); a formal guarantee would have to spend privacy budget on the choice "
    "too. EDP measures how far this posterior moves on this data set when one record changes; "
    "it is not differential privacy."
)


@dataclass(frozen=True)
class PriorTuningResult:
    """A prior strength tuned to a target epsilon, with the evidence and the price paid.

    Attributes
    ----------
    value : float
        The tuned value of the hyperparameter.
    epsilon, mcse : float
        Epsilon at ``value`` from the confirmation audit (an independent sample, the chosen
        method) and its Monte-Carlo standard error.
    target_epsilon : float
    hyperparameter : str or None
        Name of the ``pm.Data`` hyperparameter; None for the builder form.
    initial_value : float
        The untuned value the utility cost is measured against.
    initial_epsilon, search_epsilon : float
        Reweighted epsilon at ``initial_value`` and at ``value`` during the search.
    bins : int
    neighbour, method : str
        Of the confirmation audit.
    direction : str
        ``"increasing"`` if epsilon grows with the hyperparameter (a scale), else
        ``"decreasing"``.
    monotone : bool
        False when the epsilons were not monotone beyond their Monte-Carlo error (several
        values may then meet the target).
    stopped : str
        Why the search stopped: ``"tolerance"``, ``"noise"`` (the bracket's ends within twice
        their Monte-Carlo error), ``"xtol"`` or ``"maxiter"``.
    trials : xarray.Dataset
        Over ``trial`` in evaluation order: ``value``, ``epsilon``, ``mcse``,
        ``max_pareto_k``, ``stage`` (``"initial"``, ``"bracket"``, ``"root"``, ``"final"``).
    utility : xarray.Dataset
        Over ``parameter``: ``mean_untuned``, ``sd_untuned``, ``mean_tuned``, ``sd_tuned``,
        ``mean_shift``, ``mean_shift_sd`` (in untuned sds) and ``sd_ratio``.
    warnings : tuple of str
        :data:`LEAKAGE_CAVEAT` first, then the diagnostics of the search and confirmation.
    audit : EDPResult
        The confirmation audit.
    idata, idata_untuned : arviz.InferenceData
        Posteriors at ``value`` (the one audited) and at ``initial_value``.
    random_seed : int, optional
        The seed the run used.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017, sec. 2.

    Examples
    --------
    Returned by :func:`tune_prior`; ``tuned`` is one built by hand:

    >>> round(tuned.relative_error, 4)
    0.0333
    >>> tuned.summary().to_dict()
    {'mean_shift': {'mu': 0.05}}
    """

    value: float
    epsilon: float
    mcse: float
    target_epsilon: float
    hyperparameter: str | None
    initial_value: float
    initial_epsilon: float
    search_epsilon: float
    bins: int
    neighbour: str
    method: str
    direction: str
    monotone: bool
    stopped: str
    trials: xr.Dataset
    utility: xr.DataTree
    warnings: tuple = ()
    audit: EDPResult | None = field(default=None, repr=False, compare=False)
    idata: object | None = field(default=None, repr=False, compare=False)
    idata_untuned: object | None = field(default=None, repr=False, compare=False)
    random_seed: int | None = field(default=None, compare=False)

    @property
    def relative_error(self) -> float:
        """``(epsilon - target_epsilon) / target_epsilon`` of the confirmation audit."""
        return (self.epsilon - self.target_epsilon) / self.target_epsilon

    def summary(self) -> pd.DataFrame:
        """The utility cost, one row per audited scalar parameter (ArviZ-style labels)."""
        df = flat_view(self.utility.children).drop_vars("var_name").to_dataframe()
        df.index = df.index.astype(str)
        return df

    def _repr_html_(self) -> str:
        """Rich HTML view in Jupyter; see :func:`pymc_edp.plots.html.tuning_result_html`."""
        return tuning_result_html(self)

    def __repr__(self) -> str:
        """The printout; see :func:`pymc_edp.report.tuning_result_text`."""
        return tuning_result_text(self)

"""Tune the strength of a prior so that the posterior meets a target B-EDP epsilon.

:func:`pymc_edp.tune_prior` (:mod:`~pymc_edp.tuning.prior`) searches a scalar hyperparameter with a
root finder for noisy functions (:mod:`~pymc_edp.tuning.search`).
"""

from pymc_edp.tuning import prior, search  # noqa: F401  (the modules, for the docs)

# The public names are pymc_edp's (tune_prior, SearchOptions, PriorTuningResult): one path each.
__all__: list[str] = []

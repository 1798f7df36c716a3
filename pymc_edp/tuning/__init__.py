"""Tune the strength of a prior so that the posterior meets a target B-EDP epsilon.

:func:`tune_prior` (:mod:`~pymc_edp.tuning.prior`) searches a scalar hyperparameter with a
root finder for noisy functions (:mod:`~pymc_edp.tuning.search`) and returns a
:class:`PriorTuningResult` (:mod:`~pymc_edp.results.tuning`).

References
----------
.. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (sec. 2: prior tuning and
   its leakage; eq. 2: B-EDP).
"""

from pymc_edp.tuning.prior import tune_prior
from pymc_edp.tuning.search import SearchOptions

__all__ = ["SearchOptions", "tune_prior"]

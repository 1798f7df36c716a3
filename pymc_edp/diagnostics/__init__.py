"""How far to trust an EDP audit: Monte-Carlo error, imprecision, bins and the bin-free view.

Every function takes an audit result that kept its importance weights (the default),
returns xarray objects and caches them on the result; the :class:`~pymc_edp.EDPResult`
methods of the same names call them. ``bins=None`` means the audit's B. For refitted
neighbours, the error at the audit's B is their refit's (``pointwise["refit_mcse"]``);
everything else is computed from their weights, so it describes the reweighting estimate
(flagged in the outputs).

References
----------
.. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." Journal of Privacy and Confidentiality 7(3), 2017.
.. [2] Abowd, J. M., Schneider, M. J. and Vilhuber, L. "Differential privacy applications to
   Bayesian and linear mixed model estimation." Journal of Privacy and Confidentiality 5(1),
   2013.
.. [3] Burchard, P., Daoud, A. and Dotterrer, D. "Empirical Differential Privacy."
   arXiv:2011.05418, 2020.
.. [4] Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Bürkner, P.-C.
   "Rank-normalization, folding, and localization: an improved R-hat for assessing
   convergence of MCMC." Bayesian Analysis 16(2), 2021.
.. [5] Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. "Pareto smoothed
   importance sampling." Journal of Machine Learning Research 25(72), 2024.
"""

from pymc_edp.diagnostics.by_hand import refit_epsilon
from pymc_edp.diagnostics.curve import DEFAULT_CURVE_BINS, continuous_limit, epsilon_curve
from pymc_edp.diagnostics.delta_profile import delta_profile
from pymc_edp.diagnostics.imprecision import emi, empty_bins, smoothing_sensitivity
from pymc_edp.diagnostics.log_ratios import bin_log_ratios
from pymc_edp.diagnostics.uncertainty import epsilon_interval, epsilon_mcse

__all__ = [
    "DEFAULT_CURVE_BINS",
    "bin_log_ratios",
    "continuous_limit",
    "delta_profile",
    "emi",
    "empty_bins",
    "epsilon_curve",
    "epsilon_interval",
    "epsilon_mcse",
    "refit_epsilon",
    "smoothing_sensitivity",
]

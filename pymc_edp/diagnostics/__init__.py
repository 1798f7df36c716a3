"""How far to trust an EDP audit: Monte-Carlo error, imprecision, bins and the bin-free view.

Every function takes an audit result that kept its importance weights (the default) and
returns xarray objects; the :class:`~pymc_edp.EDPResult` methods of the same names call
them. They read the result through the protocol ``pymc_edp.diagnostics._common.AuditData``
and cache what they compute on it. The numerical work is in :mod:`pymc_edp.base`.

What is computed, and why:

* **Monte-Carlo standard error and interval** of epsilon and of every per-record
  ``epsilon_i`` (:func:`epsilon_mcse`, :func:`epsilon_interval`): a delta-method error from
  the influence function of the reweighted bin probability, *including the randomness of the
  quantile cut points*, scaled by the effective sample size of that influence series, so
  MCMC autocorrelation is accounted for. The interval of a maximum is the maximum of the
  intervals of its leading candidates.
* **Bin log ratios** (:func:`bin_log_ratios`): where one neighbour's epsilon is set.
* **EMI**, Abowd's empirical measure of imprecision (:func:`emi`): the procedure with D in
  place of the neighbour, on independent draws (bins from the first half of every chain,
  counts from the second half). It is the noise floor of *refit-and-count*, kept for
  reference; it is not an error of a reweighted estimate and never a verdict on one.
* **Empty bins and smoothing** (:func:`empty_bins`, :func:`smoothing_sensitivity`).
* **eps(B)** (:func:`epsilon_curve`) from the stored weights, no refitting, with the
  continuous limit ``B -> inf`` (:func:`continuous_limit`) as its reference.
* **A refit checked by hand** (:func:`refit_epsilon`): the epsilon of a user's own refit of
  one neighbour, counted in the audit's own bins against the full-data bin probabilities as
  the audit computed them (not ``1 / B``).
* **The (eps, delta) profile** (:func:`delta_profile`): ``delta_i(eps)``, ``delta(eps)``,
  total risk ``delta*(eps)`` from the weights, without bins and without density estimates.

The words come later: the headline (its interval, whether it is a lower bound, whether
refits confirmed it, the statement about noise) and the plain-language ``res.diagnose()``
are :mod:`pymc_edp.report`'s.

Neighbours refitted exactly (``pointwise["method"] == "refit"``) keep their Pareto-smoothed
importance weights in ``log_weights``. Their Monte-Carlo error and interval at the audit's
number of bins are those of the refit estimate, computed by the audit with the same delta
method over the pooled (or refit) draws (``pointwise["refit_mcse"]``); everything else here
(EMI, empty bins, eps(B), the (eps, delta) profile) is computed from the weights, so for
refitted neighbours it describes the *reweighting* estimate (flagged in the outputs).

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

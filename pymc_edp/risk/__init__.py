"""Differential privacy of finite mechanisms and the disclosure-risk measures built on it.

One module per paper; every public name is re-exported here, so ``pymc_edp.risk.dp_epsilon``
and ``from pymc_edp.risk import mcclure_reiter_risk`` work as before:

- :mod:`pymc_edp.risk.charest_han` -- DP and conditional DP (CDP) epsilon of any finite
  mechanism given as a transition matrix (Charest & Han 2017, Sec. 3.1).
- :mod:`pymc_edp.risk.mcclure_reiter` -- an intruder's absolute risk R_j (eq. 5), relative
  risk RR_j (eq. 8) and expected risk increase ER_j (eq. 6) for the Beta-Bernoulli
  synthesizer, and the joint (RR, R) acceptable-region assessment over intruder priors
  (McClure & Reiter 2012, Sec. 4).
- :mod:`pymc_edp.risk.lee_clifton` -- the adversary's posterior beliefs over possible worlds
  for a Laplace mechanism on any query, the risk of disclosure Gamma, the closed-form upper
  bound on epsilon (eq. 7) and the search for the largest epsilon with worst-case belief at
  most rho (Lee & Clifton 2011).
- :mod:`pymc_edp.risk.bailie_gong` -- epsilon-DP as an interval of measures: posterior bounds
  ``pi(theta) exp(+-eps d**)``, prior-predictive bounds for a given mechanism and the
  Neyman-Pearson power bound ``alpha exp(d** eps)`` (Bailie & Gong 2023).

Each module's docstring gives its paper's full reference.
"""

from pymc_edp.risk.bailie_gong import (
    DensityBounds,
    bailie_gong_posterior_bounds,
    bailie_gong_power_bound,
    bailie_gong_prior_predictive_bounds,
    hamming_distances,
)
from pymc_edp.risk.charest_han import (
    conditional_dp_distribution,
    conditional_dp_epsilon,
    dp_epsilon,
)
from pymc_edp.risk.lee_clifton import (
    PossibleWorlds,
    lee_clifton_epsilon_bound,
    lee_clifton_max_epsilon,
    lee_clifton_risk,
    lee_clifton_sensitivity,
    lee_clifton_worst_case_belief,
    possible_world_beliefs,
    possible_worlds,
)
from pymc_edp.risk.mcclure_reiter import (
    AcceptableRegion,
    DisclosureAssessment,
    mcclure_reiter_assessment,
    mcclure_reiter_expected_risk,
    mcclure_reiter_relative_risk,
    mcclure_reiter_risk,
)

__all__ = [
    "AcceptableRegion",
    "DensityBounds",
    "DisclosureAssessment",
    "PossibleWorlds",
    "bailie_gong_posterior_bounds",
    "bailie_gong_power_bound",
    "bailie_gong_prior_predictive_bounds",
    "conditional_dp_distribution",
    "conditional_dp_epsilon",
    "dp_epsilon",
    "hamming_distances",
    "lee_clifton_epsilon_bound",
    "lee_clifton_max_epsilon",
    "lee_clifton_risk",
    "lee_clifton_sensitivity",
    "lee_clifton_worst_case_belief",
    "mcclure_reiter_assessment",
    "mcclure_reiter_expected_risk",
    "mcclure_reiter_relative_risk",
    "mcclure_reiter_risk",
    "possible_world_beliefs",
    "possible_worlds",
]

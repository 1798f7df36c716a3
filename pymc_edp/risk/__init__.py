"""Differential privacy of finite mechanisms and the disclosure-risk measures built on it.

One module per paper (its docstring gives the full reference); every public name is
re-exported here:

- :mod:`pymc_edp.risk.charest_han` -- DP and conditional DP epsilon of a finite mechanism
  given as a transition matrix (Charest & Han 2017).
- :mod:`pymc_edp.risk.mcclure_reiter` -- an intruder's risk measures for the Beta-Bernoulli
  synthesizer, and the (RR, R) acceptable-region assessment (McClure & Reiter 2012).
- :mod:`pymc_edp.risk.lee_clifton` -- the adversary's beliefs over possible worlds after a
  Laplace release, and the choice of epsilon (Lee & Clifton 2011).
- :mod:`pymc_edp.risk.bailie_gong` -- epsilon-DP as an interval of measures: posterior,
  prior-predictive and power bounds (Bailie & Gong 2023).
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

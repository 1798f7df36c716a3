"""Exact answers for conjugate models: the oracles the estimators are tested against.

* :mod:`pymc_edp.conjugate.posteriors` -- B-EDP of the Beta-Binomial, Poisson-Gamma and
  Normal-Normal posteriors in closed form, and the Beta-Binomial synthesizer's transition
  matrix (Charest & Han 2017, sec. 3);
* :mod:`pymc_edp.conjugate.calibration` -- DP-calibrated priors of the Bernoulli,
  Beta-Binomial and Dirichlet-Multinomial synthesizers, and the Laplace mechanism they are
  compared with.
"""

from pymc_edp.conjugate import calibration, posteriors
from pymc_edp.conjugate.calibration import (
    BernoulliSynthesizer,
    BetaBinomialSynthesizer,
    DirichletMultinomialSynthesizer,
    LaplaceMechanism,
    bernoulli_synthesizer_prior,
    beta_binomial_synthesizer_prior,
    dirichlet_multinomial_synthesizer_prior,
    laplace_mechanism,
)
from pymc_edp.conjugate.posteriors import (
    beta_binomial_edp,
    beta_binomial_synthesizer_matrix,
    dirichlet_multinomial_log_pmf,
    normal_normal_edp,
    normal_normal_posterior,
    poisson_gamma_edp,
)

__all__ = [
    "BernoulliSynthesizer",
    "BetaBinomialSynthesizer",
    "DirichletMultinomialSynthesizer",
    "LaplaceMechanism",
    "bernoulli_synthesizer_prior",
    "beta_binomial_edp",
    "beta_binomial_synthesizer_matrix",
    "beta_binomial_synthesizer_prior",
    "calibration",
    "dirichlet_multinomial_log_pmf",
    "dirichlet_multinomial_synthesizer_prior",
    "laplace_mechanism",
    "normal_normal_edp",
    "normal_normal_posterior",
    "poisson_gamma_edp",
    "posteriors",
]

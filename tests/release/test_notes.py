"""The notes' building blocks."""

import pymc as pm

from pymc_edp.release.notes import likelihood_parents


def test_the_likelihood_parents_stop_at_free_variables():
    with pm.Model() as model:
        mu = pm.Normal("mu")
        tau = pm.HalfNormal("tau")
        theta = pm.Normal("theta", mu, tau, shape=3)
        sigma = pm.HalfNormal("sigma")
        pm.Normal("y", theta, sigma, observed=[0.0, 1.0, 2.0])
    assert likelihood_parents(model) == {"theta", "sigma"}
    assert likelihood_parents(None) is None

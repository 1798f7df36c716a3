"""The notes' building blocks."""

import pymc as pm

from pymc_edp.release.kinds import likelihood_parents


def test_the_likelihood_parents_stop_at_free_variables():
    with pm.Model() as model:
        mu = pm.Normal("mu")
        tau = pm.HalfNormal("tau")
        theta = pm.Normal("theta", mu, tau, shape=3)
        sigma = pm.HalfNormal("sigma")
        pm.Normal("y", theta, sigma, observed=[0.0, 1.0, 2.0])
    assert likelihood_parents(model) == {"theta", "sigma"}
    assert likelihood_parents(None) is None


def test_the_bias_note_gives_a_share_of_epsilon_only_when_it_means_something():
    from pymc_edp.release.notes import bias_note

    assert "20% of epsilon" in bias_note(0.2, 1.0, 1e-3)
    # issue 32: epsilon near 0 (a delta near 1) gave '10945888576% of epsilon'
    near_zero = bias_note(0.02, 1e-9, 1e-3)
    assert "%" not in near_zero and "so epsilon is not resolved" in near_zero
    assert bias_note(0.02, 1.0, 1e-3) == ""  # 2% of epsilon
    assert bias_note(2.5e-4, 0.0, 1e-3) == ""  # below the grid's accuracy

"""Loss atoms against hand-computed mechanisms."""

import numpy as np
import pytest
from scipy import special

from pymc_edp.base import pld
from pymc_edp.release.atoms import (
    Mixture,
    binned_atoms,
    draws_atoms,
    enumerated_atoms,
    log_mean_bias,
    sampled_output_atoms,
)


def test_draws_atoms_are_both_orderings_of_the_density_ratio():
    rng = np.random.default_rng(0)
    lr = rng.normal(size=(3, 50))
    at = draws_atoms(lr)
    np.testing.assert_allclose(at.prob.sum(axis=-1), 1.0)
    # E_P[e^{-L}] = 1 in both orderings: each is a proper PLD
    np.testing.assert_allclose((at.prob * np.exp(-at.loss)).sum(axis=-1), 1.0)
    counts = np.zeros(50)
    counts[:10] = 2.0
    sub = draws_atoms(lr[:, :10])
    rep = draws_atoms(lr, counts)
    np.testing.assert_allclose(rep.loss[..., :10], sub.loss)
    np.testing.assert_allclose(rep.prob[..., 10:], 0.0)


def test_enumerated_atoms_reproduce_randomised_response():
    # two outputs, p(1 | D) = 0.75, p(1 | D') = 0.25: epsilon(0) = log 3
    at = enumerated_atoms(np.log([0.25, 0.75]), np.log([[0.75, 0.25]]))
    eps = [pld.exact_epsilon(at.loss[0, o], at.prob[0, o], 0.0) for o in range(2)]
    assert max(eps) == pytest.approx(np.log(3))


def test_mixtures_leave_the_generating_draw_out():
    ld = np.log(np.array([[0.5, 0.1, 0.3]]))
    w = np.array([[0.2, 0.3, 0.5]])
    full, nb = Mixture(ld, source=np.array([0]))(w)
    assert np.exp(full[0]) == pytest.approx((0.1 + 0.3) / 2)
    assert np.exp(nb[0, 0]) == pytest.approx((0.3 * 0.1 + 0.5 * 0.3) / 0.8)


def test_sampled_outputs_reweight_the_second_ordering():
    loss_full = np.log([0.5, 0.5, 0.2])
    loss_nb = np.log([[0.25, 0.25, 0.4]])
    at = sampled_output_atoms(loss_full, loss_nb)
    np.testing.assert_allclose(at.loss[0, 1], -at.loss[0, 0])
    p1 = np.exp(-at.loss[0, 0]) / np.exp(-at.loss[0, 0]).sum()
    np.testing.assert_allclose(at.prob[0, 1], p1)


def test_binned_atoms_are_the_weighted_bin_probabilities():
    at = binned_atoms(np.array([0, 1, 1, 2]), 3, np.array([[0.1, 0.2, 0.3, 0.4]]))
    np.testing.assert_allclose(np.exp(-at.loss[0, 0]), [0.4, 1.0, 1.6])
    np.testing.assert_allclose(at.prob[0, 1], [0.1, 0.5, 0.4])


def test_log_mean_bias_matches_its_first_order_formula():
    # the mean of 20 Gamma(4) terms is Gamma(80)/20: E[log mean] - log 4 = digamma(80) -
    # log(80) = -0.00626 exactly; the first-order formula, from the terms' sample variance
    # (divisor S), gives -1/160 * 19/20 on average: within 10%
    rng = np.random.default_rng(1)
    t = rng.gamma(4.0, size=(20_000, 20))
    exact = special.digamma(80.0) - np.log(80.0)
    assert float(np.mean(log_mean_bias(t))) == pytest.approx(exact, rel=0.1)
    assert log_mean_bias(np.ones(5)) == 0.0

"""McClure & Reiter's intruder risk measures (pymc_edp.risk.mcclure_reiter)."""

import numpy as np
import pytest
from scipy import stats

from pymc_edp.conjugate import bernoulli_synthesizer_prior
from pymc_edp.risk.mcclure_reiter import (
    AcceptableRegion,
    mcclure_reiter_assessment,
    mcclure_reiter_expected_risk,
    mcclure_reiter_relative_risk,
    mcclure_reiter_risk,
)

MR_EPS = [1000.0, 100.0, 10.0, 2.0, 0.2, 0.01]
MR_P0 = [0.001, 0.3, 0.5, 0.999]
# McClure & Reiter (2012), Table 1: ER_j for n = n_s = 1000, prior P(Y_j = 1) = 0.5.
MR_TABLE1 = np.array(
    [
        [0.125, 0.036, 0.0101, 0.00372, 0.000578, 3.13e-05],
        [0.00718, 0.00702, 0.00578, 0.00328, 0.000576, 3.13e-05],
        [0.00655, 0.00643, 0.00543, 0.00321, 0.000575, 3.13e-05],
        [0.0983, 0.0350, 0.0100, 0.00372, 0.000578, 3.13e-05],
    ]
)


def test_mcclure_reiter_table1():
    er = mcclure_reiter_expected_risk(MR_P0, MR_EPS, 1000)
    assert er.dims == ("p0", "epsilon") and er.shape == (4, 6)
    # The paper prints 3 significant figures (2 for .036): 3% relative covers that
    # rounding; the largest deviation is .03671 vs .036 (p0 = .001, eps = 100), 2.0%.
    np.testing.assert_allclose(er.values, MR_TABLE1, rtol=0.03)
    # The eps = 0.01 column: 3.14e-05 against the printed 3.13e-05.
    np.testing.assert_allclose(er.values[:, -1], MR_TABLE1[:, -1], atol=2e-6, rtol=0)
    # Trend stated in the paper: risk decreases as eps decreases, for every p0.
    assert np.all(np.diff(er.values, axis=1) < 0)
    row = mcclure_reiter_expected_risk(0.5, MR_EPS, 1000)
    assert row.dims == ("epsilon",)
    # same sums, different BLAS blocking: equal up to round-off
    np.testing.assert_allclose(row, er.sel(p0=0.5), rtol=1e-12)
    col = mcclure_reiter_expected_risk(MR_P0, 2.0, 1000)
    assert col.dims == ("p0",)
    np.testing.assert_allclose(col, er.sel(epsilon=2.0), rtol=1e-12)


def test_mcclure_reiter_r_example():
    # Sec. 3.2: eps = 1000, alpha = .58, X_{-j} = 0, Y_j = 1, X* = 3 (n = 1000):
    # Bin(3; 1000, .58/1001.16) = .018, Bin(3; 1000, 1.58/1001.16) = .135, R_j = .88.
    a = bernoulli_synthesizer_prior(1000.0, 1000).alpha
    assert stats.binom.pmf(3, 1000, a / (1000 + 2 * a)) == pytest.approx(0.018, abs=5e-4)
    assert stats.binom.pmf(3, 1000, (1 + a) / (1000 + 2 * a)) == pytest.approx(0.135, abs=5e-4)
    assert mcclure_reiter_risk(1, 3, 1000, 1000.0) == pytest.approx(0.88, abs=0.005)
    assert mcclure_reiter_relative_risk(1, 3, 1000, 1000.0) == pytest.approx(1.76, abs=0.01)


def test_mcclure_reiter_risk_is_bayes_rule_on_the_transition_matrix(rng):
    # R_j is the intruder's posterior of Y_j: check eq. (5) against Bayes' rule applied
    # directly to the synthesizer's transition matrix (rows X = X_{-j} + Y_j).
    n, n_s, eps = 25, 15, 4.0
    syn = bernoulli_synthesizer_prior(eps, n_s)
    t = syn.transition_matrix(n).values
    for _ in range(20):
        x_minus_j = int(rng.integers(0, n))
        xs = int(rng.integers(0, n_s + 1))
        w = float(rng.uniform(0.01, 0.99))
        post1 = w * t[x_minus_j + 1, xs] / (w * t[x_minus_j + 1, xs] + (1 - w) * t[x_minus_j, xs])
        r1 = mcclure_reiter_risk(x_minus_j + 1, xs, n, eps, n_synthetic=n_s, prior=w, y=1)
        r0 = mcclure_reiter_risk(x_minus_j, xs, n, eps, n_synthetic=n_s, prior=w, y=0)
        assert r1 == pytest.approx(post1, rel=1e-10)  # round-off only
        assert r0 == pytest.approx(1 - post1, rel=1e-10)
    assert mcclure_reiter_risk(3, 2, n, syn) == mcclure_reiter_risk(3, 2, n, eps, n_synthetic=n_s)


def test_mcclure_reiter_expected_risk_brute_force(monkeypatch):
    # Plain loops over (X, X*) of eq. (6) with the transition matrix, small n; the
    # vectorised version is also forced through its chunked path.
    import pymc_edp.risk.mcclure_reiter as risk_mod

    n, n_s, eps, w, p0 = 12, 9, 3.0, 0.3, 0.2
    t = bernoulli_synthesizer_prior(eps, n_s).transition_matrix(n).values
    total = 0.0
    for x in range(n + 1):
        for xs in range(n_s + 1):
            y = 1 if x >= 1 else 0
            pi = w if y == 1 else 1 - w
            r = mcclure_reiter_risk(x, xs, n, eps, n_synthetic=n_s, prior=w, y=y)
            total += (max(r, pi) - pi) * t[x, xs] * stats.binom.pmf(x, n, p0)
    got = mcclure_reiter_expected_risk(p0, eps, n, n_synthetic=n_s, prior=w)
    assert got == pytest.approx(total, rel=1e-10)
    monkeypatch.setattr(risk_mod, "_CHUNK_ELEMENTS", 25)
    assert mcclure_reiter_expected_risk(p0, eps, n, n_synthetic=n_s, prior=w) == pytest.approx(
        total, rel=1e-10
    )


def test_mcclure_reiter_small_epsilon_returns_prior():
    # As eps -> 0 the synthetic data carry no information: R_j -> w (Sec. 3.2).
    w = np.array([0.1, 0.5, 0.9])
    r = mcclure_reiter_risk(1, 700, 1000, 1e-4, prior=w)
    np.testing.assert_allclose(r, w, atol=1e-4)
    rr = mcclure_reiter_relative_risk(1, 700, 1000, 1e-4, prior=w)
    np.testing.assert_allclose(rr, 1.0, atol=1e-3)


def test_mcclure_reiter_assessment():
    region = AcceptableRegion(r_upper=(0.1, 1.0), rr_max=(10.0, 1.05))
    np.testing.assert_array_equal(
        region(np.array([9.0, 11.0, 1.04, 1.2]), np.array([0.05, 0.05, 0.5, 0.5])),
        [True, False, True, False],
    )
    # Rare value (p0 = .001 scenario): X = 1, X* = 3 at eps = 1000. The paper notes RR_j
    # can exceed 2 for small w when eps >= 100, and that little is learned at small eps.
    strict = AcceptableRegion(r_upper=(1.0,), rr_max=(2.0,))
    risky = mcclure_reiter_assessment(1, 3, 1000, 1000.0, acceptable=strict)
    assert not risky.acceptable
    assert risky.risks.sizes["prior"] == 1000
    bad = risky.unacceptable_priors
    assert bad.size > 0 and bad.max() < 0.5  # only small intruder priors are a problem
    assert np.all(risky.risks["relative_risk"].sel(prior=bad) > 2.0)
    safe = mcclure_reiter_assessment(1, 3, 1000, 0.01, acceptable=strict)
    assert safe.acceptable and safe.unacceptable_priors.size == 0
    # A callable works as the region too.
    same = mcclure_reiter_assessment(
        1, 3, 1000, 1000.0, acceptable=lambda rr, r: rr <= 2.0, priors=risky.risks["prior"]
    )
    np.testing.assert_array_equal(same.risks["acceptable"], risky.risks["acceptable"])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: mcclure_reiter_risk(0, 3, 10, 1.0), "x"),
        (lambda: mcclure_reiter_risk(10, 3, 10, 1.0, y=0), "x"),
        (lambda: mcclure_reiter_risk(1, 11, 10, 1.0), "x_synthetic"),
        (lambda: mcclure_reiter_risk(1, 3, 10, 1.0, prior=1.0), "prior"),
        (lambda: mcclure_reiter_risk(1, 3, 10, 1.0, y=2), "y"),
        (lambda: mcclure_reiter_expected_risk(1.5, 1.0, 10), "p0"),
        (lambda: AcceptableRegion(r_upper=(0.5,), rr_max=(2.0,)), "end"),
    ],
)
def test_mcclure_reiter_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()

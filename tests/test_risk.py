"""DP of transition matrices and disclosure-risk measures (pymc_edp.risk)."""

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from pymc_edp.calibration import (
    BetaBinomialSynthesizer,
    bernoulli_synthesizer_prior,
    beta_binomial_synthesizer_prior,
)
from pymc_edp.conjugate import beta_binomial_synthesizer_matrix
from pymc_edp.risk import (
    AcceptableRegion,
    bailie_gong_posterior_bounds,
    bailie_gong_power_bound,
    bailie_gong_prior_predictive_bounds,
    conditional_dp_distribution,
    conditional_dp_epsilon,
    dp_epsilon,
    hamming_distances,
    lee_clifton_epsilon_bound,
    lee_clifton_max_epsilon,
    lee_clifton_risk,
    lee_clifton_sensitivity,
    lee_clifton_worst_case_belief,
    mcclure_reiter_assessment,
    mcclure_reiter_expected_risk,
    mcclure_reiter_relative_risk,
    mcclure_reiter_risk,
    possible_world_beliefs,
    possible_worlds,
)


# ---------------------------------------------------------------------------------------
# DP and CDP of transition matrices (Charest & Han 2017, Sec. 3.1)
# ---------------------------------------------------------------------------------------
@pytest.fixture
def table1():
    return beta_binomial_synthesizer_matrix(5, 0.5, 0.5)


def test_table1_dp_epsilon_is_log11(table1):
    assert dp_epsilon(table1) == pytest.approx(np.log(11.0), rel=1e-12)  # closed form
    # The paper's worked ratio P(0 | x=4) / P(0 | x=5) = 0.010742 / 0.000977 = 10.9948 ~ 11.
    t = table1.values
    assert t[4, 0] / t[5, 0] == pytest.approx(11.0, rel=1e-12)


def test_table1_cdp(table1):
    cdp = conditional_dp_epsilon(table1, np.arange(6))
    # Charest & Han: 1.466 for x = 2, 3 and log 11 = 2.398 for x = 0, 1, 4, 5 (3 decimals).
    np.testing.assert_allclose(cdp[[2, 3]], 1.466, atol=5e-4)
    np.testing.assert_allclose(cdp[[0, 1, 4, 5]], 2.398, atol=5e-4)
    np.testing.assert_allclose(cdp[[0, 1, 4, 5]], np.log(11.0), rtol=1e-12)
    assert isinstance(conditional_dp_epsilon(table1, 2), float)
    assert conditional_dp_epsilon(table1, 2) == cdp[2]
    assert conditional_dp_epsilon(table1, np.array([[0, 2], [3, 5]])).shape == (2, 2)


def test_cdp_max_is_dp(rng):
    t = rng.dirichlet(np.ones(4), size=7)
    cdp = conditional_dp_distribution(t)
    assert cdp.dims == ("x",) and cdp.sizes["x"] == 7
    assert float(cdp.max()) == dp_epsilon(t) == cdp.attrs["dp_epsilon"]


def test_dp_epsilon_brute_force_over_events(rng):
    # DP is defined over events S; for a finite output space the single outputs attain it.
    t = rng.dirichlet(np.ones(5), size=4)
    best = 0.0
    for mask in range(1, 2**5):
        s = np.array([(mask >> c) & 1 for c in range(5)], dtype=bool)
        p = t[:, s].sum(axis=1)
        best = max(best, np.max(np.abs(np.diff(np.log(p)))))
    assert dp_epsilon(t) == pytest.approx(best, rel=1e-12)


def test_dp_epsilon_zeros():
    # A zero in one row only: the neighbours are perfectly distinguishable.
    assert dp_epsilon(np.array([[0.5, 0.5], [1.0, 0.0]])) == np.inf
    # A column that is zero in every row carries no information.
    t = np.array([[0.5, 0.0, 0.5], [0.25, 0.0, 0.75]])
    assert dp_epsilon(t) == pytest.approx(np.log(2.0), rel=1e-14)
    assert conditional_dp_epsilon(t, 0) == pytest.approx(np.log(2.0), rel=1e-14)


def test_dp_epsilon_general_pairs():
    t = np.array([[0.5, 0.5], [0.9, 0.1], [0.4, 0.6]])
    assert dp_epsilon(t, pairs=[(0, 2)]) == pytest.approx(np.log(0.5 / 0.4), rel=1e-14)
    assert dp_epsilon(t, pairs=[(0, 1), (1, 2)]) == pytest.approx(dp_epsilon(t), rel=1e-14)
    cdp = conditional_dp_epsilon(t, [0, 2], pairs=[(0, 2)])
    np.testing.assert_allclose(cdp, np.log(0.5 / 0.4), rtol=1e-14)
    with pytest.raises(ValueError, match="no neighbour"):  # row 1 is isolated
        conditional_dp_epsilon(t, 1, pairs=[(0, 2)])


@pytest.mark.parametrize(
    ("t", "match"),
    [
        (np.ones(3), "2-D"),
        (np.ones((1, 3)), "two rows"),
        (np.array([[0.5, -0.5], [0.5, 0.5]]), "non-negative"),
        (np.array([[np.nan, 1.0], [0.5, 0.5]]), "non-negative"),
    ],
)
def test_dp_epsilon_validation(t, match):
    with pytest.raises(ValueError, match=match):
        dp_epsilon(t)


def test_cdp_validation(table1):
    with pytest.raises(ValueError, match="lie in"):
        conditional_dp_epsilon(table1, 6)
    with pytest.raises(ValueError, match="integer"):
        conditional_dp_epsilon(table1, 1.5)


def test_transition_accepts_dataarray_and_ndarray(table1):
    assert isinstance(table1, xr.DataArray)
    assert dp_epsilon(table1) == dp_epsilon(table1.values)


# ---------------------------------------------------------------------------------------
# Charest & Han Figure 1: distribution of CDP epsilon over datasets
# ---------------------------------------------------------------------------------------
def test_figure1_median_cdp_n200_eps5():
    # Reading of Figure 1 (b): the Beta-Binomial synthesizer with n = n_s = 200 calibrated
    # to DP epsilon 5 by a = n / (e^eps - 1) (the calibration of their Table 1; the text's
    # (e^eps - 1) / n would give DP epsilon 5.61, contradicting the figure's statement
    # that the maximum CDP is the DP epsilon), and "all possible datasets" = the 201
    # counts x = 0..200, each counted once (one dot per count in the dotplot).
    prior = beta_binomial_synthesizer_prior(5.0, 200)
    cdp = conditional_dp_distribution(prior.transition_matrix(200, log=True), log=True)
    assert cdp.sizes["x"] == 201
    assert cdp.attrs["dp_epsilon"] == pytest.approx(5.0, rel=1e-9)  # max CDP = DP eps
    # "half of the possible datasets will lead to an estimate smaller than 1.60": we get
    # 1.6038; 0.01 is the precision of a 3-significant-figure reading.
    assert float(cdp.median()) == pytest.approx(1.60, abs=0.01)
    assert float(cdp.mean()) > float(cdp.median())  # skewed to the right
    upside_down = BetaBinomialSynthesizer(np.expm1(5.0) / 200, np.expm1(5.0) / 200, 200)
    assert dp_epsilon(upside_down.transition_matrix(200, log=True), log=True) > 5.6


# ---------------------------------------------------------------------------------------
# McClure & Reiter
# ---------------------------------------------------------------------------------------
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
    import pymc_edp.risk as risk_mod

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


# ---------------------------------------------------------------------------------------
# Lee & Clifton
# ---------------------------------------------------------------------------------------
ABSENCE = [1, 2, 3, 10]  # Lee & Clifton Table 1: absence days (Terry = 10 is missing)
YEAR = [1, 2, 3, 4]  # school year


def test_lee_clifton_sensitivities():
    # Sec. 4.1: Delta f of the mean is 17/6 (absence) and 5/6 (year); Table 4: median 4.
    assert lee_clifton_sensitivity(ABSENCE, np.mean) == pytest.approx(17 / 6, rel=1e-14)
    assert lee_clifton_sensitivity(YEAR, np.mean) == pytest.approx(5 / 6, rel=1e-14)
    assert lee_clifton_sensitivity(ABSENCE, np.median) == pytest.approx(4.0, rel=1e-14)
    w = possible_worlds(ABSENCE, np.median)
    np.testing.assert_allclose(w.values[:, 0], [3.0, 3.0, 2.0, 2.0])  # missing 1, 2, 3, 10
    assert w.delta_v == 1.0  # Sec. 6
    assert possible_worlds(ABSENCE, np.mean).delta_v == pytest.approx(3.0)  # 5 - 2, Sec. 5.2


def test_lee_clifton_beliefs_response_2_2013():
    # Sec. 4.4: response 2.2013 at eps = 2: beta(w_1 = {1, 2, 3}) = 0.6180 for the mean of
    # absence days and 0.3390 for the mean school year (4 printed decimals).
    b = possible_world_beliefs(ABSENCE, np.mean, 2.2013, 2.0)
    assert b.dims == ("world",)
    assert float(b.sel(world=3)) == pytest.approx(0.6180, abs=5e-5)
    assert int(b["missing"].sel(world=3)) == 10
    assert float(b.sum()) == pytest.approx(1.0, rel=1e-14)
    assert lee_clifton_risk(ABSENCE, np.mean, 2.2013, 2.0) == float(b.max())
    b_year = possible_world_beliefs(YEAR, np.mean, 2.2013, 2.0)
    assert float(b_year.sel(world=3)) == pytest.approx(0.3390, abs=5e-5)
    # The paper's unnormalised density for w_1: Laplace(17/12) at distance 0.2013.
    assert stats.laplace.pdf(2.2013, 2.0, 17 / 12) == pytest.approx(0.3062, abs=5e-5)


def test_lee_clifton_beliefs_over_epsilon_and_prior():
    eps = np.array([5.0, 2.0, 1.0, 0.5, 0.1, 0.01])
    b = possible_world_beliefs(ABSENCE, np.mean, 2.2013, eps)
    assert b.dims == ("epsilon", "world")
    np.testing.assert_allclose(b.sum("world"), 1.0, rtol=1e-14)
    # Beliefs flatten to the uniform prior 1/4 as eps -> 0 (Tables 2-3 of the paper).
    np.testing.assert_allclose(b.sel(epsilon=0.01), 0.25, atol=2e-3)
    assert np.all(np.diff(b.max("world").values) < 0)  # Gamma shrinks with eps
    prior = np.array([0.1, 0.2, 0.3, 0.4])
    bp = possible_world_beliefs(ABSENCE, np.mean, 2.2013, 0.0, prior=prior)
    np.testing.assert_allclose(bp, prior, rtol=1e-14)  # eps = 0: posterior = prior


def test_lee_clifton_epsilon_bounds():
    cases = [
        (ABSENCE, np.mean, 17 / 18 * np.log(1.5), 0.3829),  # eq. (9)
        (YEAR, np.mean, 5 / 6 * np.log(1.5), 0.3379),  # Sec. 5.2
        (ABSENCE, np.median, 4 * np.log(1.5), 1.6219),  # eq. (18)
    ]
    for universe, query, exact, printed in cases:
        w = possible_worlds(universe, query)
        bound = lee_clifton_epsilon_bound(w.sensitivity, w.delta_v, w.n, 1 / 3)
        assert bound == pytest.approx(exact, rel=1e-12)
        assert bound == pytest.approx(printed, abs=5e-5)  # 4 printed decimals
        # The bound is sufficient: the worst-case belief there is at most rho ...
        assert lee_clifton_worst_case_belief(universe, query, bound) <= 1 / 3 + 1e-12
        # ... but not necessary: the exact largest epsilon is at least as large.
        assert lee_clifton_max_epsilon(universe, query, 1 / 3) >= bound


def test_lee_clifton_eq12_worst_case():
    # eq. (10)-(12): school-year mean at eps = 0.5: 1 / (1 + e^-1/5 + e^-2/5 + e^-3/5).
    got = lee_clifton_worst_case_belief(YEAR, np.mean, 0.5)
    assert got == pytest.approx(1 / (1 + np.exp(-0.2) + np.exp(-0.4) + np.exp(-0.6)), rel=1e-12)
    assert got == pytest.approx(0.3292, abs=5e-5)
    # The worst case is the belief at response f(w_i), by direct evaluation.
    b = possible_world_beliefs(YEAR, np.mean, 2.0, 0.5)
    assert float(b.max()) == pytest.approx(got, rel=1e-12)
    responses = np.linspace(0.0, 5.0, 501)
    gammas = [lee_clifton_risk(YEAR, np.mean, r, 0.5) for r in responses]
    assert max(gammas) <= got * (1 + 1e-12)


def test_lee_clifton_max_epsilon():
    # Sec. 6: for the median, 1 / (2 + 2 e^(-eps/4)) <= 1/3 gives eps <= 4 ln 2 = 2.7726.
    # The paper prints 2.776, a slip for 4 ln 2 = 2.77259 (its own formula); our binary
    # search meets the formula to 1e-9 and the printed value within 0.004.
    got = lee_clifton_max_epsilon(ABSENCE, np.median, 1 / 3)
    assert got == pytest.approx(4 * np.log(2.0), rel=1e-9)
    assert got == pytest.approx(2.776, abs=0.004)
    # Sec. 5.2: for the school year even eps = 0.5 (> 0.3379) keeps the risk below 1/3.
    year = lee_clifton_max_epsilon(YEAR, np.mean, 1 / 3)
    assert year > 0.5
    assert lee_clifton_worst_case_belief(YEAR, np.mean, year) == pytest.approx(1 / 3, rel=1e-9)
    # Worlds that share a query value cannot be told apart: with rho = 1/2 the median
    # allows any epsilon.
    assert lee_clifton_max_epsilon(ABSENCE, np.median, 0.5) == np.inf


def test_lee_clifton_vector_query():
    # Any callable, including vector-valued queries (L1 sensitivity and distances).
    def query(x):
        return np.array([np.mean(x), np.median(x)])

    w = possible_worlds(ABSENCE, query)
    assert w.values.shape == (4, 2)
    assert w.sensitivity <= 17 / 6 + 4.0
    b = possible_world_beliefs(ABSENCE, query, [2.2, 2.0], 1.0)
    assert "query_value" not in b.coords
    assert float(b.sum()) == pytest.approx(1.0)
    assert lee_clifton_max_epsilon(ABSENCE, query, 0.4) > 0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: lee_clifton_epsilon_bound(1.0, 1.0, 4, 0.2), "rho"),
        (lambda: lee_clifton_max_epsilon(ABSENCE, np.mean, 0.2), "rho"),
        (lambda: possible_worlds([1, 2], np.mean), "3 records"),
        (lambda: possible_world_beliefs(ABSENCE, np.mean, [1.0, 2.0], 1.0), "response"),
    ],
)
def test_lee_clifton_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------------------------------
# Bailie & Gong
# ---------------------------------------------------------------------------------------
def _randomised_response(n, eps):
    """All binary vectors x of length n and the RR mechanism's pmf P(t | x) over t."""
    xs = np.array([[(i >> k) & 1 for k in range(n)] for i in range(2**n)])
    flip = 1.0 / (np.exp(eps) + 1.0)
    ham = hamming_distances(xs)
    return xs, ham, flip**ham * (1 - flip) ** (n - ham)  # rows x, columns t


def test_randomised_response_is_eps_dp():
    eps = 0.7
    _, ham, pmf = _randomised_response(3, eps)
    pairs = np.argwhere(np.triu(ham == 1))
    assert dp_epsilon(pmf, pairs=pairs) == pytest.approx(eps, rel=1e-12)


def test_bailie_gong_posterior_bounds(rng):
    # Posterior of theta after a randomised-response release, iid Bernoulli(theta) data,
    # many random priors: always inside pi(theta) exp(+-eps d**), d** = n (Hamming).
    n, eps = 3, 0.4
    xs, _, pmf = _randomised_response(n, eps)
    theta = np.linspace(0.05, 0.95, 10)
    k = xs.sum(axis=1)
    p_x_theta = theta[:, None] ** k[None] * (1 - theta[:, None]) ** (n - k[None])
    lik = p_x_theta @ pmf  # p(t | theta), (theta, t)
    for _ in range(50):
        prior = rng.dirichlet(np.ones(theta.size))
        post = prior[:, None] * lik / (prior @ lik)[None, :]
        bounds = bailie_gong_posterior_bounds(prior[:, None], eps, n)
        assert bounds.contains(post)
    b = bailie_gong_posterior_bounds(0.2, 1.0, 2.0)
    assert b.lower == pytest.approx(0.2 * np.exp(-2.0)) and b.upper == pytest.approx(0.2 * np.e**2)


def test_bailie_gong_prior_predictive_bounds_laplace(rng):
    # Laplace mechanism on a binary sum (sensitivity 1), n = 4: p(t) = sum_x P(x) p_x(t)
    # for arbitrary P(x) on {0, 1}^4 stays within the bounds built from p_x alone.
    n, eps = 4, 0.25
    xs = np.array([[(i >> k) & 1 for k in range(n)] for i in range(2**n)])
    t = np.linspace(-10.0, 14.0, 241)
    dens = stats.laplace.pdf(t[None, :], xs.sum(axis=1)[:, None], 1.0 / eps)
    bounds = bailie_gong_prior_predictive_bounds(dens, hamming_distances(xs), eps)
    assert bounds.lower.shape == t.shape and np.all(bounds.lower <= bounds.upper)
    for _ in range(50):
        p_x = rng.dirichlet(np.full(2**n, 0.3))
        assert bounds.contains(p_x @ dens)
    # d*_k = n for every binary vector (its complement), so the bounds are explicit.
    np.testing.assert_allclose(bounds.lower, np.exp(-eps * n) * dens.max(axis=0), rtol=1e-14)
    np.testing.assert_allclose(bounds.upper, np.exp(eps * n) * dens.min(axis=0), rtol=1e-14)


def _neyman_pearson_power(p0, p1, alpha):
    """Power of the most powerful randomised level-alpha test of p0 vs p1 (discrete)."""
    order = np.argsort(-(p1 / p0))
    size, power = 0.0, 0.0
    for j in order:
        take = min(1.0, (alpha - size) / p0[j])
        size += take * p0[j]
        power += take * p1[j]
        if take < 1.0:
            break
    return power


def test_bailie_gong_power_bound_is_attained():
    # H0: x = 000 vs H1: x = 111 observed through randomised response (d** = 3). For
    # alpha up to P0(t = 111) the Neyman-Pearson test attains alpha e^(3 eps) exactly.
    eps, n = 0.5, 3
    _, _, pmf = _randomised_response(n, eps)
    p0, p1 = pmf[0], pmf[-1]
    assert p0[-1] > 0.05  # so the first three levels below are in the attained regime
    for alpha in (1e-3, 0.01, 0.05, 0.2, 0.5, 0.9):
        power = _neyman_pearson_power(p0, p1, alpha)
        bound = bailie_gong_power_bound(alpha, eps, n)
        assert power <= bound + 1e-12
        if alpha <= p0[-1]:
            assert power == pytest.approx(bound, rel=1e-10)
    assert bailie_gong_power_bound(0.5, 2.0, 3) == 1.0  # capped
    np.testing.assert_allclose(
        bailie_gong_power_bound(np.array([0.01, 0.05]), 0.1, 1),
        np.array([0.01, 0.05]) * np.exp(0.1),
    )


def test_hamming_distances():
    d = hamming_distances([[0, 1, 1], [1, 1, 0], [0, 1, 1]])
    np.testing.assert_array_equal(d, [[0, 2, 0], [2, 0, 2], [0, 2, 0]])

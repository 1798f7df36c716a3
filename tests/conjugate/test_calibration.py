"""DP-calibrated priors and noise scales (pymc_edp.conjugate.calibration).

Every claimed epsilon is checked against the DP epsilon of the mechanism's transition
matrix (or density grid) computed numerically by pymc_edp.risk.dp_epsilon.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pymc_edp.conjugate import (
    BernoulliSynthesizer,
    BetaBinomialSynthesizer,
    DirichletMultinomialSynthesizer,
    LaplaceMechanism,
    bernoulli_synthesizer_prior,
    beta_binomial_synthesizer_matrix,
    beta_binomial_synthesizer_prior,
    dirichlet_multinomial_synthesizer_prior,
    laplace_mechanism,
)
from pymc_edp.risk import dp_epsilon

# The matrix epsilon is a difference of log-pmfs of magnitude <= ~1e3 evaluated in double
# precision, so it carries an absolute round-off of order 1e-12; rtol 1e-9 is far above
# that and far below any calibration error (a wrong formula is off by O(1)).
EPS_RTOL = 1e-9


def _frequencies_match(draws, pmf, n_draws):
    """Every cell within 5 binomial standard errors (false alarm ~1e-5 per cell)."""
    freq = np.bincount(np.asarray(draws).ravel(), minlength=pmf.size) / n_draws
    se = np.sqrt(pmf * (1 - pmf) / n_draws)
    return np.all(np.abs(freq[: pmf.size] - pmf) <= 5 * se + 1e-12) and freq.size == pmf.size


# ---------------------------------------------------------------------------------------
# Beta-Binomial synthesizer
# ---------------------------------------------------------------------------------------
def test_beta_binomial_prior_reproduces_charest_han_table1():
    prior = beta_binomial_synthesizer_prior(np.log(11.0), 5)
    assert prior.alpha == pytest.approx(0.5, rel=1e-12)
    assert prior.beta == pytest.approx(0.5, rel=1e-12)
    np.testing.assert_allclose(
        prior.transition_matrix(5), beta_binomial_synthesizer_matrix(5, 0.5, 0.5), rtol=1e-14
    )
    # The calibration printed in Charest & Han's text, (e^eps - 1) / n, gives a = 2 and
    # hence eps = log(1 + 5/2) = 1.25, not the log 11 of their Table 1.
    wrong = BetaBinomialSynthesizer(alpha=(11.0 - 1.0) / 5, beta=(11.0 - 1.0) / 5, n_synthetic=5)
    assert dp_epsilon(wrong.transition_matrix(5)) == pytest.approx(np.log(3.5), rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, np.log(11.0), 5.0])
@pytest.mark.parametrize("n_synthetic", [1, 5, 40])
@pytest.mark.parametrize("prior_mean", [0.5, 0.2, 0.9])
def test_beta_binomial_prior_epsilon_is_exact(epsilon, n_synthetic, prior_mean):
    prior = beta_binomial_synthesizer_prior(epsilon, n_synthetic, prior_mean=prior_mean)
    assert prior.epsilon == pytest.approx(epsilon, rel=EPS_RTOL)
    assert prior.alpha / (prior.alpha + prior.beta) == pytest.approx(prior_mean, rel=1e-12)
    for n in (1, 7, 60):  # the epsilon does not depend on n
        t = prior.transition_matrix(n, log=True)
        assert dp_epsilon(t, log=True) == pytest.approx(epsilon, rel=EPS_RTOL)


def test_beta_binomial_epsilon_formula_any_prior():
    for a, b in [(0.3, 4.0), (2.0, 2.0), (7.0, 0.9)]:
        s = BetaBinomialSynthesizer(alpha=a, beta=b, n_synthetic=9)
        assert s.epsilon == pytest.approx(np.log1p(9 / min(a, b)), rel=1e-14)
        assert dp_epsilon(s.transition_matrix(12)) == pytest.approx(s.epsilon, rel=EPS_RTOL)


def test_beta_binomial_build_model_runs_the_mechanism(rng):
    prior = beta_binomial_synthesizer_prior(1.0, 6)
    model = prior.build_model(x=3, n=8)
    assert isinstance(model, pm.Model)
    n_draws = 20_000
    draws = pm.draw(model["x_synthetic"], draws=n_draws, random_seed=rng)
    row = prior.transition_matrix(8).sel(x=3).values
    assert _frequencies_match(draws, row, n_draws)


# ---------------------------------------------------------------------------------------
# McClure & Reiter Beta-Bernoulli synthesizer
# ---------------------------------------------------------------------------------------
def test_bernoulli_prior_matches_mcclure_reiter():
    # Sec. 3.2: eps = 1000 with n_s = 1000 gives alpha = beta = .58.
    prior = bernoulli_synthesizer_prior(1000.0, 1000)
    assert prior.alpha == pytest.approx(1 / (np.e - 1), rel=1e-12)
    assert round(prior.alpha, 2) == 0.58
    # Appendix A, eq. (9): eps = n_s log((1 + a) / a).
    assert prior.epsilon == pytest.approx(1000.0, rel=EPS_RTOL)


@pytest.mark.parametrize("epsilon", [0.01, 2.0, 100.0, 1000.0])
@pytest.mark.parametrize("prior_mean", [0.5, 0.3])
def test_bernoulli_prior_epsilon_is_exact(epsilon, prior_mean):
    prior = bernoulli_synthesizer_prior(epsilon, 1000, prior_mean=prior_mean)
    t = prior.transition_matrix(1000, log=True)  # probabilities underflow: use logs
    assert dp_epsilon(t, log=True) == pytest.approx(epsilon, rel=EPS_RTOL)


def test_bernoulli_transition_rows_are_binomial():
    s = BernoulliSynthesizer(alpha=0.7, beta=1.9, n_synthetic=13)
    t = s.transition_matrix(9)
    x = np.arange(10)[:, None]
    expected = stats.binom.pmf(np.arange(14)[None, :], 13, (x + 0.7) / (9 + 0.7 + 1.9))
    np.testing.assert_allclose(t.values, expected, rtol=1e-10)


def test_bernoulli_build_model_runs_the_mechanism(rng):
    prior = bernoulli_synthesizer_prior(3.0, 10)
    model = prior.build_model(x=4, n=12)
    assert float(pm.draw(model["p"])) == pytest.approx((4 + prior.alpha) / (12 + 2 * prior.alpha))
    n_draws = 20_000
    y, xs = pm.draw([model["y_synthetic"], model["x_synthetic"]], draws=n_draws, random_seed=rng)
    assert y.shape == (n_draws, 10)
    np.testing.assert_array_equal(y.sum(axis=1), xs)
    assert _frequencies_match(xs, prior.transition_matrix(12).sel(x=4).values, n_draws)


# ---------------------------------------------------------------------------------------
# Dirichlet-Multinomial synthesizer
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize(("k", "n", "n_s"), [(3, 3, 4), (4, 2, 3)])
def test_dirichlet_prior_epsilon_is_exact(epsilon, k, n, n_s):
    prior = dirichlet_multinomial_synthesizer_prior(epsilon, n_s, k)
    assert prior.epsilon == pytest.approx(epsilon, rel=EPS_RTOL)
    t = prior.transition_matrix(n)
    np.testing.assert_allclose(t.sum("x_synthetic"), 1.0, rtol=1e-12)
    assert dp_epsilon(t, pairs=prior.neighbour_pairs(n)) == pytest.approx(epsilon, rel=EPS_RTOL)


def test_dirichlet_asymmetric_prior_mean():
    prior = dirichlet_multinomial_synthesizer_prior(1.2, 3, prior_mean=[0.5, 0.3, 0.2])
    a = np.array(prior.alpha)
    np.testing.assert_allclose(a / a.sum(), [0.5, 0.3, 0.2], rtol=1e-12)
    assert min(a) == pytest.approx(3 / np.expm1(1.2), rel=1e-12)
    t = prior.transition_matrix(3, log=True)
    assert dp_epsilon(t, pairs=prior.neighbour_pairs(3), log=True) == pytest.approx(
        1.2, rel=EPS_RTOL
    )


def test_dirichlet_two_categories_is_beta_binomial():
    d = DirichletMultinomialSynthesizer(alpha=(0.8, 1.7), n_synthetic=6)
    t = d.transition_matrix(5)
    # rows/cols are compositions (x_0, x_1) in lexicographic order: x_0 = 0..n,
    # so x_0 plays the role of the failures and x_1 = n - x_0 of the successes.
    bb = beta_binomial_synthesizer_matrix(5, 1.7, 0.8, n_synthetic=6)
    np.testing.assert_allclose(t.values, bb.values[::-1, ::-1], rtol=1e-12)
    np.testing.assert_array_equal(t["x_1"].values, 5 - np.arange(6))


def test_dirichlet_neighbour_pairs():
    d = DirichletMultinomialSynthesizer(alpha=(1.0, 1.0, 1.0), n_synthetic=2)
    rows = d.datasets(2)
    pairs = d.neighbour_pairs(2)
    assert rows.shape == (6, 3) and np.all(rows.sum(axis=1) == 2)
    # Moving one record between categories changes the L1 distance of counts by 2.
    dist = np.abs(rows[pairs[:, 0]] - rows[pairs[:, 1]]).sum(axis=1)
    assert np.all(dist == 2)
    all_l1 = np.abs(rows[:, None] - rows[None]).sum(axis=2)
    assert len(pairs) == np.sum(all_l1 == 2) // 2


def test_dirichlet_build_model_runs_the_mechanism(rng):
    d = dirichlet_multinomial_synthesizer_prior(1.0, 3, 3)
    model = d.build_model([2, 0, 1])
    n_draws = 20_000
    draws = pm.draw(model["x_synthetic"], draws=n_draws, random_seed=rng)
    assert draws.shape == (n_draws, 3) and np.all(draws.sum(axis=1) == 3)
    t = d.transition_matrix(3).sel(x_0=2, x_1=0, x_2=1)
    # Column order of the transition matrix: the compositions of n_s = 3 into 3 parts.
    cols = np.column_stack([t[f"x_synthetic_{i}"].values for i in range(3)])
    codes = {tuple(c): i for i, c in enumerate(cols)}
    idx = np.array([codes[tuple(r)] for r in draws])
    assert _frequencies_match(idx, t.values, n_draws)


# ---------------------------------------------------------------------------------------
# Laplace mechanism
# ---------------------------------------------------------------------------------------
LAPLACE_CASES = [(0.1, 1.0), (2.0, 17 / 6), (5.0, 0.3)]


@pytest.mark.parametrize(("epsilon", "sensitivity"), LAPLACE_CASES)
def test_laplace_privacy_loss_at_calibrated_scale_is_epsilon(epsilon, sensitivity):
    # The privacy loss of releasing t, log p(t | f(x)) - log p(t | f(x')), for neighbouring
    # query values one sensitivity apart, evaluated with scipy's Laplace at the calibrated
    # scale: it must stay within [-eps, eps] and reach eps (so the scale is not loose).
    mech = laplace_mechanism(epsilon, sensitivity)
    f_x, f_x2 = 1.7, 1.7 + sensitivity
    b = mech.scale
    t = np.concatenate([np.linspace(f_x - 10 * b, f_x2 + 10 * b, 2001), [f_x, f_x2]])
    loss = stats.laplace.logpdf(t, f_x, b) - stats.laplace.logpdf(t, f_x2, b)
    assert np.max(np.abs(loss)) == pytest.approx(epsilon, rel=EPS_RTOL)
    assert np.all(np.abs(loss) <= epsilon * (1 + EPS_RTOL))
    # Reached by every output outside [f(x), f(x')]: -eps above, +eps below.
    np.testing.assert_allclose(loss[t <= f_x], epsilon, rtol=EPS_RTOL)
    np.testing.assert_allclose(loss[t >= f_x2], -epsilon, rtol=EPS_RTOL)
    # DP bounds events, not only densities: the tail event {T > s} with s >= f(x') has
    # probability ratio exactly e^eps, the largest any event can have.
    s = f_x2 + np.array([0.0, 0.5, 3.0]) * b
    log_ratio = stats.laplace.logsf(s, f_x2, b) - stats.laplace.logsf(s, f_x, b)
    np.testing.assert_allclose(log_ratio, epsilon, rtol=EPS_RTOL)
    # The mechanism's own density is that Laplace distribution.
    np.testing.assert_allclose(
        mech.log_density(t, f_x), stats.laplace.logpdf(t, f_x, b), rtol=1e-13, atol=1e-12
    )


@pytest.mark.parametrize(("epsilon", "sensitivity"), LAPLACE_CASES)
def test_laplace_density_matrix_epsilon(epsilon, sensitivity):
    mech = laplace_mechanism(epsilon, sensitivity)
    values = sensitivity * np.arange(4)  # neighbouring datasets: one sensitivity apart
    outputs = np.linspace(-10 * mech.scale, values[-1] + 10 * mech.scale, 2001)
    dens = mech.log_density(outputs[None, :], values[:, None])  # rows: query values
    # The density ratio saturates at e^eps outside [f(x), f(x')]; the grid reaches there.
    assert dp_epsilon(dens, log=True) == pytest.approx(epsilon, rel=EPS_RTOL)


def test_laplace_reproduces_lee_clifton_ratio():
    # Lee & Clifton Sec. 4.1: mean absence days, Delta f = 17/6, eps = 2, response 3.1677:
    # Pr[kappa(X) > 3.1677] / Pr[kappa(X') > 3.1677] = 3.2933 <= e^2, f(X) = 4, f(X') = 2.
    mech = laplace_mechanism(2.0, 17 / 6)
    ratio = stats.laplace.sf(3.1677, 4.0, mech.scale) / stats.laplace.sf(3.1677, 2.0, mech.scale)
    assert ratio == pytest.approx(3.2933, abs=5e-5)  # the paper prints 4 decimals
    np.testing.assert_allclose(
        np.exp(mech.log_density([0.0, 1.0], 0.5)),
        stats.laplace.pdf([0.0, 1.0], 0.5, mech.scale),
        rtol=1e-14,
    )


def test_laplace_build_model(rng):
    mech = LaplaceMechanism(sensitivity=1.0, epsilon=0.5)
    model = mech.build_model(np.array([3.0, 10.0]))
    draws = pm.draw(model["released"], draws=40_000, random_seed=rng)
    assert draws.shape == (40_000, 2)
    # Laplace(b = 2) has sd 2 sqrt(2); the sample median's sd is b / sqrt(n) ~ 0.01, so
    # 0.05 is five of them.
    np.testing.assert_allclose(np.median(draws, axis=0), [3.0, 10.0], atol=0.05)
    assert stats.kstest(draws[:, 0], stats.laplace(3.0, 2.0).cdf).pvalue > 1e-4


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: beta_binomial_synthesizer_prior(0.0, 5), "epsilon"),
        (lambda: beta_binomial_synthesizer_prior(1.0, 0), "n_synthetic"),
        (lambda: beta_binomial_synthesizer_prior(1.0, 5, prior_mean=1.0), "prior_mean"),
        (lambda: bernoulli_synthesizer_prior(np.inf, 5), "epsilon"),
        (lambda: dirichlet_multinomial_synthesizer_prior(1.0, 5), "exactly one"),
        (lambda: dirichlet_multinomial_synthesizer_prior(1.0, 5, prior_mean=[0.5, 0.6]), "sum"),
        (lambda: BetaBinomialSynthesizer(alpha=-1.0, beta=1.0, n_synthetic=3), "alpha"),
        (lambda: DirichletMultinomialSynthesizer(alpha=(1.0,), n_synthetic=3), "two"),
        (lambda: laplace_mechanism(1.0, 0.0), "sensitivity"),
        (lambda: beta_binomial_synthesizer_prior(1.0, 5).build_model(6, 5), "x <= n"),
    ],
)
def test_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------------------------------
# Extreme epsilons: finite transition matrices that round-trip through dp_epsilon
# ---------------------------------------------------------------------------------------
# Every calibration class with a transition matrix: (prior for an epsilon, whether its
# neighbouring rows are given by neighbour_pairs).
EXTREME = {
    "beta-binomial": (lambda eps: beta_binomial_synthesizer_prior(eps, 5), False),
    "beta-binomial-asymmetric": (
        lambda eps: beta_binomial_synthesizer_prior(eps, 5, prior_mean=0.3),
        False,
    ),
    "bernoulli": (lambda eps: bernoulli_synthesizer_prior(eps, 5, prior_mean=0.3), False),
    "dirichlet": (lambda eps: dirichlet_multinomial_synthesizer_prior(eps, 3, 3), True),
}


def _matrices(name, eps, n):
    make, by_pairs = EXTREME[name]
    prior = make(eps)
    pairs = prior.neighbour_pairs(n) if by_pairs else None
    t = prior.transition_matrix(n)
    log_t = prior.transition_matrix(n, log=True)
    return prior, t, log_t, pairs


@pytest.mark.parametrize("name", list(EXTREME))
@pytest.mark.parametrize("epsilon", [1e-9, 1e-3, 1.0, 10.0, 37.0, 50.0, 200.0])
def test_transition_matrix_round_trips_extreme_epsilon(name, epsilon):
    # Used to be NaN from eps >= 37 on (tiny prior parameters), so that dp_epsilon blamed
    # its input, and to check out as 1.5e-5 at eps = 1e-9 (huge parameters, cancellation).
    for n in (1, 4):
        prior, t, log_t, pairs = _matrices(name, epsilon, n)
        assert prior.epsilon == pytest.approx(epsilon, rel=1e-12)
        assert np.all(np.isfinite(t.values)) and np.all(np.isfinite(log_t.values))
        np.testing.assert_allclose(t.values.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.exp(log_t.values), t.values, rtol=1e-13, atol=0)
        assert dp_epsilon(t, pairs=pairs) == pytest.approx(epsilon, rel=1e-6)
        assert dp_epsilon(log_t, pairs=pairs, log=True) == pytest.approx(epsilon, rel=1e-6)


@pytest.mark.parametrize(
    ("name", "epsilon"),
    [("beta-binomial", 705.0), ("dirichlet", 705.0), ("bernoulli", 1000.0)],
)
def test_transition_matrix_near_the_largest_usable_epsilon(name, epsilon):
    # Some probabilities underflow to exactly 0 while the neighbouring row's are positive:
    # the probability-scale matrix is still valid and dp_epsilon reports >= eps (inf: no
    # finite bound visible in double precision), never NaN nor an error about its input;
    # the log-scale matrix keeps every digit.
    _, t, log_t, pairs = _matrices(name, epsilon, 4)
    assert np.all(np.isfinite(t.values)) and np.all(np.isfinite(log_t.values))
    np.testing.assert_allclose(t.values.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert dp_epsilon(t, pairs=pairs) >= epsilon * (1 - 1e-6)
    assert dp_epsilon(log_t, pairs=pairs, log=True) == pytest.approx(epsilon, rel=1e-6)


@pytest.mark.parametrize(
    ("call", "limit"),
    [
        (lambda: beta_binomial_synthesizer_prior(800.0, 5), "710.0"),
        (lambda: dirichlet_multinomial_synthesizer_prior(800.0, 3, 3), "709.5"),
        (lambda: bernoulli_synthesizer_prior(4000.0, 5), "3542.0"),
    ],
)
def test_epsilon_beyond_double_precision_refused(call, limit):
    # The prior parameter n_s / (e^eps - 1) would underflow to 0 (and e^eps overflow).
    with pytest.raises(
        ValueError,
        match=rf"too large to calibrate: .*underflows double precision .*about {limit}\)",
    ):
        call()


def test_epsilon_property_with_tiny_parameters():
    # log(1 + n_s / a) stays finite when n_s / a overflows.
    s = BetaBinomialSynthesizer(alpha=1e-308, beta=1.0, n_synthetic=5)
    assert s.epsilon == pytest.approx(np.log(5.0) + 308 * np.log(10.0), rel=1e-14)
    b = BernoulliSynthesizer(alpha=1e-308, beta=1.0, n_synthetic=5)
    assert b.epsilon == pytest.approx(5 * 308 * np.log(10.0), rel=1e-14)

"""The GLM log-density kernels and their ranges (pymc_edp.base.glm).

Each family's log-density is checked against SciPy (or a closed form) to 1e-12, including
large linear predictors; every range is checked to be at least the range of the computed
columns (and equal to it to rounding), for removal and replacement, on random and extreme
inputs and every broadcast layout of the parameters.
"""

import numpy as np
import pytest
from scipy import special, stats

from pymc_edp.base import glm

RTOL = ATOL = 1e-12
S, K = 60, 25


def _expit(x):
    return special.expit(x)


def _check_range(family, link, y, params, alt_y=None, **kw):
    """The range is >= that of the computed columns and equal to it to rounding."""
    cols = glm.logp(family, link, y, params, **kw)
    assert cols is not None
    if alt_y is not None:
        other = glm.logp(family, link, alt_y, params, **kw)
        assert other is not None
        cols = other - cols
    want = cols.max(axis=0) - cols.min(axis=0)
    got = glm.logp_range(family, link, y, params, alt_y, **kw)
    scale = 1.0 + np.abs(cols).max(axis=0)
    assert got.shape == (len(y),)
    assert np.all(got >= want - 1e-12 * scale)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * scale.max())


# ----------------------------------------------------------------------- log-densities
def test_normal_matches_scipy(rng):
    y = rng.normal(size=K)
    mu = rng.normal(size=(S, K))
    sigma = rng.uniform(0.2, 3, (S, 1))
    got = glm.logp("normal", "identity", y, [mu, sigma])
    np.testing.assert_allclose(got, stats.norm.logpdf(y, mu, sigma), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("nu_shape", [(S, 1), (1, 1), (S, K)])
def test_student_t_matches_scipy(rng, nu_shape):
    y = rng.standard_t(3, size=K)
    mu = rng.normal(size=(S, K))
    sigma = rng.uniform(0.2, 3, (S, 1))
    nu = rng.uniform(0.5, 50, nu_shape)
    got = glm.logp("student_t", "identity", y, [nu, mu, sigma])
    np.testing.assert_allclose(got, stats.t.logpdf(y, nu, mu, sigma), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("scale", [1.0, 40.0, 700.0])
def test_bernoulli_logit_is_stable(rng, scale):
    y = rng.integers(0, 2, K)
    q = scale * rng.uniform(-1, 1, (S, K))
    got = glm.logp("bernoulli", "logit", y, [q])
    # log sigmoid(x) = -logaddexp(0, -x), exactly rounded
    want = np.where(y == 1, -np.logaddexp(0, -q), -np.logaddexp(0, q))
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_bernoulli_erfc_and_identity(rng):
    y = rng.integers(0, 2, K)
    z = rng.uniform(-3, 3, (S, K))
    p = 0.5 * special.erfc(z)
    want = np.where(y == 1, np.log(p), np.log1p(-p))
    np.testing.assert_allclose(glm.logp("bernoulli", "erfc", y, [z]), want, rtol=1e-11)
    np.testing.assert_allclose(glm.logp("bernoulli", "identity", y, [p]), want, rtol=RTOL)


@pytest.mark.parametrize("link", ["logit", "erfc", "identity"])
def test_binomial_matches_scipy(rng, link):
    n = rng.integers(1, 30, K)
    y = rng.binomial(n, 0.3)
    q = rng.uniform(-3, 3, (S, K))
    p = {"logit": _expit(q), "erfc": 0.5 * special.erfc(q), "identity": _expit(q)}[link]
    got = glm.logp("binomial", link, y, [n, p if link == "identity" else q])
    np.testing.assert_allclose(got, stats.binom.logpmf(y, n, p), rtol=1e-11, atol=ATOL)


def test_binomial_logit_at_large_eta(rng):
    n = rng.integers(1, 30, K)
    y = rng.binomial(n, 0.5)
    q = rng.choice([-40.0, 40.0], (S, K))
    got = glm.logp("binomial", "logit", y, [n, q])
    log_p, log_1mp = -np.logaddexp(0, -q), -np.logaddexp(0, q)
    binomln = special.gammaln(n + 1) - special.gammaln(y + 1) - special.gammaln(n - y + 1)
    want = binomln + y * log_p + (n - y) * log_1mp
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("link", ["log", "identity"])
def test_poisson_matches_scipy(rng, link):
    y = rng.poisson(3, K)
    y[:3] = 0
    q = rng.uniform(-2, 3, (S, K))
    mu = np.exp(q)
    got = glm.logp("poisson", link, y, [q if link == "log" else mu])
    np.testing.assert_allclose(got, stats.poisson.logpmf(y, mu), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(("link", "style"), [("logit", 6), ("identity", 6), ("identity", 5)])
@pytest.mark.parametrize("n_shape", [(S, 1), (S, K), (1, 1)])
def test_negative_binomial_matches_scipy(rng, link, style, n_shape):
    y = rng.poisson(4, K)
    y[:2] = 0
    n = rng.uniform(0.5, 20, n_shape)
    w = rng.uniform(-3, 3, (S, K))  # p = sigmoid(w)
    p = _expit(w)
    q = w if link == "logit" else p
    got = glm.logp("negative_binomial", link, y, [n, q], style=style)
    np.testing.assert_allclose(got, stats.nbinom.logpmf(y, n, p), rtol=1e-11, atol=ATOL)


def test_negative_binomial_table_cache_gives_the_same_bits(rng):
    n = rng.uniform(0.5, 20, (S, 1))
    w = rng.uniform(-3, 3, (S, K))
    cache = {}
    first = glm.logp("negative_binomial", "logit", rng.poisson(3, K), [n, w], cache=cache)
    y2 = rng.poisson(8, K)  # new values: the table grows
    again = glm.logp("negative_binomial", "logit", y2, [n, w], cache=cache)
    np.testing.assert_array_equal(again, glm.logp("negative_binomial", "logit", y2, [n, w]))
    assert first is not None and set(y2) <= set(cache["y_u"])


# ---------------------------------------------------------------------- unhandled blocks
@pytest.mark.parametrize(
    ("family", "link", "y", "params"),
    [
        ("normal", "identity", [0.0, 1.0], [np.zeros((3, 2)), -np.ones((3, 1))]),
        ("normal", "identity", [0.0, 1.0], [np.full((3, 2), np.nan), np.ones((3, 1))]),
        ("normal", "identity", [0.0, np.inf], [np.zeros((3, 2)), np.ones((3, 1))]),
        ("student_t", "identity", [0.0, 1.0], [-np.ones((3, 1)), np.zeros((3, 2)), 1.0]),
        ("bernoulli", "logit", [0, 2], [np.zeros((3, 2))]),
        ("bernoulli", "identity", [0, 1], [np.full((3, 2), 1.5)]),
        ("bernoulli", "identity", [0, 1], [np.ones((3, 2))]),  # log1p(-1) = -inf
        ("bernoulli", "logit", [0, 1], [np.array([[0.0, np.nan]])]),
        ("binomial", "logit", [0, 5], [np.array([3, 4]), np.zeros((3, 2))]),
        ("binomial", "logit", [0.5, 1], [np.array([3, 4]), np.zeros((3, 2))]),
        ("poisson", "log", [-1, 2], [np.zeros((3, 2))]),
        ("poisson", "identity", [0, 2], [np.zeros((3, 2))]),
        ("poisson", "log", [0, 2], [np.full((3, 2), 800.0)]),  # exp overflows
        ("negative_binomial", "logit", [0, 2], [-np.ones((3, 1)), np.zeros((3, 2))]),
        ("negative_binomial", "logit", [0, 2], [np.full((3, 1), 1e11), np.zeros((3, 2))]),
        ("negative_binomial", "identity", [0, 2], [np.ones((3, 1)), np.ones((3, 2))]),
    ],
)
def test_unhandled_blocks_give_none(family, link, y, params):
    assert glm.logp(family, link, y, params) is None
    assert glm.logp_range(family, link, y, params) is None


# ------------------------------------------------------------------------------- ranges
@pytest.mark.parametrize("scale", [0.3, 5.0, 40.0])
@pytest.mark.parametrize("link", ["logit", "erfc", "identity"])
def test_bernoulli_and_binomial_ranges(rng, link, scale):
    y = rng.integers(0, 2, K)
    q = scale * rng.standard_normal((S, K)) + rng.normal(size=K)
    if link == "erfc":
        q = np.clip(q, -5, 5)  # 0.5 erfc(-6) rounds to 1: log(1 - p) = -inf
    if link == "identity":
        q = _expit(q / scale)
    _check_range("bernoulli", link, y, [q])
    _check_range("bernoulli", link, y, [q], alt_y=1 - y)
    n = rng.integers(1, 40, K)
    yb = rng.binomial(n, 0.4)
    _check_range("binomial", link, yb, [n, q])
    _check_range("binomial", link, yb, [n, q], alt_y=n - yb)


@pytest.mark.parametrize("link", ["log", "identity"])
def test_poisson_ranges(rng, link):
    y = rng.poisson(3, K)
    y[:4] = 0
    # draws on both sides of the mode (log y) for some records, one side for others
    q = rng.normal(np.log(3), 1.0, (S, K))
    q[:, :3] += 4.0
    params = [q if link == "log" else np.exp(q)]
    _check_range("poisson", link, y, params)
    _check_range("poisson", link, y, params, alt_y=y + 1)
    _check_range("poisson", link, y, params, alt_y=np.zeros(K, int))


def test_scalar_range_of_a_per_draw_parameter(rng):
    """``q`` with one value per draw (not per record) is broadcast over the records."""
    y = rng.poisson(3, K)
    _check_range("poisson", "identity", y, [rng.uniform(1, 5, (S, 1))])
    _check_range("bernoulli", "logit", rng.integers(0, 2, K), [rng.normal(size=(S, 1))])


def test_ranges_of_families_with_per_draw_scales(rng):
    y = rng.normal(size=K)
    mu = rng.normal(size=(S, K))
    sigma = rng.uniform(0.2, 3, (S, 1))
    _check_range("normal", "identity", y, [mu, sigma])
    _check_range("normal", "identity", y, [mu, sigma], alt_y=y + 1.0)
    nu = rng.uniform(1, 30, (S, 1))
    _check_range("student_t", "identity", y, [nu, mu, sigma], alt_y=-y)
    yc = rng.poisson(3, K)
    n = rng.uniform(0.5, 20, (S, 1))
    w = rng.uniform(-40, 40, (S, K))
    _check_range("negative_binomial", "logit", yc, [n, w])
    _check_range("negative_binomial", "logit", yc, [n, w], alt_y=yc + 2)


def test_mode_bracket_picks_the_draws_next_to_the_mode():
    """Binomial logit, y / n = 1/2: the maximum is at the draw nearest q = 0."""
    q = np.array([[-3.0], [-0.5], [0.25], [2.0]])
    got = glm.logp_range("binomial", "logit", [2], [np.array([4]), q])
    cols = glm.logp("binomial", "logit", [2], [np.array([4]), q])
    assert got[0] == cols.max() - cols.min()


def test_lgamma_and_half_erfc_match_scipy(rng):
    x = rng.uniform(0.1, 50, 100)
    np.testing.assert_allclose(glm.lgamma(x), special.gammaln(x), rtol=1e-13)
    np.testing.assert_allclose(glm.half_erfc(x - 25), 0.5 * special.erfc(x - 25), rtol=1e-13)

"""Tests of pymc_edp.base.pld against dp-accounting's fixtures and exact answers.

* dp-accounting (google/differential-privacy, ``python/dp_accounting/dp_accounting/pld/``):
  the fixtures of ``pld_pmf_test.py`` and ``privacy_loss_distribution_test.py`` that fit this
  API, each test naming the one it reproduces. There, ``from_two_probability_mass_functions(
  lower, upper)`` builds ``pmf_remove``, the PLD of ``(upper, lower)`` (``from_pmfs(upper,
  lower)[0]`` here), and ``pmf_add``, that of ``(lower, upper)`` (``[1]`` here); a PLD's
  delta is the larger of the two. Their ``tail_mass_truncation`` moves half of it from each
  tail, so it is ``truncate(tail_mass_truncation / 2)`` here.
* The Gaussian mechanism: the PLD of ``(N(0, 1), N(mu, 1))`` is ``L ~ N(mu^2/2, mu^2)`` with
  ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``; k-fold composition is
  the Gaussian mechanism with ``mu sqrt(k)``.
* Brute force: the atom formula ``sum_i p_i (1 - e^(eps - l_i))_+`` and repeated
  ``np.convolve``.
"""

import math
from collections.abc import Mapping

import numpy as np
import pytest
import scipy.fft
from scipy import optimize, stats

from pymc_edp.base.pld import (
    MAX_POINTS,
    DiscretePLD,
    discretise,
    exact_delta,
    exact_epsilon,
)

# Exact arithmetic up to a few float64 round-offs (sums of <= ~100 terms, one FFT of a few
# dozen points): 1e-12 leaves orders of magnitude of room.
EXACT = 1e-12


def as_dict(pld):
    """``{grid index: mass}`` of the non-zero entries (dp-accounting's sparse view)."""
    return {pld.offset + j: p for j, p in enumerate(pld.pmf) if p != 0}


def assert_dict_close(actual, expected, tol=EXACT):
    assert set(actual) == set(expected), (actual, expected)
    for key, value in expected.items():
        assert actual[key] == pytest.approx(value, abs=tol), key


def brute_delta(losses, probs, eps, inf_mass=0.0):
    losses, probs = np.asarray(losses, dtype=float), np.asarray(probs, dtype=float)
    with np.errstate(over="ignore"):
        terms = np.maximum(1.0 - np.exp(eps - losses), 0.0)
    return float(np.sum(probs * terms) + inf_mass)


def pld_delta(pair, eps):
    """dp-accounting's ``get_delta_for_epsilon``: the larger delta of the two orders."""
    return max(pair[0].delta(eps), pair[1].delta(eps))


# --- composition of two PLDs, truncation and PLDs of two PMFs (only these tests use them) ---


def compose(a, b):
    """PLD of the composition of ``a`` and ``b`` (same interval): direct or FFT convolution."""
    if not isinstance(b, DiscretePLD):
        raise TypeError(f"other must be a DiscretePLD, got {type(b).__name__}")
    if b.interval != a.interval:
        raise ValueError(
            f"intervals differ: {a.interval!r} != {b.interval!r}; "
            "discretise both PLDs on the same grid"
        )
    x, y = a.pmf, b.pmf
    m = x.size + y.size - 1
    if x.size * y.size <= 2**16:  # small: directly, exact zeros stay zero
        pmf = np.convolve(x, y)
    else:
        size = scipy.fft.next_fast_len(m, real=True)
        pmf = scipy.fft.irfft(scipy.fft.rfft(x, size) * scipy.fft.rfft(y, size), size)[:m]
        pmf = np.maximum(pmf, 0.0)
    ia, ib = a.infinity_mass, b.infinity_mass
    return DiscretePLD(a.interval, a.offset + b.offset, pmf, ia + ib - ia * ib)


def truncate(pld, tail):
    """Move a lower tail of mass at most ``tail`` up to the first kept grid point, trim zeros.

    Pessimistic: raising losses never lowers delta(eps), which rises by at most ``tail``.
    """
    pmf = pld.pmf
    cum = np.cumsum(pmf)
    m = min(int(np.searchsorted(cum, tail, side="right")), pmf.size - 1)
    kept = pmf[m:].copy()
    kept[0] = cum[m]
    nonzero = np.flatnonzero(kept)
    lo, hi = (nonzero[0], nonzero[-1]) if nonzero.size else (0, 0)
    offset = pld.offset + m + int(lo)
    return DiscretePLD(pld.interval, offset, kept[lo : hi + 1], pld.infinity_mass)


def from_pmfs(p, q, *, interval, pessimistic=True):
    """The PLDs of ``(P, Q)`` and ``(Q, P)`` of two PMFs (arrays or dicts) on one support."""
    if isinstance(p, Mapping) and isinstance(q, Mapping):
        keys = list(dict.fromkeys([*p, *q]))
        p, q = [p.get(key, 0.0) for key in keys], [q.get(key, 0.0) for key in keys]
    pa, qa = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if pa.ndim != 1 or pa.shape != qa.shape or pa.size == 0:
        raise ValueError(f"p and q must be 1-D of the same length, got {pa.shape}, {qa.shape}")
    for name, x in (("p", pa), ("q", qa)):
        if not np.all(np.isfinite(x)) or np.any(x < 0) or x.sum() > 1 + 1e-9:
            raise ValueError(f"{name} must be non-negative and sum to at most 1")
    with np.errstate(divide="ignore"):
        log_ratio = np.log(pa) - np.log(qa)
    # outcomes without mass under the weighting PMF get probability 0 and are dropped
    l_pq = np.where(pa > 0, log_ratio, 0.0)
    l_qp = np.where(qa > 0, -log_ratio, 0.0)
    kwargs = {"interval": interval, "pessimistic": pessimistic}
    return discretise(l_pq, pa, **kwargs), discretise(l_qp, qa, **kwargs)


# --- dp-accounting, pld_pmf_test.py ------------------------------------------------------

# pld_pmf_test.py: the PMF of test_delta_for_epsilon / test_epsilon_for_delta.
FIXTURE_PMF = DiscretePLD(0.1, -1, [0.2, 0.3, 0.0, 0.4], infinity_mass=0.1)


def test_delta_for_epsilon_dp_accounting():
    # pld_pmf_test.py::test_delta_for_epsilon (and _vectorized); they assert 7 places
    pmf = FIXTURE_PMF
    assert pmf.delta(3.0) == pytest.approx(0.1, abs=EXACT)
    assert pmf.delta(0.1) == pytest.approx(0.1 + 0.4 * (1 - np.exp(-0.1)), abs=EXACT)
    assert pmf.delta(-20.0) == pytest.approx(1.0, abs=1e-7)
    assert pmf.delta(np.inf) == 0.1
    assert pmf.delta(-np.inf) == pytest.approx(1.0, abs=EXACT)
    expected = [1, 1, 0.1 + 0.4 * (1 - np.exp(-0.1)), 0.1]
    np.testing.assert_allclose(pmf.delta([-np.inf, -20, 0.1, np.inf]), expected, atol=1e-7)


def test_epsilon_for_delta_dp_accounting():
    # pld_pmf_test.py::test_epsilon_for_delta
    pmf = FIXTURE_PMF
    assert pmf.epsilon(0.05) == np.inf  # below the infinity mass
    assert pmf.epsilon(0.1) == pytest.approx(0.2, abs=EXACT)  # = infinity mass: top loss
    assert pmf.epsilon(pmf.delta(0.15)) == pytest.approx(0.15, abs=1e-10)
    assert pmf.epsilon(0.0) == np.inf


@pytest.mark.parametrize(
    ("tail", "lower_loss", "probs"),
    [(0.0, -3, [0.06, 0.31, 0.35]), (0.1, -3, [0.06, 0.31, 0.35]), (0.15, -2, [0.37, 0.35])],
)
def test_compose_dp_accounting(tail, lower_loss, probs):
    # pld_pmf_test.py::test_compose and test_compose_pessimistic, the cases without right
    # truncation (their 0.72 case sends the right tail to +inf, which truncate does not do)
    pmf1 = DiscretePLD(0.1, -1, [0.2, 0.7], infinity_mass=0.1)
    pmf2 = DiscretePLD(0.1, -2, [0.3, 0.5], infinity_mass=0.2)
    pmf = truncate(compose(pmf1, pmf2), tail / 2)
    assert pmf.interval == 0.1
    assert pmf.offset == lower_loss
    np.testing.assert_allclose(pmf.pmf, probs, atol=EXACT)
    assert pmf.infinity_mass == pytest.approx(1 - (1 - 0.1) * (1 - 0.2), abs=EXACT)


@pytest.mark.parametrize(
    ("k", "tail", "lower_loss", "probs"),
    [
        (2, 0.0, -2, [0.04, 0.28, 0.49]),
        (5, 0.0, -5, [0.00032, 0.0056, 0.0392, 0.1372, 0.2401, 0.16807]),
        (2, 0.1, -1, [0.32, 0.49]),
        (5, 0.01, -4, [0.00032 + 0.0056, 0.0392, 0.1372, 0.2401, 0.16807]),
    ],
)
def test_self_compose_dp_accounting(k, tail, lower_loss, probs):
    # pld_pmf_test.py::test_self_compose_dense_probs and test_self_compose_sparse: the exact
    # product distribution of (0.2, 0.7) on losses (-0.1, 0), to 1e-12
    pmf = DiscretePLD(0.1, -1, [0.2, 0.7], infinity_mass=0.1)
    out = truncate(pmf.self_compose(k), tail / 2)
    assert out.offset == lower_loss
    np.testing.assert_allclose(out.pmf, probs, rtol=0, atol=EXACT)
    assert out.infinity_mass == pytest.approx(1 - 0.9**k, abs=EXACT)


def test_delta_for_composed_pld_dp_accounting():
    # pld_pmf_test.py::test_get_delta_for_epsilon_for_composed_pld, against the double sum
    pmf1 = DiscretePLD(0.1, -1, [0.2, 0.3, 0, 0.1, 0.3], infinity_mass=0.1)
    pmf2 = DiscretePLD(0.1, -2, [0.1, 0, 0.4, 0.3], infinity_mass=0.2)
    composed = compose(pmf1, pmf2)
    losses = np.add.outer(pmf1.losses, pmf2.losses).ravel()
    probs = np.outer(pmf1.pmf, pmf2.pmf).ravel()
    inf_mass = 1 - 0.9 * 0.8
    for eps in np.linspace(-10, 10, num=100):
        expected = min(brute_delta(losses, probs, eps, inf_mass), 1.0)
        assert composed.delta(eps) == pytest.approx(expected, abs=EXACT)


def test_compose_different_interval_dp_accounting():
    # pld_pmf_test.py::test_compose_different_discretization
    with pytest.raises(ValueError, match=r"intervals differ: 0.1 != 0.2"):
        compose(DiscretePLD(0.1, 0, [1.0]), DiscretePLD(0.2, 0, [1.0]))


# --- dp-accounting, privacy_loss_distribution_test.py ------------------------------------


@pytest.mark.parametrize(
    ("lower", "upper", "remove", "inf_remove", "add", "inf_add"),
    [
        pytest.param(
            {0: 0.8, 1: 0.2},
            {0: 0.2, 1: 0.8},
            {math.ceil(math.log(4)): 0.8, math.ceil(-math.log(4)): 0.2},
            0.0,
            None,
            None,
            id="basic_symmetric",
        ),
        pytest.param(
            {0: 0.8, 1: 0.1, 2: 0.1},
            {0: 0.1, 1: 0.8, 3: 0.1},
            {math.ceil(math.log(8)): 0.8, math.ceil(-math.log(8)): 0.1},
            0.1,
            None,
            None,
            id="symmetric_with_inf_mass",
        ),
        pytest.param(
            {0: 0.5, 1: 0.5},
            {0: 0.8, 1: 0.2},
            {math.ceil(math.log(8 / 5)): 0.8, math.ceil(math.log(2 / 5)): 0.2},
            0.0,
            {math.ceil(math.log(5 / 8)): 0.5, math.ceil(math.log(5 / 2)): 0.5},
            0.0,
            id="basic_asymmetric",
        ),
        pytest.param(
            {0: 0.4, 1: 0.4, 2: 0.2},
            {0: 0.7, 1: 0.2, 3: 0.1},
            {math.ceil(math.log(7 / 4)): 0.7, math.ceil(math.log(2 / 4)): 0.2},
            0.1,
            {math.ceil(math.log(4 / 7)): 0.4, math.ceil(math.log(4 / 2)): 0.4},
            0.2,
            id="asymmetric_with_inf_mass",
        ),
    ],
)
def test_from_two_pmfs_dp_accounting(lower, upper, remove, inf_remove, add, inf_add):
    # privacy_loss_distribution_test.py::test_from_two_probability_mass_functions (interval
    # 1, pessimistic); the symmetric cases assert only pmf_remove
    pld_remove, pld_add = from_pmfs(upper, lower, interval=1.0)
    assert_dict_close(as_dict(pld_remove), remove)
    assert pld_remove.infinity_mass == pytest.approx(inf_remove, abs=EXACT)
    if add is not None:
        assert_dict_close(as_dict(pld_add), add)
        assert pld_add.infinity_mass == pytest.approx(inf_add, abs=EXACT)


@pytest.mark.parametrize(
    ("lower", "upper", "checks", "inf_masses"),
    [
        pytest.param(
            {1: 0.5, 2: 0.5},
            {1: 0.6, 2: 0.4},
            [(0.0, 0.1), (math.log(1.1), 0.06), (math.log(0.9), 0.15)],
            (0.0, 0.0),
            id="test_hockey_stick_basic",
        ),
        pytest.param(
            {1: 0.2, 2: 0.2, 3: 0.6},
            {1: 0.5, 2: 0.4, 4: 0.1},
            [(0.0, 0.6), (math.log(1.1), 0.6), (math.log(0.9), 0.64)],
            (0.1, 0.6),
            id="test_hockey_stick_unequal_support",
        ),
    ],
)
def test_hockey_stick_dp_accounting(lower, upper, checks, inf_masses):
    # privacy_loss_distribution_test.py::test_hockey_stick_basic and
    # test_hockey_stick_unequal_support: at their default interval 1e-4 the pessimistic delta
    # lies in [delta, delta + 1e-4], the optimistic one in [delta - 1e-4, delta]
    pess = from_pmfs(upper, lower, interval=1e-4)
    opt = from_pmfs(upper, lower, interval=1e-4, pessimistic=False)
    for pair in (pess, opt):
        assert pair[0].infinity_mass == pytest.approx(inf_masses[0], abs=EXACT)
        assert pair[1].infinity_mass == pytest.approx(inf_masses[1], abs=EXACT)
    for eps, delta in checks:
        assert delta - EXACT <= pld_delta(pess, eps) <= delta + 1e-4
        assert delta - 1e-4 <= pld_delta(opt, eps) <= delta + EXACT
        # and the exact atom formula (no grid) gives the value itself
        exact = max(exact_delta(*atoms(upper, lower), eps), exact_delta(*atoms(lower, upper), eps))
        assert exact == pytest.approx(delta, abs=EXACT)


def atoms(p, q):
    """Losses ``log p - log q`` (``+inf`` where ``q = 0``) and masses ``p`` of dict PMFs."""
    keys = [key for key in p if p[key] > 0]
    losses = [math.log(p[k] / q[k]) if q.get(k, 0) > 0 else math.inf for k in keys]
    return np.array(losses), np.array([p[k] for k in keys])


PMF1 = ({1: 0.2, 2: 0.2, 3: 0.6}, {1: 0.5, 2: 0.2, 4: 0.3})  # (lower, upper)
PMF2 = ({1: 0.4, 2: 0.6}, {2: 0.7, 3: 0.3})


def product(*pmfs):
    out = {(): 1.0}
    for pmf in pmfs:
        out = {(*key, o): v * p for key, v in out.items() for o, p in pmf.items()}
    return out


def test_composition_dp_accounting():
    # privacy_loss_distribution_test.py::test_composition (and
    # test_composition_asymmetric_with_symmetric): composing the PLDs of two PMF pairs equals
    # the PLD of the product PMFs, at their 7 places
    pld1 = from_pmfs(PMF1[1], PMF1[0], interval=1e-4)
    pld2 = from_pmfs(PMF2[1], PMF2[0], interval=1e-4)
    expected = from_pmfs(product(PMF1[1], PMF2[1]), product(PMF1[0], PMF2[0]), interval=1e-4)
    results = [
        (compose(pld1[0], pld2[0]), compose(pld1[1], pld2[1])),
        (compose(pld2[0], pld1[0]), compose(pld2[1], pld1[1])),
    ]
    for result in results:
        for got, want in zip(result, expected, strict=True):
            assert got.interval == want.interval
            assert got.infinity_mass == pytest.approx(want.infinity_mass, abs=EXACT)
        for eps in (0.0, 0.5, -0.5):
            assert pld_delta(result, eps) == pytest.approx(pld_delta(expected, eps), abs=1e-7)


def test_self_composition_dp_accounting():
    # privacy_loss_distribution_test.py::test_self_composition (k = 3), at their 7 places
    pld = from_pmfs(PMF1[1], PMF1[0], interval=1e-4)
    result = (pld[0].self_compose(3), pld[1].self_compose(3))
    expected = from_pmfs(product(*[PMF1[1]] * 3), product(*[PMF1[0]] * 3), interval=1e-4)
    for got, want in zip(result, expected, strict=True):
        assert got.infinity_mass == pytest.approx(want.infinity_mass, abs=EXACT)
    for eps in (0.0, 0.5, -0.2):
        assert pld_delta(result, eps) == pytest.approx(pld_delta(expected, eps), abs=1e-7)


def randomized_response(noise, buckets, special):
    """Output PMFs of randomized response for input 0 and for input 1 (or "special")."""
    upper = np.full(buckets, noise / buckets)
    upper[0] += 1 - noise
    lower = np.full(buckets, 1 / buckets) if special else np.roll(upper, 1)
    return upper, lower


@pytest.mark.parametrize(
    ("noise", "buckets", "special", "interval", "pessimistic", "remove", "add"),
    [
        # test_randomized_response_pessimistic
        (0.5, 2, False, 1, True, {2: 0.75, -1: 0.25}, None),
        (0.5, 2, True, 1, True, {1: 0.75, 0: 0.25}, {1: 0.5, 0: 0.5}),
        (0.2, 4, False, 1, True, {3: 0.85, -2: 0.05, 0: 0.1}, None),
        (0.2, 4, True, 1, True, {2: 0.85, -1: 0.15}, {2: 0.75, -1: 0.25}),
        # test_randomized_response_discretization
        (0.2, 4, False, 0.7, True, {5: 0.85, -4: 0.05, 0: 0.1}, None),
        (0.2, 4, True, 0.5, True, {3: 0.85, -3: 0.15}, {4: 0.75, -2: 0.25}),
        (0.2, 4, False, 2, True, {2: 0.85, -1: 0.05, 0: 0.1}, None),
        (0.2, 4, True, 2, True, {1: 0.85, 0: 0.15}, {1: 0.75, 0: 0.25}),
        # test_randomized_response_optimistic
        (0.5, 2, False, 1, False, {1: 0.75, -2: 0.25}, None),
        (0.5, 2, True, 1, False, {0: 0.75, -1: 0.25}, {0: 0.5, -1: 0.5}),
        (0.2, 4, False, 1, False, {2: 0.85, -3: 0.05, 0: 0.1}, None),
        (0.2, 4, True, 1, False, {1: 0.85, -2: 0.15}, {1: 0.75, -2: 0.25}),
    ],
)
def test_randomized_response_dp_accounting(
    noise, buckets, special, interval, pessimistic, remove, add
):
    # privacy_loss_distribution_test.py::test_randomized_response_{pessimistic,
    # discretization,optimistic}: REPLACE_ONE (symmetric, only pmf_remove asserted) and
    # REPLACE_SPECIAL (both)
    upper, lower = randomized_response(noise, buckets, special)
    pld_remove, pld_add = from_pmfs(upper, lower, interval=interval, pessimistic=pessimistic)
    assert_dict_close(as_dict(pld_remove), remove)
    assert pld_remove.infinity_mass == 0.0
    if add is not None:
        assert_dict_close(as_dict(pld_add), add)


def test_identity_dp_accounting():
    # privacy_loss_distribution_test.py::test_identity: {0: 1} is neutral for composition
    identity = DiscretePLD(1e-4, 0, [1.0])
    assert as_dict(identity) == {0: 1.0}
    other = DiscretePLD(1e-4, -1, [0.5, 0.0, 0.5])
    assert_dict_close(as_dict(compose(identity, other)), {1: 0.5, -1: 0.5})


# --- the Gaussian mechanism -------------------------------------------------------------


def gauss_delta(mu, eps):
    eps = np.asarray(eps, dtype=float)
    return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


def gauss_epsilon(mu, delta):
    return optimize.brentq(
        lambda e: gauss_delta(mu, e) - delta, 0.0, mu**2 / 2 + 20 * mu, xtol=1e-14
    )


def gaussian_pld(mu, interval, pessimistic, sds=12.0):
    """The Gaussian PLD ``N(mu^2/2, mu^2)`` discretised exactly by CDF differences.

    Cell ``(l_{j-1}, l_j]`` goes to ``l_j`` (pessimistic) or ``l_{j-1}`` (optimistic);
    beyond +-12 sd, the lower tail goes to the bottom point (pessimistic) or is dropped
    (optimistic), the upper tail to ``+inf`` (pessimistic) or the top point (optimistic).
    """
    norm = stats.norm(mu**2 / 2, mu)
    lo = math.floor((mu**2 / 2 - sds * mu) / interval)
    hi = math.ceil((mu**2 / 2 + sds * mu) / interval)
    edges = np.arange(lo, hi + 1) * interval
    left, right = edges[:-1], edges[1:]
    cells = np.where(
        left >= mu**2 / 2, norm.sf(left) - norm.sf(right), norm.cdf(right) - norm.cdf(left)
    )
    if pessimistic:
        pmf = np.concatenate([[norm.cdf(edges[0])], cells])
        return DiscretePLD(interval, lo, pmf, infinity_mass=norm.sf(edges[-1]))
    pmf = np.concatenate([cells, [norm.sf(edges[-1])]])
    return DiscretePLD(interval, lo, pmf)


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("k", [1, 10, 100])
def test_gaussian_bounds(mu, k):
    # Interval mu / 1000: rounding moves each loss by at most one interval, so the k-fold
    # loss by k mu / 1000 and epsilon by about half that on average, under 1% of epsilon
    # (1e-5) for every case here (measured: at most 0.12%). The +-1e-12 slack covers FFT
    # round-off (the total mass after 100 compositions is off by ~4e-14).
    interval = mu / 1000
    pess = gaussian_pld(mu, interval, pessimistic=True).self_compose(k)
    opt = gaussian_pld(mu, interval, pessimistic=False).self_compose(k)
    for pld in (pess, opt):
        mass = pld.pmf.sum() + pld.infinity_mass
        assert mass == pytest.approx(1.0, abs=1e-12)
    mu_k = mu * math.sqrt(k)
    eps_star = gauss_epsilon(mu_k, 1e-5)
    eps = eps_star * np.array([-0.5, 0.0, 0.25, 0.5, 1.0])
    exact = gauss_delta(mu_k, eps)
    assert np.all(opt.delta(eps) <= exact + 1e-12)
    assert np.all(exact <= pess.delta(eps) + 1e-12)
    assert pess.epsilon(1e-5) == pytest.approx(eps_star, rel=0.01)
    assert opt.epsilon(1e-5) == pytest.approx(eps_star, rel=0.01)
    assert opt.epsilon(1e-5) <= eps_star <= pess.epsilon(1e-5)


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_exact_delta_gaussian_sample(mu):
    # 400,000 seeded draws of L ~ N(mu^2/2, mu^2): exact_delta is the sample mean of
    # (1 - e^(eps - L))_+, within 5 Monte-Carlo standard errors of the closed form
    n = 400_000
    losses = np.random.default_rng(11).normal(mu**2 / 2, mu, size=n)
    eps = np.array([-1.0, -0.2, 0.0, 0.5, 1.0, 2.0])
    got = exact_delta(losses, None, eps)
    terms = np.maximum(1.0 - np.exp(eps[:, None] - losses[None, :]), 0.0)
    se = terms.std(axis=1) / math.sqrt(n)
    assert np.all(np.abs(got - gauss_delta(mu, eps)) <= 5 * se + 1e-12)
    np.testing.assert_allclose(got, terms.mean(axis=1), rtol=1e-10, atol=1e-14)
    # and its inverse against the closed form, within the same Monte-Carlo error
    eps_hat = exact_epsilon(losses, None, 1e-2)
    assert eps_hat == pytest.approx(gauss_epsilon(mu, 1e-2), rel=0.02)


# --- delta, epsilon, infinity mass -------------------------------------------------------


def random_atoms(rng, n=40, scale=2.0, inf_mass=0.0):
    losses = rng.normal(0.0, scale, size=n)
    probs = rng.dirichlet(np.ones(n)) * (1 - inf_mass)
    return losses, probs


@pytest.mark.parametrize("inf_mass", [0.0, 0.07])
def test_delta_matches_atom_formula_for_any_epsilon(inf_mass):
    # exact on the grid and on raw atoms, negative epsilons included
    rng = np.random.default_rng(3)
    losses, probs = random_atoms(rng, inf_mass=inf_mass)
    all_losses = np.append(losses, np.inf)
    all_probs = np.append(probs, inf_mass)
    pld = discretise(all_losses, all_probs, interval=0.05)
    assert pld.infinity_mass == pytest.approx(inf_mass, abs=EXACT)
    eps = np.linspace(-8.0, 8.0, 81)
    grid = [brute_delta(pld.losses, pld.pmf, e, inf_mass) for e in eps]
    atom = [brute_delta(losses, probs, e, inf_mass) for e in eps]
    np.testing.assert_allclose(pld.delta(eps), np.minimum(grid, 1), atol=EXACT)
    np.testing.assert_allclose(exact_delta(all_losses, all_probs, eps), atom, atol=EXACT)
    assert np.all(pld.delta(eps) >= np.asarray(atom) - EXACT)  # pessimistic
    opt = discretise(all_losses, all_probs, interval=0.05, pessimistic=False)
    assert np.all(opt.delta(eps) <= np.asarray(atom) + EXACT)
    assert isinstance(pld.delta(0.3), float)
    assert pld.delta(eps.reshape(9, 9)).shape == (9, 9)


def test_delta_is_stable_for_extreme_losses():
    # e^(-l) would overflow for l = -800; the terms e^(eps - l) are formed directly
    losses, probs = np.array([-800.0, 1.0]), np.array([0.25, 0.75])
    assert exact_delta(losses, probs, -799.5) == pytest.approx(0.75 * (1 - math.exp(-800.5)))
    want = 0.25 * (1 - math.exp(-0.5)) + 0.75
    assert exact_delta(losses, probs, -800.5) == pytest.approx(want, abs=EXACT)
    pld = discretise(losses, probs, interval=0.5, lower=-900.0)
    assert pld.delta(-800.5) == pytest.approx(want, abs=EXACT)
    assert pld.delta(-1e6) == pytest.approx(1.0, abs=EXACT)


@pytest.mark.parametrize("inf_mass", [0.0, 0.03])
def test_epsilon_inverts_delta(inf_mass):
    rng = np.random.default_rng(5)
    losses, probs = random_atoms(rng, n=60, inf_mass=inf_mass)
    all_losses, all_probs = np.append(losses, np.inf), np.append(probs, inf_mass)
    pld = discretise(all_losses, all_probs, interval=0.02)
    d0 = pld.delta(0.0)
    deltas = np.linspace(inf_mass, d0, 50)[1:-1]
    eps = pld.epsilon(deltas)
    assert np.all(np.isfinite(eps)) and np.all(eps > 0)
    np.testing.assert_allclose(pld.delta(eps), deltas, atol=1e-10)
    np.testing.assert_allclose(np.diff(eps) <= 0, True)  # non-increasing in delta
    eps_atoms = exact_epsilon(all_losses, all_probs, deltas)
    np.testing.assert_allclose(exact_delta(all_losses, all_probs, eps_atoms), deltas, atol=1e-10)
    assert pld.epsilon(d0) == 0.0 and pld.epsilon(1.0) == 0.0
    top = pld.losses[np.flatnonzero(pld.pmf)[-1]]
    assert pld.epsilon(inf_mass) == pytest.approx(top, abs=1e-10)  # delta(top) = inf mass
    if inf_mass:
        assert pld.epsilon(inf_mass / 2) == np.inf
        assert exact_epsilon(all_losses, all_probs, inf_mass / 2) == np.inf
    assert exact_epsilon(all_losses, all_probs, 0.0) == pytest.approx(
        np.inf if inf_mass else max(losses.max(), 0.0)
    )


def test_epsilon_zero_delta_and_negative_losses():
    # delta = 0 without infinity mass: the largest loss with mass, or 0 if that is negative
    pld = DiscretePLD(0.5, -4, [0.5, 0.5, 0.0])
    assert pld.epsilon(0.0) == 0.0
    pld = DiscretePLD(0.5, -1, [0.5, 0.0, 0.5, 0.0])
    assert pld.epsilon(0.0) == pytest.approx(0.5, abs=EXACT)
    assert exact_epsilon([-2.0, -1.0], None, 0.0) == 0.0
    # only mass at +inf (and -inf, dropped): delta(eps) is the infinity mass everywhere
    assert exact_delta([np.inf, -np.inf], [0.3, 0.7], [-5.0, 5.0]).tolist() == [0.3, 0.3]
    assert exact_epsilon([np.inf, -np.inf], [0.3, 0.7], [0.2, 0.3]).tolist() == [np.inf, 0.0]


def test_infinity_mass_in_composition():
    a = DiscretePLD(0.1, 0, [0.6, 0.3], infinity_mass=0.1)
    b = DiscretePLD(0.1, -2, [0.8], infinity_mass=0.2)
    ab = compose(a, b)
    assert ab.infinity_mass == pytest.approx(1 - 0.9 * 0.8, abs=EXACT)
    assert ab.pmf.sum() + ab.infinity_mass == pytest.approx(1.0, abs=EXACT)
    a7 = a.self_compose(7)
    assert a7.infinity_mass == pytest.approx(1 - 0.9**7, abs=EXACT)
    assert a7.delta(1e6) == pytest.approx(1 - 0.9**7, abs=EXACT)
    assert a.self_compose(1) is a


def test_from_pmfs_arrays_and_infinity_mass():
    p, q = np.array([0.5, 0.3, 0.2, 0.0]), np.array([0.25, 0.25, 0.0, 0.5])
    pq, qp = from_pmfs(p, q, interval=0.01)
    assert pq.infinity_mass == pytest.approx(0.2) and qp.infinity_mass == pytest.approx(0.5)
    # at eps = 0 both orders give the total variation distance 0.5; the pessimistic grid
    # adds at most one interval's worth: 0.5 <= delta <= 0.5 + 0.01
    for pld in (pq, qp):
        assert 0.5 - EXACT <= pld.delta(0.0) <= 0.51
    losses = [math.log(2.0), math.log(1.2), np.inf]
    assert exact_delta(losses, p[:3], 0.0) == pytest.approx(0.5, abs=EXACT)
    assert pq.pmf.sum() == pytest.approx(0.8, abs=EXACT)


@pytest.mark.parametrize("n", [50, 300])
@pytest.mark.parametrize("k", [2, 10, 64])
def test_mass_is_preserved(n, k):
    rng = np.random.default_rng(n + k)
    pmf = rng.dirichlet(np.ones(n)) * 0.99
    pld = DiscretePLD(0.01, -n // 2, pmf, infinity_mass=0.01).self_compose(k)
    assert pld.pmf.sum() + pld.infinity_mass == pytest.approx(1.0, abs=1e-12)
    assert np.all(pld.pmf >= 0)


def test_discretise_details():
    # ceil / floor to the grid, bincount accumulation, `lower`, -inf atoms dropped
    losses = np.array([-0.25, 0.05, 0.1, 0.12, -np.inf, np.inf])
    probs = np.array([0.1, 0.2, 0.3, 0.1, 0.1, 0.2])
    up = discretise(losses, probs, interval=0.1)
    assert as_dict(up) == pytest.approx({-2: 0.1, 1: 0.5, 2: 0.1})
    assert up.infinity_mass == pytest.approx(0.2)
    down = discretise(losses, probs, interval=0.1, pessimistic=False)
    assert as_dict(down) == pytest.approx({-3: 0.1, 0: 0.2, 1: 0.4})
    clipped = discretise(losses, probs, interval=0.1, lower=0.0)
    assert as_dict(clipped) == pytest.approx({0: 0.1, 1: 0.5, 2: 0.1})
    uniform = discretise([0.0, 0.3], interval=0.1)
    assert as_dict(uniform) == pytest.approx({0: 0.5, 3: 0.5})
    empty = discretise([np.inf], interval=0.1)
    assert empty.infinity_mass == 1.0 and empty.delta(-3.0) == 1.0


def test_truncate_is_pessimistic():
    rng = np.random.default_rng(8)
    pld = DiscretePLD(0.05, -40, np.append(rng.dirichlet(np.ones(80)), [0.0, 0.0]))
    cut = truncate(pld, 0.05)
    assert cut.pmf.sum() == pytest.approx(1.0, abs=EXACT)
    assert cut.offset > pld.offset and cut.pmf[-1] > 0
    eps = np.linspace(-3, 3, 61)
    assert np.all(cut.delta(eps) >= pld.delta(eps) - EXACT)
    assert np.all(cut.delta(eps) <= pld.delta(eps) + 0.05)
    assert truncate(DiscretePLD(0.1, 0, [0.0, 0.0]), 0.0).pmf.tolist() == [0.0]


# --- composition against brute force -----------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_compose_equals_convolution(seed):
    rng = np.random.default_rng(seed)
    n1, n2 = rng.integers(1, 40, size=2)
    p1, p2 = rng.dirichlet(np.ones(n1)), rng.dirichlet(np.ones(n2))
    a, b = DiscretePLD(0.1, -5, p1), DiscretePLD(0.1, 3, p2)
    ab = compose(a, b)
    assert ab.offset == -2
    np.testing.assert_allclose(ab.pmf, np.convolve(p1, p2), rtol=0, atol=EXACT)
    k = int(rng.integers(2, 7))
    want = p1
    for _ in range(k - 1):
        want = np.convolve(want, p1)
    got = a.self_compose(k)
    assert got.offset == -5 * k
    np.testing.assert_allclose(got.pmf, want, rtol=0, atol=EXACT)


def test_compose_by_fft_equals_convolution():
    # grids large enough for the FFT path of compose
    rng = np.random.default_rng(9)
    p1, p2 = rng.dirichlet(np.ones(400)), rng.dirichlet(np.ones(300))
    ab = compose(DiscretePLD(0.1, 0, p1), DiscretePLD(0.1, 0, p2))
    np.testing.assert_allclose(ab.pmf, np.convolve(p1, p2), rtol=0, atol=EXACT)


# --- errors ------------------------------------------------------------------------------


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="losses must not be NaN"):
        discretise([0.0, np.nan], interval=0.1)
    with pytest.raises(ValueError, match="probs must be finite and non-negative"):
        discretise([0.0, 1.0], [0.5, -0.1], interval=0.1)
    with pytest.raises(ValueError, match="probs must sum to at most 1"):
        exact_delta([0.0, 1.0], [0.6, 0.6], 0.0)
    with pytest.raises(ValueError, match=r"interval must be a finite number > 0"):
        discretise([0.0], interval=0.0)
    with pytest.raises(ValueError, match="probs must have the shape of losses"):
        discretise([0.0, 1.0], [1.0], interval=0.1)
    with pytest.raises(ValueError, match="use a coarser interval"):
        discretise([-1e3, 1e3], interval=1e-5)
    with pytest.raises(ValueError, match="use a coarser interval"):
        DiscretePLD(1e-4, 0, np.ones(1000) / 1000).self_compose(MAX_POINTS // 500)
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        DiscretePLD(0.1, 0, [1.0]).self_compose(0)
    with pytest.raises(ValueError, match="pmf must be finite and non-negative"):
        DiscretePLD(0.1, 0, [0.5, -0.5])
    with pytest.raises(ValueError, match="epsilon must not be NaN"):
        DiscretePLD(0.1, 0, [1.0]).delta([0.0, np.nan])
    with pytest.raises(ValueError, match="delta must be non-negative"):
        DiscretePLD(0.1, 0, [1.0]).epsilon(-1e-3)
    with pytest.raises(ValueError, match="p and q must be 1-D of the same length"):
        from_pmfs([0.5, 0.5], [1.0], interval=0.1)
    with pytest.raises(ValueError, match="q must be non-negative and sum to at most 1"):
        from_pmfs([0.5, 0.5], [0.9, 0.9], interval=0.1)
    with pytest.raises(TypeError, match="other must be a DiscretePLD"):
        compose(DiscretePLD(0.1, 0, [1.0]), [1.0])

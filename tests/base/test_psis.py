"""Tests for the compiled PSIS kernel, against the installed ArviZ's implementation.

On ArviZ 0.23 the reference is ``arviz.psislw`` (tail rule ``"arviz"``), on ArviZ 1.x
arviz_stats' ``psislw`` accessor (tail rule ``"arviz_stats"``). arviz_stats raises where
ArviZ 0.23 returned NaN / inf for degenerate rows (non-finite weights, tails of under 5
draws); there the kernel's own documented behaviour is asserted without a reference.
"""

import math

import numba
import numpy as np
import pytest
from scipy import stats
from support import stack_psislw

from pymc_edp.base.psis import (
    PSIS_TAIL_RULE,
    _dot_scaled,
    _exp_parts,
    _heapsort,
    _mean_log1p,
    _mean_log1p_fast,
    _select,
    khat_threshold,
    psis_tail_length,
    psislw,
)
from pymc_edp.model.compat import ARVIZ_1

# Both implementations do the same floating-point operations except for summation order
# (pairwise in NumPy, sequential here), a product-of-8 logarithm in the GPD profile
# likelihood and a polynomial exp in the normalisation; over thousands of rows the largest
# difference observed is ~5e-13 (log weights of magnitude up to ~1e3). 1e-9 leaves a
# margin of three orders of magnitude and is tighter than the 1e-8 the module promises.
RTOL = 1e-9
ATOL = 1e-9


def reference(log_weights, reff=1.0, normalize=True):
    """The stack's psislw on a copy, with its floating-point warnings silenced.

    None where arviz_stats has no answer (it raises for degenerate rows). arviz_stats always
    normalises; for ``normalize=False`` the kernel's output is normalised before comparing.
    """
    x = np.array(log_weights, dtype=float)
    if ARVIZ_1:
        n_tail = psis_tail_length(x.shape[-1], reff, "arviz_stats")
        if not np.all(np.isfinite(x)) or n_tail < 5 or np.any(np.ptp(x, axis=-1) == 0):
            return None
        return stack_psislw(x, reff)
    import arviz as az

    with np.errstate(all="ignore"):
        lw, k = az.psislw(x, reff=reff, normalize=normalize)
    return np.asarray(lw), np.asarray(k)


def assert_matches_arviz(log_weights, reff=1.0, normalize=True, ties=False):
    lw, k = psislw(log_weights, reff, normalize=normalize, tail_rule=PSIS_TAIL_RULE)
    ref = reference(log_weights, reff, normalize)
    if ref is None:
        return lw, k
    ref_lw, ref_k = ref
    if ARVIZ_1 and not normalize:
        ref_lw = ref_lw + np.logaddexp.reduce(lw, axis=-1, keepdims=True)
    assert lw.shape == ref_lw.shape
    if ties:  # tied tail draws may receive the smoothed values in another order
        lw_cmp, ref_lw = np.sort(lw, axis=-1), np.sort(ref_lw, axis=-1)
        np.testing.assert_allclose(lw_cmp, ref_lw, rtol=RTOL, atol=ATOL, equal_nan=True)
        np.testing.assert_allclose(k, ref_k, rtol=RTOL, atol=ATOL, equal_nan=True)
        return lw, k
    assert k.shape == ref_k.shape
    # identical pattern of inf / nan, then elementwise agreement of the finite values
    np.testing.assert_array_equal(np.isnan(lw), np.isnan(ref_lw))
    np.testing.assert_array_equal(np.isposinf(k), np.isposinf(ref_k))
    np.testing.assert_allclose(lw, ref_lw, rtol=RTOL, atol=ATOL, equal_nan=True)
    np.testing.assert_allclose(k, ref_k, rtol=RTOL, atol=ATOL, equal_nan=True)
    return lw, k


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("reff", [1.0, 0.4, 2.5])
@pytest.mark.parametrize(
    ("kind", "n_samples"),
    [("normal", 1000), ("normal", 4000), ("lognormal-wide", 2000), ("student-t", 2000)],
)
def test_matches_arviz(rng, kind, n_samples, reff, normalize):
    n_rows = 40
    if kind == "normal":
        lw = rng.normal(size=(n_rows, n_samples))
    elif kind == "lognormal-wide":
        lw = 3.0 * rng.normal(size=(n_rows, n_samples))
    else:
        lw = rng.standard_t(2.5, size=(n_rows, n_samples))
    _, k = assert_matches_arviz(lw, reff, normalize)
    assert np.all(np.isfinite(k))
    if kind != "normal":
        # the heavy-tailed inputs must exercise the bad-k-hat regime
        assert np.mean(k > 0.7) > 0.5


@pytest.mark.parametrize("n_samples", [2, 3, 5, 20, 21, 30, 100])
def test_small_sample_sizes(rng, n_samples):
    # a tail of at most 4 draws (S <= 20 under ArviZ 0.23's rule, S <= 24 under
    # arviz_stats') gets no fit and k = inf
    lw, k = assert_matches_arviz(rng.normal(size=(50, n_samples)))
    if psis_tail_length(n_samples, 1.0, PSIS_TAIL_RULE) <= 4:
        assert np.all(np.isposinf(k))
    else:
        assert np.any(np.isfinite(k))
    np.testing.assert_allclose(np.logaddexp.reduce(lw, axis=-1), 0.0, atol=1e-12)


def test_one_dimensional_input(rng):
    x = rng.standard_t(3, size=3000)
    lw, k = assert_matches_arviz(x)
    assert lw.shape == (3000,)
    assert k.shape == ()
    assert np.isfinite(k)


def test_three_dimensional_input(rng):
    x = rng.normal(scale=1.5, size=(2, 3, 800))
    lw, k = assert_matches_arviz(x, reff=0.7)
    assert lw.shape == (2, 3, 800)
    assert k.shape == (2, 3)
    # each row is smoothed independently of the others
    lw_row, k_row = psislw(x[1, 2], 0.7, tail_rule=PSIS_TAIL_RULE)
    np.testing.assert_array_equal(lw[1, 2], lw_row)
    assert k[1, 2] == k_row


def test_constant_rows(rng):
    x = rng.normal(size=(4, 500))
    x[1] = 3.25
    x[3] = -1.0
    lw, k = assert_matches_arviz(x)
    assert np.all(np.isposinf(k[[1, 3]]))
    assert np.all(np.isfinite(k[[0, 2]]))
    np.testing.assert_allclose(lw[[1, 3]], -np.log(500.0), rtol=1e-14)
    lw_raw, _ = psislw(x, normalize=False)
    np.testing.assert_array_equal(lw_raw[[1, 3]], x[[1, 3]])


def test_degenerate_rows_follow_arviz(rng):
    x = rng.normal(size=(6, 400))
    x[0, 17] = np.nan  # NaN anywhere: the whole row is NaN, k = inf
    x[1, 3] = np.inf  # infinite maximum: NaN row
    x[2] = -np.inf  # no weight at all: NaN row
    x[3, ::3] = -np.inf  # zero weights among finite ones: fine
    x[4, :2] = 800.0  # two draws dominate by e^800: their tail is too short
    lw, k = assert_matches_arviz(x)
    assert np.all(np.isnan(lw[:3])) and np.all(np.isposinf(k[:3]))
    assert np.all(lw[3, ::3] == -np.inf) and np.isfinite(k[3])
    assert np.isposinf(k[4])


def test_ties_in_the_tail(rng):
    # ArviZ orders tied tail draws with NumPy's unstable argsort; ours breaks ties by
    # position, so compare the k-hats and each row's multiset of smoothed values.
    x = np.round(rng.normal(size=(30, 1500)), 1)
    lw, k = psislw(x)
    if ARVIZ_1:
        pytest.skip("ArviZ 0.23's tie handling; arviz_stats cuts the tail at exactly M draws")
    ref_lw, ref_k = reference(x)
    np.testing.assert_allclose(k, ref_k, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(np.sort(lw, axis=-1), np.sort(ref_lw, axis=-1), atol=ATOL)
    # deterministic: among tied tail draws the earlier one gets the smaller smoothed value
    n_samples = x.shape[1]
    n_tail = math.ceil(min(n_samples / 5, 3 * math.sqrt(n_samples)))
    strict = 0
    for row in np.flatnonzero(np.isfinite(k)):
        cutoff = np.sort(x[row])[-n_tail - 1]
        tail = np.flatnonzero(x[row] > cutoff)
        for v in np.unique(x[row, tail]):
            steps = np.diff(lw[row, tail[x[row, tail] == v]])
            assert np.all(steps >= 0)  # equal only where truncated at the maximum
            strict += np.count_nonzero(steps > 0)
    assert strict > 0


def test_tail_is_truncated_at_the_largest_raw_weight(rng):
    # heavy tails: the fitted quantiles pull the extreme draws in, never above the raw max
    x = rng.standard_t(1.5, size=(20, 2000))
    lw, k = psislw(x, normalize=False)
    assert np.all(k > 0.7)
    assert np.all(lw.max(axis=-1) <= x.max(axis=-1))
    # flattened top (largest 0.1% clipped): the fitted quantiles overshoot and are cut at the
    # raw maximum, exactly (0 before the maximum is added back)
    x = rng.normal(size=(20, 2000))
    top = np.quantile(x, 0.999, axis=1, keepdims=True)
    x = np.minimum(x, top)
    lw, _ = assert_matches_arviz(x, normalize=False, ties=True)
    assert np.all(lw <= top)
    assert np.all(lw.max(axis=-1) == top[:, 0])


def test_in_place_out(rng):
    x = rng.standard_t(3, size=(25, 1200))
    expected_lw, expected_k = psislw(x)
    buf = x.copy()
    lw, k = psislw(buf, out=buf)
    assert lw is buf
    np.testing.assert_array_equal(lw, expected_lw)
    np.testing.assert_array_equal(k, expected_k)


def test_preallocated_out_leaves_input_alone(rng):
    x = rng.normal(size=(2, 5, 600))
    x_before = x.copy()
    out = np.full_like(x, 123.0)
    lw, k = psislw(x, 0.8, out=out)
    assert lw is out
    np.testing.assert_array_equal(x, x_before)
    np.testing.assert_array_equal(lw, psislw(x, 0.8)[0])
    assert k.shape == (2, 5)


def test_partially_overlapping_out_is_safe(rng):
    n, s = 12, 700
    big = np.empty((n + 1) * s)
    x = big[s:].reshape(n, s)
    x[:] = rng.standard_t(4, size=(n, s))
    expected_lw, expected_k = psislw(x.copy())
    out = big[: n * s].reshape(n, s)  # shares memory with x, shifted by one row
    lw, k = psislw(x, out=out)
    np.testing.assert_array_equal(lw, expected_lw)
    np.testing.assert_array_equal(k, expected_k)


def test_non_contiguous_and_float32_input(rng):
    x = rng.normal(size=(900, 10)).T  # (10, 900), sample axis not contiguous
    assert_matches_arviz(x)
    x32 = rng.normal(size=(5, 400)).astype(np.float32)
    np.testing.assert_array_equal(psislw(x32)[0], psislw(x32.astype(np.float64))[0])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"out": np.empty((3, 50), dtype=np.float32)}, "float64"),
        ({"out": np.empty((3, 51))}, "shape"),
        ({"out": np.empty((50, 3)).T}, "C-contiguous"),
        ({"reff": 0.0}, "reff"),
        ({"reff": np.nan}, "reff"),
    ],
)
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        psislw(np.zeros((3, 50)), **kwargs)


def test_invalid_shapes():
    with pytest.raises(ValueError, match="sample axis"):
        psislw(np.float64(1.0))
    with pytest.raises(ValueError, match="at least 2"):
        psislw(np.zeros((4, 1)))


def test_empty_leading_dimension():
    lw, k = psislw(np.zeros((0, 100)))
    assert lw.shape == (0, 100)
    assert k.shape == (0,)


def test_thread_count_does_not_change_results(rng):
    x = rng.standard_t(3, size=(64, 1000))
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        lw1, k1 = psislw(x)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        lw_all, k_all = psislw(x)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(lw1, lw_all)
    np.testing.assert_array_equal(k1, k_all)


def test_khat_recovers_a_known_pareto_tail(rng):
    # Weights drawn from a generalized Pareto with shape k = 0.5: by threshold stability the
    # exceedances over any cutoff are again GPD with the same k, so k-hat is unbiased up to
    # the prior adjustment (n k + 5) / (n + 10), which is exactly k at k = 0.5. With
    # S = 20,000 the tail has M = ceil(3 sqrt(S)) = 425 draws and the estimator's standard
    # deviation is about (1 + k) / sqrt(M) = 0.073 (0.069 in a 500-row simulation), so a
    # single row lands within 0.1 only ~85% of the time. We therefore check the mean of 16
    # independent rows (sd ~0.018) against 0.05 (~2.8 sd) and every row against 0.3 (4 sd).
    k_true = 0.5
    w = stats.genpareto.rvs(k_true, size=(16, 20_000), random_state=rng)
    _, k = psislw(np.log(w))
    assert abs(k.mean() - k_true) < 0.05
    assert np.all(np.abs(k - k_true) < 0.3)
    assert np.median(np.abs(k - k_true)) < 0.1


def test_khat_threshold_values():
    assert khat_threshold(100) == pytest.approx(0.5)
    assert khat_threshold(1000) == pytest.approx(1 - 1 / 3)
    assert khat_threshold(2154) < 0.7
    assert khat_threshold(2155) == 0.7
    assert khat_threshold(4000) == 0.7
    assert khat_threshold(10) == pytest.approx(0.0)
    assert isinstance(khat_threshold(np.int64(500)), float)
    with pytest.raises(ValueError, match="at least 2"):
        khat_threshold(1)


@pytest.mark.parametrize(
    "pattern",
    ["random", "sorted", "reversed", "organ-pipe", "few-distinct", "constant", "with-inf"],
)
def test_select_kernel(rng, pattern):
    n = 1001
    a = {
        "random": rng.normal(size=n),
        "sorted": np.arange(n, dtype=float),
        "reversed": np.arange(n, dtype=float)[::-1].copy(),
        "organ-pipe": np.concatenate([np.arange(501), np.arange(500)[::-1]]).astype(float),
        "few-distinct": (np.arange(n) % 3).astype(float),
        "constant": np.full(n, 2.0),
        "with-inf": np.where(rng.random(n) < 0.3, -np.inf, rng.normal(size=n)),
    }[pattern]
    expected = np.sort(a)
    for k in (0, 1, 500, 799, n - 1):
        work = a.copy()
        assert _select(work, k) == expected[k]
        np.testing.assert_array_equal(np.sort(work), expected)  # a permutation of the input


def test_heapsort_fallback(rng):
    a = rng.normal(size=300)
    work = a.copy()
    _heapsort(work[10:250], np.zeros(240, dtype=np.int64), 240)
    np.testing.assert_array_equal(work[10:250], np.sort(a[10:250]))
    np.testing.assert_array_equal(work[:10], a[:10])
    np.testing.assert_array_equal(work[250:], a[250:])


def test_blocked_log1p_mean(rng):
    # the 8-factor product path has an absolute error of a few eps; where it is used
    # (|mean| >= 1e-2) that is a relative error far below 1e-12
    x = np.sort(rng.exponential(size=203))
    for b in np.concatenate([-np.logspace(-3, 3, 25), np.linspace(0, 0.99 / x[-1], 25)]):
        exact = _mean_log1p(-b, x, x.size)
        fast = _mean_log1p_fast(-b, x, x.size)
        assert math.isclose(fast, np.mean(np.log1p(-b * x)), rel_tol=1e-13, abs_tol=1e-15)
        if abs(exact) >= 1e-2:
            assert math.isclose(fast, exact, rel_tol=1e-12)


def test_vectorised_exp_sum(rng):
    x = np.concatenate([rng.uniform(-700, 0, size=5000), [0.0, -1e-300, -np.inf, -750.0]])
    mant = np.empty_like(x)
    expo = np.empty(x.size, dtype=np.int64)
    _exp_parts(x, 0.0, mant, expo)
    terms = mant * expo.view(np.float64)
    finite = x > -708
    np.testing.assert_allclose(terms[finite], np.exp(x[finite]), rtol=6.7e-16, atol=0)  # 3 ulp
    assert np.all(terms[~finite] <= np.exp(-708.0) * 1.0000001)
    assert math.isclose(_dot_scaled(mant, expo), np.exp(x).sum(), rel_tol=1e-14)

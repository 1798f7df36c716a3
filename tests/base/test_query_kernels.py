"""Tests of pymc_edp.base.query_kernels: grid hockey stick, distances, ECDF, deconvolution."""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp
from scipy.stats import norm

import pymc_edp.query as edpq
from pymc_edp.base import query_kernels as K

sys.path.insert(0, str(Path(__file__).parents[1] / "reference"))
from query_gaussian_families import exact_delta


# --------------------------------------------------------------------------------------
# Hockey-stick divergence between densities on a grid
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("d", [0.25, 0.5, 2.0])
def test_hockey_stick_delta_grid_gaussians_exact(d):
    x = np.linspace(-12, 14, 4001)
    eps = np.array([0.0, 0.1, 0.5, 1.0, 3.0])
    got = edpq.hockey_stick_delta_grid(norm.pdf(x), norm.pdf(x, d), x, eps)
    # Grid spacing 0.0065: the piecewise-linear quadrature errs by O(dx^2 e^eps max|p''|),
    # about 3e-6 at the largest shift and eps; 1e-5 leaves a factor 3.
    np.testing.assert_allclose(got, exact_delta(d, eps), atol=1e-5)


def test_hockey_stick_delta_grid_properties(rng):
    x = np.linspace(-10, 10, 2001)
    p = norm.pdf(x)
    q = 0.5 * norm.pdf(x, -1, 0.5) + 0.5 * norm.pdf(x, 2, 1.5)
    eps = np.linspace(0, 3, 31)
    d = edpq.hockey_stick_delta_grid(p, q, x, eps)
    assert np.all(np.diff(d) <= 1e-12)  # non-increasing in eps
    # eps = 0: total variation distance, computed independently (trapezoid of |p - q| / 2,
    # equal to the exact piecewise-linear integral up to the cells where p - q changes sign)
    tv = 0.5 * np.trapezoid(np.abs(p - q), x)
    assert d[0] == pytest.approx(tv, abs=1e-4)
    # symmetric in its two arguments; zero for identical densities
    np.testing.assert_allclose(edpq.hockey_stick_delta_grid(q, p, x, eps), d, atol=1e-14)
    assert np.all(edpq.hockey_stick_delta_grid(p, p, x, eps) == 0)
    # batch axes broadcast
    batch = edpq.hockey_stick_delta_grid(p, np.stack([p, q]), x, eps)
    assert batch.shape == (2, eps.size)
    np.testing.assert_allclose(batch[1], d)


def test_hockey_stick_delta_grid_directions_and_scalar_epsilon():
    # Shifted normals with different widths: the two directions differ, "both" is their max,
    # and swapping the densities swaps the directions.
    x = np.linspace(-12, 12, 4001)
    p, q = norm.pdf(x), norm.pdf(x, 0.5, 1.5)
    eps = np.array([0.0, 0.5, 1.0])
    fwd = edpq.hockey_stick_delta_grid(p, q, x, eps, direction="forward")
    bwd = edpq.hockey_stick_delta_grid(p, q, x, eps, direction="backward")
    assert not np.allclose(fwd[1:], bwd[1:])
    np.testing.assert_array_equal(edpq.hockey_stick_delta_grid(p, q, x, eps), np.maximum(fwd, bwd))
    np.testing.assert_array_equal(
        edpq.hockey_stick_delta_grid(q, p, x, eps, direction="forward"), bwd
    )
    scalar = edpq.hockey_stick_delta_grid(p, q, x, 0.5)
    assert np.ndim(scalar) == 0
    assert scalar == edpq.hockey_stick_delta_grid(p, q, x, eps)[1]
    with pytest.raises(ValueError, match="direction"):
        edpq.hockey_stick_delta_grid(p, q, x, eps, direction="sideways")


def test_positive_part_integral_exact_for_the_interpolant():
    # One cell from -1 to 3 over dx = 2: the positive triangle has area 3^2 / 4 * 2 / 2.
    assert K.positive_part_integral([-1.0, 3.0], [0.0, 2.0]) == pytest.approx(2.25)
    assert K.positive_part_integral([1.0, 3.0], [0.0, 2.0]) == pytest.approx(4.0)
    assert K.trapezoid_mass([1.0, 3.0, 1.0], [0.0, 1.0, 3.0]) == pytest.approx(6.0)


# --------------------------------------------------------------------------------------
# Distances and Proposition 1
# --------------------------------------------------------------------------------------
def test_hausdorff_distance():
    assert edpq.hausdorff_distance([0.0, 1.0], [0.0, 1.0]) == 0.0
    assert edpq.hausdorff_distance([0.0, 1.0], [0.0, 3.0]) == 2.0
    assert edpq.hausdorff_distance([0.0], [5.0, 1.0]) == 5.0
    # brute force on random sets
    r = np.random.default_rng(3)
    a, b = r.normal(size=50), r.normal(size=40)
    dist = np.abs(a[:, None] - b[None, :])
    brute = max(dist.min(1).max(), dist.min(0).max())
    assert edpq.hausdorff_distance(a, b) == pytest.approx(brute)
    assert edpq.hausdorff_distance(a[:, None], b[:, None]) == pytest.approx(brute)


def _laplace_kde_log(points, x, lam):
    return logsumexp(-np.abs(x[:, None] - points[None, :]) / lam, axis=1) - np.log(
        2 * lam * points.size
    )


def _gap_tolerance(a, b, lam):
    """Rounding bound on ``_max_log_gap``: each exponent ``|x - c| / lam`` carries an absolute
    error of at most ~2 ulp of ``(|x| + |c|) / lam`` (subtraction, then division), the two
    log-sum-exps a few ulp more; 8 u M / lam bounds it, M the largest magnitude on the grid.
    """
    u = np.finfo(float).eps
    big = max(np.abs(a).max(), np.abs(b).max()) + 50 * lam
    return 8 * u * big / lam + 1e-12


def _max_log_gap(a, b, lam):
    lo, hi = min(a.min(), b.min()), max(a.max(), b.max())
    # A fine grid over the data, far tails, and the kernel centres (where the cusps are).
    x = np.concatenate([np.linspace(lo - 50 * lam, hi + 50 * lam, 501), a, b, (a + b) / 2])
    return np.abs(_laplace_kde_log(a, x, lam) - _laplace_kde_log(b, x, lam)).max()


_coords = st.floats(-100, 100, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(1, 25), eps=st.floats(0.01, 5.0))
def test_proposition_1_bottleneck(data, n, eps):
    """Proposition 1, corrected: Laplace KDEs with scale W_inf / eps are eps-close in log.

    Random equal-size samples (the with/without samples always have equal size). With the
    bottleneck distance W_inf each kernel term has a partner within a factor e^eps, so the
    bound is exact; 1e-9 absorbs rounding of the log-sum-exp.
    """
    a = np.array(data.draw(st.lists(_coords, min_size=n, max_size=n)))
    b = np.array(data.draw(st.lists(_coords, min_size=n, max_size=n)))
    w = edpq.bottleneck_distance(a, b)
    assert w >= edpq.hausdorff_distance(a, b) - 1e-12
    # Below ~1e-9 of the data's magnitude, |x - a| / lambda is dominated by rounding error.
    if w > 1e-9 * max(np.abs(a).max(), np.abs(b).max(), 1.0):
        assert _max_log_gap(a, b, w / eps) <= eps + _gap_tolerance(a, b, w / eps)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), eps=st.floats(0.01, 5.0))
def test_proposition_1_hausdorff_when_sets_match_up(data, eps):
    """Proposition 1 as stated (d_H / eps) holds when d_H equals the bottleneck distance.

    That is the case, e.g., when each point moves by less than half the gap to its
    neighbours; here: sets of distinct, well separated points shifted by small amounts.
    """
    base = np.cumsum(data.draw(st.lists(st.floats(1.0, 10.0), min_size=1, max_size=20)))
    shift = np.array(
        data.draw(st.lists(st.floats(-0.45, 0.45), min_size=base.size, max_size=base.size))
    )
    a, b = base, base + shift
    d_h = edpq.hausdorff_distance(a, b)
    if d_h > 1e-9 * max(b.max(), 1.0):  # see test_proposition_1_bottleneck
        assert d_h == pytest.approx(edpq.bottleneck_distance(a, b))
        assert _max_log_gap(a, b, d_h / eps) <= eps + _gap_tolerance(a, b, d_h / eps)


def test_proposition_1_hausdorff_counterexample():
    """Proposition 1 with the Hausdorff distance is false in general.

    A has one point near 2, B two points near 3, both share a cluster at 0: d_H = 1.01, yet
    at x = 3 the Laplace KDEs with scale d_H / eps differ by more than eps in log density.
    The bottleneck distance (2.93) restores the bound; noise_kernel uses it by default.
    """
    cluster = np.arange(8) * 0.01
    a = np.append(cluster, 2.0)
    b = np.append(cluster[:7], [3.0, 3.01])
    eps = 5.0
    d_h = edpq.hausdorff_distance(a, b)
    assert d_h == pytest.approx(1.01)
    assert _max_log_gap(a, b, d_h / eps) > eps + 0.5  # 5.67 > 5
    w = edpq.bottleneck_distance(a, b)
    assert w == pytest.approx(2.93)
    assert _max_log_gap(a, b, w / eps) <= eps


# --------------------------------------------------------------------------------------
# Empirical-CDF density
# --------------------------------------------------------------------------------------
def test_ecdf_density_integrates_to_one(rng):
    x = rng.normal(size=4000)
    grid = np.linspace(-6, 6, 3001)
    p = K.ecdf_density(x, grid)
    assert np.trapezoid(p, grid) == pytest.approx(1.0, abs=1e-12)
    # The window spans sqrt(4000) = 63 order statistics, so the estimate has relative s.d.
    # ~1/sqrt(63) = 0.13 and an expected L1 error of ~0.8 * 0.13 = 0.10; allow twice that.
    assert np.trapezoid(np.abs(p - norm.pdf(grid)), grid) < 0.2


# --------------------------------------------------------------------------------------
# Deconvolution (section 6, eq. 2)
# --------------------------------------------------------------------------------------
def test_deconvolution_laplace_kernel_closed_form():
    # k = Laplace(b), lambda > b: h = (b/lambda)^2 delta_0 + (1 - (b/lambda)^2) l_lambda.
    lam, b = 1.0, 0.3
    x, h = K.laplace_deconvolution(lam, "laplace", b)
    dx = x[1] - x[0]
    c = x.size // 2
    w = (b / lam) ** 2
    assert h.sum() * dx == pytest.approx(1.0, abs=1e-12)
    lap = (1 - w) * np.exp(-np.abs(x) / lam) / (2 * lam)
    # the atom sits in the centre cell (plus that cell's share of the Laplace part)
    assert h[c] * dx == pytest.approx(w + lap[c] * dx, abs=1e-4)
    # Elsewhere h is the Laplace density, up to the error of cutting its Fourier series at
    # the grid's Nyquist frequency, largest beside the cusp (observed 1.7e-4 against a peak
    # of 0.46 at dx = lambda / 64); 5e-4 is about 0.1% of the peak.
    assert np.max(np.abs(np.delete(h - lap, c))) < 5e-4


def test_deconvolution_too_wide_kernel_raises():
    with pytest.raises(ValueError, match="too wide"):
        K.laplace_deconvolution(1.0, "gaussian", 1.5)

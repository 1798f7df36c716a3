"""Tests of pymc_edp.base.kde against scipy and a direct (brute-force) evaluation."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from pymc_edp.base.kde import KERNELS, get_kernel, kde_logpdf, kde_pdf, kde_sample


def brute_logpdf(points, x, h, kernel):
    """``log(1/n sum_j prod_c k((x_c - X_jc) / h_j) / h_j)`` by broadcasting, (n, d), (m, d)."""
    u = (x[:, None, :] - points[None, :, :]) / h[None, :, None]
    dens = stats.norm.pdf(u) if kernel == "gaussian" else stats.laplace.pdf(u)
    return np.log((dens.prod(-1) / h[None, :] ** points.shape[1]).mean(-1))


def test_kde_pdf_matches_scipy(rng):
    from scipy.stats import gaussian_kde

    pts = rng.normal(size=300)
    x = np.linspace(-4, 4, 50)
    kde = gaussian_kde(pts)
    h = math.sqrt(kde.covariance[0, 0])
    np.testing.assert_allclose(kde_pdf(pts, x, h, "gaussian"), kde(x), rtol=1e-10)
    # batch axes and the multivariate path agree with the 1-D path
    both = kde_pdf(np.stack([pts, pts + 1]), x, h, "laplace")
    np.testing.assert_allclose(both[0], kde_pdf(pts, x, h, "laplace"))
    mv = np.exp(kde_logpdf(pts[:, None], x[:, None], h, "laplace"))
    np.testing.assert_allclose(mv, both[0], rtol=1e-10)


@pytest.mark.parametrize("kernel", ["gaussian", "laplace"])
@pytest.mark.parametrize("d", [1, 3])
def test_variable_bandwidth_matches_brute_force(rng, kernel, d):
    pts = rng.normal(size=(80, d))
    x = rng.normal(scale=2.0, size=(30, d))
    h = rng.uniform(0.2, 1.0, size=80)
    np.testing.assert_allclose(kde_logpdf(pts, x, h, kernel), brute_logpdf(pts, x, h, kernel))
    # batches: each row its own sample and bandwidths
    pts2 = np.stack([pts, pts[::-1] + 1.0])
    h2 = np.stack([h, h[::-1]])
    got = kde_logpdf(pts2, x, h2, kernel)
    assert got.shape == (2, 30)
    for b in range(2):
        np.testing.assert_allclose(got[b], brute_logpdf(pts2[b], x, h2[b], kernel))
    if d == 1:  # one-dimensional data: sample axis last, no coordinate axis
        np.testing.assert_allclose(kde_logpdf(pts2[..., 0], x[:, 0], h2, kernel), got)


def test_far_tails_do_not_underflow():
    # One centre: the log density is the kernel's, also where the density underflows to 0.
    x = np.array([0.0, 5.0, 100.0])
    log = kde_logpdf([0.0], x, 0.5, "gaussian")
    np.testing.assert_allclose(log, stats.norm.logpdf(x, scale=0.5), rtol=1e-14)
    assert kde_pdf([0.0], x, 0.5, "gaussian")[-1] == 0.0
    # a NaN among the centres or evaluation points is not skipped silently
    assert np.isnan(kde_logpdf([0.0, np.nan, 1.0], [0.5], 1.0)).all()
    np.testing.assert_array_equal(np.isnan(kde_logpdf([0.0], [np.nan, 0.0], 1.0)), [True, False])
    # mixed magnitudes: the largest term is found wherever it sits among the centres
    pts = np.array([-300.0, 40.0, 0.0, 39.0])
    np.testing.assert_allclose(
        kde_logpdf(pts, [40.0], 1.0, "laplace"),
        brute_logpdf(pts[:, None], np.array([[40.0]]), np.ones(4), "laplace"),
        rtol=1e-14,
    )


def test_kde_integrates_to_one(rng):
    pts = rng.standard_t(3, size=40)
    h = rng.uniform(0.1, 0.5, size=40)
    # Beyond 45 bandwidths both kernels hold less than 1e-19 of their mass. The trapezoid
    # rule with spacing 2e-4 errs by O(dx^2 / h^2) at the Laplace cusps (observed 3e-9).
    x = np.arange(pts.min() - 45 * h.max(), pts.max() + 45 * h.max(), 2e-4)
    for kernel in KERNELS:
        assert np.trapezoid(kde_pdf(pts, x, h, kernel), x) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("kernel", ["gaussian", "laplace"])
def test_kde_sample_moments(kernel):
    # mixture of kernels: mean of the centres, variance of the centres plus mean h^2 Var(k)
    r = np.random.default_rng(1)
    pts = np.array([-2.0, 0.0, 3.0])
    h = np.array([0.5, 1.0, 0.2])
    draws = kde_sample(pts, h, kernel, 400_000, r)
    var = pts.var() + (h**2).mean() * KERNELS[kernel].variance
    # s.e. of the mean sqrt(var / n) ~ 0.004, of the variance ~ 0.01 (heavier for Laplace)
    assert draws.mean() == pytest.approx(pts.mean(), abs=0.02)
    assert draws.var() == pytest.approx(var, rel=0.01)
    mv = kde_sample(np.stack([pts, pts]).T, h, kernel, 10, r)
    assert mv.shape == (10, 2)


def test_kernels():
    for name, k in KERNELS.items():
        assert get_kernel(name) is k and get_kernel(k) is k
        # unit-scale density integrates to one, has the stated variance and Fourier transform
        pdf = lambda u, k=k: math.exp(float(k.logpdf(np.array(u))))  # noqa: E731
        assert integrate.quad(pdf, -np.inf, np.inf)[0] == pytest.approx(1.0, abs=1e-10)
        var = integrate.quad(lambda u, pdf=pdf: u * u * pdf(u), -np.inf, np.inf)[0]
        assert var == pytest.approx(k.variance, rel=1e-9)
        for w in (0.5, 2.0):
            cf = integrate.quad(lambda u, w=w, pdf=pdf: math.cos(w * u) * pdf(u), -60, 60)[0]
            assert float(k.fourier(np.array(w))) == pytest.approx(cf, abs=1e-8)
    with pytest.raises(ValueError, match="unknown kernel"):
        get_kernel("epanechnikov")
    with pytest.raises(ValueError, match="do not match"):
        kde_logpdf(np.zeros((5, 2)), np.zeros((3, 3)), 1.0)

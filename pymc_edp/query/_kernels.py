"""NumPy kernels for query-level empirical DP (Burchard, Daoud & Dotterrer 2020).

Plain NumPy on arrays with the sample (or grid) axis last; no pandas, no xarray. Everything
here is deterministic given its inputs, except the samplers, which take a ``Generator``.

References
----------
.. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020). Empirical Differential Privacy.
   arXiv:2011.05418 (``shared/papers/burchard-daoud-dotterrer-empirical-dp.txt``).
.. [2] Breiman, L., Meisel, W. and Purcell, E. (1977). Variable kernel estimates of
   multivariate densities. Technometrics 19(2), 135-144.
.. [3] Abramson, I. S. (1982). On bandwidth variation in kernel estimates -- a square root
   law. Annals of Statistics 10(4), 1217-1223.
.. [4] Diggle, P. J. and Hall, P. (1993). A Fourier approach to nonparametric deconvolution
   of a density estimate. JRSS B 55(2), 523-531.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "KERNELS",
    "Kernel",
    "bottleneck_distance",
    "deconvolution_spacing",
    "ecdf_density",
    "hausdorff_distance",
    "hockey_stick_delta",
    "hockey_stick_delta_samples",
    "kde_logpdf_mv",
    "kde_pdf",
    "kde_sample",
    "laplace_deconvolution",
    "positive_part_integral",
    "trapezoid_mass",
]

# Work arrays are cut into pieces of at most this many elements (~64 MB of float64).
_CHUNK_ELEMENTS = 1 << 23


@dataclass(frozen=True)
class Kernel:
    """A symmetric unit-scale smoothing kernel.

    Attributes
    ----------
    name : str
        ``"gaussian"`` or ``"laplace"``.
    variance : float
        Variance of the unit-scale kernel (the bandwidth is the kernel's scale parameter:
        the standard deviation of the Gaussian, the scale ``b`` of the Laplace).
    cutoff : float
        Mass beyond ``cutoff`` scales is below 1e-17; used to size grids.
    """

    name: str
    variance: float
    cutoff: float

    def logpdf(self, u: NDArray) -> NDArray:
        """Log density of the unit-scale kernel."""
        if self.name == "gaussian":
            return -0.5 * u * u - 0.5 * math.log(2 * math.pi)
        return -np.abs(u) - math.log(2.0)

    def fourier(self, omega: NDArray) -> NDArray:
        """Characteristic function ``E[exp(i omega U)]`` of the unit-scale kernel."""
        if self.name == "gaussian":
            return np.exp(-0.5 * omega * omega)
        return 1.0 / (1.0 + omega * omega)

    def sample(self, rng: np.random.Generator, size) -> NDArray:
        """Draws from the unit-scale kernel."""
        if self.name == "gaussian":
            return rng.standard_normal(size)
        return rng.laplace(0.0, 1.0, size)

    def tail(self, u: NDArray) -> NDArray:
        """``P(U > u)`` for the unit-scale kernel."""
        from scipy.special import ndtr

        if self.name == "gaussian":
            return ndtr(-u)
        return np.where(u >= 0, 0.5 * np.exp(-np.abs(u)), 1.0 - 0.5 * np.exp(-np.abs(u)))


KERNELS: dict[str, Kernel] = {
    "gaussian": Kernel("gaussian", 1.0, 9.0),
    "laplace": Kernel("laplace", 2.0, 40.0),
}


def _kernel(kernel: str | Kernel) -> Kernel:
    if isinstance(kernel, Kernel):
        return kernel
    try:
        return KERNELS[kernel]
    except KeyError:
        raise ValueError(f"unknown kernel {kernel!r}; choose from {sorted(KERNELS)}") from None


# ----------------------------------------------------------------------------------------
# Kernel density estimation (fixed and variable bandwidth), any dimension
# ----------------------------------------------------------------------------------------


def kde_logpdf_mv(
    points: ArrayLike,
    x: ArrayLike,
    bandwidths: ArrayLike,
    kernel: str | Kernel = "gaussian",
) -> NDArray:
    """Log density of a multivariate (variable-bandwidth) product-kernel KDE.

    ``p(x) = 1/n sum_j prod_d k((x_d - X_jd) / h_j) / h_j``, the sample-point estimator of
    Breiman, Meisel & Purcell [2]_ with an isotropic bandwidth per point (callers whiten the
    data first).

    Parameters
    ----------
    points : array_like, shape (n, d)
        Kernel centres.
    x : array_like, shape (m, d)
        Evaluation points.
    bandwidths : array_like, shape (n,) or scalar
        Scale of each kernel.
    kernel : {"gaussian", "laplace"}

    Returns
    -------
    ndarray, shape (m,)
    """
    k = _kernel(kernel)
    pts = np.asarray(points, dtype=float)
    xx = np.asarray(x, dtype=float)
    n, d = pts.shape
    h = np.broadcast_to(np.asarray(bandwidths, dtype=float), (n,))
    log_norm = -d * np.log(h) - math.log(n)
    m = xx.shape[0]
    out = np.empty(m)
    step = max(1, _CHUNK_ELEMENTS // max(n * d, 1))
    for start in range(0, m, step):
        stop = min(m, start + step)
        u = (xx[start:stop, None, :] - pts[None, :, :]) / h[None, :, None]
        logk = k.logpdf(u).sum(axis=-1) + log_norm[None, :]
        mx = logk.max(axis=-1, keepdims=True)
        out[start:stop] = np.log(np.exp(logk - mx).sum(axis=-1)) + mx[:, 0]
    return out


def kde_pdf(
    points: ArrayLike,
    x: ArrayLike,
    bandwidths: ArrayLike,
    kernel: str | Kernel = "gaussian",
) -> NDArray:
    """Density of a 1-D (variable-bandwidth) kernel density estimate.

    ``p(x) = 1/n sum_j k((x - X_j) / h_j) / h_j``: the sample-point estimator of Breiman,
    Meisel & Purcell [2]_; a single bandwidth gives the ordinary KDE. Direct summation,
    chunked so that memory stays bounded.

    Parameters
    ----------
    points : array_like, shape (..., n)
        Kernel centres, sample axis last; leading axes are batch axes (one sample per
        individual, say).
    x : array_like, shape (m,)
        Evaluation points, shared by the batch.
    bandwidths : array_like
        Kernel scales, broadcastable to ``points.shape``.
    kernel : {"gaussian", "laplace"}
        Unit kernel; the bandwidth is its scale (Gaussian s.d., Laplace ``b``).

    Returns
    -------
    ndarray, shape (..., m)
    """
    xx = np.asarray(x, dtype=float)
    k = _kernel(kernel)
    pts = np.asarray(points, dtype=float)
    n = pts.shape[-1]
    batch = pts.shape[:-1]
    h = np.broadcast_to(np.asarray(bandwidths, dtype=float), pts.shape)
    m = xx.shape[0]
    out = np.empty((*batch, m))
    inv_h = 1.0 / h
    per_x = max(int(np.prod(batch, dtype=int)) * n, 1)
    step = max(1, _CHUNK_ELEMENTS // per_x)
    if k.name == "gaussian":
        const = 1.0 / (n * math.sqrt(2 * math.pi))
    else:
        const = 0.5 / n
    for start in range(0, m, step):
        stop = min(m, start + step)
        u = (xx[start:stop, None] - pts[..., None, :]) * inv_h[..., None, :]
        if k.name == "gaussian":
            np.multiply(u, u, out=u)
            u *= -0.5
        else:
            np.abs(u, out=u)
            u *= -1.0
        np.exp(u, out=u)
        u *= inv_h[..., None, :]
        out[..., start:stop] = u.sum(axis=-1) * const
    return out


def kde_sample(
    points: ArrayLike,
    bandwidths: ArrayLike,
    kernel: str | Kernel,
    size: int,
    rng: np.random.Generator,
) -> NDArray:
    """Draw from a (variable-bandwidth) KDE: pick a centre, add scaled kernel noise.

    Parameters
    ----------
    points : array_like, shape (n,) or (n, d)
    bandwidths : array_like, shape (n,) or scalar
    kernel : {"gaussian", "laplace"}
    size : int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (size,) or (size, d)
    """
    k = _kernel(kernel)
    pts = np.asarray(points, dtype=float)
    h = np.broadcast_to(np.asarray(bandwidths, dtype=float), pts.shape[:1])
    idx = rng.integers(0, pts.shape[0], size)
    if pts.ndim == 1:
        return pts[idx] + h[idx] * k.sample(rng, size)
    return pts[idx] + h[idx, None] * k.sample(rng, (size, pts.shape[1]))


# ----------------------------------------------------------------------------------------
# Empirical-CDF differencing
# ----------------------------------------------------------------------------------------


def ecdf_density(points: ArrayLike, grid: ArrayLike, *, window: int | None = None) -> NDArray:
    """Density by differencing the empirical CDF over ``window`` order statistics.

    Between the order statistics ``X_(j)`` and ``X_(j+w)`` the density is estimated as
    ``w / (n (X_(j+w) - X_(j)))`` and attributed to their midpoint; the estimate is
    interpolated linearly onto ``grid``, set to zero outside the range of midpoints and
    renormalised. ``w ~ sqrt(n)`` balances bias and variance ([1], sec. 5).

    Parameters
    ----------
    points : array_like, shape (..., n)
        Samples; batch axes first.
    grid : array_like, shape (m,)
        Increasing evaluation grid.
    window : int, optional
        Number of order statistics spanned; ``round(sqrt(n))`` by default.

    Returns
    -------
    ndarray, shape (..., m)
        Densities on the grid, each integrating to one by the trapezoid rule.
    """
    pts = np.sort(np.asarray(points, dtype=float), axis=-1)
    g = np.asarray(grid, dtype=float)
    n = pts.shape[-1]
    w = max(1, round(math.sqrt(n))) if window is None else int(window)
    if not 1 <= w < n:
        raise ValueError(f"window must be in [1, {n - 1}], got {w}")
    lo, hi = pts[..., :-w], pts[..., w:]
    scale = np.maximum(pts[..., -1:] - pts[..., :1], 1e-300)
    width = np.maximum(hi - lo, 1e-9 * scale)  # ties: a very narrow (not infinite) bump
    mid = 0.5 * (lo + hi)
    dens = w / (n * width)
    flat_mid = mid.reshape(-1, mid.shape[-1])
    flat_dens = dens.reshape(-1, dens.shape[-1])
    out = np.empty((flat_mid.shape[0], g.size))
    for b in range(flat_mid.shape[0]):
        out[b] = np.interp(g, flat_mid[b], flat_dens[b], left=0.0, right=0.0)
    out = out.reshape((*pts.shape[:-1], g.size))
    mass = trapezoid_mass(out, g)
    return out / np.where(mass > 0, mass, 1.0)[..., None]


# ----------------------------------------------------------------------------------------
# Hockey-stick divergence (the delta of Theorem 1 / Algorithm 2)
# ----------------------------------------------------------------------------------------


def trapezoid_mass(f: ArrayLike, x: ArrayLike) -> NDArray:
    """Trapezoid integral of ``f`` over the last axis on the (possibly uneven) grid ``x``."""
    f = np.asarray(f, dtype=float)
    dx = np.diff(np.asarray(x, dtype=float))
    return 0.5 * ((f[..., 1:] + f[..., :-1]) * dx).sum(axis=-1)


def positive_part_integral(g: ArrayLike, x: ArrayLike) -> NDArray:
    """Integral of ``max(g, 0)`` for the piecewise-linear interpolant of ``g`` on ``x``.

    Exact for the interpolant: cells where ``g`` changes sign contribute the triangle on the
    positive side (``a**2 / (a - b) * dx / 2``), so the kinks of ``(g)_+`` cost no accuracy.

    Parameters
    ----------
    g : array_like, shape (..., m)
    x : array_like, shape (m,)

    Returns
    -------
    ndarray, shape (...)
    """
    g = np.asarray(g, dtype=float)
    dx = np.diff(np.asarray(x, dtype=float))
    a, b = g[..., :-1], g[..., 1:]
    ap, bp = np.maximum(a, 0.0), np.maximum(b, 0.0)
    same = a * b >= 0
    denom = np.where(same, 1.0, np.abs(a) + np.abs(b))
    cell = np.where(same, 0.5 * (ap + bp), 0.5 * (ap * ap + bp * bp) / denom)
    return (cell * dx).sum(axis=-1)


def hockey_stick_delta(
    p: ArrayLike,
    q: ArrayLike,
    x: ArrayLike,
    epsilon: ArrayLike,
    *,
    normalize: bool = True,
    direction: str = "both",
) -> NDArray:
    """Hockey-stick divergence between two densities on a grid, in both directions.

    ``delta(eps) = max( int (p - e^eps q)_+ dx, int (q - e^eps p)_+ dx )``: the smallest
    ``delta`` for which ``P(E) <= e^eps Q(E) + delta`` and ``Q(E) <= e^eps P(E) + delta`` for
    every event ``E`` ([1], Theorem 1 and Algorithm 2). With ``p`` the density with
    individual ``i`` and ``q`` the one without, this is ``delta_i(eps)``.

    Parameters
    ----------
    p, q : array_like, shape (..., m)
        Densities on the grid ``x`` (broadcast against each other; grid axis last).
    x : array_like, shape (m,)
        Increasing grid, wide enough that the mass outside it is negligible.
    epsilon : array_like, shape (k,) or scalar
        Privacy levels (``eps >= 0``).
    normalize : bool, default True
        Rescale ``p`` and ``q`` to unit trapezoid mass on ``x`` first, so that discretisation
        and truncation of the grid do not masquerade as a privacy loss.
    direction : {"both", "forward", "backward"}
        ``"forward"`` returns only ``int (p - e^eps q)_+``, ``"backward"`` only
        ``int (q - e^eps p)_+``.

    Returns
    -------
    ndarray, shape (..., k) (or (...) for a scalar ``epsilon``)

    Notes
    -----
    The integrand is integrated exactly for the piecewise-linear interpolant of the densities
    (:func:`positive_part_integral`), so the kinks where ``p = e^eps q`` add no error beyond
    the interpolation error of the densities themselves. The same quantity from *samples* of
    one density and the log ratio at those samples is :func:`hockey_stick_delta_samples`.

    Examples
    --------
    Two unit normals one standard deviation apart; at ``eps = 0`` this is their total
    variation distance, ``2 Phi(1/2) - 1 = 0.3829``:

    >>> import numpy as np
    >>> from scipy import stats
    >>> from pymc_edp.query import hockey_stick_delta
    >>> x = np.linspace(-8, 9, 2001)
    >>> p, q = stats.norm.pdf(x), stats.norm.pdf(x, loc=1.0)
    >>> hockey_stick_delta(p, q, x, [0.0, 0.5, 1.0]).round(4)
    array([0.3829, 0.2384, 0.1269])
    """
    xg = np.asarray(x, dtype=float)
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if normalize:
        p = p / trapezoid_mass(p, xg)[..., None]
        q = q / trapezoid_mass(q, xg)[..., None]
    p, q = np.broadcast_arrays(p, q)
    eps = np.asarray(epsilon, dtype=float)
    scalar = eps.ndim == 0
    eps = np.atleast_1d(eps)
    if direction not in {"both", "forward", "backward"}:
        raise ValueError("direction must be 'both', 'forward' or 'backward'")
    out = np.empty(p.shape[:-1] + eps.shape)
    for k, e in enumerate(eps):
        factor = math.exp(e)
        fwd = positive_part_integral(p - factor * q, xg) if direction != "backward" else 0.0
        bwd = positive_part_integral(q - factor * p, xg) if direction != "forward" else 0.0
        out[..., k] = np.maximum(fwd, bwd)
    out = np.clip(out, 0.0, 1.0)
    return out[..., 0] if scalar else out


def hockey_stick_delta_samples(
    log_ratio: ArrayLike,
    epsilon: ArrayLike,
    *,
    weights: ArrayLike | None = None,
    direction: str = "both",
) -> NDArray:
    """Sample-based hockey-stick divergence from log density ratios at draws of ``p``.

    With ``r = q / p`` evaluated at draws from ``p`` (optionally self-normalised weights),
    ``int (p - e^eps q)_+ = E_p[(1 - e^eps r)_+]`` and ``int (q - e^eps p)_+ = E_p[(r -
    e^eps)_+]``; ``"both"`` returns their maximum, the bin-free profile of the design notes.

    Parameters
    ----------
    log_ratio : array_like, shape (..., S)
        ``log q(theta_s) - log p(theta_s)`` at draws ``theta_s ~ p`` (sample axis last).
    epsilon : array_like, shape (k,) or scalar
    weights : array_like, shape (..., S), optional
        Non-negative weights of the draws (normalised here); equal weights by default.
    direction : {"both", "forward", "backward"}

    Returns
    -------
    ndarray, shape (..., k) (or (...) for a scalar ``epsilon``)

    Examples
    --------
    The same two normals as in :func:`hockey_stick_delta`, from draws of ``p``:

    >>> import numpy as np
    >>> from scipy import stats
    >>> from pymc_edp.query import hockey_stick_delta_samples
    >>> draws = np.random.default_rng(0).normal(size=100_000)
    >>> log_ratio = stats.norm.logpdf(draws, loc=1.0) - stats.norm.logpdf(draws)
    >>> hockey_stick_delta_samples(log_ratio, [0.0, 0.5, 1.0]).round(2)
    array([0.38, 0.24, 0.13])
    """
    lr = np.asarray(log_ratio, dtype=float)
    if weights is None:
        w = np.full(lr.shape, 1.0 / lr.shape[-1])
    else:
        w = np.broadcast_to(np.asarray(weights, dtype=float), lr.shape)
        w = w / w.sum(axis=-1, keepdims=True)
    eps = np.asarray(epsilon, dtype=float)
    scalar = eps.ndim == 0
    eps = np.atleast_1d(eps)
    out = np.empty(lr.shape[:-1] + eps.shape)
    r = np.exp(lr)
    for k, e in enumerate(eps):
        fwd = (w * np.maximum(1.0 - np.exp(e + lr), 0.0)).sum(-1) if direction != "backward" else 0
        bwd = (w * np.maximum(r - math.exp(e), 0.0)).sum(-1) if direction != "forward" else 0
        out[..., k] = np.maximum(fwd, bwd)
    out = np.clip(out, 0.0, 1.0)
    return out[..., 0] if scalar else out


# ----------------------------------------------------------------------------------------
# Noise calibration (section 6)
# ----------------------------------------------------------------------------------------


def hausdorff_distance(a: ArrayLike, b: ArrayLike) -> float:
    """Hausdorff distance between two finite sets of reals (or of points in R^d).

    ``d_H(A, B) = max(max_a min_b |a - b|, max_b min_a |a - b|)``, the distance used in
    Proposition 1 of [1] (but see :func:`bottleneck_distance`).

    Parameters
    ----------
    a, b : array_like, shape (n,) / (m,) or (n, d) / (m, d)

    Returns
    -------
    float

    Examples
    --------
    >>> from pymc_edp.query import hausdorff_distance
    >>> hausdorff_distance([0.0, 1.0, 2.0], [0.0, 0.1, 2.0])
    0.9
    >>> hausdorff_distance([0.0, 0.0, 1.0], [0.0, 1.0, 1.0])  # same set, different counts
    0.0
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("the Hausdorff distance needs two non-empty sets")
    if a.ndim == 1:
        return max(_directed_1d(a, np.sort(b)), _directed_1d(b, np.sort(a)))
    from scipy.spatial import cKDTree

    da, _ = cKDTree(b).query(a)
    db, _ = cKDTree(a).query(b)
    return float(max(da.max(), db.max()))


def bottleneck_distance(a: ArrayLike, b: ArrayLike) -> float:
    """Bottleneck (infinity-Wasserstein) distance between two equal-size samples of reals.

    ``W_inf(A, B) = min over bijections pi of max_k |a_k - b_pi(k)|``; in one dimension the
    sorted matching is optimal, so it is ``max_k |a_(k) - b_(k)|``. It is never smaller than
    the Hausdorff distance, and it is the distance for which Proposition 1 of [1] holds:
    Laplace KDEs of scale ``W_inf / eps`` differ by at most ``eps`` in log density (each
    kernel term is within ``e^eps`` of its matched partner). With the Hausdorff distance the
    proposition fails when the sets have clusters of different sizes (see the tests).

    Parameters
    ----------
    a, b : array_like, shape (n,)

    Returns
    -------
    float

    Examples
    --------
    Clusters of different sizes: the sets are equal, so the Hausdorff distance is 0, but a
    point has to move from one cluster to the other:

    >>> from pymc_edp.query import bottleneck_distance, hausdorff_distance
    >>> a, b = [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]
    >>> hausdorff_distance(a, b), bottleneck_distance(a, b)
    (0.0, 1.0)
    """
    a = np.sort(np.asarray(a, dtype=float).ravel())
    b = np.sort(np.asarray(b, dtype=float).ravel())
    if a.size != b.size or a.size == 0:
        raise ValueError("the bottleneck distance needs two non-empty samples of equal size")
    return float(np.max(np.abs(a - b)))


def _directed_1d(a: NDArray, sorted_b: NDArray) -> float:
    idx = np.searchsorted(sorted_b, a)
    left = sorted_b[np.clip(idx - 1, 0, sorted_b.size - 1)]
    right = sorted_b[np.clip(idx, 0, sorted_b.size - 1)]
    return float(np.max(np.minimum(np.abs(a - left), np.abs(a - right))))


def deconvolution_spacing(scale: float, kernel: str | Kernel, bandwidth: float) -> float:
    """Largest useful frequency of the deconvolution, as a grid spacing.

    For a Gaussian kernel ``F l_lambda / F k = exp(sigma^2 w^2 / 2) / (1 + lambda^2 w^2)``
    is smallest at ``w* = sqrt(2 / sigma^2 - 1 / lambda^2)`` and grows without bound beyond
    it: ``h`` exists only as a band-limited density, resolved to ``pi / w*``. A Laplace
    kernel has no such limit (returns 0).

    Returns
    -------
    float
        The smallest admissible grid spacing (0 if any spacing will do).

    Raises
    ------
    ValueError
        If the kernel is too wide for any noise density to exist (``Var k >= 2 lambda^2``).
    """
    k = _kernel(kernel)
    lam, b = float(scale), float(bandwidth)
    if k.variance * b * b >= 2.0 * lam * lam:
        raise ValueError(
            f"the curator's {k.name} kernel (scale {b:.4g}) is too wide for the Laplace "
            f"scale lambda={lam:.4g}: no noise density h with k * h = l_lambda exists "
            "(it needs Var(k) < 2 lambda^2). Choose a narrower kernel or a smaller epsilon."
        )
    if k.name == "laplace":
        return 0.0
    w_star = math.sqrt(2.0 / (b * b) - 1.0 / (lam * lam))
    return math.pi / w_star


def laplace_deconvolution(
    scale: float,
    kernel: str | Kernel,
    bandwidth: float,
    *,
    spacing: float | None = None,
    half_width: float = 45.0,
    max_grid: int = 1 << 21,
) -> tuple[NDArray, NDArray]:
    """Solve ``k * h = l_lambda`` for the noise density ``h`` by FFT (eq. 2 of [1]).

    ``h = F^-1( F l_lambda / F k )``, with ``l_lambda`` the Laplace kernel of scale
    ``lambda`` and ``k`` the curator's kernel (of scale ``bandwidth``). Both transforms are
    known in closed form, so they are evaluated on the FFT frequencies (no aliasing of the
    kernels) and only the inverse transform is numerical. For a Gaussian ``k`` the ratio
    grows without bound at high frequency, so the grid spacing is chosen no finer than
    :func:`deconvolution_spacing` -- the band limit of Diggle & Hall's Fourier
    deconvolution [4]_.

    Parameters
    ----------
    scale : float
        ``lambda``, the Laplace scale that guarantees ``eps`` (``max_i d_H / eps``).
    kernel : {"gaussian", "laplace"}
        The curator's kernel ``k``.
    bandwidth : float
        Scale of ``k``.
    spacing : float, optional
        Grid spacing; by default ``lambda / 64`` or the band limit, whichever is coarser.
    half_width : float, default 45
        The grid spans ``+-half_width * lambda`` (Laplace mass outside: ``exp(-45)``).
    max_grid : int
        Upper bound on the FFT length; the spacing is coarsened to respect it.

    Returns
    -------
    x : ndarray, shape (m,)
        Symmetric grid centred on 0 (``x[m // 2] == 0``), ``m`` a power of two.
    h : ndarray, shape (m,)
        Values of ``h`` on the grid (may dip slightly below zero; see
        :class:`~pymc_edp.query.NoiseKernel` for the clean-up).

    Notes
    -----
    For a Laplace curator kernel of scale ``b < lambda`` the answer is known exactly:
    ``h = (b / lambda)**2 delta_0 + (1 - (b / lambda)**2) l_lambda`` -- no noise with
    probability ``(b / lambda)**2``, Laplace noise otherwise. On the grid the atom is one
    cell of height ``w / dx``. For a Gaussian kernel ``h`` has, to second order, the same
    shape with atom weight ``sigma**2 / (2 lambda**2)``.
    """
    lam = float(scale)
    band = deconvolution_spacing(lam, kernel, bandwidth)
    dx = max(lam / 64.0, band) if spacing is None else max(float(spacing), band)
    n = 1 << max(4, math.ceil(math.log2(2 * half_width * lam / dx)))
    if n > max_grid:
        n = max_grid
        dx = 2 * half_width * lam / n
    return _deconvolve(lam, _kernel(kernel), float(bandwidth), dx, n)


def _deconvolve(lam: float, k: Kernel, b: float, dx: float, n: int) -> tuple[NDArray, NDArray]:
    x = (np.arange(n) - n // 2) * dx
    omega = 2 * np.pi * np.fft.fftfreq(n, d=dx)
    with np.errstate(over="ignore"):
        ratio = 1.0 / ((1.0 + (lam * omega) ** 2) * k.fourier(omega * b))
    # ``h`` on the grid: inverse DFT of its characteristic function (real and even).
    h = np.real(np.fft.ifft(ratio)) / dx
    return x, np.fft.fftshift(h)

"""NumPy kernels of the query-level audit: grids, hockey-stick integrals, distances, noise.

Sample (or grid) axis last. KDEs are in :mod:`pymc_edp.base.kde`, divergences from
weighted draws in :mod:`pymc_edp.base.hockey`.

References
----------
.. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020). Empirical Differential Privacy.
   arXiv:2011.05418.
.. [2] Diggle, P. J. and Hall, P. (1993). A Fourier approach to nonparametric deconvolution
   of a density estimate. JRSS B 55(2), 523-531.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pymc_edp.base.kde import Kernel, get_kernel
from pymc_edp.base.validate import check_choice

__all__ = [
    "bottleneck_distance",
    "deconvolution_spacing",
    "ecdf_density",
    "hausdorff_distance",
    "hockey_stick_delta_grid",
    "laplace_deconvolution",
    "positive_part_integral",
    "trapezoid_mass",
]


def ecdf_density(points: ArrayLike, grid: ArrayLike, *, window: int | None = None) -> NDArray:
    """Density by differencing the empirical CDF over ``window`` order statistics.

    ``w / (n (X_(j+w) - X_(j)))`` at the midpoint of ``X_(j)`` and ``X_(j+w)``, interpolated
    onto ``grid`` and renormalised; ``w ~ sqrt(n)`` balances bias and variance ([1], sec. 5).

    Parameters
    ----------
    points : array_like, shape (..., n)
    grid : array_like, shape (m,)
        Increasing.
    window : int, optional
        Default ``round(sqrt(n))``.

    Returns
    -------
    ndarray, shape (..., m)
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


def trapezoid_mass(f: ArrayLike, x: ArrayLike) -> NDArray:
    """Trapezoid integral of ``f`` over the last axis on the (possibly uneven) grid ``x``."""
    f = np.asarray(f, dtype=float)
    dx = np.diff(np.asarray(x, dtype=float))
    return 0.5 * ((f[..., 1:] + f[..., :-1]) * dx).sum(axis=-1)


def positive_part_integral(g: ArrayLike, x: ArrayLike) -> NDArray:
    """Integral of ``max(g, 0)`` for the piecewise-linear interpolant of ``g`` on ``x``.

    Exact: a cell where ``g`` changes sign adds the triangle on its positive side.
    """
    g = np.asarray(g, dtype=float)
    dx = np.diff(np.asarray(x, dtype=float))
    a, b = g[..., :-1], g[..., 1:]
    ap, bp = np.maximum(a, 0.0), np.maximum(b, 0.0)
    same = a * b >= 0
    denom = np.where(same, 1.0, np.abs(a) + np.abs(b))
    cell = np.where(same, 0.5 * (ap + bp), 0.5 * (ap * ap + bp * bp) / denom)
    return (cell * dx).sum(axis=-1)


def hockey_stick_delta_grid(
    p: ArrayLike,
    q: ArrayLike,
    x: ArrayLike,
    epsilon: ArrayLike,
    *,
    normalize: bool = True,
    direction: str = "both",
) -> NDArray:
    """Hockey-stick divergence between two densities given on a grid, in both directions.

    ``delta(eps) = max( int (p - e^eps q)_+ dx, int (q - e^eps p)_+ dx )``, the smallest
    ``delta`` bounding both directions for every event ([1], Theorem 1 and Algorithm 2).

    Parameters
    ----------
    p, q : array_like, shape (..., m)
        Densities on the grid ``x``, broadcast against each other.
    x : array_like, shape (m,)
        Increasing grid, wide enough that the mass outside it is negligible.
    epsilon : array_like, shape (k,) or scalar
        ``eps >= 0``.
    normalize : bool, default True
        Rescale ``p`` and ``q`` to unit mass on ``x`` first, so that the grid's truncation
        does not masquerade as a privacy loss.
    direction : {"both", "forward", "backward"}
        As in :func:`pymc_edp.base.hockey.hockey_stick_delta`.

    Returns
    -------
    ndarray, shape (..., k) (or (...) for a scalar ``epsilon``)

    Notes
    -----
    Exact for the piecewise-linear interpolant (:func:`positive_part_integral`). From draws
    and log ratios it is :func:`pymc_edp.base.hockey.hockey_stick_delta`.

    Examples
    --------
    Two unit normals one apart; at ``eps = 0`` their total variation, ``0.3829``:

    >>> from scipy import stats
    >>> from pymc_edp.query import hockey_stick_delta_grid
    >>> x = np.linspace(-8, 9, 2001)
    >>> p, q = stats.norm.pdf(x), stats.norm.pdf(x, loc=1.0)
    >>> hockey_stick_delta_grid(p, q, x, [0.0, 0.5, 1.0]).round(4)
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
    check_choice(direction, "direction", ("both", "forward", "backward"))
    out = np.empty(p.shape[:-1] + eps.shape)
    for k, e in enumerate(eps):
        factor = math.exp(e)
        fwd = positive_part_integral(p - factor * q, xg) if direction != "backward" else 0.0
        bwd = positive_part_integral(q - factor * p, xg) if direction != "forward" else 0.0
        out[..., k] = np.maximum(fwd, bwd)
    out = np.clip(out, 0.0, 1.0)
    return out[..., 0] if scalar else out


def hausdorff_distance(a: ArrayLike, b: ArrayLike) -> float:
    """Hausdorff distance between two finite sets of reals (or of points in R^d).

    ``max(max_a min_b |a - b|, max_b min_a |a - b|)``, as in Proposition 1 of [1] (but see
    :func:`bottleneck_distance`).

    Parameters
    ----------
    a, b : array_like, shape (n,) / (m,) or (n, d) / (m, d)

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

    ``max_k |a_(k) - b_(k)|`` in one dimension; Proposition 1 of [1] (Laplace KDEs of scale
    ``W_inf / eps`` differ by at most ``eps`` in log density) holds with it, not with the
    Hausdorff distance.

    Parameters
    ----------
    a, b : array_like, shape (n,)

    Examples
    --------
    Clusters of different sizes: equal sets, yet a point has to move:

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
    grows without bound beyond ``w* = sqrt(2 / sigma^2 - 1 / lambda^2)``, so ``h`` is
    resolved to ``pi / w*``; a Laplace kernel has no such limit.

    Returns
    -------
    float
        The smallest admissible grid spacing (0 if any will do).

    Raises
    ------
    ValueError
        If the kernel is too wide for any noise density to exist (``Var k >= 2 lambda^2``).
    """
    k = get_kernel(kernel)
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

    ``h = F^-1( F l_lambda / F k )`` with closed-form transforms; the spacing is no finer
    than :func:`deconvolution_spacing`, the band limit of the deconvolution [2]_.

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
        The grid spans ``+-half_width * lambda``.
    max_grid : int
        Largest FFT length (the spacing is coarsened to respect it).

    Returns
    -------
    x, h : ndarray, shape (m,)
        Grid centred on 0 (``m`` a power of two) and ``h`` on it (may dip below zero).

    Notes
    -----
    For a Laplace kernel of scale ``b < lambda``,
    ``h = (b / lambda)**2 delta_0 + (1 - (b / lambda)**2) l_lambda`` exactly (the atom one
    cell of height ``w / dx``); for a Gaussian, the same to second order with atom weight
    ``sigma**2 / (2 lambda**2)``.
    """
    lam = float(scale)
    band = deconvolution_spacing(lam, kernel, bandwidth)
    dx = max(lam / 64.0, band) if spacing is None else max(float(spacing), band)
    n = 1 << max(4, math.ceil(math.log2(2 * half_width * lam / dx)))
    if n > max_grid:
        n = max_grid
        dx = 2 * half_width * lam / n
    return _deconvolve(lam, get_kernel(kernel), float(bandwidth), dx, n)


def _deconvolve(lam: float, k: Kernel, b: float, dx: float, n: int) -> tuple[NDArray, NDArray]:
    x = (np.arange(n) - n // 2) * dx
    omega = 2 * np.pi * np.fft.fftfreq(n, d=dx)
    with np.errstate(over="ignore"):
        ratio = 1.0 / ((1.0 + (lam * omega) ** 2) * k.fourier(omega * b))
    # ``h`` on the grid: inverse DFT of its characteristic function (real and even).
    h = np.real(np.fft.ifft(ratio)) / dx
    return x, np.fft.fftshift(h)

"""Kernel density estimates with one bandwidth per kernel centre, in any dimension.

:func:`kde_logpdf` evaluates the sample-point estimator [1]_
``p(x) = 1/n sum_j prod_c k((x_c - X_jc) / h_j) / h_j`` in log space (one bandwidth: the
ordinary KDE; Abramson's square-root law [2]_: the adaptive one).

References
----------
.. [1] Breiman, L., Meisel, W. and Purcell, E. (1977). Variable kernel estimates of
   multivariate densities. Technometrics 19(2), 135-144.
.. [2] Abramson, I. S. (1982). On bandwidth variation in kernel estimates -- a square root
   law. Annals of Statistics 10(4), 1217-1223.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["KERNELS", "Kernel", "get_kernel", "kde_logpdf", "kde_pdf", "kde_sample"]


@dataclass(frozen=True)
class Kernel:
    """A symmetric unit-scale smoothing kernel.

    Attributes
    ----------
    name : str
        ``"gaussian"`` or ``"laplace"``.
    variance : float
        Of the unit-scale kernel (Gaussian s.d. 1, Laplace ``b = 1``).
    cutoff : float
        Mass beyond ``cutoff`` scales is below 1e-17.

    Examples
    --------
    >>> from pymc_edp.base.kde import KERNELS
    >>> lap = KERNELS["laplace"]
    >>> lap.variance, float(np.exp(lap.logpdf(np.array(0.0))))
    (2.0, 0.5)
    >>> float(lap.fourier(np.array(1.0)))  # characteristic function 1 / (1 + w^2)
    0.5
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


#: The unit kernels by name.
KERNELS: dict[str, Kernel] = {
    "gaussian": Kernel("gaussian", 1.0, 9.0),
    "laplace": Kernel("laplace", 2.0, 40.0),
}


def get_kernel(kernel: str | Kernel) -> Kernel:
    """The :class:`Kernel` named ``kernel`` (a :class:`Kernel` is returned as it is).

    Examples
    --------
    >>> from pymc_edp.base.kde import get_kernel
    >>> get_kernel("gaussian").variance
    1.0
    """
    if isinstance(kernel, Kernel):
        return kernel
    try:
        return KERNELS[kernel]
    except (KeyError, TypeError):
        raise ValueError(f"unknown kernel {kernel!r}; choose from {sorted(KERNELS)}") from None


@numba.njit(parallel=True, cache=True)
def _kde_logpdf_kernel(points, inv_h, log_norm, x, gaussian):  # pragma: no cover - compiled
    """``log sum_j exp(log k_j(x))`` per (batch row, evaluation point), one pass over j.

    ``points`` (B, n, d), ``inv_h`` and ``log_norm`` (B, n) (``1 / h_j`` and the log of the
    kernel's normaliser), ``x`` (m, d); returns (B, m).
    """
    n_batch, n, d = points.shape
    m = x.shape[0]
    out = np.empty((n_batch, m))
    for k in numba.prange(n_batch * m):
        b = k // m
        j = k - b * m
        top = -np.inf
        acc = 0.0
        for i in range(n):
            s = 0.0
            for c in range(d):
                u = (x[j, c] - points[b, i, c]) * inv_h[b, i]
                if gaussian:
                    s += u * u
                else:
                    s += abs(u)
            lk = (-0.5 * s if gaussian else -s) + log_norm[b, i]
            if lk > top:
                acc = acc * math.exp(top - lk) + 1.0
                top = lk
            elif lk > -np.inf:
                acc += math.exp(lk - top)
            elif lk != lk:  # NaN in, NaN out
                acc = np.nan
        if acc > 0.0:
            out[b, j] = top + math.log(acc)
        else:  # no kernel reaches x (-inf), or a NaN
            out[b, j] = -np.inf if acc == 0.0 else np.nan
    return out


def kde_logpdf(
    points: ArrayLike,
    x: ArrayLike,
    bandwidths: ArrayLike,
    kernel: str | Kernel = "gaussian",
) -> NDArray:
    """Log density of a (variable-bandwidth) product-kernel KDE, batch axes first.

    An isotropic bandwidth per centre (whiten multivariate data first); a running
    log-sum-exp keeps far tails from underflowing, in memory not growing with ``n * m``.

    Parameters
    ----------
    points : array_like, shape (..., n) or (..., n, d)
        Kernel centres; leading axes are batch axes.
    x : array_like, shape (m,) or (m, d)
        Evaluation points, shared by the batch; ``(m,)`` for one dimension.
    bandwidths : array_like
        Kernel scales (Gaussian s.d., Laplace ``b``), broadcastable to ``(..., n)``.
    kernel : {"gaussian", "laplace"} or Kernel

    Returns
    -------
    ndarray, shape (..., m)

    Examples
    --------
    >>> from pymc_edp.base.kde import kde_logpdf
    >>> kde_logpdf([0.0], [0.0, 1.0], 1.0).round(4)
    array([-0.9189, -1.4189])
    >>> kde_logpdf([[0.0, 0.0]], [[0.0, 0.0]], 1.0, "laplace").round(4)
    array([-1.3863])
    """
    k = get_kernel(kernel)
    xx = np.asarray(x, dtype=float)
    pts = np.asarray(points, dtype=float)
    if xx.ndim == 1:
        xx = xx[:, None]
        pts = pts[..., None]
    elif xx.ndim != 2:
        raise ValueError(f"x must have shape (m,) or (m, d), got {xx.shape}")
    if pts.ndim < 2 or pts.shape[-1] != xx.shape[1]:
        raise ValueError(
            f"points of shape {np.shape(points)} do not match evaluation points of shape "
            f"{np.shape(x)}: expected (..., n) for x of shape (m,), (..., n, d) for (m, d)"
        )
    batch, (n, d) = pts.shape[:-2], pts.shape[-2:]
    h = np.broadcast_to(np.asarray(bandwidths, dtype=float), (*batch, n))
    log_c = 0.5 * math.log(2 * math.pi) if k.name == "gaussian" else math.log(2.0)
    log_norm = -d * np.log(h) - math.log(n) - d * log_c
    out = _kde_logpdf_kernel(
        np.ascontiguousarray(pts.reshape(-1, n, d)),
        np.ascontiguousarray((1.0 / h).reshape(-1, n)),
        np.ascontiguousarray(log_norm.reshape(-1, n)),
        np.ascontiguousarray(xx),
        k.name == "gaussian",
    )
    return out.reshape((*batch, xx.shape[0]))


def kde_pdf(
    points: ArrayLike,
    x: ArrayLike,
    bandwidths: ArrayLike,
    kernel: str | Kernel = "gaussian",
) -> NDArray:
    """Density of a (variable-bandwidth) KDE: ``exp`` of :func:`kde_logpdf` (same arguments).

    Examples
    --------
    >>> from pymc_edp.base.kde import kde_pdf
    >>> kde_pdf([[-1.0, 1.0], [0.0, 0.0]], [0.0], 0.5, "laplace").round(4)
    array([[0.1353],
           [1.    ]])
    """
    return np.exp(kde_logpdf(points, x, bandwidths, kernel))


def kde_sample(
    points: ArrayLike,
    bandwidths: ArrayLike,
    kernel: str | Kernel,
    size: int,
    rng: np.random.Generator,
) -> NDArray:
    """Draw from a (variable-bandwidth) KDE: pick a centre, add scaled kernel noise.

    ``points`` of shape (n,) or (n, d) (no batch axes); returns (size,) or (size, d).

    Examples
    --------
    >>> from pymc_edp.base.kde import kde_sample
    >>> draws = kde_sample([0.0, 10.0], 0.1, "gaussian", 10_000, np.random.default_rng(0))
    >>> bool(abs(draws.mean() - 5.0) < 0.2), bool(draws.std() > 4.9)
    (True, True)
    """
    k = get_kernel(kernel)
    pts = np.asarray(points, dtype=float)
    h = np.broadcast_to(np.asarray(bandwidths, dtype=float), pts.shape[:1])
    idx = rng.integers(0, pts.shape[0], size)
    if pts.ndim == 1:
        return pts[idx] + h[idx] * k.sample(rng, size)
    return pts[idx] + h[idx, None] * k.sample(rng, (size, pts.shape[1]))

"""Density estimators for query results, chosen by held-out log-likelihood.

Burchard, Daoud & Dotterrer (2020, sec. 5) use a *variable*-bandwidth KDE (Breiman, Meisel &
Purcell 1977), kernel and bandwidth maximising the out-of-sample log-likelihood; empirical-CDF
differencing is the simple alternative.

References
----------
.. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020). Empirical Differential Privacy.
   arXiv:2011.05418, sections 5 and 7.
.. [2] Breiman, L., Meisel, W. and Purcell, E. (1977). Variable kernel estimates of
   multivariate densities. Technometrics 19(2), 135-144.
.. [3] Abramson, I. S. (1982). On bandwidth variation in kernel estimates -- a square root
   law. Annals of Statistics 10(4), 1217-1223.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize_scalar
from scipy.special import ndtri

from pymc_edp.base.kde import KERNELS, kde_logpdf, kde_pdf, kde_sample
from pymc_edp.base.query_kernels import ecdf_density

__all__ = ["DENSITY_METHODS", "DensityModel", "select_density"]

DENSITY_METHODS = ("variable-kde", "kde", "ecdf")

# Pilot densities are evaluated on a grid of this many points (then interpolated) when the
# sample is larger: the pilot only sets the relative bandwidths, so 0.1% accuracy is plenty.
_PILOT_GRID = 1024


@dataclass(frozen=True)
class DensityModel:
    """A density estimator for query results, applied alike with and without each individual.

    Parameters
    ----------
    method : {"variable-kde", "kde", "ecdf"}
        Variable-bandwidth KDE (Abramson's square-root law on a fixed-bandwidth pilot), fixed
        bandwidth KDE, or empirical-CDF differencing.
    kernel : {"gaussian", "laplace"}
        Unit kernel of the KDE methods, of scale ``bandwidth`` (global ``h``, in whitened
        units for vector queries).
    adaptivity : float
        ``alpha`` in ``h_j = h (f~(X_j) / g)^-alpha`` (0: fixed bandwidth), ``f~`` the pilot
        KDE of bandwidth ``pilot_bandwidth``.
    window : int or None
        ``ecdf``: order statistics differenced over (``None``: ``round(sqrt(n))``).

    Examples
    --------
    >>> m = DensityModel(method="kde", kernel="laplace", bandwidth=0.5)
    >>> m.pdf([0.0], [-1.0, 0.0, 1.0]).round(4)
    array([0.1353, 1.    , 0.1353])
    >>> m.to_attrs()["density_kernel"]
    'laplace'
    >>> DensityModel.from_attrs(m.to_attrs()) == m
    True
    """

    method: str = "variable-kde"
    kernel: str = "gaussian"
    bandwidth: float = math.nan
    adaptivity: float = 0.0
    pilot_bandwidth: float = math.nan
    window: int | None = None

    def __post_init__(self):
        if self.method not in DENSITY_METHODS:
            raise ValueError(f"method must be one of {DENSITY_METHODS}, not {self.method!r}")
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {sorted(KERNELS)}, not {self.kernel!r}")

    def point_bandwidths(self, points: ArrayLike) -> NDArray:
        """Per-point bandwidths ``h_j`` for 1-D samples ``(..., n)`` (batch axes first)."""
        pts = np.asarray(points, dtype=float)
        if self.method == "ecdf":
            raise ValueError("the ecdf estimator has no bandwidths")
        if self.method == "kde" or self.adaptivity == 0:
            return np.full(pts.shape, self.bandwidth)
        log_pilot = pilot_logpdf(pts, self.pilot_bandwidth, self.kernel)
        return _abramson(log_pilot, self.bandwidth, self.adaptivity)

    def point_bandwidths_mv(self, points: ArrayLike) -> NDArray:
        """Per-point bandwidths for one multivariate sample ``(n, d)`` (whitened units)."""
        pts = np.asarray(points, dtype=float)
        if self.method == "ecdf":
            raise ValueError("the ecdf estimator is one-dimensional")
        if self.method == "kde" or self.adaptivity == 0:
            return np.full(pts.shape[0], self.bandwidth)
        log_pilot = kde_logpdf(pts, pts, self.pilot_bandwidth, self.kernel)
        return _abramson(log_pilot, self.bandwidth, self.adaptivity)

    def pdf(self, points: ArrayLike, x: ArrayLike, bandwidths: ArrayLike | None = None):
        """Density fitted to 1-D ``points`` ``(..., n)`` at ``x`` ``(m,)``: shape ``(..., m)``.

        For ``ecdf``, ``x`` must be a fine grid covering the data (it is renormalised on it).
        """
        if self.method == "ecdf":
            return ecdf_density(points, x, window=self.window)
        h = self.point_bandwidths(points) if bandwidths is None else bandwidths
        return kde_pdf(points, x, h, self.kernel)

    def logpdf_mv(self, points: ArrayLike, x: ArrayLike, bandwidths: ArrayLike | None = None):
        """Log density fitted to one multivariate sample ``(n, d)`` at ``x`` ``(m, d)``."""
        h = self.point_bandwidths_mv(points) if bandwidths is None else bandwidths
        return kde_logpdf(points, x, h, self.kernel)

    def sample(
        self,
        points: ArrayLike,
        size: int,
        rng: np.random.Generator,
        bandwidths: ArrayLike | None = None,
    ) -> NDArray:
        """Draw from the density fitted to one sample (``(n,)`` or ``(n, d)``)."""
        pts = np.asarray(points, dtype=float)
        if self.method == "ecdf":
            raise ValueError("sampling is implemented for the KDE methods only")
        if bandwidths is None:
            bandwidths = (
                self.point_bandwidths(pts) if pts.ndim == 1 else self.point_bandwidths_mv(pts)
            )
        return kde_sample(pts, bandwidths, self.kernel, size, rng)

    def tail_cutoff(self, rtol: float = 1e-10) -> float:
        """Number of kernel scales beyond which each kernel holds less than ``rtol`` mass."""
        if self.kernel == "gaussian":
            return float(-ndtri(rtol / 2))
        return float(math.log(1.0 / rtol))

    def to_attrs(self) -> dict:
        """NetCDF-safe description (no ``None``, no booleans)."""
        out = asdict(self)
        out["window"] = -1 if self.window is None else int(self.window)
        return {f"density_{k}": v for k, v in out.items()}

    @classmethod
    def from_attrs(cls, attrs: dict) -> DensityModel:
        """Inverse of :meth:`to_attrs`."""
        kw = {k[len("density_") :]: v for k, v in attrs.items() if k.startswith("density_")}
        if "window" in kw:
            kw["window"] = None if int(kw["window"]) < 0 else int(kw["window"])
        for key in ("bandwidth", "adaptivity", "pilot_bandwidth"):
            if key in kw:
                kw[key] = float(kw[key])
        return cls(**{k: (str(v) if k in ("method", "kernel") else v) for k, v in kw.items()})


def _abramson(log_pilot: NDArray, h: float, alpha: float) -> NDArray:
    """Abramson's local bandwidths ``h (f~ / g)^-alpha``, ``g`` the pilot's geometric mean."""
    log_g = log_pilot.mean(axis=-1, keepdims=True)
    return h * np.exp(-alpha * (log_pilot - log_g))


def pilot_logpdf(points: ArrayLike, bandwidth: float, kernel: str) -> NDArray:
    """Log of a fixed-bandwidth KDE at its own sample points ``(..., n)``.

    Large samples are evaluated on a grid of ``_PILOT_GRID`` points and interpolated.
    """
    pts = np.asarray(points, dtype=float)
    n = pts.shape[-1]
    flat = pts.reshape(-1, n)
    out = np.empty(flat.shape)
    for b in range(flat.shape[0]):
        x = flat[b]
        lo, hi = x.min(), x.max()
        if n <= _PILOT_GRID or hi - lo > _PILOT_GRID * bandwidth / 4:
            out[b] = kde_pdf(x, x, bandwidth, kernel)
        else:
            grid = np.linspace(lo, hi, _PILOT_GRID)
            out[b] = np.interp(x, grid, kde_pdf(x, grid, bandwidth, kernel))
    return np.log(out).reshape(pts.shape)


def rule_of_thumb(points: ArrayLike, kernel: str = "gaussian") -> float:
    """Silverman's ``0.9 min(sd, IQR / 1.349) n^(-1/5)``, divided by the kernel's s.d."""
    x = np.asarray(points, dtype=float).ravel()
    sd = x.std(ddof=1) if x.size > 1 else 0.0
    q75, q25 = np.percentile(x, [75, 25])
    spread = min(sd, (q75 - q25) / 1.349) if q75 > q25 else sd
    if not spread > 0:
        spread = max(abs(x).max() * 1e-3, 1e-12) if x.size else 1.0
    return 0.9 * spread * x.size ** (-0.2) / math.sqrt(KERNELS[kernel].variance)


def _fold_ids(n: int, groups: NDArray | None, folds: int) -> NDArray:
    if groups is None:
        return np.arange(n) % folds
    _, codes = np.unique(np.asarray(groups), return_inverse=True)
    return codes % folds


def _heldout_loglik(x, fold, folds, kernel, log_h, alpha, log_pilots) -> float:
    """Mean held-out log-likelihood of the KDE of global bandwidth ``e^log_h`` (1-D or not)."""
    h = math.exp(log_h)
    total = 0.0
    for f in range(folds):
        test = fold == f
        train = ~test
        hj = h if alpha == 0 else _abramson(log_pilots[f], h, alpha)
        if x.ndim == 1:
            dens = kde_pdf(x[train], x[test], hj, kernel)
            total += float(np.sum(np.log(np.maximum(dens, 1e-300))))
        else:
            total += float(np.sum(kde_logpdf(x[train], x[test], hj, kernel)))
    return total / x.shape[0]


def select_density(
    sample: ArrayLike,
    *,
    method: str = "variable-kde",
    kernels: Sequence[str] = ("gaussian", "laplace"),
    adaptivity: float | Sequence[float] = (0.0, 0.5),
    bandwidth: float | None = None,
    groups: ArrayLike | None = None,
    folds: int = 5,
    window: int | None = None,
) -> tuple[DensityModel, pd.DataFrame]:
    """Choose kernel and bandwidth by held-out (K-fold) log-likelihood ([1], sec. 5, 7).

    For each kernel and adaptivity the global bandwidth maximises the mean held-out
    log-likelihood (bounded Brent search on a log scale, within a factor 30 of Silverman's
    rule); the pilot of the variable KDE is the best fixed-bandwidth KDE of its kernel.

    Parameters
    ----------
    sample : array_like, shape (n,) or (n, d)
        Query results with everybody (for vector queries, already whitened).
    method : {"variable-kde", "kde", "ecdf"}
    kernels : sequence of str
    adaptivity : float or sequence of float, default (0, 0.5)
        Candidate ``alpha`` of the variable KDE (0.5: Abramson's square-root law; 0: fixed
        bandwidth). Ignored for ``kde``.
    bandwidth : float, optional
        Fix the global bandwidth (only kernels and adaptivities are compared).
    groups : array_like, shape (n,), optional
        The database of each result: folds never split one.
    folds : int, default 5
        Number of folds (cycling through the groups in order).
    window : int, optional
        As in :class:`DensityModel`.

    Returns
    -------
    model : DensityModel
        The selected model.
    scores : pandas.DataFrame
        One row per candidate: kernel, adaptivity, bandwidth, held-out log-likelihood.

    Examples
    --------
    >>> sample = np.random.default_rng(0).normal(size=200)
    >>> model, scores = select_density(sample)
    >>> model.method, model.kernel, model.adaptivity
    ('variable-kde', 'gaussian', 0.0)
    >>> scores[["kernel", "adaptivity"]].to_records(index=False).tolist()
    [('gaussian', 0.0), ('laplace', 0.0), ('laplace', 0.5), ('gaussian', 0.5)]
    """
    x = np.asarray(sample, dtype=float)
    if method == "ecdf":
        if x.ndim != 1:
            raise ValueError("the ecdf estimator is one-dimensional; use a KDE method")
        model = DensityModel(method="ecdf", window=window)
        return model, pd.DataFrame([{"method": "ecdf", "window": window}])
    if method not in DENSITY_METHODS:
        raise ValueError(f"method must be one of {DENSITY_METHODS}, not {method!r}")
    mv = x.ndim == 2
    n = x.shape[0]
    if n < 4:
        raise ValueError("at least 4 query results are needed to estimate a density")
    alphas = [0.0] if method == "kde" else list(np.atleast_1d(adaptivity).astype(float))
    g = None if groups is None else np.asarray(groups)
    n_groups = n if g is None else np.unique(g).size
    k_folds = int(min(folds, n_groups))
    if k_folds < 2:
        raise ValueError("held-out selection needs at least two databases")
    fold = _fold_ids(n, g, k_folds)
    rows = []
    for kernel in kernels:
        if kernel not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}")
        ref = _reference_bandwidth(x, kernel)
        bracket = (math.log(ref / 30.0), math.log(ref * 30.0))

        def search(alpha, pilots, kernel=kernel, bracket=bracket):
            def objective(t):
                return -_heldout_loglik(x, fold, k_folds, kernel, t, alpha, pilots)

            if bandwidth is not None:
                return math.log(bandwidth), -objective(math.log(bandwidth))
            res = minimize_scalar(
                objective, bounds=bracket, method="bounded", options={"xatol": 0.03}
            )
            return float(res.x), -float(res.fun)

        # The fixed-bandwidth optimum is always computed: it is a candidate of its own when
        # alpha = 0 is allowed, and the pilot of the variable-bandwidth candidates.
        log_h0, score0 = search(0.0, [None] * k_folds)
        h0 = math.exp(log_h0)
        if 0.0 in alphas:
            rows.append(_row(method, kernel, 0.0, h0, h0, score0))
        if any(a > 0 for a in alphas):
            pilots = []
            for f in range(k_folds):
                train = x[fold != f]
                if mv:
                    pilots.append(kde_logpdf(train, train, h0, kernel))
                else:
                    pilots.append(pilot_logpdf(train, h0, kernel))
            for alpha in alphas:
                if alpha > 0:
                    log_h, score = search(alpha, pilots)
                    rows.append(_row(method, kernel, alpha, math.exp(log_h), h0, score))
    scores = pd.DataFrame(rows)
    best = scores.loc[scores["heldout_loglik"].idxmax()]
    model = DensityModel(
        method=method,
        kernel=str(best["kernel"]),
        bandwidth=float(best["bandwidth"]),
        adaptivity=float(best["adaptivity"]),
        pilot_bandwidth=float(best["pilot_bandwidth"]),
    )
    return model, scores.sort_values("heldout_loglik", ascending=False, ignore_index=True)


def _row(method, kernel, alpha, h, pilot, score) -> dict:
    return {
        "method": method,
        "kernel": kernel,
        "adaptivity": float(alpha),
        "bandwidth": float(h),
        "pilot_bandwidth": float(pilot),
        "heldout_loglik": float(score),
    }


def _reference_bandwidth(x: NDArray, kernel: str) -> float:
    if x.ndim == 1:
        return rule_of_thumb(x, kernel)
    n, d = x.shape
    # Scott's rule for whitened data, scaled to the kernel.
    return n ** (-1.0 / (d + 4)) / math.sqrt(KERNELS[kernel].variance)

"""Algorithm 2 of Burchard, Daoud & Dotterrer: ``delta_i(eps)``, ``delta(eps)``, ``delta*(eps)``.

The densities of the query with and without each individual, the hockey-stick divergence
between them (``delta_i``), its maximum ``delta`` (Theorem 1) and the total risk
``delta* = 1 - prod_i (1 - delta_i)`` (Definition 3), optionally conditional on bucketed
adversary knowledge (section 4).

References
----------
.. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020). Empirical Differential Privacy.
   arXiv:2011.05418, Theorem 1, Definitions 3 and 4, Algorithms 1 and 2, section 5.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr
from numpy.typing import ArrayLike, NDArray

from pymc_edp.base.hockey import (
    hockey_stick_delta,
    hockey_stick_from_prepared,
    hockey_stick_prepare,
    smallest_epsilon,
    total_risk,
)
from pymc_edp.base.query_kernels import (
    bottleneck_distance,
    hausdorff_distance,
    hockey_stick_delta_grid,
    trapezoid_mass,
)
from pymc_edp.base.validate import as_options
from pymc_edp.query.density import DensityModel, select_density
from pymc_edp.query.independence import independence_check
from pymc_edp.runtime.parallel import progress_bar

__all__ = ["DEFAULT_EPSILONS", "ProfileOptions", "epsilon_at", "privacy_profile"]

#: Default privacy levels: 0 and 100 log-spaced values from 0.001 to 10.
DEFAULT_EPSILONS = np.concatenate([[0.0], np.geomspace(1e-3, 10.0, 100)])

# Densities of the individuals are cached between passes when they fit in this many floats.
_CACHE_ELEMENTS = 1 << 24
_MAX_GRID = 1 << 14
_MIN_GRID = 1 << 10


@dataclass
class _Core:
    """Outputs of one unconditional profile computation."""

    delta_i: NDArray  # (N, E)
    model: DensityModel
    scores: pd.DataFrame
    eps_delta: NDArray  # (T,)
    eps_delta_star: NDArray  # (T,)
    grid: NDArray | None = None
    density: NDArray | None = None
    density_without: dict = field(default_factory=dict)  # individual index -> (G,)
    attrs: dict = field(default_factory=dict)
    density_fn: Callable[[NDArray], NDArray] | None = None  # p^_i on the grid, by index


def _flatten(samples: xr.Dataset) -> tuple[NDArray, NDArray, NDArray]:
    """Pool databases and draws: q (n_s[, d]), q_without (N, n_s[, d]), database (n_s,)."""
    value = samples["value"]
    without = samples["value_without"]
    vector = "component" in value.dims
    order = ("database", "draw", "component") if vector else ("database", "draw")
    v = value.transpose(*order).to_numpy()
    w = without.transpose("individual", *order).to_numpy()
    n_db, n_draw = v.shape[:2]
    groups = np.repeat(np.arange(n_db), n_draw)
    if vector:
        d = v.shape[-1]
        return v.reshape(n_db * n_draw, d), w.reshape(w.shape[0], n_db * n_draw, d), groups
    return v.reshape(-1), w.reshape(w.shape[0], -1), groups


def _grid_interp_eps(
    eps: NDArray,
    values: NDArray,
    target: float,
    total: Callable[[NDArray], NDArray] | None = None,
) -> float:
    """Smallest eps with ``values <= target`` (non-increasing on the grid ``eps``).

    Bisected to 1e-9 with ``total`` (the curve as a function of eps), else interpolated.
    """
    ok = values <= target
    if ok[0]:
        return float(eps[0])
    if not ok.any():
        return math.inf
    k = int(np.argmax(ok))
    if total is not None:
        return float(smallest_epsilon(total, target, eps[k - 1], eps[k], rtol=1e-9, max_iter=40))
    v0, v1 = values[k - 1], values[k]
    t = (v0 - target) / (v0 - v1) if v0 > v1 else 1.0
    return float(eps[k - 1] + t * (eps[k] - eps[k - 1]))


def _eps_at_targets(delta_i, eps, targets, total_for, max_individuals=None):
    """The smallest eps with ``delta <= target`` and with ``delta* <= target``, per target.

    Bracketed on the grid, then bisected with ``total_for(rel, how)``: ``eps -> delta``
    (``how="max"``) or ``delta*`` (``"star"``) of the individuals ``rel`` that can matter.
    Read off the grid when none can, or more than ``max_individuals``.
    """
    curves = {"max": delta_i.max(axis=0), "star": total_risk(delta_i)}
    out = {how: np.empty(len(targets)) for how in curves}
    for t, target in enumerate(targets):
        for how, values in curves.items():
            below = values <= target
            k = max(int(np.argmax(below)) - 1, 0) if below.any() else 0
            # delta: only individuals above the target at the bracket's lower end can
            # matter; delta*: every individual with some risk there.
            rel = np.flatnonzero(delta_i[:, k] > (target if how == "max" else 0.0))
            too_many = max_individuals is not None and rel.size > max_individuals
            total = None if rel.size == 0 or too_many else total_for(rel, how)
            out[how][t] = _grid_interp_eps(eps, values, target, total)
    return out["max"], out["star"]


def _core_1d(q, qw, eps, targets, model, scores, *, n_grid, progressbar) -> _Core:
    n_ind = qw.shape[0]
    changed = np.any(qw != q[None, :], axis=1)
    if model.method == "ecdf":
        span = q.max() - q.min()
        lo = min(q.min(), qw.min()) - 0.05 * span
        hi = max(q.max(), qw.max()) + 0.05 * span
        grid = np.linspace(lo, hi, n_grid or 4096)
        hq = hw = None
    else:
        hq = model.point_bandwidths(q)
        hw = model.point_bandwidths(qw)
        c = model.tail_cutoff(1e-10)
        lo = min((q - c * hq).min(), (qw - c * hw).min())
        hi = max((q + c * hq).max(), (qw + c * hw).max())
        h_min = min(hq.min(), hw.min())
        size = n_grid or int(np.clip(math.ceil((hi - lo) / (h_min / 4)) + 1, _MIN_GRID, _MAX_GRID))
        grid = np.linspace(lo, hi, size)
    p = model.pdf(q, grid, hq)
    raw_mass = float(trapezoid_mass(p, grid))

    def dens(idx: NDArray) -> NDArray:
        return model.pdf(qw[idx], grid, None if hw is None else hw[idx])

    delta_i = np.zeros((n_ind, eps.size))
    todo = np.flatnonzero(changed)
    cache_ok = todo.size * grid.size <= _CACHE_ELEMENTS
    cache = np.empty((todo.size, grid.size)) if cache_ok else None
    worst_mass = abs(raw_mass - 1.0)
    block = max(1, min(256, _CACHE_ELEMENTS // max(grid.size * q.size, 1) or 1))
    with progress_bar(todo.size, description="Densities and delta_i", enabled=progressbar) as bar:
        for start in range(0, todo.size, block):
            idx = todo[start : start + block]
            pw = dens(idx)
            worst_mass = max(worst_mass, float(np.max(np.abs(trapezoid_mass(pw, grid) - 1.0))))
            if cache is not None:
                cache[start : start + idx.size] = pw
            delta_i[idx] = hockey_stick_delta_grid(p, pw, grid, eps)
            bar.advance(idx.size)

    def subset_densities(idx: NDArray) -> NDArray:
        if cache is not None:
            return cache[np.searchsorted(todo, idx)]
        return dens(idx)

    def total_for(rel: NDArray, how: str) -> Callable[[NDArray], NDArray]:
        rel_dens = subset_densities(rel)

        def total(e: NDArray) -> NDArray:
            d = hockey_stick_delta_grid(p, rel_dens, grid, e)
            return d.max(axis=0) if how == "max" else total_risk(d)

        return total

    eps_delta, eps_star = _eps_at_targets(
        delta_i, eps, targets, total_for, _CACHE_ELEMENTS // grid.size
    )

    def density_fn(idx: NDArray) -> NDArray:
        out = np.empty((idx.size, grid.size))
        moved = changed[idx]
        out[~moved] = p
        if moved.any():
            out[moved] = subset_densities(idx[moved])
        return out

    core = _Core(
        delta_i, model, scores, eps_delta, eps_star, grid=grid, density=p, density_fn=density_fn
    )
    core.attrs = {
        "integration": "grid",
        "grid_size": int(grid.size),
        "grid_spacing": float(grid[1] - grid[0]),
        "max_mass_error": float(worst_mass),
    }
    return core


def _whiten(q: NDArray, qw: NDArray) -> tuple[NDArray, NDArray]:
    mu = q.mean(axis=0)
    cov = np.atleast_2d(np.cov(q, rowvar=False))
    scale = np.sqrt(np.diag(cov))
    scale = np.where(scale > 0, scale, 1.0)
    corr = cov / np.outer(scale, scale) + 1e-9 * np.eye(cov.shape[0])
    chol = np.linalg.cholesky(corr)

    def tr(x):
        z = (x - mu) / scale
        return np.linalg.solve(chol, z.reshape(-1, z.shape[-1]).T).T.reshape(z.shape)

    return tr(q), tr(qw)


def _core_mc(q, qw, eps, targets, model, scores, *, draws, rng, progressbar) -> _Core:
    n_ind = qw.shape[0]
    changed = np.any(qw != q[None], axis=(1, 2))
    hq = model.point_bandwidths_mv(q)
    xp = model.sample(q, draws, rng, hq)
    logp_p = model.logpdf_mv(q, xp, hq)
    delta_i = np.zeros((n_ind, eps.size))
    ratios: dict[int, tuple[NDArray, NDArray]] = {}
    todo = np.flatnonzero(changed)
    with progress_bar(todo.size, description="Monte Carlo delta_i", enabled=progressbar) as bar:
        for i in todo:
            hi = model.point_bandwidths_mv(qw[i])
            xi = model.sample(qw[i], draws, rng, hi)
            fwd = model.logpdf_mv(qw[i], xp, hi) - logp_p  # log p_i - log p at p-draws
            bwd = model.logpdf_mv(q, xi, hq) - model.logpdf_mv(qw[i], xi, hi)
            ratios[int(i)] = (fwd, bwd)
            delta_i[i] = _mc_delta(fwd, bwd, eps)
            bar.advance()

    def total_for(rel, how):
        # Sort the draws of the relevant individuals once; each bisection step then costs two
        # binary searches per individual and direction.
        fwd, bwd = (
            hockey_stick_prepare(
                np.stack([ratios[int(i)][j] for i in rel]), normalize=False, direction="forward"
            )
            for j in (0, 1)
        )

        def total(e: NDArray) -> NDArray:
            d = np.maximum(
                hockey_stick_from_prepared(fwd, e, direction="forward"),
                hockey_stick_from_prepared(bwd, e, direction="forward"),
            )[:, 0]
            return d.max(axis=0) if how == "max" else total_risk(d)

        return total

    eps_delta, eps_star = _eps_at_targets(delta_i, eps, targets, total_for)
    core = _Core(delta_i, model, scores, eps_delta, eps_star)
    core.attrs = {"integration": "monte-carlo", "mc_draws": int(draws)}
    return core


def _mc_delta(fwd: NDArray, bwd: NDArray, eps: NDArray) -> NDArray:
    """``max(int (p - e^eps p_i)_+, int (p_i - e^eps p)_+)`` from draws of each density.

    ``fwd = log p_i - log p`` at draws of ``p``, ``bwd = log p - log p_i`` at draws of
    ``p_i``; the log ratios are exact, so the weights are not self-normalised.
    """
    a = hockey_stick_delta(fwd, eps, normalize=False, direction="forward")
    b = hockey_stick_delta(bwd, eps, normalize=False, direction="forward")
    return np.maximum(a, b)


def _run_core(q, qw, groups, *, eps, targets, density, opts, rng, progressbar) -> _Core:
    """The unconditional profile: a grid for a scalar query, Monte Carlo for a vector one."""
    if q.ndim == 2:
        q, qw = _whiten(q, qw)
    if isinstance(density, DensityModel):
        model = density
        scores = pd.DataFrame([{"method": density.method, "kernel": density.kernel}])
    else:
        model, scores = select_density(
            q,
            method=density,
            kernels=tuple(opts.kernels),
            adaptivity=opts.adaptivity,
            bandwidth=opts.bandwidth,
            groups=groups,
            folds=opts.folds,
        )
    args = (q, qw, eps, targets, model, scores)
    if q.ndim == 2:
        return _core_mc(*args, draws=opts.mc_draws, rng=rng, progressbar=progressbar)
    return _core_1d(*args, n_grid=opts.n_grid, progressbar=progressbar)


def _buckets(side: NDArray, buckets) -> tuple[NDArray, list[str]]:
    """Assign every database to a bucket of the side information."""
    side = np.asarray(side)
    if side.dtype.kind not in "iuf":
        labels = sorted({str(s) for s in side})
        codes = np.array([labels.index(str(s)) for s in side])
        return codes, labels
    if isinstance(buckets, int | np.integer):
        edges = np.unique(np.quantile(side, np.linspace(0, 1, int(buckets) + 1)))
    else:
        edges = np.unique(np.asarray(buckets, dtype=float))
    inner = edges[1:-1]
    codes = np.searchsorted(inner, side, side="right")
    labels = []
    for b in range(inner.size + 1):
        left = "-inf" if b == 0 else f"{inner[b - 1]:.4g}"
        right = "inf" if b == inner.size else f"{inner[b]:.4g}"
        labels.append(f"[{left}, {right})")
    return codes, labels


@dataclass(frozen=True)
class ProfileOptions:
    """Density selection and numerics of :func:`privacy_profile`.

    Parameters
    ----------
    kernels, adaptivity, bandwidth, folds
        Candidates and folds of the held-out density selection, as in
        :func:`~pymc_edp.query.select_density`.
    top : int, default 5
        Number of most exposed individuals whose ``p^_i`` is stored (for plots).
    exposure_tol : float, default 1e-6
        ``n_exposed`` counts individuals with ``delta_i > exposure_tol``.
    n_grid : int, optional
        Integration grid size (1-D). By default a quarter of the smallest bandwidth apart,
        wide enough that each kernel has < 1e-10 mass outside, 1024 to 16384 points.
    mc_draws : int, default 4096
        Vector queries: Monte Carlo draws per density for the hockey-stick integrals.

    Examples
    --------
    >>> ProfileOptions(kernels=("gaussian",), top=3).folds
    5
    >>> ProfileOptions.coerce({"n_grid": 2048}).n_grid
    2048
    """

    kernels: tuple = ("gaussian", "laplace")
    adaptivity: float | tuple = (0.0, 0.5)
    bandwidth: float | None = None
    folds: int = 5
    top: int = 5
    exposure_tol: float = 1e-6
    n_grid: int | None = None
    mc_draws: int = 4096

    @classmethod
    def coerce(cls, value: ProfileOptions | Mapping | None) -> ProfileOptions:
        """``value`` as options: None gives the defaults, a dict its fields."""
        return as_options(cls, value, "options")


def privacy_profile(
    samples: xr.Dataset,
    *,
    epsilons: ArrayLike | None = None,
    density: str | DensityModel = "variable-kde",
    targets: Sequence[float] = (1e-2, 1e-3),
    side_info_buckets: int | Sequence[float] | None = None,
    options: ProfileOptions | Mapping | None = None,
    random_seed: int | None = None,
    check_independence: bool = True,
    keep_samples: bool = True,
    progressbar: bool = True,
) -> xr.Dataset:
    """Empirical ``(eps, delta)`` profile of a query from its with/without samples.

    The densities ``p^`` (query with everybody) and ``p^_i`` (without ``i``) share one
    density model, selected by held-out log-likelihood on the sample with everybody ([1],
    sec. 5), and ``delta_i(eps) = max(int (p^ - e^eps p^_i)_+, int (p^_i - e^eps p^)_+)``
    is integrated numerically (Algorithm 2): on a grid for a scalar query, by Monte Carlo
    for a vector one.

    Parameters
    ----------
    samples : xarray.Dataset
        Output of :func:`~pymc_edp.query.query_samples` (``value``, ``value_without``).
    epsilons : array_like, optional
        Increasing privacy levels; :data:`DEFAULT_EPSILONS` by default.
    density : {"variable-kde", "kde", "ecdf"} or DensityModel
        Density estimator (a :class:`DensityModel` is used as given).
    targets : sequence of float, default (0.01, 0.001)
        ``delta`` levels whose smallest ``eps`` with ``delta(eps) <= target`` (and with
        ``delta*(eps) <= target``) is bisected to ``1e-9`` relative precision.
    side_info_buckets : int or sequence of float, optional
        Condition on ``samples["side_info"]`` ([1], Definition 4): an int gives that many
        quantile buckets, a sequence bucket edges; non-numeric values are bucketed by value.
        Each bucket has its own density selection; ``delta_i`` is the maximum over buckets,
        ``delta_star`` the worst bucket's total risk, per-bucket curves are added, and the
        eps at the targets are read off the grid.
    options : ProfileOptions or dict, optional
        Density selection and numerics; see :class:`ProfileOptions`.
    random_seed : int, optional
        Seeds the Monte Carlo draws of a vector query.
    check_independence : bool, default True
        Store :func:`~pymc_edp.query.independence_check` of the per-database values (mean
        over draws; first component of a vector query), which warns when it rejects.
    keep_samples : bool, default True
        Copy ``value``, ``value_without`` and ``present`` into the result (for
        :func:`~pymc_edp.query.noise_kernel` and re-analysis).
    progressbar : bool, default True

    Returns
    -------
    xarray.Dataset
        ``delta``, ``delta_star``, ``n_exposed``, ``most_exposed`` over ``epsilon``;
        ``delta_i`` over (``individual``, ``epsilon``); ``epsilon_delta`` and
        ``epsilon_delta_star`` over ``target``; ``epsilon_i`` (individual, target, from the
        grid); ``hausdorff`` and ``bottleneck`` distances per individual (1-D);
        ``top_individual`` over ``rank``; ``density`` and ``density_without`` over ``grid``
        (1-D); density-selection scores over ``candidate``; independence tests over
        ``test``; the density model in ``attrs``.

    Examples
    --------
    >>> res = privacy_profile(samples, progressbar=False)
    >>> res.attrs["density_method"], res.attrs["density_kernel"]
    ('variable-kde', 'gaussian')
    >>> res["epsilon_delta"].to_series().round(3).to_dict()
    {0.01: 3.39, 0.001: inf}
    >>> res["top_individual"].to_numpy().tolist()
    [2, 3, 0, 1, 4]
    """
    eps = np.asarray(DEFAULT_EPSILONS if epsilons is None else epsilons, dtype=float)
    if eps.ndim != 1 or np.any(np.diff(eps) <= 0) or eps[0] < 0:
        raise ValueError("epsilons must be increasing and non-negative")
    targets = [float(t) for t in np.atleast_1d(targets)]
    opts = ProfileOptions.coerce(options)
    top, exposure_tol = opts.top, opts.exposure_tol
    q, qw, groups = _flatten(samples)
    individuals = samples["individual"].to_numpy()
    kwargs = dict(
        eps=eps,
        targets=targets,
        density=density,
        opts=opts,
        rng=np.random.default_rng(random_seed),
        progressbar=progressbar,
    )

    if side_info_buckets is None:
        core = _run_core(q, qw, groups, **kwargs)
        keep = _rank(core.delta_i, eps, targets)[:top]
        if core.density_fn is not None and keep.size:
            core.density_without = dict(zip(keep.tolist(), core.density_fn(keep), strict=True))
        ds = _assemble(core, eps, targets, individuals, keep, exposure_tol)
    else:
        ds = _bucketed_profile(
            samples, side_info_buckets, q, qw, groups, individuals, top, exposure_tol, kwargs
        )
    if q.ndim == 1:
        _add_set_distances(ds, q, qw)
    if check_independence:
        ds = _add_independence(ds, samples)
    if keep_samples:
        for name in ("value", "value_without", "present", "side_info"):
            if name in samples:
                ds[name] = samples[name]
    ds.attrs.update({k: v for k, v in samples.attrs.items() if k not in ds.attrs})
    return ds


def _bucketed_profile(
    samples, side_info_buckets, q, qw, groups, individuals, top, exposure_tol, kwargs
) -> xr.Dataset:
    """The profile conditioned on the side information's buckets (``kwargs`` of _run_core)."""
    eps, targets = kwargs["eps"], kwargs["targets"]
    if "side_info" not in samples:
        raise ValueError("side_info_buckets needs samples computed with side_info=")
    codes, labels = _buckets(samples["side_info"].to_numpy(), side_info_buckets)
    code_s = np.repeat(codes, samples.sizes["draw"])
    per_bucket = []
    for b in range(len(labels)):
        sel = code_s == b
        if np.unique(groups[sel]).size < 4:
            raise ValueError(
                f"side-information bucket {labels[b]} has fewer than 4 databases; use "
                "fewer buckets"
            )
        per_bucket.append(_run_core(q[sel], qw[:, sel], groups[sel], **kwargs))
    stack = np.stack([c.delta_i for c in per_bucket])  # (B, N, E)
    delta_i = stack.max(axis=0)
    keep = _rank(delta_i, eps, targets)[:top]
    by_bucket_delta = stack.max(axis=1)
    by_bucket_star = np.stack([total_risk(c.delta_i) for c in per_bucket])
    star = by_bucket_star.max(axis=0)
    core = per_bucket[int(np.argmax(by_bucket_delta.sum(axis=1)))]
    core = _Core(
        delta_i,
        core.model,
        core.scores,
        np.array([_grid_interp_eps(eps, delta_i.max(0), t) for t in targets], dtype=float),
        np.array([_grid_interp_eps(eps, star, t) for t in targets], dtype=float),
        attrs={"integration": per_bucket[0].attrs["integration"]},
    )
    ds = _assemble(core, eps, targets, individuals, keep, exposure_tol, delta_star=star)
    ds["delta_by_bucket"] = (("bucket", "epsilon"), by_bucket_delta)
    ds["delta_star_by_bucket"] = (("bucket", "epsilon"), by_bucket_star)
    ds["delta_i_by_bucket"] = (("bucket", "individual", "epsilon"), stack)
    ds["n_databases"] = ("bucket", np.bincount(codes, minlength=len(labels)))
    ds = ds.assign_coords(bucket=np.asarray(labels, dtype=object))
    ds.attrs["side_info_conditioned"] = 1
    ds.attrs["epsilon_targets_refined"] = 0
    return ds


def _add_set_distances(ds: xr.Dataset, q: NDArray, qw: NDArray) -> None:
    """Add ``hausdorff`` and ``bottleneck`` distances of each ``qw[i]`` to ``q`` to ``ds``."""
    for label, distance in (
        ("Hausdorff", hausdorff_distance),
        ("bottleneck", bottleneck_distance),
    ):
        name = label.lower()
        ds[name] = ("individual", [distance(q, w) if np.any(w != q) else 0.0 for w in qw])
        ds[name].attrs["description"] = f"{label} distance, with/without samples"


def _add_independence(ds: xr.Dataset, samples: xr.Dataset) -> xr.Dataset:
    """``ds`` with the independence tests of the per-database query values, over ``test``."""
    values = samples["value"].mean("draw")
    if "component" in values.dims:
        values = values.isel(component=0)
    ind = independence_check(values.to_numpy())
    ds["independence_statistic"] = ("test", ind["statistic"].to_numpy())
    ds["independence_pvalue"] = ("test", ind["pvalue"].to_numpy())
    return ds.assign_coords(test=np.asarray(ind.index, dtype=object))


def _rank(delta_i: NDArray, eps: NDArray, targets: Sequence[float]) -> NDArray:
    """Individuals from most to least exposed: by eps at the first target, then area."""
    t = targets[0] if targets else 0.0
    eps_i = np.array([_grid_interp_eps(eps, d, t) for d in delta_i])
    area = np.trapezoid(delta_i, eps, axis=1) if eps.size > 1 else delta_i[:, 0]
    return np.lexsort((-area, -eps_i))


def _assemble(core, eps, targets, individuals, keep, exposure_tol, delta_star=None):
    delta_i = core.delta_i
    delta = delta_i.max(axis=0)
    star = total_risk(delta_i) if delta_star is None else delta_star
    most = individuals[np.argmax(delta_i, axis=0)]
    eps_i = np.array([[_grid_interp_eps(eps, d, t) for t in targets] for d in delta_i])
    ds = xr.Dataset(
        {
            "delta": ("epsilon", delta),
            "delta_star": ("epsilon", star),
            "delta_i": (("individual", "epsilon"), delta_i),
            "n_exposed": ("epsilon", (delta_i > exposure_tol).sum(axis=0)),
            "most_exposed": ("epsilon", most),
            "epsilon_delta": ("target", core.eps_delta),
            "epsilon_delta_star": ("target", core.eps_delta_star),
            "epsilon_i": (("individual", "target"), eps_i.reshape(len(individuals), -1)),
            "top_individual": ("rank", individuals[keep]),
        },
        coords={
            "epsilon": eps,
            "individual": individuals,
            "target": np.asarray(targets, dtype=float),
            "rank": np.arange(len(keep)),
        },
    )
    ds["delta"].attrs["description"] = "max_i delta_i(eps) (Theorem 1)"
    ds["delta_star"].attrs["description"] = "total risk 1 - prod_i (1 - delta_i) (Definition 3)"
    ds["n_exposed"].attrs["exposure_tol"] = float(exposure_tol)
    if core.grid is not None and core.density is not None:
        ds = ds.assign_coords(grid=core.grid)
        ds["density"] = ("grid", core.density)
        ds["density_without"] = (
            ("rank", "grid"),
            np.stack([core.density_without[int(i)] for i in keep])
            if len(keep)
            else np.empty((0, core.grid.size)),
        )
    scores = core.scores
    ds = ds.assign_coords(candidate=np.arange(len(scores)))
    for col in scores.columns:
        values = scores[col].to_numpy()
        if values.dtype.kind not in "iufb":
            values = np.asarray([str(v) for v in values], dtype=object)
        ds[f"selection_{col}"] = ("candidate", values)
    ds.attrs.update(core.model.to_attrs())
    ds.attrs.update(core.attrs)
    ds.attrs["epsilon_targets_refined"] = 1
    ds.attrs["exposure_tol"] = float(exposure_tol)
    return ds


def epsilon_at(result: xr.Dataset, target: float, *, kind: str = "delta") -> float:
    """Smallest ``eps`` with ``delta(eps) <= target`` (``kind="delta_star"``: ``delta*``).

    ``result`` comes from :func:`privacy_profile`. Bisection-refined for one of its
    targets, else interpolated on its grid; ``inf`` if the curve never reaches the target.

    Examples
    --------
    >>> res = privacy_profile(samples, progressbar=False)
    >>> round(epsilon_at(res, 0.01), 3)  # a target of the result: bisection-refined
    3.39
    >>> round(epsilon_at(res, 0.05), 3)  # any other level: read off the epsilon grid
    1.551
    """
    if kind not in {"delta", "delta_star"}:
        raise ValueError("kind must be 'delta' or 'delta_star'")
    name = "epsilon_delta" if kind == "delta" else "epsilon_delta_star"
    targets = result["target"].to_numpy()
    hit = np.flatnonzero(np.isclose(targets, target, rtol=1e-12, atol=0))
    if hit.size:
        return float(result[name].to_numpy()[hit[0]])
    return _grid_interp_eps(result["epsilon"].to_numpy(), result[kind].to_numpy(), target)

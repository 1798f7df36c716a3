"""Algorithm 2 of Burchard, Daoud & Dotterrer: ``delta_i(eps)``, ``delta(eps)``, ``delta*(eps)``.

From the query results with and without each individual (:func:`~pymc_edp.query.
query_samples`), estimate the two densities, integrate the hockey-stick divergence between
them, and collect the per-individual failure probabilities ``delta_i``, their maximum
``delta`` (Theorem 1) and the total risk ``delta* = 1 - prod_i (1 - delta_i)``
(Definition 3), optionally conditional on bucketed adversary knowledge (section 4).

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
from pymc_edp.base.parallel import progress_bar
from pymc_edp.base.query_kernels import (
    bottleneck_distance,
    hausdorff_distance,
    hockey_stick_delta_grid,
    trapezoid_mass,
)
from pymc_edp.base.validate import as_options
from pymc_edp.query.density import DensityModel, select_density
from pymc_edp.query.independence import independence_check

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
    """Pool databases and draws: q (n_s[, d]), q_without (N, n_s[, d]), groups (n_s,)."""
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


def _smallest_eps(
    total: Callable[[NDArray], NDArray], target: float, eps: NDArray, values: NDArray
) -> float:
    """Smallest eps with ``total(eps) <= target`` for a non-increasing ``total``.

    Bracketed on the grid ``eps`` (where ``values = total(eps)``), then bisected to ``1e-9``
    relative precision by :func:`~pymc_edp.base.hockey.smallest_epsilon`.
    """
    ok = values <= target
    if ok[0]:
        return float(eps[0])
    if not ok.any():
        return math.inf
    k = int(np.argmax(ok))
    return float(smallest_epsilon(total, target, eps[k - 1], eps[k], rtol=1e-9, max_iter=40))


def _grid_interp_eps(eps: NDArray, values: NDArray, target: float) -> float:
    ok = values <= target
    if ok[0]:
        return float(eps[0])
    if not ok.any():
        return math.inf
    k = int(np.argmax(ok))
    v0, v1 = values[k - 1], values[k]
    t = (v0 - target) / (v0 - v1) if v0 > v1 else 1.0
    return float(eps[k - 1] + t * (eps[k] - eps[k - 1]))


def _select(q, groups, density, kernels, adaptivity, bandwidth, folds):
    if isinstance(density, DensityModel):
        return density, pd.DataFrame([{"method": density.method, "kernel": density.kernel}])
    return select_density(
        q,
        method=density,
        kernels=kernels,
        adaptivity=adaptivity,
        bandwidth=bandwidth,
        groups=groups,
        folds=folds,
    )


def _core_1d(q, qw, groups, eps, targets, model, scores, *, n_grid, progressbar) -> _Core:
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

    eps_delta, eps_star = _targets(delta_i, eps, targets, p, grid, subset_densities)

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


def _targets(delta_i, eps, targets, p, grid, subset_densities):
    delta = delta_i.max(axis=0)
    star = total_risk(delta_i)
    eps_delta = np.empty(len(targets))
    eps_star = np.empty(len(targets))
    for t, target in enumerate(targets):
        # delta: only individuals above the target at the bracket's lower end can matter.
        k = int(np.argmax(delta <= target)) if (delta <= target).any() else 0
        lo_col = max(k - 1, 0)
        rel = np.flatnonzero(delta_i[:, lo_col] > target)
        eps_delta[t] = _refine(rel, delta_i, eps, delta, target, p, grid, subset_densities, "max")
        k = int(np.argmax(star <= target)) if (star <= target).any() else 0
        rel = np.flatnonzero(delta_i[:, max(k - 1, 0)] > 0)
        eps_star[t] = _refine(rel, delta_i, eps, star, target, p, grid, subset_densities, "star")
    return eps_delta, eps_star


def _refine(rel, delta_i, eps, values, target, p, grid, subset_densities, how) -> float:
    if rel.size == 0 or rel.size * (grid.size if grid is not None else 1) > _CACHE_ELEMENTS:
        return _grid_interp_eps(eps, values, target)
    dens = subset_densities(rel)

    def total(e: NDArray) -> NDArray:
        d = hockey_stick_delta_grid(p, dens, grid, e)
        return d.max(axis=0) if how == "max" else total_risk(d)

    return _smallest_eps(total, target, eps, values)


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


def _core_mc(q, qw, groups, eps, targets, model, scores, *, draws, rng, progressbar) -> _Core:
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

    def total_factory(rel, how):
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

    delta = delta_i.max(axis=0)
    star = total_risk(delta_i)
    eps_delta = np.empty(len(targets))
    eps_star = np.empty(len(targets))
    for t, target in enumerate(targets):
        k = max(int(np.argmax(delta <= target)) - 1, 0) if (delta <= target).any() else 0
        rel = np.flatnonzero(delta_i[:, k] > target)
        eps_delta[t] = (
            _smallest_eps(total_factory(rel, "max"), target, eps, delta)
            if rel.size
            else _grid_interp_eps(eps, delta, target)
        )
        k = max(int(np.argmax(star <= target)) - 1, 0) if (star <= target).any() else 0
        rel = np.flatnonzero(delta_i[:, k] > 0)
        eps_star[t] = (
            _smallest_eps(total_factory(rel, "star"), target, eps, star)
            if rel.size
            else _grid_interp_eps(eps, star, target)
        )
    core = _Core(delta_i, model, scores, eps_delta, eps_star)
    core.attrs = {"integration": "monte-carlo", "mc_draws": int(draws)}
    return core


def _mc_delta(fwd: NDArray, bwd: NDArray, eps: NDArray) -> NDArray:
    """``max(int (p - e^eps p_i)_+, int (p_i - e^eps p)_+)`` from draws of each density.

    ``fwd = log p_i - log p`` at draws of ``p``, ``bwd = log p - log p_i`` at draws of ``p_i``:
    each integral is the forward hockey stick of its own draws (exact log ratios, so the
    weights are not self-normalised).
    """
    a = hockey_stick_delta(fwd, eps, normalize=False, direction="forward")
    b = hockey_stick_delta(bwd, eps, normalize=False, direction="forward")
    return np.maximum(a, b)


def _run_core(
    q,
    qw,
    groups,
    *,
    eps,
    targets,
    density,
    kernels,
    adaptivity,
    bandwidth,
    folds,
    n_grid,
    mc_draws,
    rng,
    progressbar,
) -> _Core:
    if q.ndim == 2:
        zq, zw = _whiten(q, qw)
        model, scores = _select(zq, groups, density, kernels, adaptivity, bandwidth, folds)
        return _core_mc(
            zq,
            zw,
            groups,
            eps,
            targets,
            model,
            scores,
            draws=mc_draws,
            rng=rng,
            progressbar=progressbar,
        )
    model, scores = _select(q, groups, density, kernels, adaptivity, bandwidth, folds)
    return _core_1d(
        q, qw, groups, eps, targets, model, scores, n_grid=n_grid, progressbar=progressbar
    )


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
    kernels : sequence of str, default ("gaussian", "laplace")
        Candidate kernels for the held-out selection.
    adaptivity : float or sequence of float, default (0, 0.5)
        Candidate Abramson exponents for ``"variable-kde"`` (0 = fixed bandwidth).
    bandwidth : float, optional
        Fix the global bandwidth (skip its selection).
    folds : int, default 5
        Folds of the held-out selection (databases are never split).
    top : int, default 5
        Number of most exposed individuals whose ``p^_i`` is stored (for plots).
    exposure_tol : float, default 1e-6
        ``n_exposed`` counts individuals with ``delta_i > exposure_tol``.
    n_grid : int, optional
        Integration grid size (1-D). By default the spacing is a quarter of the smallest
        kernel bandwidth and the grid extends until each kernel has < 1e-10 mass outside,
        within [1024, 16384] points.
    mc_draws : int, default 4096
        Vector queries: Monte Carlo draws per density for the hockey-stick integrals
        (:func:`pymc_edp.base.hockey.hockey_stick_delta` of the log density ratios).

    Examples
    --------
    >>> from pymc_edp.query import ProfileOptions
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

    For every individual ``i`` the densities ``p^`` (query with everybody) and ``p^_i``
    (without ``i``) are estimated with one density model, selected by held-out
    log-likelihood on the sample with everybody ([1], sec. 5), and
    ``delta_i(eps) = max(int (p^ - e^eps p^_i)_+, int (p^_i - e^eps p^)_+)`` is integrated
    numerically (Algorithm 2). Then ``delta = max_i delta_i`` (Theorem 1) and the total
    risk ``delta* = 1 - prod_i (1 - delta_i)`` (Definition 3).

    Parameters
    ----------
    samples : xarray.Dataset
        Output of :func:`~pymc_edp.query.query_samples` (``value``, ``value_without``).
    epsilons : array_like, optional
        Privacy levels; :data:`DEFAULT_EPSILONS` (0 and 0.001..10, log-spaced) by default.
    density : {"variable-kde", "kde", "ecdf"} or DensityModel
        Density estimator (a :class:`DensityModel` is used as given, without selection).
    targets : sequence of float, default (0.01, 0.001)
        ``delta`` levels at which the smallest ``eps`` with ``delta(eps) <= target`` (and the
        same for ``delta*``) is found by bisection to ``1e-9`` relative precision.
    side_info_buckets : int or sequence of float, optional
        Condition on the adversary knowledge stored as ``side_info`` in ``samples``
        ([1], Definition 4): an int gives that many quantile buckets, a sequence gives
        bucket edges; non-numeric side information is bucketed by value. Each bucket gets its
        own density selection. ``delta_i`` is then the maximum over buckets (the definition
        asks for every ``Z``), ``delta_star`` the worst bucket's total risk, and per-bucket
        curves are returned too (the eps at the targets are then read off the eps grid).
        Requires ``side_info`` in ``samples``.
    options : ProfileOptions or dict, optional
        Density selection (``kernels``, ``adaptivity``, ``bandwidth``, ``folds``), the
        numerics (``n_grid``, ``mc_draws``), ``top`` and ``exposure_tol``; see
        :class:`ProfileOptions`.
    random_seed : int, optional
        Seeds the Monte Carlo draws (vector queries only).
    check_independence : bool, default True
        Run :func:`~pymc_edp.query.independence_check` on the per-database query values
        (averaged over draws; first component of a vector query) and store the result (it
        warns when independence is rejected).
    keep_samples : bool, default True
        Copy ``value``, ``value_without`` and ``present`` into the result (needed later by
        :func:`~pymc_edp.query.noise_kernel` and for re-analysis).
    progressbar : bool, default True

    Returns
    -------
    xarray.Dataset
        ``delta``, ``delta_star``, ``n_exposed``, ``most_exposed`` over ``epsilon``;
        ``delta_i`` over (``individual``, ``epsilon``); ``epsilon_delta`` and
        ``epsilon_delta_star`` over ``target``; ``epsilon_i`` (individual, target, from the
        grid); ``hausdorff`` and ``bottleneck`` distances per individual (1-D);
        ``top_individual`` over ``rank``; ``density``
        and ``density_without`` over ``grid`` (1-D queries); density-selection scores over
        ``candidate``; independence tests over ``test``; the density model in ``attrs``.

    Examples
    --------
    >>> from pymc_edp.query import query_samples, sum_query
    >>> rng = np.random.default_rng(0)
    >>> dbs = [pd.DataFrame({"id": range(5), "x": rng.gamma(2.0, size=5)}) for _ in range(40)]
    >>> samples = query_samples(dbs, sum_query("x"), id_col="id", progressbar=False)
    >>> from pymc_edp.query import privacy_profile
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
    rng = np.random.default_rng(random_seed)
    q, qw, groups = _flatten(samples)
    individuals = samples["individual"].to_numpy()
    kwargs = dict(
        eps=eps,
        targets=targets,
        density=density,
        kernels=tuple(opts.kernels),
        adaptivity=opts.adaptivity,
        bandwidth=opts.bandwidth,
        folds=opts.folds,
        n_grid=opts.n_grid,
        mc_draws=opts.mc_draws,
        rng=rng,
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
    samples: xr.Dataset,
    side_info_buckets: int | Sequence[float],
    q: NDArray,
    qw: NDArray,
    groups: NDArray,
    individuals: NDArray,
    top: int,
    exposure_tol: float,
    kwargs: dict,
) -> xr.Dataset:
    """The profile conditioned on the buckets of the side information ([1], Definition 4).

    ``delta_i`` is the maximum over buckets, ``delta_star`` the worst bucket's total risk;
    the per-bucket curves are added (``*_by_bucket``, over ``bucket``). ``kwargs`` are those
    of :func:`_run_core`.
    """
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
    core = per_bucket[int(np.argmax(by_bucket_delta.sum(axis=1)))]
    ds = _assemble(
        _Core(
            delta_i,
            core.model,
            core.scores,
            np.array([_grid_interp_eps(eps, delta_i.max(0), t) for t in targets], dtype=float),
            np.array(
                [_grid_interp_eps(eps, by_bucket_star.max(0), t) for t in targets],
                dtype=float,
            ),
            attrs={"integration": per_bucket[0].attrs["integration"]},
        ),
        eps,
        targets,
        individuals,
        keep,
        exposure_tol,
        delta_star=by_bucket_star.max(axis=0),
    )
    ds["delta_by_bucket"] = (("bucket", "epsilon"), by_bucket_delta)
    ds["delta_star_by_bucket"] = (("bucket", "epsilon"), by_bucket_star)
    ds["delta_i_by_bucket"] = (("bucket", "individual", "epsilon"), stack)
    ds["n_databases"] = ("bucket", np.bincount(codes, minlength=len(labels)))
    ds = ds.assign_coords(bucket=np.asarray(labels, dtype=object))
    ds.attrs["side_info_conditioned"] = 1
    ds.attrs["epsilon_targets_refined"] = 0
    return ds


def _add_set_distances(ds: xr.Dataset, q: NDArray, qw: NDArray) -> None:
    """Set distances of each individual's sample to the full one (noise calibration, sec. 6).

    Adds ``hausdorff`` and ``bottleneck`` over ``individual`` to ``ds``, in place.
    """
    n_ind = qw.shape[0]
    moved = [bool(np.any(qw[i] != q)) for i in range(n_ind)]
    d_h = [hausdorff_distance(q, qw[i]) if moved[i] else 0.0 for i in range(n_ind)]
    d_b = [bottleneck_distance(q, qw[i]) if moved[i] else 0.0 for i in range(n_ind)]
    ds["hausdorff"] = ("individual", np.array(d_h))
    ds["hausdorff"].attrs["description"] = "Hausdorff distance, with/without samples"
    ds["bottleneck"] = ("individual", np.array(d_b))
    ds["bottleneck"].attrs["description"] = "bottleneck distance, with/without samples"


def _add_independence(ds: xr.Dataset, samples: xr.Dataset) -> xr.Dataset:
    """``ds`` with the independence tests of the per-database query values, over ``test``.

    The values are averaged over draws; a vector query is tested on its first component.
    """
    values = samples["value"].mean("draw")
    if "component" in values.dims:
        values = values.isel(component=0)
    ind = independence_check(values.to_numpy())
    ds["independence_statistic"] = ("test", ind["statistic"].to_numpy())
    ds["independence_pvalue"] = ("test", ind["pvalue"].to_numpy())
    return ds.assign_coords(test=np.asarray(ind.index, dtype=object))


def _rank(delta_i: NDArray, eps: NDArray, targets: Sequence[float]) -> NDArray:
    """Individuals ordered from most to least exposed.

    By the grid-interpolated eps at which ``delta_i`` falls below the first target, ties
    broken by the area under ``delta_i(eps)``.
    """
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
    """Smallest ``eps`` with ``delta(eps) <= target`` (or ``delta*``), from a result's curve.

    Uses the bisection-refined value when ``target`` is one of the result's targets and
    linear interpolation on the ``epsilon`` grid otherwise.

    Parameters
    ----------
    result : xarray.Dataset
        Output of :func:`privacy_profile` or :func:`~pymc_edp.query.query_edp`.
    target : float
    kind : {"delta", "delta_star"}

    Returns
    -------
    float
        ``inf`` if the curve never reaches the target on the grid.

    Examples
    --------
    >>> from pymc_edp.query import query_samples, sum_query
    >>> rng = np.random.default_rng(0)
    >>> dbs = [pd.DataFrame({"id": range(5), "x": rng.gamma(2.0, size=5)}) for _ in range(40)]
    >>> samples = query_samples(dbs, sum_query("x"), id_col="id", progressbar=False)
    >>> from pymc_edp.query import epsilon_at, privacy_profile
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

"""Plots of query-level empirical DP, after Figures 1 and 3-5 of Burchard et al. (2020).

As ArviZ's ``plot_*``: keyword-only options, ``*_kwargs`` passed to matplotlib; each draws
on ``ax`` (a new figure of ``figsize`` inches when None) and returns the axes.

References
----------
.. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020). Empirical Differential Privacy.
   arXiv:2011.05418, Figures 1, 3, 4 and 5.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from pymc_edp.plots.style import add_legend, annotate, color, get_axes, reference_line, set_labels

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from pymc_edp.query.noise import NoiseKernel

__all__ = ["plot_delta", "plot_delta_i", "plot_densities", "plot_noise_kernel"]

_FIGSIZE = (6.0, 4.0)


def _right_end(eps: np.ndarray, y: np.ndarray, default: float) -> float:
    """The last eps where ``y`` is above 1e-3 of its maximum (``default`` if nowhere)."""
    alive = np.flatnonzero(y > 1e-3 * max(y.max(), 1e-300))
    return eps[alive[-1]] if alive.size else default


def plot_delta(
    result: xr.Dataset,
    *,
    kind: str | Sequence[str] = "delta",
    target: float | None = None,
    xscale: str = "linear",
    yscale: str = "linear",
    xlim: tuple[float, float] | None = None,
    ax: Axes | None = None,
    figsize: tuple[float, float] | None = None,
    plot_kwargs: dict | None = None,
    title: str | None = None,
) -> Axes:
    """``delta(eps)`` and/or the total risk ``delta*(eps)`` (Figures 3 and 4 of [1]).

    Parameters
    ----------
    result : xarray.Dataset
        From :func:`~pymc_edp.query.query_edp` or :func:`~pymc_edp.query.privacy_profile`.
    kind : {"delta", "delta_star"} or list of them
    target : float, optional
        Mark the smallest eps at which each curve falls to ``target``.
    xlim : tuple, optional
        Default: from 0 to a little beyond where every curve drops below 1e-3 of its maximum.
    plot_kwargs : dict, optional
        Passed to ``ax.plot``.

    Examples
    --------
    >>> res = edp.query.privacy_profile(samples, progressbar=False)
    >>> ax = edp.plots.plot_delta(res, kind=["delta", "delta_star"], target=0.01)
    >>> len(ax.get_lines())  # two curves and their two target markers
    4
    >>> plt.close("all")
    """
    from pymc_edp.query.profile import epsilon_at

    ax = get_axes(ax, figsize=figsize, default_figsize=_FIGSIZE)
    kinds = [kind] if isinstance(kind, str) else list(kind)
    labels = {"delta": r"$\delta(\varepsilon)$", "delta_star": r"$\delta^*(\varepsilon)$"}
    eps = result["epsilon"].to_numpy()
    right = 0.0
    for c, k in enumerate(kinds):
        y = result[k].to_numpy()
        kw = {"color": color(c), "lw": 2, "label": labels[k]} | (plot_kwargs or {})
        (line,) = ax.plot(eps, y, **kw)
        colour = line.get_color()
        right = max(right, _right_end(eps, y, eps[-1]))
        if target is not None:
            e = epsilon_at(result, target, kind=k)
            if np.isfinite(e):
                reference_line(ax, e, vertical=True, color=colour)
                text = rf"$\varepsilon$={e:.3g} at {labels[k]}={target:g}"
                annotate(ax, text, (e, target), offset=(6, 12 + 14 * c), color=colour)
    ax.set_xscale(xscale)
    ax.set_yscale(yscale)
    if xlim is not None:
        ax.set_xlim(*xlim)
    elif xscale == "linear":
        ax.set_xlim(0, min(eps[-1], 1.15 * right) if right > 0 else eps[-1])
    ylabel = r"$\delta^*$" if kinds == ["delta_star"] else r"$\delta$"
    set_labels(ax, r"$\varepsilon$", ylabel, title)
    if len(kinds) > 1 or target is not None:
        add_legend(ax)
    return ax


def plot_delta_i(
    result: xr.Dataset,
    *,
    individuals: Sequence[Hashable] | None = None,
    top: int = 5,
    xscale: str = "linear",
    ax: Axes | None = None,
    figsize: tuple[float, float] | None = None,
    plot_kwargs: dict | None = None,
    title: str | None = None,
) -> Axes:
    """``delta_i(eps)`` of the most exposed individuals (or of chosen ones).

    Parameters
    ----------
    individuals : sequence, optional
        Individuals to draw; by default the ``top`` most exposed.
    plot_kwargs
        As in :func:`plot_delta`.

    Examples
    --------
    >>> res = edp.query.privacy_profile(samples, progressbar=False)
    >>> ax = edp.plots.plot_delta_i(res, top=3)
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['2', '3', '0']
    >>> plt.close("all")
    """
    ax = get_axes(ax, figsize=figsize, default_figsize=_FIGSIZE)
    if individuals is None:
        individuals = list(result["top_individual"].to_numpy()[:top])
    eps = result["epsilon"].to_numpy()
    right = 0.0
    for c, ind in enumerate(individuals):
        y = result["delta_i"].sel(individual=ind).to_numpy()
        kw = {"color": color(c), "lw": 1.8, "label": str(ind)} | (plot_kwargs or {})
        ax.plot(eps, y, **kw)
        right = max(right, _right_end(eps, y, 0.0))
    ax.set_xscale(xscale)
    if xscale == "linear" and right > 0:
        ax.set_xlim(0, min(eps[-1], 1.15 * right))
    set_labels(ax, r"$\varepsilon$", r"$\delta_i$", title)
    add_legend(ax, title="individual")
    return ax


def plot_densities(
    result: xr.Dataset,
    *,
    rank: int = 0,
    rug: bool = True,
    ax: Axes | None = None,
    figsize: tuple[float, float] | None = None,
    plot_kwargs: dict | None = None,
    title: str | None = None,
    xlim: tuple[float, float] | None = None,
) -> Axes:
    """Estimated densities with and without an exposed individual (Figure 5 of [1]).

    Parameters
    ----------
    result : xarray.Dataset
        A 1-D query result (with ``density`` and ``density_without``).
    rank : int, default 0
        Which of the stored most exposed individuals (0 = the most exposed).
    rug : bool, default True
        Mark the query results with and without the individual.
    plot_kwargs
        As in :func:`plot_delta`.
    xlim : tuple, optional
        Default: the range of the query results, padded by 15%.

    Examples
    --------
    >>> res = edp.query.privacy_profile(samples, progressbar=False)
    >>> ax = edp.plots.plot_densities(res)
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['with everybody', 'without 2']
    >>> plt.close("all")
    """
    if "density" not in result:
        raise ValueError("the result has no densities (vector query or densities not kept)")
    ax = get_axes(ax, figsize=figsize, default_figsize=_FIGSIZE)
    grid = result["grid"].to_numpy()
    ind = result["top_individual"].to_numpy()[rank]
    kw = {"lw": 2} | (plot_kwargs or {})
    without = result["density_without"].isel(rank=rank).to_numpy()
    ax.plot(grid, result["density"].to_numpy(), color=color(0), label="with everybody", **kw)
    ax.plot(grid, without, color=color(1), label=f"without {ind}", **kw)
    if rug and "value" in result:
        v = result["value"].to_numpy().ravel()
        w = result["value_without"].sel(individual=ind).to_numpy().ravel()
        ax.plot(v, np.zeros_like(v), "|", color=color(0), ms=10, alpha=0.6)
        ax.plot(w, np.zeros_like(w), "|", color=color(1), ms=6, alpha=0.6)
        lo, hi = min(v.min(), w.min()), max(v.max(), w.max())
        pad = 0.15 * (hi - lo if hi > lo else 1.0)
        if xlim is None:
            xlim = (lo - pad, hi + pad)
    if xlim is not None:
        ax.set_xlim(*xlim)
    set_labels(ax, str(result.attrs.get("query", "query result")), "density", title)
    add_legend(ax)
    return ax


def plot_noise_kernel(
    noise: NoiseKernel,
    *,
    n_samples: int = 100_000,
    random_seed: int | None = 0,
    bins: int = 200,
    ax: Axes | None = None,
    figsize: tuple[float, float] | None = None,
    hist_kwargs: dict | None = None,
    title: str | None = None,
) -> Axes:
    """Histogram of noise draws with the noise density ``h`` (Figure 1 of [1]).

    Parameters
    ----------
    noise : NoiseKernel
        From :func:`~pymc_edp.query.noise_kernel`.
    hist_kwargs : dict, optional
        Passed to ``ax.hist``.

    Examples
    --------
    >>> ax = edp.plots.plot_noise_kernel(edp.query.noise_kernel(samples, 1.0), n_samples=10_000)
    >>> ax.get_legend().get_texts()[0].get_text()
    '10,000 draws'
    >>> plt.close("all")
    """
    ax = get_axes(ax, figsize=figsize, default_figsize=_FIGSIZE)
    draws = noise.sample(n_samples, np.random.default_rng(random_seed))
    lim = np.quantile(np.abs(draws), 0.995)
    kw = {
        "bins": np.linspace(-lim, lim, bins + 1),
        "density": True,
        "color": color(0),
        "alpha": 0.5,
    } | (hist_kwargs or {})
    ax.hist(draws, label=f"{n_samples:,} draws", **kw)
    x = np.linspace(-lim, lim, 2001)
    lam = noise.scale
    ax.plot(x, noise.pdf(x), color=color(0), lw=1.5, label="noise density $h$")
    laplace = np.exp(-np.abs(x) / lam) / (2 * lam)
    ax.plot(x, laplace, color=color(1), lw=1.5, ls="--", label=rf"Laplace($\lambda$={lam:.3g})")
    ax.set_xlim(-lim, lim)
    set_labels(ax, "noise", "density", title)
    add_legend(ax)
    return ax

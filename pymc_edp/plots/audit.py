"""Plots of an audit: per-record epsilon, epsilon against B, bin log ratios, the (ε, δ) profile.

Each reads an ``AuditSummary`` (those of the diagnostics need its stored weights), draws on
``ax`` (a new figure of ``figsize`` inches when None) and returns the axes; k-hat classes are
:func:`pymc_edp.report.khat_counts`'s. Without matplotlib they raise ImportError.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from pymc_edp.base import binning
from pymc_edp.base.common import MIN_DRAWS_PER_BIN, NEIGHBOUR_DIM, PARAMETER_DIM
from pymc_edp.base.mcse import normalised_weights
from pymc_edp.diagnostics import (
    DEFAULT_CURVE_BINS,
    bin_log_ratios,
    delta_profile,
    epsilon_curve,
    epsilon_interval,
)
from pymc_edp.diagnostics._common import (
    draws_of,
    flat_parameters,
    kept_weights,
    listing,
    neighbour_maximum,
    neighbour_position,
    neighbour_weights,
    no_weights_error,
    was_pruned,
)
from pymc_edp.plots.style import (
    REFERENCE_COLOR,
    TEXT_COLOR,
    add_legend,
    annotate,
    color,
    get_axes,
    get_axes_grid,
    place_labels,
    reference_line,
    require_matplotlib,
    set_labels,
)
from pymc_edp.report import format_interval, khat_counts
from pymc_edp.report._common import AuditSummary
from pymc_edp.report.khat import NOT_COMPUTED, KhatCounts

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "KHAT_COLORS",
    "plot_bin_log_ratios",
    "plot_delta_profile",
    "plot_epsilon_curve",
    "plot_epsilon_intervals",
    "plot_neighbour_posterior",
    "plot_overview",
    "plot_pointwise_epsilon",
]

#: Colour of each Pareto k-hat class, from the ArviZ cycle; grey where none was computed.
KHAT_COLORS = {
    "good": color(0),
    "bad": color(3),
    "very bad": color(4),
    NOT_COMPUTED: REFERENCE_COLOR,
}


def _khat_bounds(threshold: float) -> dict:
    return {
        "good": f"k ≤ {threshold:.2f}",
        "bad": f"{threshold:.2f} < k ≤ 1",
        "very bad": "k > 1",
        NOT_COMPUTED: "pruned or refitted",
    }


def neighbour_methods(pointwise: xr.Dataset, dim: str = NEIGHBOUR_DIM) -> np.ndarray:
    """Every neighbour's ``method`` (``""`` where the result does not say)."""
    da = pointwise.get("method")
    if da is None or da.dims != (dim,):
        return np.full(pointwise.sizes.get(dim, 0), "", dtype=object)
    return np.asarray(da.values).astype(str)


def plot_pointwise_epsilon(
    result: AuditSummary,
    *,
    ax: Axes | None = None,
    labels: int = 5,
    dim: str = "neighbour",
    xlabel: str | None = None,
    title: bool | str = True,
    figsize: tuple[float, float] | None = None,
    legend: bool = True,
    scatter_kwargs: dict[str, Any] | None = None,
) -> Axes:
    """Plot every neighbour's epsilon, coloured by the Pareto k-hat class of its weights.

    Refitted neighbours are ringed, lower bounds marked with a triangle; the ``labels``
    highest are annotated with their coordinate value and a dashed line marks epsilon.

    Parameters
    ----------
    result : AuditSummary
        Needs ``pointwise["epsilon"]`` over ``dim`` (``pareto_k``, ``method`` optional).
    labels : int, default 5
        Number of highest-epsilon records to annotate.
    xlabel : str, optional
        Default: the coordinate values of ``dim`` when numeric and increasing (e.g. patient
        ids), else the record positions.
    title : bool or str, default True
        True for an automatic title, False for none.
    scatter_kwargs : dict, optional
        Passed to :meth:`~matplotlib.axes.Axes.scatter`.

    Examples
    --------
    >>> ax = edp.plots.plot_pointwise_epsilon(res, labels=3)
    >>> ax.get_title()
    'Per-record ε (max 0.75..., B = 10)'
    >>> ax.get_xlabel()
    'record position (8 neighbours)'
    >>> plt.close(ax.figure)
    """
    require_matplotlib()
    pointwise = result.pointwise
    eps, names = pointwise_epsilons(pointwise, dim)
    counts = khat_counts(result, dim) if "pareto_k" in pointwise else None
    ax = get_axes(ax, figsize=figsize, default_figsize=(9.0, 4.2))
    x, default_xlabel = _pointwise_positions(names, eps.size, dim)
    kwargs = {"s": 28, "linewidths": 0.6, "edgecolors": "white", "zorder": 3}
    kwargs |= scatter_kwargs or {}
    _scatter_by_khat(ax, x, eps, counts, kwargs)
    refit = neighbour_methods(pointwise, dim) == "refit"
    _outline(ax, x, eps, refit, "refitted", s=kwargs["s"] * 3)
    if "lower_bound" in pointwise:
        bounded = np.asarray(pointwise["lower_bound"].values, dtype=bool).reshape(-1)
        _outline(ax, x, eps, bounded, "lower bound (resolution limit)", marker="^",
                 s=kwargs["s"] * 2)  # fmt: skip
    finite = np.isfinite(eps)
    bound = bool(getattr(result, "lower_bound", False))
    overall = float(np.nanmax(eps)) if finite.any() else float("nan")
    if finite.any():
        reference_line(
            ax, overall, label=f"ε = max over records ({'≥ ' if bound else ''}{overall:.3g})"
        )
    if x.size:
        pad = 0.02 * (x.max() - x.min()) + 0.5
        ax.set_xlim(x.min() - pad, x.max() + pad)
    ax.margins(y=0.12)
    ax.set_ylim(bottom=0)
    n_labels = min(int(labels), int(finite.sum()))
    if n_labels > 0:
        order = np.argsort(-np.where(finite, eps, -np.inf), kind="stable")[:n_labels]
        place_labels(
            ax, x, eps, order, [str(names[i]) for i in order], marker_size=kwargs["s"], zorder=6
        )
    title_text = _pointwise_title(title, overall, bound, getattr(result, "bins", None))
    set_labels(ax, xlabel if xlabel is not None else default_xlabel, "ε of neighbour", title_text)
    if legend and counts is not None:
        add_legend(
            ax,
            title="Pareto k-hat",
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            alignment="left",
        )
    return ax


def pointwise_epsilons(pointwise: xr.Dataset, dim: str) -> tuple[np.ndarray, np.ndarray]:
    """Every neighbour's epsilon (its maximum over other dimensions) and its label."""
    if "epsilon" not in pointwise:
        raise KeyError("result.pointwise has no 'epsilon' variable")
    eps_da = pointwise["epsilon"]
    if dim not in eps_da.dims:
        raise ValueError(
            f"result.pointwise['epsilon'] has dims {eps_da.dims}; no neighbour dim {dim!r}"
        )
    eps = neighbour_maximum(eps_da, dim)
    names = np.asarray(pointwise[dim].values) if dim in pointwise.coords else np.arange(eps.size)
    return eps, names


def _pointwise_positions(names: np.ndarray, n: int, dim: str) -> tuple[np.ndarray, str]:
    """Every neighbour's x (its label if numeric and increasing) and the x label."""
    numeric = names.dtype.kind in "iuf" and names.size == n
    if numeric and (names.size < 2 or np.all(np.diff(names.astype(float)) > 0)):
        return names.astype(float), f"{dim} ({n} records)"
    return np.arange(n, dtype=float), f"record position ({n} {dim}s)"


def _scatter_by_khat(
    ax: Axes, x: np.ndarray, eps: np.ndarray, counts: KhatCounts | None, kwargs: dict
) -> None:
    """One scatter per k-hat class, labelled with its count."""
    if counts is None:
        ax.scatter(x, eps, color=color(0), **kwargs)
        return
    bounds = _khat_bounds(counts.threshold)
    for cls in KHAT_COLORS:
        sel = counts.classes == cls
        if cls != "good" and not sel.any():
            continue
        label = f"{cls} ({bounds[cls]}): {counts.count(cls)}"
        ax.scatter(x[sel], eps[sel], color=KHAT_COLORS[cls], label=label, **kwargs)


def _outline(
    ax: Axes, x: np.ndarray, eps: np.ndarray, mask: np.ndarray, label: str, **marker: Any
) -> None:
    """An unfilled marker around the points of ``mask`` (refitted, lower bounds)."""
    if mask.size == eps.size and mask.any():
        ax.scatter(
            x[mask],
            eps[mask],
            facecolors="none",
            edgecolors=TEXT_COLOR,
            linewidths=0.9,
            zorder=4,
            label=f"{label}: {int(mask.sum())}",
            **marker,
        )


def _pointwise_title(title: bool | str, overall: float, bound: bool, bins: Any) -> str | None:
    """The title: given, automatic (``True``) or none."""
    if isinstance(title, str):
        return title
    if not title:
        return None
    text = f"Per-record ε (max {'≥ ' if bound else ''}{overall:.3g}"
    text += ", a lower bound" if bound else ""
    return text + (f", B = {bins})" if bins is not None else ")")


def plot_epsilon_curve(
    result: AuditSummary | xr.DataArray,
    *,
    bins: Any = (5, 10, 20, 50, 100, 250),
    prob: float | None = 0.9,
    exact: Any = None,
    ax: Axes | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Plot epsilon against the number of bins B, with Monte-Carlo error bars.

    The curve is :func:`pymc_edp.diagnostics.epsilon_curve`'s; its ``B -> inf`` reference
    (the most any bin can reach) is a dashed line.

    Parameters
    ----------
    result : AuditSummary or xarray.DataArray
        An audit result (with weights), or a curve from ``result.curve()``.
    exact : mapping or array_like, optional
        Exact epsilon per B (e.g. from :mod:`pymc_edp.conjugate`), drawn as crosses.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017), sec. 3.3 (epsilon depends on B).

    Examples
    --------
    >>> ax = edp.plots.plot_epsilon_curve(res, bins=(5, 10, 20))
    >>> [t.get_text() for t in ax.get_xticklabels()]
    ['5', '10', '20']
    >>> plt.close(ax.figure)
    """
    require_matplotlib()
    curve = result if isinstance(result, xr.DataArray) else epsilon_curve(result, bins, prob=prob)
    b = np.asarray(curve["bins"].values, dtype=float)
    eps = np.asarray(curve.values, dtype=float)
    ax = get_axes(ax, figsize=figsize, default_figsize=(6.4, 4.0))
    if "lower" in curve.coords and np.isfinite(curve["lower"].values).any():
        lo, hi = curve["lower"].values, curve["upper"].values
        # refitted neighbours' intervals are their refits' while the curve reweights them, so
        # a point can lie outside its interval: the bar then ends at the point
        yerr = np.clip(np.vstack([eps - lo, hi - eps]), 0.0, None)
        p = curve.attrs.get("prob", prob)
        label = f"ε (B), {100 * float(p):.0f}% Monte-Carlo interval"
    else:
        yerr, label = None, "ε (B)"
    ax.errorbar(
        b,
        eps,
        yerr=yerr,
        color=color(0),
        marker="o",
        ms=5,
        capsize=3,
        lw=1.4,
        label=label,
        zorder=3,
    )
    if exact is not None:
        if isinstance(exact, dict):
            ex = np.array([exact[int(v)] for v in b])
        else:
            ex = np.asarray(exact, dtype=float)
        ax.scatter(b, ex, marker="x", s=40, color=color(1), label="exact", zorder=4)
    lim = curve.attrs.get("continuous_limit")
    if lim is not None and np.isfinite(lim):
        div = curve.attrs.get("continuous_limit_diverges", False)
        text = f"the most any bin can reach: {lim:.3g}" + (
            ",\nand it grows with more draws (no finite limit)" if div else " (B very large)"
        )
        reference_line(ax, lim, label=text)
    ax.set_xscale("log")
    ax.set_xticks(b)
    ax.set_xticklabels([str(int(v)) for v in b])
    ax.minorticks_off()
    top = np.nanmax(np.concatenate([eps, [lim if lim is not None else 0.0]]))
    ax.set_ylim(0, 1.1 * top if np.isfinite(top) and top > 0 else None)
    set_labels(ax, "number of bins B", "ε", "B-EDP ε against the number of bins")
    add_legend(ax)
    return ax


def plot_epsilon_intervals(
    result: AuditSummary,
    *,
    prob: float = 0.9,
    labels: int = 5,
    ax: Axes | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Per-record epsilon with its interval (:func:`pymc_edp.diagnostics.epsilon_interval`).

    Coloured by Pareto k-hat; the ``labels`` highest are annotated, epsilon's interval shaded.

    Examples
    --------
    >>> ax = edp.plots.plot_epsilon_intervals(res, prob=0.8, labels=2)
    >>> ax.get_title()
    'Per-record ε with 80% Monte-Carlo intervals (B = 10)'
    >>> plt.close(ax.figure)
    """
    require_matplotlib()
    iv = epsilon_interval(result, prob)
    names = np.asarray(iv["neighbour"].values)
    x, _ = _pointwise_positions(names, names.size, NEIGHBOUR_DIM)
    est = iv["estimate_i"].values
    lo = iv["epsilon_i"].sel(interval="lower").values
    hi = iv["epsilon_i"].sel(interval="upper").values
    classes = khat_counts(result).classes
    ax = get_axes(ax, figsize=figsize, default_figsize=(8.0, 4.2))
    glo, ghi = iv["epsilon"].values
    # an interval open above (a lower bound) is drawn up to the top of the plot
    finite = np.concatenate([hi[np.isfinite(hi)], est[np.isfinite(est)], [glo]])
    top = 1.15 * float(np.nanmax(finite)) if finite.size and np.nanmax(finite) > 0 else 1.0
    open_above = np.isinf(hi)
    hi = np.where(open_above, top, hi)
    band = f"ε, {100 * prob:.0f}% interval {format_interval((glo, ghi))}"
    band_top = ghi if np.isfinite(ghi) else top
    ax.axhspan(glo, band_top, color="0.85", alpha=0.6, lw=0, zorder=1, label=band)
    for cls in KHAT_COLORS:
        sel = classes == cls
        if not sel.any():
            continue
        ax.vlines(x[sel], lo[sel], hi[sel], color=KHAT_COLORS[cls], lw=1.0, alpha=0.7, zorder=2)
        label = f"k-hat {cls}: {int(sel.sum())}"
        ax.scatter(x[sel], est[sel], color=KHAT_COLORS[cls], s=18, zorder=3, label=label)
    if open_above.any():
        ax.scatter(
            x[open_above],
            hi[open_above],
            marker="^",
            color=TEXT_COLOR,
            s=22,
            zorder=4,
            label=f"open above (a lower bound): {int(open_above.sum())}",
        )
    order = np.argsort(-np.nan_to_num(est, nan=-np.inf), kind="stable")[: max(int(labels), 0)]
    for rank, i in enumerate(order):
        annotate(ax, str(names[i]), (x[i], hi[i]), offset=(6 if rank % 2 == 0 else -6, 3))
    ax.set_ylim(bottom=0, top=top * 1.05 if open_above.any() else None)
    ax.margins(y=0.12)
    set_labels(
        ax,
        f"record ({names.size} neighbours)",
        "ε of neighbour",
        f"Per-record ε with {100 * prob:.0f}% Monte-Carlo intervals (B = {result.bins})"
        + ("; ε is a lower bound" if open_above.any() else ""),
    )
    add_legend(ax)
    return ax


def plot_bin_log_ratios(
    result: AuditSummary,
    neighbour: Any = None,
    *,
    ax: Axes | None = None,
    figsize: tuple[float, float] | None = None,
    cmap: str = "RdBu_r",
) -> Axes:
    """The bin log ratios ``log P_i(b) - log P(b)`` of one neighbour.

    Bars for one parameter, else a heatmap (a row each, colours symmetric about 0); the
    largest in absolute value (the neighbour's epsilon) is outlined.

    Parameters
    ----------
    neighbour : optional
        Coordinate value; default the neighbour attaining epsilon.
    cmap : str, default "RdBu_r"
        Colour map of the heatmap.

    Examples
    --------
    >>> ax = edp.plots.plot_bin_log_ratios(res)
    >>> ax.get_title()
    "Bin log ratios of neighbour St. Paul's (max |·| = 0.75..., B = 10)"
    >>> len(ax.patches), ax.get_xlabel()
    (11, 'bin of the full-data posterior of mu (equal probability, lowest first)')
    >>> plt.close(ax.figure)
    """
    require_matplotlib()
    from matplotlib.patches import Rectangle

    lr = bin_log_ratios(result, neighbour)
    values = np.asarray(lr.values, dtype=float)
    n_par, n_bins = values.shape
    p, j = np.unravel_index(np.nanargmax(np.abs(values)), values.shape)
    title = (
        f"Bin log ratios of neighbour {lr.attrs['neighbour']} "
        f"(max |·| = {abs(values[p, j]):.3g}, B = {lr.attrs['bins']})"
    )
    names = [str(v) for v in lr["parameter"].values]
    if n_par == 1:
        ax = get_axes(ax, figsize=figsize, default_figsize=(7.0, 3.2))
        v = values[0]
        bins = np.arange(1, n_bins + 1)
        ok = np.isfinite(v)
        ax.bar(
            bins[ok], v[ok], width=0.8, color=np.where(v[ok] >= 0, color(0), color(3)), zorder=2
        )
        ax.bar([bins[j]], [v[j]], width=0.8, fill=False, edgecolor=TEXT_COLOR, lw=1.4, zorder=3)
        reference_line(ax, 0.0, color=TEXT_COLOR, lw=0.8)
        ax.set_xticks(bins[:: max(1, n_bins // 10)])
        set_labels(
            ax,
            f"bin of the full-data posterior of {names[0]} (equal probability, lowest first)",
            "log P(bin | D') − log P(bin | D)",
            title,
        )
        return ax
    ax = get_axes(ax, figsize=figsize, default_figsize=(7.0, 1.6 + 0.35 * n_par), grid=False)
    vmax = float(np.nanmax(np.abs(values))) or 1.0
    masked = np.ma.masked_invalid(values)
    im = ax.imshow(
        masked, aspect="auto", cmap=cmap, vmin=-vmax, vmax=vmax, interpolation="nearest"
    )
    ax.add_patch(Rectangle((j - 0.5, p - 0.5), 1, 1, fill=False, ec="0.1", lw=1.6))
    ax.set_yticks(np.arange(n_par))
    ax.set_yticklabels(names)
    step = max(1, n_bins // 10)
    ax.set_xticks(np.arange(0, n_bins, step))
    ax.set_xticklabels([str(k + 1) for k in range(0, n_bins, step)])
    cbar = ax.figure.colorbar(im, ax=ax, pad=0.02)
    cbar.outline.set_visible(False)
    cbar.set_label("log P(bin | D') − log P(bin | D)", color=TEXT_COLOR)
    set_labels(ax, "bin of the full-data posterior (equal probability, lowest first)", title=title)
    return ax


def plot_neighbour_posterior(
    result: AuditSummary,
    neighbour: Any = None,
    parameter: Any = None,
    *,
    ax: Axes | None = None,
    figsize: tuple[float, float] | None = None,
    n_hist: int = 60,
) -> Axes:
    """Histograms of the full-data posterior and one neighbour's (reweighted) posterior.

    Faint lines are the audit's bin edges.

    Parameters
    ----------
    neighbour : optional
        Coordinate value; default the neighbour attaining epsilon.
    parameter : str, optional
        Parameter label; default the one that sets this neighbour's epsilon.
    n_hist : int, default 60
        Histogram bins (display only).

    Examples
    --------
    >>> ax = edp.plots.plot_neighbour_posterior(res, parameter="mu")
    >>> ax.get_title()
    'Full vs neighbour posterior (ε = 0.75..., B = 10)'
    >>> ax.get_xlabel()
    'mu'
    >>> plt.close(ax.figure)
    """
    require_matplotlib()
    if result.log_weights is None or result.draws is None:
        raise no_weights_error(result)
    pw = result.pointwise
    i, neighbour = neighbour_position(result, neighbour)
    if parameter is None:
        parameter = str(pw["worst_parameter"].values[i])
    names = flat_parameters(result)[PARAMETER_DIM].values.astype(str)
    if not np.any(names == str(parameter)):
        raise KeyError(
            f"no parameter {parameter!r} in this result; pass one of its parameters "
            f"(res.summary().index): {listing(names)}"
        )
    draws = draws_of(result)[int(np.flatnonzero(names == str(parameter))[0])]
    w = normalised_weights(neighbour_weights(result, neighbour)[0][0])[0]
    ax = get_axes(ax, figsize=figsize, default_figsize=(6.4, 4.0))
    edges = np.linspace(draws.min(), draws.max(), n_hist + 1)
    hist = {"bins": edges, "density": True}
    ax.hist(draws, **hist, histtype="stepfilled", color=color(0), alpha=0.25, label="full data D")
    ax.hist(draws, **hist, histtype="step", color=color(0), lw=1.2)
    label = f"neighbour {neighbour} (reweighted)"
    ax.hist(draws, **hist, weights=w, histtype="step", color=color(1), lw=1.6, label=label)
    cut = binning.quantile_bins(draws[None], int(result.bins)).edges[0]
    for c in cut[np.isfinite(cut)]:
        ax.axvline(c, color="0.7", lw=0.5, zorder=0)
    eps_i = float(pw["epsilon"].values[i])
    set_labels(
        ax,
        parameter,
        "posterior density",
        f"Full vs neighbour posterior (ε = {eps_i:.3g}, B = {result.bins})",
    )
    add_legend(ax)
    return ax


def plot_delta_profile(
    result: AuditSummary | xr.Dataset,
    epsilons: Any = None,
    *,
    ax: Axes | None = None,
    figsize: tuple[float, float] | None = None,
    logy: bool = True,
) -> Axes:
    """Plot the bin-free (ε, δ) profile δ(ε) = max_i δ_i(ε) and the total risk δ*(ε).

    Parameters
    ----------
    result : AuditSummary or xarray.Dataset
        An audit result (with weights), or ``result.delta_profile()``.
    epsilons : array_like, optional
        Default 200 points up to 1.5 times the audit's epsilon.

    References
    ----------
    .. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020), Theorem 1, Definition 3.

    Examples
    --------
    >>> prof = res.delta_profile(np.linspace(0, 2, 21))
    >>> ax = edp.plots.plot_delta_profile(prof)
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['δ(ε) = max_i δ_i(ε)', 'total risk δ*(ε)']
    >>> plt.close(ax.figure)
    """
    require_matplotlib()
    audit_eps = None
    if isinstance(result, xr.Dataset):
        prof = result
    else:
        audit_eps = float(result.epsilon)
        if epsilons is None:
            epsilons = np.linspace(0, 1.5 * audit_eps, 200)
        prof = delta_profile(result, epsilons)
    e = prof["epsilon"].values
    ax = get_axes(ax, figsize=figsize, default_figsize=(6.4, 4.0))
    d, ds = prof["delta"].values, prof["delta_star"].values
    ax.plot(e, d, color=color(0), lw=1.6, label="δ(ε) = max_i δ_i(ε)")
    ax.plot(e, ds, color=color(3), lw=1.6, ls="-.", label="total risk δ*(ε)")
    if audit_eps is not None:
        reference_line(
            ax, audit_eps, vertical=True, label=f"B-EDP ε = {audit_eps:.3g} (B = {result.bins})"
        )
    if logy:
        positive = np.concatenate([d[d > 0], ds[ds > 0]])
        if positive.size:
            ax.set_yscale("log")
            ax.set_ylim(bottom=max(positive.min(), 1e-6) / 2, top=min(1.0, positive.max() * 2))
    set_labels(ax, "ε", "δ", "Bin-free (ε, δ) profile")
    add_legend(ax)
    return ax


def _overview_bins(result: AuditSummary, bins: Any) -> list[int]:
    """The overview curve's B: the defaults and the audit's B that the draws allow."""
    if bins is not None:
        return [int(b) for b in bins]
    grid = {int(b) for b in DEFAULT_CURVE_BINS} | {int(result.bins)}
    most = int(result.n_samples) // MIN_DRAWS_PER_BIN
    return sorted(b for b in grid if b <= most) or [int(result.bins)]


def _note(ax: Axes, title: str, text: str) -> None:
    ax.set_axis_off()
    ax.text(
        0.5, 0.5, text, ha="center", va="center", wrap=True, color=TEXT_COLOR,
        transform=ax.transAxes,
    )  # fmt: skip
    set_labels(ax, title=title)


def plot_overview(
    result: AuditSummary,
    *,
    figsize: tuple[float, float] | None = None,
    curve_bins: Any = None,
    labels: int = 3,
) -> np.ndarray:
    """The figures to look at first, on one 2 x 2 figure (``res.plot()``).

    :func:`plot_pointwise_epsilon`, :func:`plot_epsilon_curve`, and the worst neighbour's
    :func:`plot_bin_log_ratios` and :func:`plot_neighbour_posterior`; a note instead of those
    that need weights the result did not keep (the curve needs every neighbour's).

    Parameters
    ----------
    curve_bins : sequence of int, optional
        The B grid of the curve; default ``(5, 10, 20, 50, 100, 250)`` and the audit's B,
        those leaving at least 10 draws per bin.
    labels : int, default 3
        Neighbours labelled in the top-left plot.

    Returns
    -------
    numpy.ndarray of matplotlib.axes.Axes
        Shape ``(2, 2)``, on one figure (``axes[0, 0].figure``).

    Examples
    --------
    >>> axes = edp.plots.plot_overview(res)
    >>> axes.shape
    (2, 2)
    >>> [ax.get_title().split(" (")[0] for ax in axes.flat]  # doctest: +NORMALIZE_WHITESPACE
    ['Per-record ε', 'B-EDP ε against the number of bins',
     "Bin log ratios of neighbour St. Paul's", 'Full vs neighbour posterior']
    >>> plt.close(axes[0, 0].figure)
    """
    axes = get_axes_grid(2, 2, figsize=figsize or (13.0, 8.0))
    top_left = plot_pointwise_epsilon(result, ax=axes[0, 0], labels=labels, legend=False)
    if top_left.get_legend_handles_labels()[0]:  # the k-hat classes, under the plot
        add_legend(
            top_left,
            title="Pareto k-hat",
            loc="upper center",
            bbox_to_anchor=(0.5, -0.16),
            ncols=4,
        )
    rerun = "'store_weights': True" + (", 'prune': False" if was_pruned(result) else "")
    if getattr(result, "log_weights", None) is None or getattr(result, "draws", None) is None:
        why = (
            f"needs the audit's stored weights:\naudit(..., chunks={{{rerun}}}), or\n"
            "EDPResult.to_netcdf(path, include_weights=True) before reading it back"
        )
        _note(axes[0, 1], "B-EDP ε against the number of bins", why)
        _note(axes[1, 0], "Bin log ratios of the worst neighbour", why)
        _note(axes[1, 1], "Full vs neighbour posterior", why)
        return axes
    _, rows = kept_weights(result)
    n = result.pointwise.sizes[NEIGHBOUR_DIM]
    if rows.size == n and np.array_equal(rows, np.arange(n)):
        plot_epsilon_curve(result, bins=_overview_bins(result, curve_bins), ax=axes[0, 1])
    else:  # a large audit keeps the weights of the neighbours that can set epsilon only
        _note(
            axes[0, 1],
            "B-EDP ε against the number of bins",
            f"needs every neighbour's weights; this audit kept\nthose of {rows.size} of {n} "
            f"(the ones that can set ε at B = {result.bins}):\naudit(..., chunks={{{rerun}}})",
        )
    plot_bin_log_ratios(result, ax=axes[1, 0])
    plot_neighbour_posterior(result, ax=axes[1, 1])
    return axes

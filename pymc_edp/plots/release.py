"""The views of a release audit: its (epsilon, delta) figure and its HTML view."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pymc_edp.plots.html import _e, _figure, _kv, _section, _svg, _table, _warnings, _wrap
from pymc_edp.plots.style import add_legend, color, get_axes, require_matplotlib, set_labels
from pymc_edp.report.release import release_facts

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_release", "release_html"]

#: Colour of the light per-neighbour curves.
_LIGHT = "0.65"


def _profile(epsilon: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points of a curve a log-delta axis can show: delta > 0, epsilon finite."""
    keep = (delta > 0) & np.isfinite(epsilon)
    return epsilon[keep], delta[keep]


def _row(values: np.ndarray, labels: np.ndarray, label: str) -> np.ndarray:
    """The first row of neighbour ``label`` (compared as text: labels read back as strings)."""
    return np.asarray(values[np.flatnonzero(labels.astype(str) == str(label))[0]], dtype=float)


def _draw_marker(ax: Axes, res: Any, facts: Any, right: float) -> None:
    """The headline at the target delta, its interval a bar (open above: to ``right``)."""
    h, d = float(res.headline), float(res.target_delta)
    lo, hi = (float(v) for v in res.interval)
    hi_drawn = hi if np.isfinite(hi) else max(right, h)
    ax.hlines(d, lo, hi_drawn, color=color(1), lw=2.0, zorder=4)
    if not np.isfinite(hi):
        ax.plot(hi_drawn, d, ">", color=color(1), ms=6, zorder=4)
    label = f"ε = {facts.epsilon} {facts.interval} at δ = {facts.delta}"
    if facts.lower_bound:
        label += " (lower bound)"
    ax.plot(
        h, d, "o", ms=7, zorder=5, color=color(1), mec=color(1), mew=1.5,
        mfc="white" if facts.lower_bound else color(1), label=label,
    )  # fmt: skip


def check_same_fit(res: Any, parameters: Any) -> None:
    """Refuse (ValueError, naming what differs) a parameter audit of another fit.

    Compared: the neighbours, the posterior draws and chains, and the neighbour relation.
    """
    differs = []
    mine = [str(v) for v in res.pointwise["neighbour"].values]
    theirs = [str(v) for v in parameters.pointwise["neighbour"].values]
    if len(mine) != len(theirs):
        differs.append(f"{len(theirs)} neighbours, the release {len(mine)}")
    elif mine != theirs:
        differs.append("other neighbour labels (records or individuals)")
    for key, mine_, theirs_ in (
        ("draws", res.details.get("draws"), parameters.n_samples),
        ("chains", res.details.get("chains"), parameters.n_chains),
    ):
        if mine_ is not None and int(mine_) != int(theirs_):
            differs.append(f"{int(theirs_)} posterior {key}, the release {int(mine_)}")
    if str(parameters.neighbour) != str(res.neighbour):
        differs.append(f"neighbours {parameters.neighbour!r}, the release {res.neighbour!r}")
    if differs:
        raise ValueError(
            "parameters= is the audit of another fit than the release's: it has "
            + "; ".join(differs)
            + ". Pass edp.audit(...) of the same posterior draws (idata) and neighbour "
            "relation as edp.audit_release."
        )


def plot_release(
    res: Any,
    ax: Axes | None = None,
    *,
    neighbours: int = 5,
    parameters: Any = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Delta against epsilon of one and of ``k`` releases (``res.plot()``).

    The worst neighbour's profile for one release and for ``k``, the coarse ``k``-release
    curves of the ``neighbours`` worst neighbours, and the headline with its interval (an
    open marker when it is a lower bound), on a log delta axis.

    Parameters
    ----------
    res : ReleaseResult
    neighbours : int, default 5
        Neighbours (largest epsilon first) whose coarse ``k``-release curves are drawn.
    parameters : EDPResult, optional
        The :func:`pymc_edp.audit` of the same posterior and neighbours (checked): its
        bin-free profile (:meth:`pymc_edp.EDPResult.delta_profile`) is drawn beside them.

    Examples
    --------
    >>> res = edp.audit_release(idata, k=5, delta=1e-3, progressbar=False,
    ...                         options={"n_bootstrap": 20}, random_seed=0)
    >>> ax = plot_release(res, neighbours=2)
    >>> [t.get_text() for t in ax.get_legend().get_texts()][1:3]
    ['k = 5 releases, worst neighbour', 'k = 5 releases, 2 worst neighbours (coarse)']
    >>> plt.close(ax.figure)
    """
    require_matplotlib()
    facts = release_facts(res)
    ax = get_axes(ax, figsize=figsize, default_figsize=(6.4, 4.0))
    curves = res.curves
    grid = np.asarray(curves["delta"].values, dtype=float)
    worst = res.worst_neighbour
    ref = res.refined  # the worst neighbour's pair is on the fine grid
    e1, d1 = _profile(_row(curves["epsilon_1"].values, curves["neighbour"].values, worst), grid)
    ek = _row(ref["epsilon_k"].values, ref["neighbour_label"].values, worst)
    ek, dk = _profile(ek, np.asarray(ref["delta"].values, float))
    ax.plot(e1, d1, color=color(0), lw=1.6, ls="--", label=f"1 release, worst neighbour ({worst})")
    ax.plot(ek, dk, color=color(0), lw=1.8, label=f"k = {res.k} releases, worst neighbour")
    order = np.argsort(-np.nan_to_num(res.pointwise["epsilon"].values, nan=-np.inf))
    labels = res.pointwise["neighbour"].values[order[: max(int(neighbours), 0)]]
    light = f"k = {res.k} releases, {len(labels)} worst neighbours (coarse)"
    for j, label in enumerate(labels):
        e, d = _profile(np.asarray(curves["epsilon_k"].sel(neighbour=label).values, float), grid)
        ax.plot(
            e, d, color=_LIGHT, lw=0.9, alpha=0.8, zorder=1,
            label=light if j == 0 else None,
        )  # fmt: skip
    right = max([float(np.max(e)) for e in (e1, ek) if e.size] + [float(res.headline)])
    if parameters is not None:
        check_same_fit(res, parameters)
        epsilons = np.linspace(0.0, 1.05 * right, 200)
        prof = parameters.delta_profile(epsilons)
        e, d = _profile(epsilons, np.asarray(prof["delta"].values, dtype=float))
        ax.plot(e, d, color=color(2), lw=1.6, ls="-.", label="parameters: bin-free δ(ε)")
        right = max(right, float(np.max(e))) if e.size else right
    _draw_marker(ax, res, facts, right)
    ax.set_yscale("log")
    set_labels(ax, "ε", "δ", f"Privacy of {facts.published} ({facts.setting.split(',')[0]})")
    add_legend(ax)
    return ax


def release_html(res: Any, *, style: bool = True) -> str:
    """The HTML view of a release audit (``res._repr_html_()``), without script.

    The printout's facts, then collapsible sections: the post-processing comparison, the
    figure, the details and the notes. ``style`` includes the ``<style>`` element.

    Examples
    --------
    >>> res = edp.ReleaseResult("draws", 5, 1e-3, 6.65, (5.67, 7.8), 0.9, True, "St. Paul's",
    ...                         "remove", *[xr.Dataset()] * 4)
    >>> page = release_html(res)
    >>> "6.650" in page and "a lower bound" in page and "<script" not in page
    True
    """
    facts = release_facts(res)
    items = [
        ("published", _e(facts.published)),
        ("releases", _e(facts.setting)),
        ("headline", f"<b>{_e(facts.headline)}</b>"),
        ("worst neighbour", _e(facts.worst_neighbour)),
    ]
    if facts.bound:
        items.insert(3, ("lower bound", _e(facts.bound)))
    body = _kv(items)
    if facts.comparison:
        table = _table(("level", "publishes", "ε"), facts.comparison)
        body += _section(
            "Post-processing",
            table + f'<div class="pedp-caption">{_e(facts.post_processing)}</div>',
            count=len(facts.comparison),
        )
    if "epsilon_1" in res.curves and "epsilon_k" in res.curves:
        svg = _svg(lambda ax: plot_release(res, ax=ax), (5.6, 3.4))
        caption = "δ against ε; res.plot(parameters=...) adds the parameter-level profile."
        body += _section("Privacy profile", _figure(svg, caption), open_=False)
    if facts.details:
        body += _section("Details", _kv([(k, _e(v)) for k, v in facts.details]), open_=False)
    body += _warnings(facts.notes, "Notes")
    return _wrap("pymc_edp.ReleaseResult", facts.title, body, style=style)

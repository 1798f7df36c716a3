"""HTML views of the results for Jupyter (their ``_repr_html_``), as xarray's and ArviZ's.

A header, the numbers, then collapsible sections (tables, an inline SVG figure left out
without matplotlib, warnings). Self-contained: one ``<style>`` scoped under
:data:`CSS_CLASS` that follows JupyterLab's theme (dark included), no script or external
resource; every text from a result is escaped.
"""

from __future__ import annotations

import html
import io
import re
from collections import Counter
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np

from pymc_edp.base.common import NEIGHBOUR_DIM
from pymc_edp.core.loglik import flat_view
from pymc_edp.diagnostics._common import flat_parameters
from pymc_edp.plots.audit import KHAT_COLORS, neighbour_methods, pointwise_epsilons
from pymc_edp.plots.style import REFERENCE_COLOR, TEXT_COLOR, annotate, color, style_axes
from pymc_edp.report import Headline, format_interval, headline, khat_counts
from pymc_edp.report._common import AuditSummary, TuningSummary
from pymc_edp.report.text import neighbour_kind, parameter_rows, smoothing_text, tuning_heading

__all__ = [
    "CSS",
    "CSS_CLASS",
    "MAX_TABLE_ROWS",
    "edp_result_html",
    "epsilon_svg",
    "search_svg",
    "tuning_result_html",
]

#: Class of the outer ``<div>`` of every view; every CSS rule is scoped under it.
CSS_CLASS = "pedp-wrap"
#: Rows shown in a table of trials or utility costs (the parameter table lists at most
#: :data:`pymc_edp.report.text.MAX_ELEMENTS` elements of a variable).
MAX_TABLE_ROWS = 25
#: Neighbours drawn one by one in the inline figure (:func:`epsilon_svg`).
MAX_POINTS = 150

#: The stylesheet of every view: ``style.css`` beside this module, without its comments.
_STYLE_FILE = resources.files("pymc_edp.plots").joinpath("style.css")
CSS = re.sub(r"/\*.*?\*/\n?", "", _STYLE_FILE.read_text(encoding="utf-8"), flags=re.S)

_SVG_RC = {"svg.fonttype": "none", "font.size": 7.5, "axes.titlesize": 7.5}


# ------------------------------------------------------------------------ small pieces
def _e(value: Any) -> str:
    """Escape any value for HTML text or an attribute."""
    return html.escape(str(value), quote=True)


def _num(value: Any, spec: str = ".3f") -> str:
    try:
        return format(float(value), spec)
    except (TypeError, ValueError):
        return str(value)


def _kv(items: Sequence[tuple[str, str]]) -> str:
    """A key-value list; values are HTML already (escaped by the caller)."""
    rows = "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in items)
    return f'<dl class="pedp-kv">{rows}</dl>'


def _table(header: Sequence[str], rows: Sequence[Sequence[Any] | str]) -> str:
    """A table of escaped cells (numbers formatted first); a string row is a note across it."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        f'<tr><td colspan="{len(header)}" class="pedp-muted">{_e(row)}</td></tr>'
        if isinstance(row, str)
        else "<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f'<table class="pedp-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _section(title: str, body: str, *, count: Any = None, open_: bool = True) -> str:
    extra = "" if count is None else f' <span class="pedp-count">({_e(count)})</span>'
    return (
        f"<details{' open' if open_ else ''}><summary>{_e(title)}{extra}</summary>{body}</details>"
    )


def _warnings(warnings: Sequence[str], title: str = "Warnings") -> str:
    if not warnings:
        return _section(title, '<div class="pedp-muted">none</div>', count=0, open_=False)
    items = "".join(f"<li>{_e(w)}</li>" for w in warnings)
    return _section(title, f'<ul class="pedp-warnings">{items}</ul>', count=len(warnings))


def _wrap(kind: str, subtitle: str, body: str, *, style: bool) -> str:
    css = f"<style>{CSS}</style>" if style else ""
    return (
        f'<div class="{CSS_CLASS}">{css}<div class="pedp-header">'
        f'<span class="pedp-type">{_e(kind)}</span><span class="pedp-sub">{_e(subtitle)}</span>'
        f"</div>{body}</div>"
    )


def _clean_svg(text: str) -> str:
    """Return matplotlib's SVG without the XML header, doctype, comments and metadata."""
    text = text[text.index("<svg") :]
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    # matplotlib's stylesheet selects every element of the page: scope it to its figure
    text = text.replace("*{stroke-linejoin", f".{CSS_CLASS} .pedp-figure svg *{{stroke-linejoin")
    return re.sub(r">\s+<", "><", text).strip()


def _svg(draw, figsize: tuple[float, float]) -> str:
    """Draw on a fresh axes (no pyplot, so no figure is left open) and return the SVG."""
    try:
        import matplotlib as mpl
        from matplotlib.figure import Figure
    except ImportError:  # the plots extra is missing: the view has no figure
        return ""
    with mpl.rc_context(_SVG_RC):
        fig = Figure(figsize=figsize)
        ax = style_axes(fig.add_subplot())
        draw(ax)
        buf = io.StringIO()
        fig.savefig(
            buf,
            format="svg",
            facecolor="white",
            bbox_inches="tight",
            pad_inches=0.04,
            metadata={"Date": None},
        )
    return _clean_svg(buf.getvalue())


def _figure(svg: str, caption: str) -> str:
    if not svg:
        return '<div class="pedp-muted">(install matplotlib for the figure)</div>'
    return f'<div class="pedp-figure">{svg}</div><div class="pedp-caption">{_e(caption)}</div>'


# ----------------------------------------------------------------------- EDPResult
def _neighbour_arrays(result: AuditSummary):
    """Every neighbour's epsilon, method and label (the k-hat classes: :func:`khat_counts`)."""
    eps, labels = pointwise_epsilons(result.pointwise, NEIGHBOUR_DIM)
    return eps, neighbour_methods(result.pointwise), labels


def epsilon_svg(
    result: AuditSummary,
    *,
    max_points: int = MAX_POINTS,
    figsize: tuple[float, float] = (4.8, 1.7),
) -> str:
    """A small inline SVG of per-neighbour epsilon, for the HTML view of an audit.

    Points in data order, magenta where k-hat is above the threshold, ringed when refitted,
    epsilon dashed and the worst neighbour labelled; beyond ``max_points`` neighbours, the
    sorted epsilons at log-spaced ranks.

    Returns
    -------
    str
        The ``<svg>`` element, or ``""`` without matplotlib.

    Examples
    --------
    >>> svg = edp.plots.html.epsilon_svg(res)
    >>> svg.startswith("<svg"), len(svg) < 30_000
    (True, True)
    >>> "St. Paul" in svg  # the worst neighbour is labelled
    True
    """
    eps, method, labels = _neighbour_arrays(result)
    finite = np.isfinite(eps)
    bad = np.isin(khat_counts(result).classes, ["bad", "very bad"])
    refit = method == "refit"
    good_color, bad_color = KHAT_COLORS["good"], KHAT_COLORS["bad"]

    def draw(ax):
        if not finite.any():
            ax.text(0.5, 0.5, "no finite ε", ha="center", va="center", transform=ax.transAxes)
            return
        top = float(np.max(eps[finite]))
        if eps.size <= max_points:
            x = np.arange(eps.size)
            for sel, col in ((~bad, good_color), (bad, bad_color)):
                sel = sel & finite
                ax.scatter(x[sel], eps[sel], s=10, color=col, lw=0, zorder=3)
            ring = refit & finite
            if ring.any():
                ax.scatter(
                    x[ring], eps[ring], s=34, facecolors="none", edgecolors=TEXT_COLOR, lw=0.7
                )
            i = int(np.nanargmax(np.where(finite, eps, -np.inf)))
            right = x[i] > 0.7 * max(eps.size - 1, 1)
            offset = (-4 if right else 4, 2)
            annotate(ax, str(labels[i]), (x[i], eps[i]), offset=offset, fontsize="medium")
            ax.set_xlim(-0.5 - 0.02 * eps.size, eps.size - 0.5 + 0.02 * eps.size)
            ax.set_xlabel("neighbour (data order)", color=TEXT_COLOR)
        else:
            order = np.argsort(-np.where(finite, eps, -np.inf), kind="stable")[: finite.sum()]
            ranks = np.unique(np.geomspace(1, order.size, max_points).round().astype(int))
            idx = order[ranks - 1]
            ax.plot(ranks, eps[idx], color=good_color, lw=1.0, zorder=2)
            sel = bad[idx]
            ax.scatter(ranks[sel], eps[idx][sel], s=9, color=bad_color, lw=0, zorder=3)
            ax.set_xscale("log")
            ax.set_xlabel(f"rank of neighbour (largest ε first, of {eps.size})", color=TEXT_COLOR)
        ax.axhline(top, color=REFERENCE_COLOR, ls="--", lw=0.8, zorder=1)
        ax.set_ylim(0, 1.18 * top if top > 0 else 1.0)
        ax.set_ylabel("ε", color=TEXT_COLOR)

    return _svg(draw, figsize)


def _caution(text: str) -> str:
    return f'<span class="pedp-caution">{_e(text)}</span>'


def _epsilon_items(result: AuditSummary, head: Headline) -> list[tuple[str, str]]:
    value = f'<span class="pedp-eps">{_e(_num(result.epsilon))}</span>'
    if head.lower_bound:
        value += " " + _caution("a lower bound")
    items = [("ε (B-EDP)", value)]
    if head.fit:
        items.append(("fit", _caution(head.fit)))
    if head.interval is not None:
        items.append(("90% Monte-Carlo interval", _e(format_interval(head.interval))))
    items.append(("verification", _e(head.verification)))
    if head.caution:
        items.append(("caution", _caution(head.caution)))
    if head.left_out:
        items.append(("left out", _e(head.left_out)))
    items += [("records", _e(line)) for line in head.records]
    items += [("worst neighbour", _e(result.worst_neighbour)), ("bins B", _e(result.bins))]
    neighbours = (
        f"{result.n_neighbours} ({neighbour_kind(result)}); {result.n_samples} posterior "
        f"draws in {getattr(result, 'n_chains', 1)} chain(s); smoothing = {smoothing_text(result)}"
    )
    items.append(("neighbours", _e(neighbours)))
    return items


def _view_warnings(result: AuditSummary, head: Headline) -> tuple[str, ...]:
    """The warnings not shown beside epsilon, and the headline's lower-bound and noise notes."""
    out = [w for w in result.warnings if w not in (head.left_out, head.fit)]
    if head.lower_bound and not any("lower bound" in w for w in out):
        out += [f"Lower bound: {line}" for line in head.limit_lines]
    if head.caution:
        out.append(f"Caution: {head.caution}")
    return tuple(out)


def _parameter_table(result: AuditSummary) -> str:
    ds = flat_parameters(result)
    eps = np.asarray(ds["epsilon"].values, dtype=float)
    names = np.asarray(ds["parameter"].values).astype(str)
    fields = {"worst neighbour": "worst_neighbour", "worst bin": "worst_bin", "bins": "n_bins"}
    cols = {label: ds[field].values for label, field in fields.items() if field in ds}
    if "lower_bound" in ds and bool(np.any(ds["lower_bound"].values)):
        flags = np.asarray(ds["lower_bound"].values, dtype=bool)
        cols = {"lower bound": np.where(flags, "yes", ""), **cols}
    rows: list[list | str] = []
    for shown, note in parameter_rows(ds):
        rows += [[names[i], _num(eps[i]), *(v[i] for v in cols.values())] for i in shown]
        rows += [note] if note else []
    return _table(["parameter", "ε", *cols], rows)


def _khat_section(result: AuditSummary) -> str:
    _, method, _ = _neighbour_arrays(result)
    counts = khat_counts(result)
    table_rows = [(rng, cls, count, f"{pct:.1f}%") for rng, cls, count, pct in counts.rows]
    if counts.not_computed:
        table_rows.append(("not computed", "pruned, refit", counts.not_computed, ""))
    table = _table(["Pareto k̂", "", "count", "pct."], table_rows)
    by_method = Counter(str(m) for m in method if str(m))
    by_count = sorted(by_method.items(), key=lambda mc: (-mc[1], mc[0]))
    body = table + _table(["neighbour posterior", "count"], by_count)
    pw = result.pointwise
    if "status" in pw:
        status = Counter(
            str(s).split(":", 1)[0] for s in np.asarray(pw["status"].values).reshape(-1) if str(s)
        )
        if status:
            body += _table(["refit status", "count"], sorted(status.items()))
    refitted = by_method.get("refit", 0)
    bad = counts.above_threshold
    return _section(
        "Pareto k̂ diagnostic",
        body,
        count=f"{bad} above {counts.threshold:.2f}, {refitted} refitted",
        open_=bad > 0,
    )


def edp_result_html(result: AuditSummary, *, style: bool = True) -> str:
    """The HTML view of an audit result (``EDPResult._repr_html_``).

    Epsilon with its :func:`pymc_edp.report.headline`, then sections: epsilon by parameter,
    by neighbour (:func:`epsilon_svg`), the Pareto k-hat table with the neighbour
    posteriors' methods, and the warnings.

    Parameters
    ----------
    style : bool, default True
        Include the ``<style>`` element (False when nested in another view).

    Returns
    -------
    str
        Two renderings differ only in the figure's random element ids (as matplotlib's).

    Examples
    --------
    >>> page = edp.plots.html.edp_result_html(res)
    >>> page.startswith('<div class="pedp-wrap">'), "<script" in page
    (True, False)
    >>> f"{res.epsilon:.3f}" in page and "St. Paul&#x27;s" in page
    True
    >>> res._repr_html_()[:60] == page[:60]  # what Jupyter shows
    True
    """
    subtitle = (
        f"Empirical DP audit (B-EDP, B = {result.bins}, {result.method}, "
        f"neighbour = {result.neighbour})"
    )
    eps, method, _ = _neighbour_arrays(result)
    n = eps.size
    order = "sorted" if n > MAX_POINTS else "in data order"
    caption = [f"ε of each of the {n} neighbours ({order})"]
    if khat_counts(result).above_threshold:
        caption.append(f"magenta: Pareto k̂ above {result.khat_threshold:.2f}")
    if n <= MAX_POINTS and np.any(method == "refit"):
        caption.append("ringed: refitted")
    caption.append("dashed: ε. res.plot() draws the overview figure.")
    head = headline(result)
    body = (
        _kv(_epsilon_items(result, head))
        + _section(
            "ε by parameter",
            _parameter_table(result),
            count=flat_parameters(result).sizes["parameter"],
        )
        + _section("ε by neighbour", _figure(epsilon_svg(result), "; ".join(caption)), count=n)
        + _khat_section(result)
        + _warnings(_view_warnings(result, head))
    )
    return _wrap("pymc_edp.EDPResult", subtitle, body, style=style)


# ---------------------------------------------------------------- PriorTuningResult
def search_svg(result: TuningSummary, *, figsize: tuple[float, float] = (4.8, 1.8)) -> str:
    """A small inline SVG of the prior-strength search: epsilon at every trial value.

    With error bars (MCSE), the target dashed and the confirmation marked; a log scale when
    the values span more than a factor 10.

    Returns
    -------
    str
        The ``<svg>`` element, or ``""`` without matplotlib or without ``value`` and
        ``epsilon`` in ``result.trials``.

    Examples
    --------
    Any object with the attributes it reads will do:

    >>> from types import SimpleNamespace
    >>> trials = xr.Dataset({"value": ("trial", [1.73, 1.2]), "epsilon": ("trial", [0.45, 0.3])})
    >>> tuned = SimpleNamespace(trials=trials, hyperparameter="sigma0", target_epsilon=0.3,
    ...                         value=1.2, epsilon=0.31)
    >>> edp.plots.html.search_svg(tuned).startswith("<svg")
    True
    """
    trials = result.trials
    if "value" not in trials or "epsilon" not in trials:
        return ""
    x = np.asarray(trials["value"].values, dtype=float)
    y = np.asarray(trials["epsilon"].values, dtype=float)
    se = np.asarray(trials["mcse"].values, dtype=float) if "mcse" in trials else None
    name = result.hyperparameter or "prior strength"

    def draw(ax):
        ok = np.isfinite(x) & np.isfinite(y) & (x > 0)
        yerr = None if se is None else np.nan_to_num(se[ok])
        ax.errorbar(
            x[ok], y[ok], yerr=yerr, fmt="o", ms=3.5, color=color(0), lw=0.8, capsize=2, zorder=3
        )
        ax.axhline(result.target_epsilon, color=REFERENCE_COLOR, ls="--", lw=0.8)
        ax.scatter([result.value], [result.epsilon], marker="D", s=22, color=color(1), zorder=4)
        if ok.any() and x[ok].max() > 10 * x[ok].min():  # a wide search reads best in log
            from matplotlib.ticker import FuncFormatter

            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
            ax.minorticks_off()
        ax.set_xlabel(name, color=TEXT_COLOR)
        ax.set_ylabel("ε", color=TEXT_COLOR)

    return _svg(draw, figsize)


def _dataset_table(ds, dim: str, spec: str = ".4g") -> str:
    names = list(ds.data_vars)
    if not names or dim not in ds.dims:
        return '<div class="pedp-muted">(empty)</div>'
    index = np.asarray(ds[dim].values) if dim in ds.coords else np.arange(ds.sizes[dim])
    cols = [np.asarray(ds[v].values).reshape(ds.sizes[dim], -1)[:, 0] for v in names]
    rows = [
        [index[i], *(_num(c[i], spec) if c.dtype.kind in "iuf" else str(c[i]) for c in cols)]
        for i in range(min(ds.sizes[dim], MAX_TABLE_ROWS))
    ]
    note = ""
    if ds.sizes[dim] > MAX_TABLE_ROWS:
        note = f'<div class="pedp-caption">first {MAX_TABLE_ROWS} of {ds.sizes[dim]}</div>'
    return _table([dim, *names], rows) + note


def tuning_result_html(result: TuningSummary, *, style: bool = True) -> str:
    """The HTML view of a prior-tuning result (``PriorTuningResult._repr_html_``).

    The tuned value and its epsilon against the target, then sections: the search
    (:func:`search_svg`), the utility cost, the trials, the confirmation audit's own view
    and the warnings. ``style`` as in :func:`edp_result_html`.

    Examples
    --------
    >>> page = edp.plots.html.tuning_result_html(tuned)
    >>> "sigma0" in page and "0.3100" in page and "a caveat" in page
    True
    """
    name = result.hyperparameter or "strength"
    n_trials = result.trials.sizes.get("trial", 0)
    tuned = f'<span class="pedp-eps">{_e(_num(result.value, ".6g"))}</span> ' + _e(
        f"(untuned {_num(result.initial_value, '.6g')}; ε {result.direction} in {name})"
    )
    text = {  # escaped below
        "ε (confirmation)": f"{_num(result.epsilon, '.4f')} ± {_num(result.mcse, '.4f')} "
        f"(MCSE, {result.method})",
        "target ε": f"{_num(result.target_epsilon, '.4f')} (relative error "
        f"{100 * result.relative_error:+.1f}%)",
        "untuned ε": _num(result.initial_epsilon, ".4f"),
        "search": f"{n_trials} trial values, stopped on {result.stopped}"
        + ("" if result.monotone else "; ε NOT monotone over the evaluated values"),
    }
    items = [(name, tuned), *((key, _e(value)) for key, value in text.items())]
    utility = flat_view(result.utility.children).drop_vars("var_name", errors="ignore")
    body = (
        _kv(items)
        + _section(
            "Search",
            _figure(
                search_svg(result),
                f"ε at each trial value of {name} (error bars: MCSE); dashed: the target; "
                "diamond: the confirmation at the tuned value.",
            ),
            count=n_trials,
        )
        + _section(
            "Utility cost (untuned → tuned)",
            _dataset_table(utility, "parameter"),
            count=utility.sizes.get("parameter", 0),
        )
        + _section("Trials", _dataset_table(result.trials, "trial"), count=n_trials, open_=False)
    )
    audit = getattr(result, "audit", None)
    if audit is not None and hasattr(audit, "release"):  # tuned to a release target
        # the release audit's own view, nested: the page already has the stylesheet
        nested = audit._repr_html_().replace(f"<style>{CSS}</style>", "", 1)
        body += _section("Confirmation release audit", nested, open_=False)
    elif audit is not None:
        body += _section("Confirmation audit", edp_result_html(audit, style=False), open_=False)
    body += _warnings(tuple(result.warnings))
    return _wrap("pymc_edp.PriorTuningResult", tuning_heading(result), body, style=style)

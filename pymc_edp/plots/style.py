"""The look shared by every pymc_edp figure: ArviZ's ``arviz-whitegrid`` on the axes drawn.

Every plot gets its axes, labels, legend, reference lines and annotations from here: ArviZ's
colour cycle, a light grid behind the data, no top or right frame, no tick marks, frameless
legends. Global ``rcParams`` are never changed; matplotlib (the ``plots`` extra) is imported
only when a figure is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from types import ModuleType

    from matplotlib.axes import Axes
    from matplotlib.legend import Legend
    from matplotlib.lines import Line2D
    from matplotlib.text import Annotation

__all__ = [
    "ANNOTATION_FONTSIZE",
    "ARVIZ_COLORS",
    "GRID_COLOR",
    "LEGEND_FONTSIZE",
    "REFERENCE_COLOR",
    "SPINE_COLOR",
    "TEXT_COLOR",
    "add_legend",
    "annotate",
    "color",
    "get_axes",
    "place_labels",
    "reference_line",
    "require_matplotlib",
    "set_labels",
    "style_axes",
]

#: The colour cycle of ArviZ's default styles (``arviz-whitegrid`` / ``arviz-darkgrid``).
ARVIZ_COLORS = (
    "#2a2eec",
    "#fa7c17",
    "#328c06",
    "#c10c90",
    "#933708",
    "#65e5f3",
    "#e6e135",
    "#1ccd6a",
    "#bd8ad5",
    "#b16b57",
)
#: Text, tick labels and annotations (ArviZ's ``text.color``).
TEXT_COLOR = "0.15"
#: Grid lines, drawn behind the data.
GRID_COLOR = "0.88"
#: The left and bottom frame lines.
SPINE_COLOR = "0.75"
#: Dashed reference lines (an overall epsilon, a limit, a threshold).
REFERENCE_COLOR = "0.45"
#: Legend entries and legend titles.
LEGEND_FONTSIZE = 8
#: Point labels (record ids, epsilon at a target delta).
ANNOTATION_FONTSIZE = 9


def require_matplotlib() -> ModuleType:
    """Import :mod:`matplotlib.pyplot`; an ImportError that says how to install it if missing.

    Examples
    --------
    >>> edp.plots.style.require_matplotlib().__name__
    'matplotlib.pyplot'
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # the extra is missing; tested by hiding matplotlib.pyplot
        raise ImportError(
            "pymc_edp's plots need matplotlib, an optional dependency. Install it with "
            '`pip install "pymc-edp[plots]"` (or `pip install matplotlib`).'
        ) from err
    return plt


def color(index: int) -> str:
    """The ``index``-th colour of :data:`ARVIZ_COLORS` (wrapping around after ten).

    Examples
    --------
    >>> edp.plots.style.color(0), edp.plots.style.color(11)
    ('#2a2eec', '#fa7c17')
    """
    return ARVIZ_COLORS[int(index) % len(ARVIZ_COLORS)]


def style_axes(ax: Axes, *, grid: bool = True) -> Axes:
    """Give ``ax`` the ArviZ look, in place, and return it.

    ``grid``: a light grid and an open frame (lines, points), or neither (heatmaps).

    Examples
    --------
    >>> ax = edp.plots.style.style_axes(plt.figure().add_subplot())
    >>> ax.spines["top"].get_visible(), ax.spines["left"].get_visible()
    (False, True)
    >>> plt.close("all")
    """
    ax.set_axisbelow(True)
    if grid:
        ax.grid(True, color=GRID_COLOR, linewidth=0.8)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        for side in ("left", "bottom"):
            ax.spines[side].set_color(SPINE_COLOR)
    else:
        ax.grid(False)
        for spine in ax.spines.values():
            spine.set_visible(False)
    ax.tick_params(which="both", length=0, colors=TEXT_COLOR)
    return ax


def get_axes(
    ax: Axes | None = None,
    *,
    figsize: tuple[float, float] | None = None,
    default_figsize: tuple[float, float] = (6.4, 4.0),
    grid: bool = True,
) -> Axes:
    """``ax``, or the axes of a new figure (constrained layout), styled by :func:`style_axes`.

    A new figure is ``figsize`` inches, or ``default_figsize`` when None.

    Examples
    --------
    >>> ax = edp.plots.style.get_axes(figsize=(3, 2))
    >>> ax.figure.get_size_inches().tolist()
    [3.0, 2.0]
    >>> plt.close("all")
    """
    if ax is None:
        plt = require_matplotlib()
        _, ax = plt.subplots(figsize=figsize or default_figsize, layout="constrained")
    return style_axes(ax, grid=grid)


def get_axes_grid(nrows: int, ncols: int, *, figsize: tuple[float, float] | None = None):
    """A new figure of ``(nrows, ncols)`` styled axes (constrained layout).

    Examples
    --------
    >>> axes = edp.plots.style.get_axes_grid(2, 2, figsize=(6, 4))
    >>> axes.shape
    (2, 2)
    >>> plt.close("all")
    """
    plt = require_matplotlib()
    _, axes = plt.subplots(nrows, ncols, figsize=figsize, layout="constrained", squeeze=False)
    for ax in axes.flat:
        style_axes(ax)
    return axes


def set_labels(
    ax: Axes, xlabel: str | None = None, ylabel: str | None = None, title: str | None = None
) -> Axes:
    """Set the axis labels and the title (``None`` or ``""`` leaves one unset); return ``ax``.

    Examples
    --------
    >>> ax = edp.plots.style.set_labels(plt.figure().add_subplot(), "ε", "δ", title=None)
    >>> ax.get_xlabel(), ax.get_ylabel(), ax.get_title()
    ('ε', 'δ', '')
    >>> plt.close("all")
    """
    if xlabel:
        ax.set_xlabel(xlabel, color=TEXT_COLOR)
    if ylabel:
        ax.set_ylabel(ylabel, color=TEXT_COLOR)
    if title:
        ax.set_title(title, color=TEXT_COLOR)
    return ax


def add_legend(ax: Axes, **kwargs: Any) -> Legend:
    """Draw the legend of ``ax``: frameless, small type, at the best place.

    ``kwargs`` override those defaults in :meth:`~matplotlib.axes.Axes.legend`.

    Examples
    --------
    >>> ax = plt.figure().add_subplot()
    >>> _ = ax.plot([0, 1], label="a line")
    >>> edp.plots.style.add_legend(ax, title="series").get_frame_on()
    False
    >>> plt.close("all")
    """
    options = {"fontsize": LEGEND_FONTSIZE, "title_fontsize": LEGEND_FONTSIZE, "loc": "best"}
    return ax.legend(**{"frameon": False, **options, **kwargs})


def reference_line(
    ax: Axes,
    value: float,
    *,
    vertical: bool = False,
    color: str = REFERENCE_COLOR,
    label: str | None = None,
    **kwargs: Any,
) -> Line2D:
    """Draw a thin dashed reference line across ``ax`` at ``value`` (y, or x if ``vertical``).

    ``kwargs`` go to :meth:`~matplotlib.axes.Axes.axhline` or ``axvline``.

    Examples
    --------
    >>> line = edp.plots.style.reference_line(plt.figure().add_subplot(), 0.5)
    >>> list(line.get_ydata()), line.get_linestyle()
    ([0.5, 0.5], '--')
    >>> plt.close("all")
    """
    options: dict[str, Any] = {"color": color, "ls": "--", "lw": 0.9, "zorder": 2}
    if label is not None:
        options["label"] = label
    options |= kwargs
    return (ax.axvline if vertical else ax.axhline)(value, **options)


def annotate(
    ax: Axes,
    text: str,
    xy: tuple[float, float],
    *,
    offset: tuple[float, float] = (5.0, 4.0),
    color: str = TEXT_COLOR,
    **kwargs: Any,
) -> Annotation:
    """Label the point ``xy`` (data coordinates) with ``text``, offset by ``offset`` points.

    The text sits above the point, to its right (left for a negative x offset); ``kwargs``
    go to :meth:`~matplotlib.axes.Axes.annotate`.

    Examples
    --------
    >>> from pymc_edp.plots.style import annotate
    >>> note = annotate(plt.figure().add_subplot(), "id 7", (1.0, 2.0), offset=(-5, 4))
    >>> note.get_text(), note.xy, note.get_horizontalalignment()
    ('id 7', (1.0, 2.0), 'right')
    >>> plt.close("all")
    """
    options: dict[str, Any] = {
        "xytext": offset,
        "textcoords": "offset points",
        "ha": "left" if offset[0] >= 0 else "right",
        "va": "bottom",
        "fontsize": ANNOTATION_FONTSIZE,
        "color": color,
    }
    return ax.annotate(text, xy=xy, **(options | kwargs))


#: Offsets (points) tried in turn for a point's label: above right first, as ``annotate``.
_LABEL_OFFSETS = ((5, 4), (-5, 4), (5, -4), (-5, -4), (9, -5), (-9, -5), (0, 9), (0, -11))


def place_labels(
    ax: Axes,
    x: np.ndarray,
    y: np.ndarray,
    which,
    texts,
    *,
    marker_size: float = 28.0,
    **kwargs: Any,
) -> list[Annotation]:
    """Label the points ``which`` of ``(x, y)`` where no label covers a marker or another label.

    Each label takes the first offset of :data:`_LABEL_OFFSETS` whose text box (estimated
    from the font size) touches no marker (``marker_size`` as ``scatter``'s ``s``) and no
    label placed before (else the first offset). The axes' limits are fixed first.

    Parameters
    ----------
    x, y : array_like
        Every marker drawn, in data coordinates.
    which : sequence of int
        The points to label, most important first.
    **kwargs
        Passed to :func:`annotate`.

    Examples
    --------
    >>> ax = plt.figure().add_subplot()
    >>> x, y = np.array([0.0, 0.1, 5.0]), np.array([1.0, 1.03, 0.0])
    >>> _ = ax.scatter(x, y)
    >>> notes = edp.plots.style.place_labels(ax, x, y, [0, 1], ["a", "b"])
    >>> [(n.get_text(), n.xyann) for n in notes]  # "a" above right would cover the next point
    [('a', (-5, 4)), ('b', (5, 4))]
    >>> plt.close("all")
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ax.autoscale_view()
    ax.set_xlim(ax.get_xlim())
    ax.set_ylim(ax.get_ylim())
    px = ax.figure.dpi / 72.0
    finite = np.isfinite(x) & np.isfinite(y)
    centres = ax.transData.transform(np.column_stack([x[finite], y[finite]]))
    radius = 0.5 * np.sqrt(marker_size) * px + 1.0
    fontsize = float(kwargs.get("fontsize", ANNOTATION_FONTSIZE))
    placed: list[tuple[float, float, float, float]] = []
    notes = []
    for i, text in zip(which, texts, strict=True):
        anchor = ax.transData.transform([[x[i], y[i]]])[0]
        width, height = (0.62 * fontsize * len(str(text)) + 2) * px, 1.25 * fontsize * px
        chosen = _LABEL_OFFSETS[0]
        for dx, dy in _LABEL_OFFSETS:
            left = anchor[0] + dx * px - (width if dx < 0 else width / 2 if dx == 0 else 0)
            bottom = anchor[1] + dy * px - (height if dy < 0 else 0)
            box = (left, bottom, left + width, bottom + height)
            if not _touches_markers(box, centres, radius) and not any(
                _overlap(box, other) for other in placed
            ):
                chosen = (dx, dy)
                placed.append(box)
                break
        dx, dy = chosen
        options = {"ha": "center" if dx == 0 else None, "va": "top" if dy < 0 else "bottom"}
        options = {k: v for k, v in options.items() if v is not None}
        notes.append(annotate(ax, str(text), (x[i], y[i]), offset=chosen, **options, **kwargs))
    return notes


def _touches_markers(box, centres: np.ndarray, radius: float) -> bool:
    """Whether the rectangle ``box`` (display units) comes within ``radius`` of any centre."""
    if not centres.size:
        return False
    nearest_x = np.clip(centres[:, 0], box[0], box[2])
    nearest_y = np.clip(centres[:, 1], box[1], box[3])
    return bool(np.any(np.hypot(centres[:, 0] - nearest_x, centres[:, 1] - nearest_y) < radius))


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

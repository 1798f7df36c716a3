"""The shared look of :mod:`pymc_edp.plots.style`, and that every plot function uses it."""

import inspect
import sys

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_hex, to_rgba
from support import NOT_CONVERGED

import pymc_edp as edp
import pymc_edp.query as edpq
from pymc_edp import plots
from pymc_edp import plots as edp_plots
from pymc_edp.datasets import load_eight_schools
from pymc_edp.plots import audit as audit_plots
from pymc_edp.plots import query as query_plots
from pymc_edp.plots import style


def test_color_cycles_through_arviz_colours():
    assert [style.color(i) for i in range(10)] == list(style.ARVIZ_COLORS)
    assert style.color(10) == style.ARVIZ_COLORS[0]
    assert plots.ARVIZ_COLORS is style.ARVIZ_COLORS
    assert plots.KHAT_COLORS == {
        "good": style.ARVIZ_COLORS[0],
        "bad": style.ARVIZ_COLORS[3],
        "very bad": style.ARVIZ_COLORS[4],
        "not computed": style.REFERENCE_COLOR,
    }


def test_get_axes_makes_a_styled_figure():
    ax = style.get_axes(default_figsize=(5.0, 3.0))
    assert ax.figure.axes == [ax]
    np.testing.assert_allclose(ax.figure.get_size_inches(), [5.0, 3.0])
    assert ax.figure.get_layout_engine() is not None  # constrained layout
    ax = style.get_axes(figsize=(2.0, 1.0), default_figsize=(5.0, 3.0))
    np.testing.assert_allclose(ax.figure.get_size_inches(), [2.0, 1.0])
    _assert_grid_look(ax)


def test_get_axes_styles_given_axes_in_place():
    _, given = plt.subplots()
    assert style.get_axes(given, figsize=(1.0, 1.0)) is given
    np.testing.assert_allclose(given.figure.get_size_inches(), plt.rcParams["figure.figsize"])
    _assert_grid_look(given)


def test_style_axes_without_grid_hides_grid_and_frame():
    ax = style.style_axes(plt.figure().add_subplot(), grid=False)
    assert not any(line.get_visible() for line in ax.get_xgridlines() + ax.get_ygridlines())
    assert not any(spine.get_visible() for spine in ax.spines.values())
    assert ax.xaxis.get_major_ticks()[0].tick1line.get_markersize() == 0


def test_set_labels_sets_only_given_text():
    ax = plt.figure().add_subplot()
    ax.set_title("kept")
    style.set_labels(ax, "x", "", None)
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("x", "", "kept")
    assert to_rgba(ax.xaxis.label.get_color()) == to_rgba(style.TEXT_COLOR)


def test_add_legend_defaults_and_overrides():
    ax = plt.figure().add_subplot()
    ax.plot([0, 1], label="line")
    legend = style.add_legend(ax, title="series")
    assert not legend.get_frame_on()
    assert legend.get_texts()[0].get_fontsize() == style.LEGEND_FONTSIZE
    assert legend.get_title().get_fontsize() == style.LEGEND_FONTSIZE
    assert style.add_legend(ax, frameon=True, fontsize=12).get_texts()[0].get_fontsize() == 12


def test_reference_line_and_annotate():
    ax = plt.figure().add_subplot()
    h = style.reference_line(ax, 0.3, label="limit")
    v = style.reference_line(ax, 2.0, vertical=True, color="red", lw=2)
    np.testing.assert_allclose(h.get_ydata(), [0.3, 0.3])
    np.testing.assert_allclose(v.get_xdata(), [2.0, 2.0])
    assert (h.get_linestyle(), h.get_color()) == ("--", style.REFERENCE_COLOR)
    assert h.get_label() == "limit"
    assert (v.get_color(), v.get_linewidth()) == ("red", 2)
    assert v.get_label().startswith("_")  # no legend entry without a label
    left = style.annotate(ax, "a", (1.0, 1.0), offset=(-5, 2))
    right = style.annotate(ax, "b", (1.0, 1.0))
    assert (left.get_horizontalalignment(), right.get_horizontalalignment()) == ("right", "left")
    assert right.get_fontsize() == style.ANNOTATION_FONTSIZE


def test_require_matplotlib_explains_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pymc-edp\[plots\]"):
        style.require_matplotlib()
    with pytest.raises(ImportError, match=r"pymc-edp\[plots\]"):
        style.get_axes()


# ----------------------------------------------------------- every plot has the one look
def _assert_grid_look(ax):
    gridlines = ax.get_xgridlines() + ax.get_ygridlines()
    assert gridlines and all(line.get_visible() for line in gridlines)
    assert to_hex(gridlines[0].get_color()) == to_hex(style.GRID_COLOR)
    assert ax.get_axisbelow() is True
    assert not ax.spines["top"].get_visible() and not ax.spines["right"].get_visible()
    assert to_hex(ax.spines["left"].get_edgecolor()) == to_hex(style.SPINE_COLOR)
    assert ax.xaxis.get_major_ticks()[0].tick1line.get_markersize() == 0


def _assert_text_and_legend(ax):
    for label in (ax.xaxis.label, ax.yaxis.label, ax.title):
        if label.get_text():
            assert to_hex(label.get_color()) == to_hex(style.TEXT_COLOR)
    legend = ax.get_legend()
    if legend is not None:
        assert not legend.get_frame_on()
        assert {t.get_fontsize() for t in legend.get_texts()} == {style.LEGEND_FONTSIZE}


def _data_colours(ax):
    """The non-grey colours of the lines, markers and patches drawn on ``ax``."""
    colours = [line.get_color() for line in ax.lines]
    for container in ax.containers:  # an error bar's data line
        colours += [line.get_color() for line in getattr(container, "lines", ())[:1]]
    for coll in ax.collections:
        colours += list(coll.get_facecolor()) + list(coll.get_edgecolor())
    colours += [c for patch in ax.patches for c in (patch.get_facecolor(), patch.get_edgecolor())]
    colours = {to_hex(c) for c in colours if to_rgba(c)[3] > 0}
    return {c for c in colours if len({c[1:3], c[3:5], c[5:7]}) > 1}  # greys excluded


AUDIT_PLOTS = {
    "plot_pointwise_epsilon": lambda r: plots.plot_pointwise_epsilon(r),
    "plot_epsilon_curve": lambda r: plots.plot_epsilon_curve(r, bins=(5, 10, 20)),
    "plot_epsilon_intervals": lambda r: plots.plot_epsilon_intervals(r),
    "plot_neighbour_posterior": lambda r: plots.plot_neighbour_posterior(r),
    "plot_delta_profile": lambda r: plots.plot_delta_profile(r),
}
QUERY_PLOTS = {
    "plot_delta": lambda q: edp_plots.plot_delta(q, kind=["delta", "delta_star"], target=0.01),
    "plot_delta_i": lambda q: edp_plots.plot_delta_i(q, top=3),
    "plot_densities": lambda q: edp_plots.plot_densities(q),
    "plot_noise_kernel": lambda q: edp_plots.plot_noise_kernel(
        edpq.noise_kernel(q, 1.0), n_samples=2_000
    ),
}


def test_every_plot_function_is_checked_here():
    # plot_overview lays out the others (checked in test_audit.py::test_plot_overview*)
    assert set(AUDIT_PLOTS) | set(QUERY_PLOTS) | {"plot_bin_log_ratios", "plot_overview"} == {
        n for n in plots.__all__ if n.startswith("plot_")
    }
    assert set(QUERY_PLOTS) == set(query_plots.__all__)


@pytest.mark.parametrize("name", sorted(AUDIT_PLOTS))
def test_audit_plots_share_the_look(diag_result, name):
    ax = AUDIT_PLOTS[name](diag_result)
    _assert_grid_look(ax)
    _assert_text_and_legend(ax)
    colours = _data_colours(ax)
    assert colours and colours <= set(style.ARVIZ_COLORS)


@NOT_CONVERGED
def test_heatmap_has_the_frameless_look():
    res = edp.audit(
        load_eight_schools(), var_names=["mu", "tau"], bins=10, method="psis", progressbar=False
    )
    ax = plots.plot_bin_log_ratios(res)  # two parameters: a heatmap
    assert not any(spine.get_visible() for spine in ax.spines.values())
    assert not any(line.get_visible() for line in ax.get_xgridlines() + ax.get_ygridlines())
    assert ax.yaxis.get_major_ticks()[0].tick1line.get_markersize() == 0
    _assert_text_and_legend(ax)


@pytest.mark.parametrize("name", sorted(QUERY_PLOTS))
def test_query_plots_share_the_look(query_result, name):
    ax = QUERY_PLOTS[name](query_result)
    np.testing.assert_allclose(ax.figure.get_size_inches(), [6.0, 4.0])
    _assert_grid_look(ax)
    _assert_text_and_legend(ax)
    colours = _data_colours(ax)
    assert style.ARVIZ_COLORS[0] in colours and colours <= set(style.ARVIZ_COLORS)


@pytest.mark.parametrize("module", [audit_plots, query_plots], ids=["audit", "query"])
def test_style_code_lives_only_in_the_style_module(module):
    source = inspect.getsource(module)
    for call in (
        "plt.subplots",
        ".spines",
        ".grid(",
        ".legend(",
        "tick_params",
        "set_xlabel",
        "set_ylabel",
        "set_title",
        "axhline",
        "ax.annotate",
        '"C0"',
        '"C1"',
    ):
        assert call not in source, f"{module.__name__} styles axes itself: {call}"

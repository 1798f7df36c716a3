"""The audit plots of :mod:`pymc_edp.plots`: each draws the numbers it is given."""

import dataclasses
import sys

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr
from matplotlib.colors import to_hex
from support import NOT_CONVERGED

import pymc_edp as edp
from pymc_edp import plots
from pymc_edp.base import binning
from pymc_edp.base.mcse import normalised_weights
from pymc_edp.datasets import load_eight_schools
from pymc_edp.diagnostics import bin_log_ratios, epsilon_interval
from pymc_edp.plots import KHAT_COLORS, plot_pointwise_epsilon
from pymc_edp.plots.style import REFERENCE_COLOR
from pymc_edp.report import KhatCounts


def _with_pointwise(res, **updates):
    pw = res.pointwise.copy()
    for name, values in updates.items():
        pw[name] = ("neighbour", np.asarray(values))
    return dataclasses.replace(res, pointwise=pw)


def _points(ax, prefixes=("good", "ok", "bad")):
    """(x, y) of the scatter points whose legend label starts with one of ``prefixes``."""
    xy = [c.get_offsets() for c in ax.collections if c.get_label().startswith(prefixes)]
    xy = np.concatenate(xy)
    return xy[np.argsort(xy[:, 0], kind="stable")]


def _dashed(ax):
    return [line for line in ax.lines if line.get_linestyle() == "--"]


def test_public_api_is_complete():
    public = {
        name for name in dir(plots.audit) if (name.startswith("plot_") or name == "KHAT_COLORS")
    }
    assert public <= set(plots.__all__)
    assert {name for name in plots.audit.__all__ if name.startswith("plot_")} == {
        "plot_bin_log_ratios",
        "plot_delta_profile",
        "plot_epsilon_curve",
        "plot_epsilon_intervals",
        "plot_neighbour_posterior",
        "plot_overview",
        "plot_pointwise_epsilon",
    }
    for name in plots.__all__:
        assert getattr(plots, name) is not None
    assert edp.plots.plot_epsilon_curve is plots.audit.plot_epsilon_curve


# ----------------------------------------------------------------- plot_pointwise_epsilon
def test_pointwise_draws_every_record_and_labels_top_records(result):
    ax = plot_pointwise_epsilon(result)
    assert ax.figure.axes == [ax]  # a new figure, of the documented default size
    np.testing.assert_allclose(ax.figure.get_size_inches(), [9.0, 4.2])
    eps = result.pointwise["epsilon"]
    ids = eps["neighbour"].values
    # one point per record, at (its id, its epsilon)
    np.testing.assert_allclose(_points(ax), np.column_stack([ids, eps.values]))
    # a dashed horizontal line at the overall epsilon
    (overall,) = _dashed(ax)
    np.testing.assert_allclose(overall.get_ydata(), [eps.max()] * 2)
    assert overall.get_color() == REFERENCE_COLOR
    # the five most exposed records are labelled with their id, at their point
    texts = [t.get_text() for t in ax.texts]
    top = ids[np.argsort(-eps.values)[:5]]
    assert texts == [str(v) for v in top]
    assert "108" in texts  # the outlier y[7]
    for t in ax.texts:
        assert t.xy[0] == float(t.get_text())
        assert t.xy[1] == pytest.approx(float(eps.sel(neighbour=int(t.get_text()))))
    assert ax.get_ylim()[0] == 0
    assert ax.get_xlabel() == "neighbour (25 records)"
    assert ax.get_ylabel() == "ε of neighbour"
    assert ax.get_title() == f"Per-record ε (max {float(eps.max()):.3g}, B = 10)"
    assert ax.get_legend().get_title().get_text() == "Pareto k-hat"


def test_uses_given_axes_and_label_count(result):
    _, ax = plt.subplots()
    out = plot_pointwise_epsilon(result, ax=ax, labels=2, title=False, legend=False)
    assert out is ax
    assert len(ax.texts) == 2
    assert ax.get_title() == ""
    assert ax.get_legend() is None
    assert len(plot_pointwise_epsilon(result, ax=plt.figure().add_subplot(), labels=0).texts) == 0


def test_custom_title_and_xlabel(result):
    ax = plot_pointwise_epsilon(result, title="my title", xlabel="patient")
    assert ax.get_title() == "my title"
    assert ax.get_xlabel() == "patient"


def test_points_coloured_by_khat_class(result):
    """The figure's classes are the printout's and the HTML's (one classifier)."""
    n = result.n_neighbours
    thr = result.khat_threshold
    khat = np.full(n, 0.1)
    khat[:3] = (thr + 1) / 2  # bad
    khat[3:5] = 1.3  # very bad
    khat[5] = np.nan  # not computed (pruned, refitted)
    res = _with_pointwise(result, pareto_k=khat)
    ax = plot_pointwise_epsilon(res)
    colours = {}
    for coll in ax.collections:
        cls = coll.get_label().split(" (")[0]
        if coll.get_offsets().shape[0] and cls in KHAT_COLORS:
            colours[cls] = (to_hex(coll.get_facecolors()[0]), coll.get_offsets().shape[0])
    assert colours == {
        "good": (to_hex(KHAT_COLORS["good"]), n - 6),
        "bad": (to_hex(KHAT_COLORS["bad"]), 3),
        "very bad": (to_hex(KHAT_COLORS["very bad"]), 2),
        "not computed": (to_hex(KHAT_COLORS["not computed"]), 1),
    }
    (worse,) = [c for c in ax.collections if c.get_label().startswith("very bad")]
    ids = res.pointwise["neighbour"].values
    np.testing.assert_allclose(worse.get_offsets()[:, 0], ids[3:5])
    np.testing.assert_allclose(worse.get_offsets()[:, 1], res.pointwise["epsilon"].values[3:5])
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"bad ({thr:.2f} < k ≤ 1): 3" in legend and "very bad (k > 1): 2" in legend
    # the same counts as the printed table (percentages of the neighbours with a k-hat)
    text = repr(res)
    assert f"({thr:.2f}, 1]   (bad)" in text and "not computed (pruned, refit)" in text


def test_khat_class_boundaries():
    """The figures colour by the report's classes (pymc_edp.report.khat_counts)."""
    assert "khat_class" not in plots.__all__ and not hasattr(plots, "khat_class")
    k = np.array([-np.inf, 0.5, 0.69, 0.7, 1.0, 1.2, np.nan])
    assert set(KHAT_COLORS) == set(KhatCounts.from_values(k, 0.69).as_dict())
    assert KhatCounts.from_values(k, 0.69).classes.tolist() == [
        "good",
        "good",
        "good",
        "bad",
        "bad",
        "very bad",
        "not computed",
    ]


def test_labels_cover_no_marker_and_the_maximum_is_named():
    """Issue 21: a label ("13") under a marker, and a dashed line without a name.

    The demo's crowded case, drawn and measured: no label's rendered box comes within a
    marker's radius of any point, no two labels overlap, and the dashed line is in the legend.
    """
    rng = np.random.default_rng(0)
    n = 69
    eps = np.abs(rng.normal(0.3, 0.15, n))
    eps[[12, 14, 22, 41, 48]] = [0.62, 0.69, 0.70, 0.97, 0.80]  # near-neighbours, as the demo's
    khat = np.full(n, 0.2)
    fig, ax = plt.subplots(figsize=(9.0, 4.4))
    pw = xr.Dataset(
        {"epsilon": ("neighbour", eps), "pareto_k": ("neighbour", khat)},
        coords={"neighbour": np.arange(1, n + 1)},
    )
    res = type("R", (), {"pointwise": pw, "khat_threshold": 0.7, "bins": 20})()
    plot_pointwise_epsilon(res, ax=ax, labels=5)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    centres = ax.transData.transform(np.column_stack([np.arange(1, n + 1), eps]))
    radius = 0.5 * np.sqrt(28) * fig.dpi / 72
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert len(boxes) == 5
    for box in boxes:
        nx = np.clip(centres[:, 0], box.x0, box.x1)
        ny = np.clip(centres[:, 1], box.y0, box.y1)
        assert np.hypot(centres[:, 0] - nx, centres[:, 1] - ny).min() >= radius - 1
    for a in range(5):
        for b in range(a + 1, 5):
            assert not boxes[a].overlaps(boxes[b])
    assert f"ε = max over records ({eps.max():.3g})" in ax.get_legend_handles_labels()[1]
    plt.close(fig)


def test_refitted_records_are_ringed(result):
    method = np.array(["psis"] * result.n_neighbours, dtype=object)
    method[[0, 4]] = "refit"
    ax = plot_pointwise_epsilon(_with_pointwise(result, method=method.astype(str)))
    rings = [c for c in ax.collections if c.get_label().startswith("refitted")]
    assert len(rings) == 1
    pw = result.pointwise
    np.testing.assert_allclose(
        rings[0].get_offsets(),
        np.column_stack([pw["neighbour"].values[[0, 4]], pw["epsilon"].values[[0, 4]]]),
    )
    assert rings[0].get_label() == "refitted: 2"


def test_string_labels_use_positions(result):
    pw = result.pointwise.assign_coords(neighbour=[f"id-{i}" for i in range(result.n_neighbours)])
    ax = plot_pointwise_epsilon(dataclasses.replace(result, pointwise=pw), labels=1)
    (text,) = ax.texts
    assert text.get_text().startswith("id-")
    assert text.xy[0] == int(text.get_text()[3:])
    assert ax.get_xlabel() == f"record position ({result.n_neighbours} neighbours)"
    np.testing.assert_allclose(_points(ax)[:, 0], np.arange(result.n_neighbours))


def test_stand_in_without_khat_and_with_parameter_dim():
    class StandIn:
        khat_threshold = 0.7
        pointwise = xr.Dataset(
            {"epsilon": (("neighbour", "parameter"), [[0.1, 0.3], [0.2, 0.05], [0.0, 0.4]])},
            coords={"neighbour": [1, 2, 3]},
        )

    ax = plot_pointwise_epsilon(StandIn(), labels=1)
    (text,) = ax.texts
    assert text.get_text() == "3"
    # the maximum over parameters, at the neighbour ids
    np.testing.assert_allclose(ax.collections[0].get_offsets(), [[1, 0.3], [2, 0.2], [3, 0.4]])
    assert ax.get_title() == "Per-record ε (max 0.4)"  # no bins attribute
    assert ax.get_legend() is None  # no k-hat, no legend


def test_rejects_missing_dim(result):
    with pytest.raises(ValueError, match="no neighbour dim"):
        plot_pointwise_epsilon(result, dim="record")


def test_saves_png(result, tmp_path):
    ax = plot_pointwise_epsilon(result)
    path = tmp_path / "eps.png"
    ax.figure.savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_clear_error_without_matplotlib(result, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pymc-edp\[plots\]"):
        plot_pointwise_epsilon(result)


# ------------------------------------------------------------------- diagnostics plots
DIAGNOSTICS_PLOTS = [
    ("curve", lambda r, ax: r.plot_curve(bins=[5, 10, 20, 50, 100], ax=ax)),
    ("intervals", lambda r, ax: r.plot_intervals(ax=ax)),
    ("bin_log_ratios", lambda r, ax: r.plot_bin_log_ratios(ax=ax)),
    ("overlay", lambda r, ax: r.plot_neighbour_posterior(ax=ax)),
    ("delta_profile", lambda r, ax: r.plot_delta_profile(ax=ax)),
]
DIAGNOSTICS_IDS = [name for name, _ in DIAGNOSTICS_PLOTS]


@pytest.mark.parametrize(("name", "call"), DIAGNOSTICS_PLOTS, ids=DIAGNOSTICS_IDS)
def test_diagnostics_plots_render_png_on_given_axes(diag_result, tmp_path, name, call):
    ax = call(diag_result, None)
    assert ax.figure.axes[0] is ax
    path = tmp_path / f"diag_{name}.png"
    ax.figure.savefig(path, dpi=60)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # an axes passed in is the one drawn on and returned
    _, given = plt.subplots()
    assert call(diag_result, given) is given
    assert given.has_data()


def test_epsilon_curve_draws_the_curve_and_its_intervals(diag_result):
    bins = [5, 10, 20, 50, 100]
    ax = diag_result.plot_curve(bins=bins)
    curve = diag_result.curve(bins=bins)
    (container,) = ax.containers
    data_line = container.lines[0]
    np.testing.assert_allclose(data_line.get_xdata(), bins)
    np.testing.assert_allclose(data_line.get_ydata(), curve.values)
    # one vertical error bar per B, from the lower to the upper interval bound
    (bars,) = container.lines[2]
    segments = np.array(bars.get_segments())
    np.testing.assert_allclose(segments[:, :, 0], np.column_stack([bins, bins]))
    np.testing.assert_allclose(segments[:, 0, 1], curve["lower"].values)
    np.testing.assert_allclose(segments[:, 1, 1], curve["upper"].values)
    # the B -> inf reference
    (limit,) = _dashed(ax)
    np.testing.assert_allclose(limit.get_ydata(), [curve.attrs["continuous_limit"]] * 2)
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(b) for b in bins]
    assert ax.get_xlabel() == "number of bins B"
    assert ax.get_ylabel() == "ε"
    assert ax.get_title() == "B-EDP ε against the number of bins"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "ε (B), 90% Monte-Carlo interval" in legend


def test_epsilon_curve_of_a_precomputed_curve_with_exact_values(diag_result):
    curve = diag_result.curve(bins=[5, 10, 20])
    ax = plots.plot_epsilon_curve(curve, exact=[0.1, 0.2, 0.3])
    (exact,) = [c for c in ax.collections if c.get_label() == "exact"]
    np.testing.assert_allclose(exact.get_offsets(), [[5, 0.1], [10, 0.2], [20, 0.3]])
    np.testing.assert_allclose(ax.containers[0].lines[0].get_ydata(), curve.values)
    assert any("the most any bin can reach" in t.get_text() for t in ax.get_legend().get_texts())
    # exact values given as a mapping from B
    ax = plots.plot_epsilon_curve(curve, exact={5: 0.1, 10: 0.2, 20: 0.3})
    (exact,) = [c for c in ax.collections if c.get_label() == "exact"]
    np.testing.assert_allclose(exact.get_offsets()[:, 1], [0.1, 0.2, 0.3])


def test_epsilon_curve_with_a_point_outside_its_interval(diag_result):
    """Refitted neighbours' intervals are their refits' while the curve reweights them."""
    curve = diag_result.curve(bins=[5, 10, 20])
    curve = curve.assign_coords(lower=curve["lower"] + 0.5 + curve.values)  # above the point
    ax = plots.plot_epsilon_curve(curve)  # raised "'yerr' must not contain negative values"
    np.testing.assert_allclose(ax.containers[0].lines[0].get_ydata(), curve.values)
    plt.close(ax.figure)


def test_epsilon_intervals_draw_estimates_bars_and_band(diag_result):
    ax = plots.plot_epsilon_intervals(diag_result, labels=3)
    iv = epsilon_interval(diag_result, 0.9)
    ids = iv["neighbour"].values.astype(float)
    points = _points(ax, ("k-hat",))
    np.testing.assert_allclose(points, np.column_stack([ids, iv["estimate_i"].values]))
    segments = np.concatenate([np.array(c.get_segments()) for c in ax.collections[::2]])
    segments = segments[np.argsort(segments[:, 0, 0], kind="stable")]
    np.testing.assert_allclose(segments[:, 0, 1], iv["epsilon_i"].sel(interval="lower"))
    np.testing.assert_allclose(segments[:, 1, 1], iv["epsilon_i"].sel(interval="upper"))
    # the overall epsilon's interval is the shaded band
    band = ax.patches[0].get_bbox()
    np.testing.assert_allclose([band.y0, band.y1], iv["epsilon"].values)
    top = diag_result.pointwise["epsilon"].to_series().nlargest(3).index
    assert [t.get_text() for t in ax.texts] == [str(v) for v in top]
    assert ax.get_xlabel() == "record (30 neighbours)"
    assert ax.get_ylabel() == "ε of neighbour"
    assert ax.get_title() == "Per-record ε with 90% Monte-Carlo intervals (B = 10)"


def test_bin_log_ratios_are_bars_for_one_parameter(diag_result):
    """One parameter: a bar per bin (not a one-row heatmap), the deciding bar outlined."""
    ax = diag_result.plot_bin_log_ratios()
    lr = bin_log_ratios(diag_result)
    assert not ax.images
    bars = ax.patches[: lr.sizes["bin"]]
    np.testing.assert_allclose([b.get_height() for b in bars], lr.values[0])
    j = int(np.nanargmax(np.abs(lr.values[0])))
    outline = ax.patches[-1]
    assert not outline.get_fill() and outline.get_height() == pytest.approx(lr.values[0, j])
    assert outline.get_x() + outline.get_width() / 2 == pytest.approx(j + 1)
    assert str(diag_result.worst_neighbour) in ax.get_title()
    assert ax.get_title().endswith(f"(max |·| = {abs(lr.values[0, j]):.3g}, B = 10)")
    assert ax.get_xlabel() == "bin of the full-data posterior of mu (equal probability, " + (
        "lowest first)"
    )
    assert ax.get_ylabel() == "log P(bin | D') − log P(bin | D)"


@NOT_CONVERGED
def test_bin_log_ratios_heatmap_for_several_parameters():
    res = edp.audit(
        load_eight_schools(), var_names=["mu", "tau"], bins=10, method="psis", progressbar=False
    )
    ax = res.plot_bin_log_ratios()
    lr = bin_log_ratios(res)
    (image,) = ax.images
    np.testing.assert_allclose(image.get_array(), lr.values)
    vmax = np.nanmax(np.abs(lr.values))
    np.testing.assert_allclose(image.get_clim(), [-vmax, vmax])  # symmetric about 0
    p, j = np.unravel_index(np.nanargmax(np.abs(lr.values)), lr.shape)
    (outline,) = ax.patches
    assert outline.get_xy() == (j - 0.5, p - 0.5)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["mu", "tau"]
    assert ax.figure.axes[1].get_ylabel() == "log P(bin | D') − log P(bin | D)"


def test_neighbour_posterior_overlays_the_reweighted_histogram(diag_result):
    ax = diag_result.plot_neighbour_posterior(n_hist=40)
    worst = diag_result.worst_neighbour
    i = int(np.flatnonzero(diag_result.pointwise["neighbour"].values == worst)[0])
    draws = diag_result.draws["mu"].values
    weights = normalised_weights(diag_result.log_weights.values[i])[0]
    edges = np.linspace(draws.min(), draws.max(), 41)
    full, _ = np.histogram(draws, edges, density=True)
    reweighted, _ = np.histogram(draws, edges, weights=weights, density=True)
    _filled, outline, neighbour = ax.patches
    np.testing.assert_allclose(outline.get_xy()[1:-1:2, 1], full)
    np.testing.assert_allclose(neighbour.get_xy()[1:-1:2, 1], reweighted)
    # faint vertical lines at the audit's bin edges
    cuts = binning.quantile_bins(draws[None], 10).edges[0]
    cuts = cuts[np.isfinite(cuts)]
    np.testing.assert_allclose([line.get_xdata()[0] for line in ax.lines], cuts)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["full data D", f"neighbour {worst} (reweighted)"]
    assert ax.get_xlabel() == "mu"
    assert ax.get_ylabel() == "posterior density"
    eps = float(diag_result.pointwise["epsilon"].values[i])
    assert ax.get_title() == f"Full vs neighbour posterior (ε = {eps:.3g}, B = 10)"


def test_neighbour_posterior_needs_weights(diag_result):
    with pytest.raises(ValueError, match="store_weights"):
        plots.plot_neighbour_posterior(dataclasses.replace(diag_result, log_weights=None))
    with pytest.raises(KeyError, match="no neighbour"):
        plots.plot_neighbour_posterior(diag_result, neighbour=999)


def test_neighbour_posterior_lists_the_names_it_knows(diag_result):
    """An unknown parameter or neighbour is a KeyError listing the result's own."""
    with pytest.raises(KeyError, match=r"no parameter 'nope' in this result.*parameters.*: mu"):
        diag_result.plot_neighbour_posterior(parameter="nope")
    listing = r"neighbours.*: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, \.\.\. \(30 in all\)"
    with pytest.raises(KeyError, match=r"no neighbour 'nope' in this result; .*" + listing):
        diag_result.plot_neighbour_posterior(neighbour="nope")
    with pytest.raises(KeyError, match=r"no neighbour 30 in this result"):
        plots.plot_neighbour_posterior(diag_result, 30, "mu")
    assert plt.get_fignums() == []  # nothing drawn
    ax = diag_result.plot_neighbour_posterior(neighbour=3, parameter="mu")
    assert ax.get_xlabel() == "mu"


def test_delta_profile_draws_both_curves_and_the_audit_epsilon(diag_result):
    ax = diag_result.plot_delta_profile()
    grid = np.linspace(0, 1.5 * diag_result.epsilon, 200)
    prof = diag_result.delta_profile(grid)
    delta, delta_star, audit_eps = ax.lines
    np.testing.assert_allclose(delta.get_xdata(), grid)
    np.testing.assert_allclose(delta.get_ydata(), prof["delta"].values)
    np.testing.assert_allclose(delta_star.get_ydata(), prof["delta_star"].values)
    np.testing.assert_allclose(audit_eps.get_xdata(), [diag_result.epsilon] * 2)
    assert audit_eps.get_linestyle() == "--"
    assert ax.get_yscale() == "log"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("ε", "δ")
    assert ax.get_title() == "Bin-free (ε, δ) profile"


def test_delta_profile_of_a_precomputed_profile(diag_result):
    prof = diag_result.delta_profile(np.linspace(0, 0.5, 20))
    ax = plots.plot_delta_profile(prof, logy=False)
    assert len(ax.lines) == 2  # no audit epsilon without the result
    np.testing.assert_allclose(ax.lines[0].get_ydata(), prof["delta"].values)
    np.testing.assert_allclose(ax.lines[1].get_ydata(), prof["delta_star"].values)
    assert ax.get_yscale() == "linear"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["δ(ε) = max_i δ_i(ε)", "total risk δ*(ε)"]


# ---------------------------------------------------------------------- plot_overview
def test_overview_lays_out_the_four_first_figures(diag_result):
    res = diag_result
    axes = plots.plot_overview(res, curve_bins=(5, 10, 20))
    assert axes.shape == (2, 2)
    fig = axes[0, 0].figure
    assert all(ax.figure is fig for ax in axes.flat)
    np.testing.assert_allclose(fig.get_size_inches(), [13.0, 8.0])
    eps = res.pointwise["epsilon"].values
    worst = res.worst_neighbour
    # top left: every neighbour's epsilon, the three largest labelled
    tl = axes[0, 0]
    assert tl.get_title() == f"Per-record ε (max {eps.max():.3g}, B = 10)"
    np.testing.assert_allclose(np.sort(_points(tl)[:, 1]), np.sort(eps))
    assert len(tl.texts) == 3 and tl.texts[0].get_text() == str(worst)
    # top right: epsilon against B, the curve of the result
    tr = axes[0, 1]
    assert tr.get_title() == "B-EDP ε against the number of bins"
    curve = res.curve(bins=(5, 10, 20))
    (line,) = [ln for ln in tr.lines if ln.get_marker() == "o"]
    np.testing.assert_allclose(line.get_xdata(), [5, 10, 20])
    np.testing.assert_allclose(line.get_ydata(), curve.values)
    # bottom left: the worst neighbour's bin log ratios
    bl = axes[1, 0]
    assert bl.get_title().startswith(f"Bin log ratios of neighbour {worst} ")
    bars = bl.patches[: res.bins]
    np.testing.assert_allclose([b.get_height() for b in bars], bin_log_ratios(res).values[0])
    # bottom right: the worst neighbour's posterior overlaid on the full-data one
    br = axes[1, 1]
    i = int(np.argmax(eps))
    assert br.get_title() == f"Full vs neighbour posterior (ε = {eps[i]:.3g}, B = 10)"
    assert br.get_xlabel() == str(res.pointwise["worst_parameter"].values[i])
    labels = [t.get_text() for t in br.get_legend().get_texts()]
    assert labels == ["full data D", f"neighbour {worst} (reweighted)"]
    # one parameter: bars, so no colour bar; the four plots are the figure's axes
    assert len(fig.axes) == 4


def test_result_plot_calls_the_overview_with_its_options(diag_result):
    axes = diag_result.plot(figsize=(8, 6), labels=1)
    assert axes.shape == (2, 2)
    np.testing.assert_allclose(axes[0, 0].figure.get_size_inches(), [8.0, 6.0])
    assert len(axes[0, 0].texts) == 1


def test_overview_curve_bins_default_to_those_the_draws_allow(result):
    # 1,000 draws: B = 250 would leave under 10 draws per bin (NaN and a warning)
    axes = result.plot()
    (line,) = [ln for ln in axes[0, 1].lines if ln.get_marker() == "o"]
    np.testing.assert_allclose(line.get_xdata(), [5, 10, 20, 50, 100])


def test_overview_without_weights_notes_what_it_cannot_draw(diag_result):
    res = dataclasses.replace(diag_result, log_weights=None, draws=None)
    axes = plots.plot_overview(res)
    assert axes.shape == (2, 2)
    assert axes[0, 0].get_title().startswith("Per-record ε")
    assert len(_points(axes[0, 0])) == res.n_neighbours
    for ax in (axes[0, 1], axes[1, 0], axes[1, 1]):
        assert not ax.axison
        assert not ax.lines and not ax.images and not ax.collections
        (note,) = ax.texts
        assert "chunks={'store_weights': True})" in note.get_text()
    assert axes[0, 1].get_title() == "B-EDP ε against the number of bins"


def test_overview_of_a_large_audit_draws_what_its_kept_weights_allow(diag_result, tmp_path):
    # a large audit keeps the weights of the neighbours that can set epsilon only: the
    # overview refused it ("rerun with prune=False"), while the same result read back
    # without weights drew; now both draw, the curve (every neighbour's) a note
    eps = diag_result.pointwise["epsilon"].values
    rows = np.sort(np.argsort(eps)[::-1][:5])
    lw = diag_result.log_weights.isel(neighbour=rows)
    res = dataclasses.replace(
        diag_result, log_weights=lw.assign_coords(neighbour_index=("neighbour", rows))
    )
    path = tmp_path / "kept.nc"
    res.to_netcdf(path, include_weights=True)
    for r in (res, edp.EDPResult.from_netcdf(path)):
        axes = r.plot()
        (note,) = axes[0, 1].texts
        assert not axes[0, 1].axison
        assert f"kept\nthose of 5 of {eps.size}" in note.get_text()
        assert "'store_weights': True" in note.get_text()
        worst = r.worst_neighbour
        assert axes[1, 0].get_title().startswith(f"Bin log ratios of neighbour {worst} ")
        assert axes[1, 1].get_title().startswith("Full vs neighbour posterior (ε = ")
        plt.close(axes[0, 0].figure)


def test_plots_of_a_pruned_result_without_weights_advise_prune_false(diag_result):
    """Pruning refuses store_weights=True, so a pruned result is told prune=False too."""
    method = np.where(np.arange(diag_result.n_neighbours) < 20, "pruned", "psis")
    res = _with_pointwise(dataclasses.replace(diag_result, log_weights=None), method=method)
    axes = plots.plot_overview(res)
    for ax in (axes[0, 1], axes[1, 0], axes[1, 1]):
        (note,) = ax.texts
        assert "audit(..., chunks={'store_weights': True, 'prune': False})" in note.get_text()
    with pytest.raises(ValueError, match=r"'store_weights': True, 'prune': False.*pruning drops"):
        res.plot_neighbour_posterior()


def test_plots_say_when_epsilon_is_a_lower_bound(result):
    """A lower bound is marked in the figures as in the text: title, marker, open interval."""
    pw = result.pointwise.copy()
    worst = int(np.nanargmax(pw["epsilon"].values))
    flags = np.zeros(pw.sizes["neighbour"], dtype=bool)
    flags[worst] = True
    pw["lower_bound"] = ("neighbour", flags)
    bounded = dataclasses.replace(result, pointwise=pw)
    ax = edp.plots.plot_pointwise_epsilon(bounded)
    assert "≥" in ax.get_title() and "a lower bound" in ax.get_title()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("lower bound (resolution limit): 1") for t in labels)
    ax2 = edp.plots.plot_epsilon_intervals(bounded)
    assert ax2.get_title().endswith("ε is a lower bound")
    texts = [t.get_text() for t in ax2.get_legend().get_texts()]
    assert any("inf)" in t for t in texts) and any("open above" in t for t in texts)

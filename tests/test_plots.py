import dataclasses
import sys

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr
from matplotlib.colors import to_hex

import pymc_edp as edp
from pymc_edp.model.compat import from_dict
from pymc_edp.plots import KHAT_COLORS, khat_class, plot_pointwise_epsilon


@pytest.fixture
def result(rng):
    """A real audit of a Normal-mean posterior with labelled records (no MCMC)."""

    n, chains, draws = 25, 2, 500
    y = rng.normal(0.0, 1.0, n)
    y[7] = 4.5  # one outlying record, the most exposed
    post_sd = 1 / np.sqrt(n + 1)
    mu = rng.normal(y.sum() / (n + 1), post_sd, (chains, draws))
    ll = -0.5 * (y[None, None, :] - mu[..., None]) ** 2 - 0.5 * np.log(2 * np.pi)
    ids = np.arange(101, 101 + n)
    idata = from_dict(
        {"posterior": {"mu": mu}, "log_likelihood": {"y": ll}},
        coords={"person": ids},
        dims={"y": ["person"]},
    )
    return edp.audit(idata, method="psis", bins=10, progressbar=False)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _with_pointwise(res, **updates):
    pw = res.pointwise.copy()
    for name, values in updates.items():
        pw[name] = ("neighbour", np.asarray(values))
    return dataclasses.replace(res, pointwise=pw)


def test_returns_new_axes_and_labels_top_records(result):
    ax = plot_pointwise_epsilon(result)
    assert ax.figure is not None
    texts = [t.get_text() for t in ax.texts]
    eps = result.pointwise["epsilon"]
    top = eps["neighbour"].values[np.argsort(-eps.values)[:5]]
    assert texts == [str(v) for v in top]
    assert "108" in texts  # the outlier y[7]
    # x is the (numeric, increasing) coordinate: each label sits on its record's id
    for t in ax.texts:
        assert t.xy[0] == float(t.get_text())
    assert ax.get_ylim()[0] == 0
    assert "B = 10" in ax.get_title()


def test_uses_given_axes_and_label_count(result):
    _, ax = plt.subplots()
    out = plot_pointwise_epsilon(result, ax=ax, labels=2, title=False, legend=False)
    assert out is ax
    assert len(ax.texts) == 2
    assert ax.get_title() == ""
    assert ax.get_legend() is None
    assert len(plot_pointwise_epsilon(result, ax=plt.figure().add_subplot(), labels=0).texts) == 0


def test_points_coloured_by_khat_class(result):
    n = result.n_neighbours
    thr = result.khat_threshold
    khat = np.full(n, 0.1)
    khat[:3] = (thr + 0.5) / 2  # ok
    khat[3:5] = thr + 0.1  # bad
    res = _with_pointwise(result, pareto_k=khat)
    ax = plot_pointwise_epsilon(res)
    colours = {}
    for coll in ax.collections:
        label = coll.get_label()
        if coll.get_offsets().shape[0] and label.split(" ")[0] in KHAT_COLORS:
            colours[label.split(" ")[0]] = (
                to_hex(coll.get_facecolors()[0]),
                coll.get_offsets().shape[0],
            )
    assert colours == {
        "good": (KHAT_COLORS["good"], n - 5),
        "ok": (KHAT_COLORS["ok"], 3),
        "bad": (KHAT_COLORS["bad"], 2),
    }
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("bad") and t.endswith(": 2") for t in legend)


def test_khat_class_boundaries():
    k = np.array([-0.1, 0.5, 0.55, 0.69, 0.7, 1.2, np.nan])
    assert khat_class(k, 0.69).tolist() == ["good", "good", "ok", "ok", "bad", "bad", "bad"]
    # a threshold below 0.5 (few draws) leaves no "ok" band
    assert khat_class([0.3, 0.45, 0.5], 0.4).tolist() == ["good", "bad", "bad"]


def test_refitted_records_are_ringed(result):
    method = np.array(["psis"] * result.n_neighbours, dtype=object)
    method[[0, 4]] = "refit"
    ax = plot_pointwise_epsilon(_with_pointwise(result, method=method.astype(str)))
    rings = [c for c in ax.collections if c.get_label().startswith("refitted")]
    assert len(rings) == 1 and rings[0].get_offsets().shape[0] == 2


def test_string_labels_use_positions(result):
    pw = result.pointwise.assign_coords(neighbour=[f"id-{i}" for i in range(result.n_neighbours)])
    ax = plot_pointwise_epsilon(dataclasses.replace(result, pointwise=pw), labels=1)
    (text,) = ax.texts
    assert text.get_text().startswith("id-")
    assert text.xy[0] == int(text.get_text()[3:])
    assert "position" in ax.get_xlabel()


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
    np.testing.assert_allclose(ax.collections[0].get_offsets()[:, 1], [0.3, 0.2, 0.4])


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


# ---------------------------------------------------------------- diagnostics plots
@pytest.fixture(scope="module")
def diag_result():
    """Normal-mean audit with stored weights, for the diagnostics plots."""

    rng = np.random.default_rng(4)
    y = rng.normal(0.0, 1.0, 30)
    mu = rng.normal(y.sum() / 31, 1 / np.sqrt(31), (2, 1500))
    ll = -0.5 * (y[None, None, :] - mu[..., None]) ** 2 - 0.5 * np.log(2 * np.pi)
    idata = from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    return edp.audit(idata, method="psis", bins=10, progressbar=False)


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("curve", lambda r, ax: r.plot_curve(bins=[5, 10, 20, 50, 100], ax=ax)),
        ("intervals", lambda r, ax: r.plot_intervals(ax=ax)),
        ("bin_log_ratios", lambda r, ax: r.plot_bin_log_ratios(ax=ax)),
        ("overlay", lambda r, ax: r.plot_neighbour_posterior(ax=ax)),
        ("delta_profile", lambda r, ax: r.plot_delta_profile(ax=ax)),
    ],
)
def test_diagnostics_plots_render_png(diag_result, tmp_path, name, call):
    ax = call(diag_result, None)
    assert ax.figure is not None
    path = tmp_path / f"diag_{name}.png"
    ax.figure.savefig(path, dpi=60)
    assert path.stat().st_size > 1000
    # an axes passed in is the one drawn on and returned
    _, given = plt.subplots()
    assert call(diag_result, given) is given


def test_diagnostics_plot_contents(diag_result):
    from pymc_edp import plots

    curve = diag_result.curve(bins=[5, 10, 20])
    ax = plots.plot_epsilon_curve(curve, exact=[0.1, 0.2, 0.3])
    assert len(ax.collections) >= 1  # the exact markers
    assert any("B → ∞" in t.get_text() for t in ax.get_legend().get_texts())
    ax = plots.plot_epsilon_intervals(diag_result, labels=3)
    top = diag_result.pointwise["epsilon"].to_series().nlargest(3).index
    assert [t.get_text() for t in ax.texts] == [str(v) for v in top]
    prof = diag_result.delta_profile(np.linspace(0, 0.5, 20))
    ax = plots.plot_delta_profile(prof, logy=False)
    assert len(ax.lines) == 2
    ax = plots.plot_bin_log_ratios(diag_result)
    assert str(diag_result.worst_neighbour) in ax.get_title()

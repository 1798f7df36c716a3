"""The figure and HTML view of a release audit (:mod:`pymc_edp.plots.release`)."""

import dataclasses
import re

import numpy as np
import pytest
from matplotlib.axes import Axes
from support import NOT_CONVERGED

import pymc_edp as edp
from pymc_edp.datasets import load_eight_schools
from pymc_edp.plots.release import plot_release, release_html


@pytest.fixture(scope="module")
def res():
    return edp.audit_release(
        load_eight_schools(), release="draws", k=5, delta=1e-3, progressbar=False,
        options={"n_bootstrap": 20}, random_seed=0,
    )  # fmt: skip


@pytest.fixture(scope="module")
def parameters():
    return edp.audit(load_eight_schools(), method="psis", progressbar=False)


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_the_methods_call_the_views(res):
    assert repr(res) == edp.report.release.release_text(res)

    def no_svg(page):  # a figure's SVG has random ids
        return re.sub(r"<svg.*?</svg>", "", page, flags=re.S)

    assert no_svg(res._repr_html_()) == no_svg(release_html(res))
    assert _legend(res.plot(neighbours=2)) == _legend(plot_release(res, neighbours=2))


def test_plot_draws_one_and_k_releases(res):
    ax = res.plot(neighbours=3)
    assert isinstance(ax, Axes)
    assert ax.get_yscale() == "log" and ax.get_xlabel() == "ε" and ax.get_ylabel() == "δ"
    labels = _legend(ax)
    assert labels[0] == f"1 release, worst neighbour ({res.worst_neighbour})"
    assert labels[1] == "k = 5 releases, worst neighbour"
    assert labels[2] == "k = 5 releases, 3 worst neighbours (coarse)"
    assert (
        labels[-1] == f"ε = {res.headline:.3f} [{res.interval[0]:.3f}, {res.interval[1]:.3f}]"
        " at δ = 0.001"
    )
    # 2 worst-neighbour curves, 3 light curves, the marker
    assert len(ax.get_lines()) == 6
    for line in ax.get_lines()[:5]:
        y = np.asarray(line.get_ydata(), dtype=float)
        x = np.asarray(line.get_xdata(), dtype=float)
        assert np.all(y > 0) and np.all(np.isfinite(x))
    marker = ax.get_lines()[-1]
    assert marker.get_xdata()[0] == pytest.approx(res.headline)
    assert marker.get_ydata()[0] == pytest.approx(res.target_delta)
    assert marker.get_markerfacecolor() != "white"


def test_lower_bound_marker_is_open(res):
    low = dataclasses.replace(res, lower_bound=True, interval=(res.interval[0], np.inf))
    ax = plot_release(low, neighbours=0)
    assert _legend(ax)[-1].endswith("(lower bound)") and "inf)" in _legend(ax)[-1]
    marker = next(ln for ln in ax.get_lines() if ln.get_label().startswith("ε ="))
    assert marker.get_markerfacecolor() == "white"
    assert not any("coarse" in label for label in _legend(ax))


@NOT_CONVERGED  # the audit of the shipped centred eight schools (R-hat 1.02 for mu)
def test_parameters_profile_beside_it(res, parameters):
    ax = res.plot(parameters=parameters)
    assert "parameters: bin-free δ(ε)" in _legend(ax)
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "parameters: bin-free δ(ε)")
    assert np.all(np.asarray(line.get_ydata()) > 0)


def test_given_axes_are_used(res):
    import matplotlib.pyplot as plt

    _, ax = plt.subplots()
    assert plot_release(res, ax) is ax


def test_html_view(res):
    page = res._repr_html_()
    assert page.startswith('<div class="pedp-wrap">') and "<script" not in page
    assert "pymc_edp.ReleaseResult" in page and "<svg" in page
    assert f"{res.headline:.3f}" in page and "Post-processing" in page
    assert "Notes" in page and "none" in page


@NOT_CONVERGED
def test_a_parameter_audit_of_another_fit_is_refused(res):
    # issue 32: plot(parameters=) drew another model's audit unchecked; the first half of
    # the draws is another posterior sample (fewer draws) of the same model
    idata = load_eight_schools()
    half = idata.isel(draw=slice(0, 250))
    other = edp.audit(half, method="psis", bins=10, progressbar=False)
    with pytest.raises(ValueError, match=r"another fit .* 1000 posterior draws, the release 2000"):
        res.plot(parameters=other)


def test_a_parameter_audit_of_other_records_is_refused(res):
    from support import normal_audit, normal_draws

    other = normal_audit(normal_draws(np.random.default_rng(1), 2, 1000))
    with pytest.raises(ValueError, match=r"another fit .* neighbours, the release 8"):
        res.plot(parameters=other)


@pytest.mark.parametrize("bad", ["mu", 3.0])
def test_parameters_of_the_wrong_type_is_a_type_error(res, bad):
    # issue 32: a string gave a raw AttributeError
    with pytest.raises(TypeError, match="parameters= takes the EDPResult of edp.audit"):
        res.plot(parameters=bad)

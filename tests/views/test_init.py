"""The views (:mod:`pymc_edp.views`): every result method reaches its function."""

import inspect

import matplotlib.pyplot as plt
import numpy as np
import pytest
from support import normal_audit, normal_draws

import pymc_edp as edp
from pymc_edp import EDPResult, PriorTuningResult, views
from pymc_edp.results._views import registered

#: Result method -> view name, for every method that delegates.
METHODS = {
    "mcse": "mcse",
    "interval": "interval",
    "emi": "emi",
    "empty_bins": "empty_bins",
    "smoothing_sensitivity": "smoothing_sensitivity",
    "continuous_limit": "continuous_limit",
    "curve": "curve",
    "delta_profile": "delta_profile",
    "bin_log_ratios": "bin_log_ratios",
    "diagnose": "diagnose",
    "plot": "plot",
    "plot_curve": "plot_curve",
    "plot_intervals": "plot_intervals",
    "plot_bin_log_ratios": "plot_bin_log_ratios",
    "plot_neighbour_posterior": "plot_neighbour_posterior",
    "plot_delta_profile": "plot_delta_profile",
    "refit_epsilon": "refit_epsilon",
    "__repr__": "text",
    "_repr_html_": "html",
}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def res():
    return normal_audit(normal_draws(np.random.default_rng(1), 2, 1000), bins=10)


def test_importing_pymc_edp_registers_every_view():
    assert edp.views is views
    names = set(views.VIEWS)
    assert names == set(METHODS.values()) | {"tuning_text", "tuning_html"} | {
        "release_text",
        "release_html",
        "plot_release",
    }
    for name, function in views.VIEWS.items():
        assert registered()[name] is function
    assert views.VIEWS["interval"] is edp.diagnostics.epsilon_interval
    assert views.VIEWS["diagnose"] is edp.report.diagnose
    assert views.VIEWS["plot"] is edp.plots.plot_overview
    with pytest.raises(TypeError):
        views.VIEWS["interval"] = None  # read-only


def test_every_delegating_method_names_a_registered_view():
    for method, name in METHODS.items():
        source = inspect.getsource(getattr(EDPResult, method))
        assert f'call("{name}", self' in source, method
    for method, name in (("__repr__", "tuning_text"), ("_repr_html_", "tuning_html")):
        assert f'call("{name}", self' in inspect.getsource(getattr(PriorTuningResult, method))


def test_the_methods_return_what_the_functions_return(res):
    diag = edp.diagnostics
    assert res.mcse().equals(diag.epsilon_mcse(res))
    assert res.interval(0.8).equals(diag.epsilon_interval(res, 0.8))
    assert res.emi().equals(diag.emi(res))
    assert res.empty_bins().equals(diag.empty_bins(res))
    assert res.smoothing_sensitivity((0.0, 1.0)).equals(
        diag.smoothing_sensitivity(res, (0.0, 1.0))
    )
    assert res.continuous_limit().equals(diag.continuous_limit(res))
    assert res.curve((5, 10), prob=None).equals(diag.epsilon_curve(res, (5, 10), prob=None))
    assert res.delta_profile([0.1, 0.5]).equals(diag.delta_profile(res, [0.1, 0.5]))
    assert res.bin_log_ratios().equals(diag.bin_log_ratios(res))
    assert res.diagnose(0.8) == edp.report.diagnose(res, 0.8)
    assert repr(res) == edp.report.edp_result_text(res)
    strip = lambda page: page.split("<svg")[0]  # noqa: E731  (the figure's ids are random)
    assert strip(res._repr_html_()) == strip(edp.plots.html.edp_result_html(res))


def test_the_plot_methods_draw_the_plots_functions(res):
    assert res.plot().shape == (2, 2)
    assert res.plot_curve(bins=(5, 10)).get_title() == "B-EDP ε against the number of bins"
    assert res.plot_intervals().get_title().startswith("Per-record ε with 90%")
    assert res.plot_bin_log_ratios().get_title().startswith("Bin log ratios of neighbour")
    assert res.plot_neighbour_posterior().get_title().startswith("Full vs neighbour posterior")
    assert res.plot_delta_profile().get_title() == "Bin-free (ε, δ) profile"

"""The results' methods call the diagnostics, the report and the plots directly."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr
from support import normal_audit, normal_draws, tuning_result

import pymc_edp as edp
from pymc_edp.plots.html import tuning_result_html


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def res():
    return normal_audit(normal_draws(np.random.default_rng(1), 2, 1000), bins=10)


def _strip(page):
    return page.split("<svg")[0]  # the figures' ids are random


def test_pymc_edp_has_no_view_registry():
    assert not hasattr(edp, "views")
    with pytest.raises(ImportError):
        import pymc_edp.results._views  # noqa: F401


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
    same = {"mu": res.draws["mu"].values.reshape(res.n_chains, -1)}
    assert res.refit_epsilon(same).equals(diag.refit_epsilon(res, same))
    assert res.diagnose(0.8) == edp.report.diagnose(res, 0.8)
    assert repr(res) == edp.report.edp_result_text(res)
    assert _strip(res._repr_html_()) == _strip(edp.plots.html.edp_result_html(res))


def test_the_tuning_result_prints_with_the_report():
    tuned = tuning_result(
        trials=xr.Dataset({"value": ("trial", [1.73, 1.2])}),
        utility=xr.DataTree.from_dict({"mu": xr.Dataset({"mean_shift": 0.05, "audited": True})}),
    )
    assert repr(tuned) == edp.report.tuning_result_text(tuned)
    assert _strip(tuned._repr_html_()) == _strip(tuning_result_html(tuned))


def test_the_plot_methods_draw_the_plots_functions(res):
    assert res.plot().shape == (2, 2)
    assert res.plot_curve(bins=(5, 10)).get_title() == "B-EDP ε against the number of bins"
    assert res.plot_intervals().get_title().startswith("Per-record ε with 90%")
    assert res.plot_bin_log_ratios().get_title().startswith("Bin log ratios of neighbour")
    assert res.plot_neighbour_posterior().get_title().startswith("Full vs neighbour posterior")
    assert res.plot_delta_profile().get_title() == "Bin-free (ε, δ) profile"

"""The functions behind the results' methods, registered by name.

:class:`~pymc_edp.EDPResult`, :class:`~pymc_edp.PriorTuningResult` and
:class:`~pymc_edp.ReleaseResult` hold data and import
nothing above their layer; their methods call :func:`pymc_edp.results._views.call` with a
view's name. This module, above the diagnostics, the report and the plots, registers the
function behind every name (:data:`VIEWS`); ``import pymc_edp`` imports it.

======================================  =====================================================
result method                           function
======================================  =====================================================
``EDPResult.mcse``                      :func:`pymc_edp.diagnostics.epsilon_mcse`
``EDPResult.interval``                  :func:`pymc_edp.diagnostics.epsilon_interval`
``EDPResult.emi``                       :func:`pymc_edp.diagnostics.emi`
``EDPResult.empty_bins``                :func:`pymc_edp.diagnostics.empty_bins`
``EDPResult.smoothing_sensitivity``     :func:`pymc_edp.diagnostics.smoothing_sensitivity`
``EDPResult.continuous_limit``          :func:`pymc_edp.diagnostics.continuous_limit`
``EDPResult.curve``                     :func:`pymc_edp.diagnostics.epsilon_curve`
``EDPResult.delta_profile``             :func:`pymc_edp.diagnostics.delta_profile`
``EDPResult.bin_log_ratios``            :func:`pymc_edp.diagnostics.bin_log_ratios`
``EDPResult.refit_epsilon``             :func:`pymc_edp.diagnostics.refit_epsilon`
``EDPResult.diagnose``                  :func:`pymc_edp.report.diagnose`
``repr(EDPResult)``                     :func:`pymc_edp.report.edp_result_text`
``EDPResult._repr_html_``               :func:`pymc_edp.plots.html.edp_result_html`
``EDPResult.plot``                      :func:`pymc_edp.plots.plot_overview`
``EDPResult.plot_curve``                :func:`pymc_edp.plots.plot_epsilon_curve`
``EDPResult.plot_intervals``            :func:`pymc_edp.plots.plot_epsilon_intervals`
``EDPResult.plot_bin_log_ratios``       :func:`pymc_edp.plots.plot_bin_log_ratios`
``EDPResult.plot_neighbour_posterior``  :func:`pymc_edp.plots.plot_neighbour_posterior`
``EDPResult.plot_delta_profile``        :func:`pymc_edp.plots.plot_delta_profile`
``repr(PriorTuningResult)``             :func:`pymc_edp.report.tuning_result_text`
``PriorTuningResult._repr_html_``       :func:`pymc_edp.plots.html.tuning_result_html`
``repr(ReleaseResult)``                 :func:`pymc_edp.report.release.release_text`
``ReleaseResult._repr_html_``           :func:`pymc_edp.plots.release.release_html`
``ReleaseResult.plot``                  :func:`pymc_edp.plots.release.plot_release`
======================================  =====================================================
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from pymc_edp import diagnostics, plots, report
from pymc_edp.plots import html
from pymc_edp.plots import release as release_plots
from pymc_edp.report import release as release_report
from pymc_edp.results._views import register

__all__ = ["VIEWS"]

#: ``{view name: function}``: what every result method calls (read-only).
VIEWS: MappingProxyType[str, Callable[..., Any]] = MappingProxyType(
    {
        "mcse": diagnostics.epsilon_mcse,
        "interval": diagnostics.epsilon_interval,
        "emi": diagnostics.emi,
        "empty_bins": diagnostics.empty_bins,
        "smoothing_sensitivity": diagnostics.smoothing_sensitivity,
        "continuous_limit": diagnostics.continuous_limit,
        "curve": diagnostics.epsilon_curve,
        "delta_profile": diagnostics.delta_profile,
        "bin_log_ratios": diagnostics.bin_log_ratios,
        "refit_epsilon": diagnostics.refit_epsilon,
        "diagnose": report.diagnose,
        "text": report.edp_result_text,
        "html": html.edp_result_html,
        "plot": plots.plot_overview,
        "plot_curve": plots.plot_epsilon_curve,
        "plot_intervals": plots.plot_epsilon_intervals,
        "plot_bin_log_ratios": plots.plot_bin_log_ratios,
        "plot_neighbour_posterior": plots.plot_neighbour_posterior,
        "plot_delta_profile": plots.plot_delta_profile,
        "tuning_text": report.tuning_result_text,
        "tuning_html": html.tuning_result_html,
        "release_text": release_report.release_text,
        "release_html": release_plots.release_html,
        "plot_release": release_plots.plot_release,
    }
)

for _name, _function in VIEWS.items():
    register(_name)(_function)

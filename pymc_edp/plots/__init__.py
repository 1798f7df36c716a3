"""Plots of EDP audit results (matplotlib, in the look of ArviZ's default style).

matplotlib is an optional dependency (``pip install "pymc-edp[plots]"``); ArviZ is not
imported. Every function takes ``ax=None`` (a new figure) and returns the axes. The audit's
plots are in :mod:`pymc_edp.plots.audit` (:func:`plot_overview` is ``res.plot()``), those of
query-level privacy in :mod:`pymc_edp.plots.query`, the results' HTML views in
:mod:`pymc_edp.plots.html` and :mod:`pymc_edp.plots.release`.
"""

from pymc_edp.plots import audit, html, query, release, style  # noqa: F401
from pymc_edp.plots.audit import (
    plot_bin_log_ratios,
    plot_delta_profile,
    plot_epsilon_curve,
    plot_epsilon_intervals,
    plot_neighbour_posterior,
    plot_overview,
    plot_pointwise_epsilon,
)
from pymc_edp.plots.query import plot_delta, plot_delta_i, plot_densities, plot_noise_kernel

# Bound here, not imported, so that their ``#:`` descriptions reach the API reference.
#: The colour cycle of ArviZ's default styles (``arviz-whitegrid`` / ``arviz-darkgrid``).
ARVIZ_COLORS = style.ARVIZ_COLORS
#: Colour of each Pareto k-hat class (:func:`pymc_edp.report.khat_counts`), from the ArviZ cycle.
KHAT_COLORS = audit.KHAT_COLORS

__all__ = [
    "ARVIZ_COLORS",
    "KHAT_COLORS",
    "plot_bin_log_ratios",
    "plot_delta",
    "plot_delta_i",
    "plot_delta_profile",
    "plot_densities",
    "plot_epsilon_curve",
    "plot_epsilon_intervals",
    "plot_neighbour_posterior",
    "plot_noise_kernel",
    "plot_overview",
    "plot_pointwise_epsilon",
]

"""Plots of EDP audit results (matplotlib, in the look of ArviZ's default style).

matplotlib is an optional dependency: install it with ``pip install "pymc-edp[plots]"``.
Every function takes ``ax=None`` (a new figure is made when it is None) and returns the axes.
ArviZ itself is not imported here, so plotting does not depend on ArviZ's matplotlib backend.

- :func:`plot_pointwise_epsilon` -- the epsilon of every record, coloured by Pareto k-hat;
- :func:`plot_epsilon_curve` -- epsilon against the number of bins B, with error bars;
- :func:`plot_epsilon_intervals` -- per-record epsilon with Monte-Carlo intervals;
- :func:`plot_bin_log_ratios` -- heatmap of one neighbour's bin log ratios;
- :func:`plot_neighbour_posterior` -- the full-data and one neighbour's posterior;
- :func:`plot_delta_profile` -- the bin-free (ε, δ) profile and the total risk δ*(ε);
- :func:`plot_overview` -- four of them on one figure (``res.plot()``).

They are defined in :mod:`pymc_edp.plots.audit` and share the look of
:mod:`pymc_edp.plots.style` with the plots of query-level privacy (:mod:`pymc_edp.query`),
defined in :mod:`pymc_edp.plots.query`:

- :func:`plot_delta`, :func:`plot_delta_i` -- delta(epsilon) over databases, per individual;
- :func:`plot_densities` -- the query's densities with and without an individual;
- :func:`plot_noise_kernel` -- the minimal noise density.

:mod:`pymc_edp.plots.html` renders the results as HTML for Jupyter; the figure and the HTML
view of :class:`~pymc_edp.ReleaseResult` (:func:`pymc_edp.plots.release.plot_release`,
:func:`pymc_edp.plots.release.release_html`) are in :mod:`pymc_edp.plots.release`.
"""

from pymc_edp.plots import (  # noqa: F401  (html, release: the results' _repr_html_)
    audit,
    html,
    query,
    release,
    style,
)
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

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
:mod:`pymc_edp.plots.style` with the query plots of :mod:`pymc_edp.query`
(:func:`~pymc_edp.query.plot_delta` and the others). The ``EDPResult.plot_*`` methods call
these functions. :mod:`pymc_edp.plots.html` renders the results as HTML for Jupyter (their
``_repr_html_``).
"""

from pymc_edp.plots import audit, html, style  # noqa: F401  (html: the results' _repr_html_)
from pymc_edp.plots.audit import (
    khat_class,
    plot_bin_log_ratios,
    plot_delta_profile,
    plot_epsilon_curve,
    plot_epsilon_intervals,
    plot_neighbour_posterior,
    plot_overview,
    plot_pointwise_epsilon,
)

# Bound here, not imported, so that their ``#:`` descriptions reach the API reference.
#: The colour cycle of ArviZ's default styles (``arviz-whitegrid`` / ``arviz-darkgrid``).
ARVIZ_COLORS = style.ARVIZ_COLORS
#: Colour of each Pareto k-hat class, from the ArviZ cycle.
KHAT_COLORS = audit.KHAT_COLORS

__all__ = [
    "ARVIZ_COLORS",
    "KHAT_COLORS",
    "khat_class",
    "plot_bin_log_ratios",
    "plot_delta_profile",
    "plot_epsilon_curve",
    "plot_epsilon_intervals",
    "plot_neighbour_posterior",
    "plot_overview",
    "plot_pointwise_epsilon",
]

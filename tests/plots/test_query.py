"""Tests of pymc_edp.plots.query (the ``audit`` fixture is in conftest.py)."""

from pymc_edp import plots as edp_plots


def test_plots(audit, tmp_path):
    import matplotlib.pyplot as plt

    ax = edp_plots.plot_delta(audit, kind=["delta", "delta_star"], target=0.01)
    assert len(ax.get_lines()) >= 2
    ax.figure.savefig(tmp_path / "delta.png")
    ax = edp_plots.plot_delta_i(audit, top=3)
    assert len(ax.get_lines()) == 3
    ax = edp_plots.plot_densities(audit)
    assert ax.get_legend() is not None
    _, axes = plt.subplots(1, 2)
    assert edp_plots.plot_delta(audit, ax=axes[0], yscale="log") is axes[0]
    plt.close("all")

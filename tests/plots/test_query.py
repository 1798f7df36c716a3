"""Tests of pymc_edp.plots.query: the figures of a query-level privacy audit."""

import numpy as np
import pandas as pd
import pytest

import pymc_edp.query as edpq
from pymc_edp import plots as edp_plots


@pytest.fixture(scope="module")
def audit():
    """A default ``query_edp`` run: 80 databases, 12 individuals, individual 3 heavy."""
    rng = np.random.default_rng(11)
    dbs = []
    for _ in range(80):
        x = rng.gamma(2.0, size=12)
        x[3] *= 2.0
        dbs.append(pd.DataFrame({"id": np.arange(12), "x": x}))
    return edpq.query_edp(dbs, edpq.sum_query("x"), id_col="id", progressbar=False)


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

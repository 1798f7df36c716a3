"""Fixtures shared by the tests of pymc_edp.query."""

import numpy as np
import pandas as pd
import pytest

import pymc_edp.query as edpq


def _make_databases(rng, n_db=60, n_ind=12, heavy=3, factor=4.0):
    """Databases of gamma contributions; individual ``heavy`` contributes ``factor`` x more."""
    dbs = []
    for _ in range(n_db):
        x = rng.gamma(2.0, size=n_ind)
        x[heavy] *= factor
        dbs.append(pd.DataFrame({"id": np.arange(n_ind), "x": x}))
    return dbs


@pytest.fixture
def make_databases():
    """``make_databases(rng, n_db=60, n_ind=12, heavy=3, factor=4.0)``: a list of frames."""
    return _make_databases


@pytest.fixture(scope="session")
def audit():
    """A default ``query_edp`` run: 80 databases, 12 individuals, individual 3 heavy."""
    r = np.random.default_rng(11)
    dbs = _make_databases(r, n_db=80, n_ind=12, heavy=3, factor=2.0)
    return edpq.query_edp(dbs, edpq.sum_query("x"), id_col="id", progressbar=False)

"""Tests of pymc_edp.query.queries: the vectorised sum and mean queries."""

from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import pymc_edp.query as edpq


@runtime_checkable
class LeaveOneOutQuery(Protocol):
    """The protocol query_samples vectorises: a query with a leave_one_out method."""

    def __call__(self, df: pd.DataFrame): ...

    def leave_one_out(self, df: pd.DataFrame, id_col: str): ...


def test_leave_one_out_by_hand():
    df = pd.DataFrame({"id": [1, 1, 2, 3], "a": [1.0, 2.0, 4.0, 8.0], "b": [0.0, 1.0, 0.0, 1.0]})
    s = edpq.sum_query("a")
    assert isinstance(s, LeaveOneOutQuery)
    assert s(df) == 15.0
    assert s.leave_one_out(df, "id").to_dict() == {1: 12.0, 2: 11.0, 3: 7.0}
    v = edpq.sum_query(["a", "b"]).leave_one_out(df, "id")
    assert v.loc[3].to_dict() == {"a": 7.0, "b": 1.0}
    m = edpq.mean_query("a")
    assert m(df) == pytest.approx(3.75)
    loo = m.leave_one_out(df, "id")
    assert loo.to_dict() == pytest.approx({1: 6.0, 2: 11.0 / 3.0, 3: 7.0 / 3.0})


def test_query_samples_generic_equals_vectorised(rng, make_databases):
    dbs = make_databases(rng, n_db=8, n_ind=6)
    dbs[2] = dbs[2][dbs[2]["id"] != 4]  # individual 4 absent from database 2
    vec = edpq.query_samples(dbs, edpq.sum_query("x"), id_col="id", progressbar=False)
    gen = edpq.query_samples(dbs, lambda df: df["x"].sum(), id_col="id", progressbar=False)
    xr.testing.assert_allclose(vec[["value", "value_without"]], gen[["value", "value_without"]])
    assert not bool(vec["present"].sel(individual=4, database=2))
    assert float(vec["value_without"].sel(individual=4, database=2, draw=0)) == pytest.approx(
        float(vec["value"].sel(database=2, draw=0))
    )
    # f(X_i) = f(X) - contribution of i, by hand
    x0 = dbs[0].set_index("id")["x"]
    np.testing.assert_allclose(
        vec["value_without"].sel(database=0, draw=0).to_numpy(), x0.sum() - x0.to_numpy()
    )
    mean = edpq.query_samples(dbs, edpq.mean_query("x"), id_col="id", progressbar=False)
    assert float(mean["value_without"].sel(individual=0, database=1, draw=0)) == pytest.approx(
        dbs[1].loc[dbs[1]["id"] != 0, "x"].mean()
    )

"""Tests of pymc_edp.query.independence: the i.i.d. pre-check of the databases."""

import numpy as np
import pytest

import pymc_edp.query as edpq


def test_independence_check(rng):
    iid = rng.normal(size=80)
    table = edpq.independence_check(iid)
    assert not table["reject"].any()
    ar = np.zeros(80)
    for t in range(1, 80):
        ar[t] = 0.9 * ar[t - 1] + rng.normal()
    with pytest.warns(edpq.IndependenceWarning):
        table = edpq.independence_check(ar)
    assert table.loc["ljung_box_ranks", "reject"]
    trend = np.arange(80) + rng.normal(size=80)
    assert edpq.independence_check(trend, warn=False).loc["ks_halves", "reject"]

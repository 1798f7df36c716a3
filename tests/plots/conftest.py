"""Fixtures shared by the plot tests: audit results and a query result, closed figures."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import pymc_edp as edp
from pymc_edp.model.compat import from_dict


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def result(rng):
    """A real audit of a Normal-mean posterior with labelled records (no MCMC)."""
    n, chains, draws = 25, 2, 500
    y = rng.normal(0.0, 1.0, n)
    y[7] = 4.5  # one outlying record, the most exposed
    post_sd = 1 / np.sqrt(n + 1)
    mu = rng.normal(y.sum() / (n + 1), post_sd, (chains, draws))
    ll = -0.5 * (y[None, None, :] - mu[..., None]) ** 2 - 0.5 * np.log(2 * np.pi)
    ids = np.arange(101, 101 + n)
    idata = from_dict(
        {"posterior": {"mu": mu}, "log_likelihood": {"y": ll}},
        coords={"person": ids},
        dims={"y": ["person"]},
    )
    return edp.audit(idata, method="psis", bins=10, progressbar=False)


@pytest.fixture(scope="module")
def diag_result():
    """Normal-mean audit with stored weights, for the diagnostics plots."""
    rng = np.random.default_rng(4)
    y = rng.normal(0.0, 1.0, 30)
    mu = rng.normal(y.sum() / 31, 1 / np.sqrt(31), (2, 1500))
    ll = -0.5 * (y[None, None, :] - mu[..., None]) ** 2 - 0.5 * np.log(2 * np.pi)
    idata = from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    return edp.audit(idata, method="psis", bins=10, progressbar=False)


@pytest.fixture(scope="module")
def query_result():
    """A small query-level privacy profile (a sum over 5 individuals, 40 databases)."""
    from pymc_edp.query import privacy_profile, query_samples, sum_query

    rng = np.random.default_rng(0)
    dbs = [pd.DataFrame({"id": range(5), "x": rng.gamma(2.0, size=5)}) for _ in range(40)]
    samples = query_samples(dbs, sum_query("x"), id_col="id", progressbar=False)
    return privacy_profile(samples, progressbar=False)

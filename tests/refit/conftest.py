"""Fixtures of the refit tests: small PyMC models and their posteriors."""

import warnings

import numpy as np
import pymc as pm
import pytest
from refit_support import (
    SMALL_KW,
    sample,
)

import pymc_edp as edp


@pytest.fixture(scope="module")
def normal30():
    rng = np.random.default_rng(30)
    sigma, mu0, sigma0 = np.sqrt(5.0), 10.0, np.sqrt(3.0)
    y = rng.normal(10.0, sigma, 30)
    with pm.Model() as model:
        mu = pm.Normal("mu", mu0, sigma0)
        pm.Normal("y", mu, sigma, observed=y)
    return sample(model, 2500), model, (y, sigma, mu0, sigma0)


@pytest.fixture(scope="module")
def normal30_refits(tmp_path_factory):
    """One set of refits (a checkpoint) serves every B and both estimators."""
    return tmp_path_factory.mktemp("nn30")


@pytest.fixture(scope="module")
def bernoulli_table2():
    y = np.array([1, 0, 0, 0, 0])
    with pm.Model() as model:
        p = pm.Beta("p", 0.5, 0.5)
        pm.Bernoulli("y", p, observed=y)
    return sample(model, 2500, seed=5), model


@pytest.fixture(scope="module")
def outlier_model():
    """Normal mean with one gross outlier: removing it moves the posterior by ~4 sd."""
    rng = np.random.default_rng(3)
    y = np.append(rng.normal(0.0, 1.0, 19), 9.0)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=y)
    return sample(model, 1000, chains=2), model, y


@pytest.fixture(scope="module")
def normal10():
    """A Normal mean with 10 records and its refit audit without a checkpoint."""
    y = np.random.default_rng(10).normal(1.0, 1.0, 10)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        pm.Normal("y", mu, 1.0, observed=y)
    idata = sample(model, 300, chains=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        reference = edp.audit(idata, model, bins=5, method="refit", **SMALL_KW)
    return idata, model, reference

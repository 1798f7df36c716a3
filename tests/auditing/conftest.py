"""Fixtures of the pipeline stages' tests."""

import pytest
from pipeline_support import normal_idata, outlier_fit


@pytest.fixture
def normal(rng):
    """A conjugate Normal-mean posterior with its log-likelihood (no model)."""
    return normal_idata(rng)


@pytest.fixture(scope="module")
def outlier():
    """A Normal model with one outlier and exact posterior draws."""
    return outlier_fit()

"""Shared fixtures for the pymc_edp test-suite."""

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")


@pytest.fixture
def rng():
    """A seeded generator; each test gets the same stream."""
    return np.random.default_rng(20261121)

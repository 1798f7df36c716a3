"""Shared fixtures for the pymc_edp test-suite."""

import os

import matplotlib
import numpy as np
import pytest
from hypothesis import settings

matplotlib.use("Agg")

# Property tests are reproducible by default: derandomised examples, no example database
# (so an example saved on one machine never changes what runs on another). To explore with
# fresh randomness: HYPOTHESIS_PROFILE=explore python -m pytest --hypothesis-seed=N.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def rng():
    """A seeded generator; each test gets the same stream."""
    return np.random.default_rng(20261121)

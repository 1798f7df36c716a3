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


@pytest.hookimpl(trylast=True)  # after -m has deselected what it does not select
def pytest_collection_modifyitems(config, items):
    """With ``PYMC_EDP_SHARD=k/n``, keep every n-th test from the k-th (by node id).

    .ci/run runs the slow tests split over its two stacks this way, except those marked
    ``both_stacks``, which every shard keeps; unset, nothing changes.
    """
    shard = os.environ.get("PYMC_EDP_SHARD")
    if not shard:
        return
    k, n = (int(part) for part in shard.split("/"))
    order = {nodeid: i for i, nodeid in enumerate(sorted(item.nodeid for item in items))}

    def kept(item) -> bool:
        return item.get_closest_marker("both_stacks") is not None or order[item.nodeid] % n == k

    keep = [item for item in items if kept(item)]
    drop = [item for item in items if not kept(item)]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture
def rng():
    """A seeded generator; each test gets the same stream."""
    return np.random.default_rng(20261121)

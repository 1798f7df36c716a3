"""Fixtures of the report tests: an audit of exact Normal-Normal draws."""

import numpy as np
import pytest
from support import normal_audit, normal_draws


@pytest.fixture(scope="module")
def nn_result():
    return normal_audit(normal_draws(np.random.default_rng(11), 2, 5000))

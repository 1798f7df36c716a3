"""Fixtures of the diagnostics tests: audits of exact Normal-Normal and Beta-Bernoulli draws."""

import numpy as np
import pytest
from support import normal_audit, normal_draws


@pytest.fixture(scope="module")
def nn_result():
    return normal_audit(normal_draws(np.random.default_rng(11), 2, 5000))


@pytest.fixture(scope="module")
def bb_model():
    import pymc as pm

    with pm.Model() as model:
        p = pm.Beta("p", 0.5, 0.5)
        pm.Bernoulli("y", p, observed=np.zeros(5))
    return model

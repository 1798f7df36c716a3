"""What is compiled from a model is kept per model (pymc_edp.model.cache)."""

import gc
import weakref

import numpy as np
import pymc as pm
from scipy import stats

from pymc_edp.model import cache
from pymc_edp.model.moment_match import ModelDensity


def _model(y):
    with pm.Model() as model:
        s = pm.Data("s", 1.0)
        mu = pm.Normal("mu", 0.0, s)
        pm.Normal("y", mu, 1.0, observed=y)
    return model


def _density(model):
    return cache.per_model(model, ("ModelDensity", ("mu",)), lambda: ModelDensity(model, ["mu"]))


def test_built_once_per_model_and_kept_only_while_the_model_lives():
    model = _model(np.array([0.1, -0.4, 2.0]))
    first = _density(model)
    assert _density(model) is first
    assert _density(_model(np.array([0.1, -0.4, 2.0]))) is not first  # another model
    ref = weakref.ref(model)
    del model, first
    gc.collect()
    assert ref() is None  # the cached density does not hold its model


def test_pm_data_values_are_read_at_each_call_and_structure_changes_rebuild():
    model = _model(np.array([0.1, -0.4, 2.0]))
    density = _density(model)
    y = np.array([0.1, -0.4, 2.0])
    u = np.array([[0.5]])

    def exact(s):
        return stats.norm.logpdf(0.5, 0.0, s) + stats.norm.logpdf(y, 0.5, 1.0).sum()

    np.testing.assert_allclose(density.log_density(u), [exact(1.0)], rtol=1e-12)
    with model:
        pm.set_data({"s": 3.0})
    assert _density(model) is density  # a pm.Data value: nothing compiled again
    np.testing.assert_allclose(density.log_density(u), [exact(3.0)], rtol=1e-12)
    key = cache.structure_key(model)
    with model:
        pm.Normal("z", 0.0, 1.0)
    assert cache.structure_key(model) != key
    assert _density(model) is not density  # a new variable: built again

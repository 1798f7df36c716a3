"""What is compiled from a model is kept per model (pymc_edp.model.cache)."""

import gc
import weakref

import numpy as np
import pymc as pm
import pytensor
import xarray as xr
from pymc.model.transform.conditioning import remove_value_transforms
from pytensor.compile.sharedvalue import SharedVariable
from scipy import stats

from pymc_edp.model import cache
from pymc_edp.model.compat import graph_ancestors
from pymc_edp.model.moment_match import ModelDensity
from pymc_edp.model.pymc import elementwise_loglik


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


def _regression(x, y, coords=None):
    with pm.Model(coords=coords) as model:
        x_data = pm.Data("x", x, dims="obs" if coords else None)
        y_data = pm.Data("y_data", y, dims="obs" if coords else None)
        a = pm.Normal("a", 0.0, 5.0)
        b = pm.Normal("b", 0.0, 5.0)
        s = pm.HalfNormal("s", 2.0)
        pm.Normal("y", a + b * x_data, s, observed=y_data, shape=x_data.shape)
    return model


def _posterior(**draws):
    return xr.Dataset({k: (("chain", "draw"), [v]) for k, v in draws.items()})


def test_a_clone_sharing_data_reads_the_model_s_current_values_and_coordinate_lengths():
    x = np.array([0.5, -1.0, 2.0])
    model = _regression(x, 2.0 * x, coords={"obs": range(3)})
    clone = cache.share_data(model, remove_value_transforms(model))
    # PyMC's rewrite copies every shared variable: without share_data the clone keeps them
    assert clone["x"] is not model["x"]
    assert clone.dim_lengths["obs"] is not model.dim_lengths["obs"]
    total = pytensor.function([], [clone["x"].sum(), clone.dim_lengths["obs"]])
    assert [float(v) for v in total()] == [1.5, 3.0]
    with model:  # after compiling: another length, and its coordinate
        pm.set_data({"x": np.arange(5.0), "y_data": np.zeros(5)}, coords={"obs": range(5)})
    assert [float(v) for v in total()] == [10.0, 5.0]
    np.testing.assert_array_equal(clone["y_data"].get_value(), np.zeros(5))

    # a model's other shared variables (its random generators) stay the clone's own
    def storage(var):
        return {id(v.container) for v in graph_ancestors([var]) if isinstance(v, SharedVariable)}

    assert storage(model["a"]) and not storage(model["a"]) & storage(clone["a"])


def test_current_data_are_copies_of_the_pm_data_a_clone_also_has():
    x = np.array([0.5, -1.0, 2.0])
    model = _regression(x, 2.0 * x)
    with pm.Model() as other:
        pm.Data("x", np.zeros(3))
    data = cache.current_data(model, other)
    assert list(data) == ["x"]
    np.testing.assert_array_equal(data["x"], x)
    data["x"][0] = 9.0  # a copy: the model keeps its values
    assert model["x"].get_value()[0] == 0.5


def test_elementwise_loglik_reads_new_pm_data_values_without_compiling_again():
    """Issue 39 item 4: the cached log-likelihood kept the data it was compiled with."""
    x, y = np.array([0.5, -1.0, 2.0]), np.array([1.0, -2.5, 4.5])
    model = _regression(x, y)
    fn = elementwise_loglik(model, "y")
    post = _posterior(a=[0.3], b=[1.8], s=[1.5])

    def exact(x, y):
        return stats.norm.logpdf(y, 0.3 + 1.8 * x, 1.5)[None, :]

    np.testing.assert_allclose(fn(post, y), exact(x, y), rtol=1e-12)
    x2, y2 = np.array([3.0, 0.0, -2.0]), np.array([5.5, 0.5, -3.0])
    with model:
        pm.set_data({"x": x2, "y_data": y2})
    assert elementwise_loglik(model, "y") is fn  # the same shapes: nothing compiled again
    np.testing.assert_allclose(fn(post, y2), exact(x2, y2), rtol=1e-12)
    # other shapes: compiled again (the one before is dropped), for the data of now
    x3, y3 = np.linspace(-1.0, 1.0, 5), np.linspace(0.0, 2.0, 5)
    with model:
        pm.set_data({"x": x3, "y_data": y3})
    longer = elementwise_loglik(model, "y")
    assert longer is not fn
    np.testing.assert_allclose(longer(post, y3), exact(x3, y3), rtol=1e-12)
    assert fn not in cache._CACHE[model].values()
    # the cached function does not hold its model
    ref = weakref.ref(model)
    del model, fn, longer
    gc.collect()
    assert ref() is None


def test_a_new_coordinate_length_is_a_new_structure():
    with pm.Model(coords={"g": range(3)}) as model:
        pm.Normal("theta", 0.0, 1.0, dims="g")
    density = _density_of(model, "theta")
    key = cache.structure_key(model)
    model.set_dim("g", 4, coord_values=range(4))
    assert cache.structure_key(model) != key
    longer = _density_of(model, "theta")
    assert longer is not density and longer.n_dims == 4
    kept = [(("ModelDensity", ("theta",)), cache.structure_key(model))]
    assert list(cache._CACHE[model]) == kept  # the density of 3 is dropped


def _density_of(model, name):
    key = ("ModelDensity", (name,))
    return cache.per_model(model, key, lambda: ModelDensity(model, [name]))

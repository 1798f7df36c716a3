"""Fingerprints of what a refit is computed from (refit.fingerprint), without sampling."""

import os

import numpy as np
import pymc as pm

from pymc_edp.refit.fingerprint import (
    builder_fingerprint,
    model_fingerprint,
    neighbour_fingerprint,
)

N = 8
Y = np.random.default_rng(32).normal(1.0, 1.0, N)


X = np.linspace(0.0, 1.0, N)


def build(prior_sd=1.0, y=Y, x=X, double=2.0):
    with pm.Model() as model:
        slope = pm.Data("x", x)
        mu = pm.Normal("mu", 0.0, prior_sd)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu + slope, sigma, observed=y)
        pm.Deterministic("twice", double * mu)
    return model


def test_model_fingerprint_tells_the_graph_from_the_data():
    graph, data = model_fingerprint(build())
    assert (graph, data) == model_fingerprint(build())  # another build of the same model
    assert len(graph) == len(data) == 16
    other_graph = [build(prior_sd=0.5), build(double=3.0)]  # a prior, a deterministic
    other_data = [build(y=Y + 5.0), build(x=np.zeros(N))]  # observed values, pm.Data
    for model in other_graph:
        assert model_fingerprint(model)[0] != graph and model_fingerprint(model)[1] == data
    for model in other_data:
        assert model_fingerprint(model)[0] == graph and model_fingerprint(model)[1] != data


SCRIPT = """
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("fp", sys.argv[1])
fp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fp)
scale = {"sd": 2.0, "names": frozenset(["a", "b", "c"]), "x": np.arange(4.0)}
def builder(data):
    return data, scale["sd"], {"x", "y"}
changes = {"y": (np.array([3, 5]), None), "z": (np.array([1]), np.array([[2.5]]))}
RESULT = [
    fp.builder_fingerprint(builder),
    fp.data_fingerprint({"y": np.arange(5.0), "z": np.ones(2)}),
    *fp.neighbour_fingerprint(changes).values(),
]
print(*RESULT)
"""


def test_fingerprints_are_the_same_in_another_process():
    """No id(), memory address or string hash (PYTHONHASHSEED) enters a fingerprint.

    (Model graphs: ``model_fingerprint`` hashes the ops' names and properties, the types
    and the constants, numbered in the order of a walk of the graph; kept out of this test,
    whose other process would take seconds to import PyMC.)
    """
    import subprocess
    import sys

    from pymc_edp.refit import fingerprint

    namespace = {"__name__": "__main__"}
    argv = sys.argv
    try:
        sys.argv = ["-c", fingerprint.__file__]
        exec(SCRIPT, namespace)
    finally:
        sys.argv = argv
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, fingerprint.__file__],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert out.stdout.split() == namespace["RESULT"]


def test_builder_fingerprint_covers_its_code_and_values():
    covariate = np.arange(3.0)

    def maker(sd, x):
        def build_model(data):
            return sd * x

        return build_model

    a = builder_fingerprint(maker(1.0, covariate))
    assert a == builder_fingerprint(maker(1.0, covariate.copy()))
    assert a != builder_fingerprint(maker(2.0, covariate))  # another prior
    assert a != builder_fingerprint(maker(1.0, covariate + 1))  # other covariates
    assert a != builder_fingerprint(lambda data: 1.0)


def test_neighbour_fingerprint_tells_records_from_replacement_values():
    removed = neighbour_fingerprint({"y": (np.array([0, 1]), None)})
    assert removed == neighbour_fingerprint({"y": (np.array([0, 1]), None)})
    other = neighbour_fingerprint({"y": (np.array([0, 4]), None)})  # another group
    assert other["records"] != removed["records"]
    replaced = neighbour_fingerprint({"y": (np.array([0, 1]), np.array([[2.0], [3.0]]))})
    assert replaced["records"] == removed["records"]
    assert replaced["replacement"] != removed["replacement"]
    again = neighbour_fingerprint({"y": (np.array([0, 1]), np.array([[2.0], [3.5]]))})
    assert again["replacement"] != replaced["replacement"]

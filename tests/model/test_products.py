"""Products of the streamed log-likelihood graph computed in order, under both backends."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

from pymc_edp.model.products import InOrderMatmul, exact_products
from pymc_edp.model.stream import _Graph


def _ops(out):
    from pymc_edp.model.compat import graph_toposort

    return [type(n.op).__name__ for n in graph_toposort([out])]


def test_replaces_float64_products_and_keeps_the_values(rng):
    x = pt.matrix("x")
    b = pt.tensor3("b")
    out = pt.exp(pt.matmul(x[None], b)).sum(axis=-1)
    new = exact_products(out)
    assert "InOrderMatmul" in _ops(new)
    xv, bv = rng.normal(size=(40, 3)), rng.normal(size=(10, 3, 2))
    for mode in (None, "NUMBA"):
        f = pytensor.function([x, b], new, mode=mode)
        np.testing.assert_allclose(f(xv, bv), np.exp(xv[None] @ bv).sum(-1), rtol=1e-13)


def test_leaves_other_products_alone():
    x = pt.matrix("x", dtype="float32")
    out = pt.dot(x, x.T)
    assert exact_products(out) is out
    v = pt.vector("v")  # a vector product is written with matrices: replaced, same value
    f = pytensor.function([v], exact_products(pt.dot(v, v)))
    np.testing.assert_allclose(f(np.arange(4.0)), 14.0)


def test_the_streamed_regression_uses_it(rng):
    n = 30
    with pm.Model() as model:
        xd = pm.Data("x", rng.normal(size=(n, 3)))
        b = pm.Normal("b", 0, 1, shape=3)
        pm.Normal("y", xd @ b, 1.0, observed=rng.normal(size=n))
    graph = _Graph(model, "y")
    assert any(isinstance(op, str) and op == "InOrderMatmul" for op in _ops(graph.output))
    assert InOrderMatmul() == InOrderMatmul()

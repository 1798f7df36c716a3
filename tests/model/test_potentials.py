"""Tests of likelihoods written in a ``pm.Potential`` (model.potentials).

The references are the models' definitions: a Potential's elements are records exactly when
element ``i`` reads row ``i`` of its data arrays only and no other term of the joint density
reads them; the rewrite as an observed ``pm.CustomDist`` must leave the joint density
unchanged (compared at random points), and switching a record's term off in the neighbour
model must give the density of the model built without the record.
"""

import re

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import zoo
import zoo_libraries

from pymc_edp.model.potentials import potentials_as_observed, read_potentials
from pymc_edp.model.transform import DW, neighbour_model

N = 8
_RNG = np.random.default_rng(39)
X = _RNG.poisson(2.0, N) + 1  # integers beside floats
Z = _RNG.gamma(2.0, 1.0, N)
DESIGN = _RNG.normal(size=(N, 3))
GROUP = _RNG.integers(0, 3, N)
INDEX = _RNG.permutation(N)


def _model(term, data=False) -> pm.Model:
    """A model whose only likelihood is ``pm.Potential("pot", term(a, b, z, x))``."""
    with pm.Model() as model:
        a = pm.HalfNormal("a")
        b = pm.Normal("b", shape=3)
        if data:
            z, x = pm.Data("z", Z), pm.Data("x", X)
        else:
            z, x = pt.as_tensor(Z), pt.as_tensor(X)
        pm.Potential("pot", term(a, b, z, x))
    return model


PER_RECORD = {
    "elementwise": lambda a, b, z, x: pm.logp(pm.Gamma.dist(a * x, 1.0), z),
    "design rows": lambda a, b, z, x: pm.logp(pm.Normal.dist(pt.as_tensor(DESIGN) @ b, a), z),
    "group effect": lambda a, b, z, x: pm.logp(pm.Normal.dist(b[pt.as_tensor(GROUP)], a), z),
    "table of 3": lambda a, b, z, x: pm.logp(
        pm.Normal.dist(pt.as_tensor(np.array([0.1, 0.5, 0.9]))[pt.as_tensor(GROUP)] * a, 1.0), z
    ),
    "rows of a matrix": lambda a, b, z, x: pm.logp(pm.Normal.dist(b, a), pt.as_tensor(DESIGN)),
}

NOT_PER_RECORD = {
    "summed": (
        lambda a, b, z, x: pm.logp(pm.Gamma.dist(a * x, 1.0), z).sum(),
        "a single term for all its records",
    ),
    "shifted slices": (
        lambda a, b, z, x: pm.logp(pm.Normal.dist(a * z[:-1], 1.0), z[1:]),
        r"none of the data arrays it reads has one row per element \(7\)",
    ),
    "reversed": (
        lambda a, b, z, x: pm.logp(pm.Normal.dist(a, 1.0), z[::-1]),
        "read other records' rows",
    ),
    "gathered by a data index": (
        lambda a, b, z, x: pm.logp(pm.Normal.dist(a, 1.0), z[pt.as_tensor(INDEX)]),
        "read other records' rows .values gathered by an index",
    ),
    "cumulated": (
        lambda a, b, z, x: pm.logp(pm.Normal.dist(a, 1.0), pt.cumsum(z)),
        "read other records' rows",
    ),
    "centred": (
        lambda a, b, z, x: pm.logp(pm.Normal.dist(a, 1.0), z - z.mean()),
        "read other records' rows",
    ),
    "pairs": (
        lambda a, b, z, x: pm.logp(pm.Normal.dist(a, 1.0), z[:, None] - z[None, :]),
        "a later axis runs along them",
    ),
    "columns first": (
        lambda a, b, z, x: pm.logp(pm.Normal.dist(b[:, None], a), pt.as_tensor(DESIGN).T),
        "none of the data arrays",
    ),
}


@pytest.mark.parametrize("data", [False, True], ids=["constants", "pm.Data"])
@pytest.mark.parametrize("case", list(PER_RECORD))
def test_one_element_per_record_is_proven(case, data):
    found = read_potentials(_model(PER_RECORD[case], data))
    p = found["pot"]
    assert p.proven, p.reason
    assert p.n_records == N and p.shape[0] == N
    if data and case == "elementwise":
        assert p.arrays == ("pm.Data 'x' (8,)", "pm.Data 'z' (8,)")
        assert "row i of pm.Data 'x' and pm.Data 'z' only" in p.describe()


@pytest.mark.parametrize("data", [False, True], ids=["constants", "pm.Data"])
@pytest.mark.parametrize("case", list(NOT_PER_RECORD))
def test_what_is_not_one_element_per_record_is_not_proven(case, data):
    term, reason = NOT_PER_RECORD[case]
    model = _model(term, data)
    p = read_potentials(model)["pot"]
    assert not p.proven
    assert re.search(reason, p.reason), p.reason
    pots = potentials_as_observed(model)
    assert pots.model is model and pots.audited == () and pots.unproven == (p,)
    advice = p.advice()
    assert "'pot' reads data" in advice and p.reason in advice
    # the parameters it reads, by name
    assert re.search(r'pm\.CustomDist\("pot", (a|b|a, b), logp=logp, observed=data\)', advice)


def test_a_record_read_by_another_term_is_not_proven():
    """Switching an element off would leave the record in the other term."""
    with pm.Model() as twice:
        a = pm.Normal("a")
        pm.Potential("pot", pm.logp(pm.Normal.dist(a, 1.0), Z))
        pm.Potential("again", 0.5 * pm.logp(pm.Normal.dist(a, 2.0), Z))
    found = read_potentials(twice)
    assert not found["pot"].proven
    assert found["pot"].reason == "its records' data are also read by the Potential 'again'"
    z = pt.as_tensor(Z)
    with pm.Model() as prior:
        s = pm.HalfNormal("s", z)  # one scale per record, from the same array
        pm.Potential("pot", pm.logp(pm.Normal.dist(0.0, s), z))
    assert "the log-density of 's'" in read_potentials(prior)["pot"].reason


def test_potentials_without_records_are_not_read():
    """On parameters only (a prior), on observed values (weights), or without parameters."""
    y = Z.copy()
    with pm.Model() as model:
        mu = pm.Normal("mu")
        obs = pm.Normal("y", mu, 1.0, observed=y)
        pm.Potential("penalty", -(mu**2))
        pm.Potential("weights", (0.5 * pm.logp(obs, y)).sum())
        pm.Potential("constant", pt.as_tensor(DESIGN).sum())
    assert read_potentials(model) == {}
    assert potentials_as_observed(model).model is model


def _random_points(model, rng, k=4):
    start = model.initial_point()
    return [{n: v + rng.normal(0.0, 0.5, np.shape(v)) for n, v in start.items()} for _ in range(k)]


def _same_logp(model, other, points):
    logp, other_logp = model.compile_logp(), other.compile_logp()
    for point in points:
        a, b = float(logp(point)), float(other_logp(point))
        assert np.isfinite(a)
        assert b == pytest.approx(a, rel=1e-12, abs=1e-12)


LIBRARY_MODELS = {
    "gamma-gamma": zoo_libraries.gamma_gamma_model,
    "weibull survival": zoo.survival_weibull_potential_model,
    "design rows, pm.Data": lambda: _model(PER_RECORD["design rows"], data=True),
    "integers and floats": lambda: _model(PER_RECORD["elementwise"]),
    "rows of a matrix": lambda: _model(PER_RECORD["rows of a matrix"], data=True),
}


@pytest.mark.parametrize("name", list(LIBRARY_MODELS))
def test_the_rewritten_model_has_the_joint_density(name, rng):
    model = LIBRARY_MODELS[name]()
    pots = potentials_as_observed(model)
    (pot,) = pots.audited
    new = pots.model
    assert [p.name for p in new.potentials] == []
    assert pot in [rv.name for rv in new.observed_RVs]
    _same_logp(model, new, _random_points(model, rng))
    # the pointwise terms are the Potential's elements
    (elements,) = model.replace_rvs_by_values([model[pot]])
    (terms,) = new.logp(vars=[new[pot]], sum=False)
    point = _random_points(model, rng, 1)[0]
    inputs = model.value_vars
    want = model.compile_fn(elements, inputs=inputs, on_unused_input="ignore")(point)
    got = new.compile_fn(terms, inputs=new.value_vars, on_unused_input="ignore")(point)
    want = np.asarray(want).reshape(len(want), -1).sum(axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("i", [0, 11, 59])
def test_switching_an_element_off_is_the_model_without_the_record(i, rng, monkeypatch):
    """The refits' neighbour model of the rewritten model: record ``i`` left out exactly."""
    model = zoo_libraries.gamma_gamma_model()
    x, z = zoo_libraries._spend()
    keep = np.arange(len(x)) != i
    with monkeypatch.context() as patch:  # the same model built without customer i
        patch.setattr(zoo_libraries, "_spend", lambda: (x[keep], z[keep]))
        without = zoo_libraries.gamma_gamma_model()
    pots = potentials_as_observed(model)
    nb = neighbour_model(pots.model)
    dw = np.zeros(60)
    dw[i] = -1.0
    nb[DW.format("likelihood")].set_value(dw)
    _same_logp(without, nb, _random_points(model, rng))


def test_set_data_is_read_by_the_rewritten_model(rng):
    """The rewrite is cached per model and values of its pm.Data: after set_data, the new."""
    model = _model(PER_RECORD["elementwise"], data=True)
    first = potentials_as_observed(model).model
    assert potentials_as_observed(model).model is first
    with model:
        pm.set_data({"z": 1.5 * Z, "x": X + 1})
    second = potentials_as_observed(model).model
    assert second is not first
    _same_logp(model, second, _random_points(model, rng))
    with pytest.raises(AssertionError):
        _same_logp(model, first, _random_points(model, rng))

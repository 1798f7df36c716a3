"""Tests of what a record is, read from the model's graph (model.structure).

The references are the models' definitions: a likelihood is factorised exactly when each of
its terms reads its own record's value only. Every model is written as users write it.
"""

import re

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from zoo_libraries import kalman_terms

from pymc_edp.model.structure import (
    likelihood_terms,
    observed_node,
    quadratic_in_values,
    read_structure,
    values_as_input,
)

N = 6


def _data(k, size=N):
    return np.random.default_rng(k).normal(size=size)


def _kalman_terms(y, sigma_level, sigma_obs):
    """A local-level Kalman filter: ``log p(y_t | y_1..y_t-1)``, one term per time step."""
    return kalman_terms(y, 0.0, sigma_level, sigma_obs, p0=1e3)


def _skew_walk(v, sigma, alpha):
    innovations = pm.logp(pm.SkewNormal.dist(mu=0.0, sigma=sigma, alpha=alpha), v[1:] - v[:-1])
    return innovations.sum() + pm.logp(pm.Normal.dist(0.0, 10.0), v[0])


def _models():
    y = {k: _data(k) for k in range(30)}
    counts = np.random.default_rng(1).poisson(3, N)
    with pm.Model() as m:
        mu = pm.Normal("mu")
        s = pm.HalfNormal("s")
        # factorised, as PyMC's distributions write them
        pm.Normal("normal", mu, s, observed=y[0])
        pm.StudentT("studentt", nu=3, mu=mu, sigma=s, observed=y[1])
        pm.Poisson("poisson", pm.math.exp(mu), observed=counts)
        pm.ZeroInflatedPoisson("zip", 0.3, pm.math.exp(mu), observed=counts + 1)
        pm.Censored(
            "censored", pm.Normal.dist(mu, s), lower=-1, upper=1, observed=y[2].clip(-1, 1)
        )
        pm.Truncated("truncated", pm.Normal.dist(mu, s), lower=-3, upper=3, observed=y[3])
        pm.Mixture(
            "mixture",
            w=[0.3, 0.7],
            comp_dists=[pm.Normal.dist(mu, 1), pm.Normal.dist(mu + 1, 1)],
            observed=y[4],
        )
        pm.OrderedLogistic(
            "ordinal", eta=mu, cutpoints=np.array([-1.0, 0.0, 1.0]), observed=counts % 4
        )
        pm.Categorical(
            "categorical", p=pm.math.softmax(pt.stack([mu, 0.0, 1.0])), observed=counts % 3
        )
        pm.MvNormal("mv_rows", mu * np.ones(3), cov=np.eye(3), observed=y[5].reshape(2, 3))
        # coupled
        pm.MvNormal("mv_series", mu * np.ones(N), cov=np.eye(N) + 0.5, observed=y[6])
        pm.AR("ar", rho=[0.5], sigma=1.0, init_dist=pm.Normal.dist(), observed=y[7])
        pm.GaussianRandomWalk("grw", sigma=s, init_dist=pm.Normal.dist(), observed=y[8])
        adjacency = np.diag(np.ones(N - 1), 1) + np.diag(np.ones(N - 1), -1)
        pm.CAR("car", mu=np.zeros(N), W=adjacency, alpha=0.5, tau=1.0, observed=y[9])
        pm.MvStudentT("mvt", nu=4, mu=np.zeros(N), scale=np.eye(N), observed=y[10])
        pm.CustomDist("skew_walk", s, 3.0, logp=_skew_walk, observed=y[11])
        pm.CustomDist("kalman", s, 1.0, logp=_kalman_terms, observed=y[12])
        pm.CustomDist(  # Gaussian terms and a Laplace smoothness term: one term per value
            "gauss_laplace",
            logp=lambda v: (
                pm.logp(pm.Normal.dist(0.0, 1.0), v)
                - pt.concatenate([pt.zeros(1), pt.abs(v[1:] - v[:-1])])
            ),
            observed=y[13],
        )
        pm.MvNormal("one_row", mu * np.ones(4), cov=np.eye(4), observed=y[14][:4].reshape(1, 4))
        pm.Dirichlet("simplex", a=np.ones(3), observed=np.array([0.2, 0.3, 0.5]))
    return m


FACTORISED = {
    "normal": "each term reading its own value",
    "studentt": "each term reading its own value",
    "poisson": "each term reading its own value",
    "zip": "each term reading its own value",
    "censored": "each term reading its own value",
    "truncated": "each term reading its own value",
    "mixture": "each term reading its own value",
    "ordinal": "each term reading its own value",
    "categorical": "each term reading its own value",
    "mv_rows": "each term reading one row",
}
COUPLED = {
    "mv_series": "one log-density term for all its values",
    "ar": "one log-density term for all its values",
    "grw": "one log-density term for all its values",
    "car": "one log-density term for all its values",  # its terms have shape (1,)
    "mvt": "one log-density term for all its values",
    "skew_walk": "one log-density term for all its values",
    "kalman": r"structure cannot be read \(Scan on the values\)",
    "gauss_laplace": r"read other records' values \(a slice of the values",
    "one_row": "a single multivariate observation",
    "simplex": "one log-density term for all its values",
}


@pytest.fixture(scope="module")
def built():
    """The model, and its log-density graphs built once for every test (``logps``)."""
    return _models(), {}


@pytest.fixture
def model(built):
    return built[0]


@pytest.fixture
def logps(built):
    return built[1]


@pytest.mark.parametrize("name", list(FACTORISED))
def test_factorised_likelihoods_are_proven_from_the_graph(model, logps, name):
    st = read_structure(model, model[name], logps=logps)
    assert st.factorised, st.reason
    assert FACTORISED[name] in st.reason
    assert st.n_records == (2 if name == "mv_rows" else N)
    assert st.record_size == (3 if name == "mv_rows" else 1)


@pytest.mark.parametrize("name", list(COUPLED))
def test_coupled_likelihoods_are_found_whatever_their_number_of_terms(model, logps, name):
    st = read_structure(model, model[name], logps=logps)
    assert st.coupled
    assert re.search(COUPLED[name], st.reason), st.reason
    assert st.record_size == 1  # a series' records are its values
    assert st.n_records == (4 if name == "one_row" else 3 if name == "simplex" else N)


def test_a_simplex_cannot_lose_one_value(model, logps):
    st = read_structure(model, model["simplex"], logps=logps)
    with pytest.raises(ValueError, match="simplex.*no value can be removed.*rows of an array"):
        st.check_changeable()
    read_structure(model, model["ar"], logps=logps).check_changeable()  # a series can


def test_rows_or_elements_as_the_user_chooses(model, logps):
    rows = read_structure(model, model["mv_rows"], records="elements", logps=logps)
    assert rows.coupled and rows.n_records == N and rows.record_size == 1
    assert "its values are the records, coupled within it" in rows.reason
    series = read_structure(model, model["one_row"], records="rows", logps=logps)
    assert series.factorised and series.n_records == 1 and series.record_size == 4
    with pytest.raises(ValueError, match="records must be one of"):
        read_structure(model, model["ar"], records="columns", logps=logps)


def test_a_term_reading_another_records_value_through_a_deterministic_couples_them():
    y = _data(0)
    with pm.Model() as m:
        mu = pm.Normal("mu")
        base = pm.Normal("base", mu, 1.0, observed=y)
        lag = pm.Deterministic("lag", base[:-1])
        pm.Normal("next", 0.5 * lag, 1.0, observed=_data(1)[:-1])
    st = read_structure(m, m["base"])
    assert st.coupled and st.terms == ("next",)
    assert "also read by the log-density of 'next'" in st.reason
    assert list(likelihood_terms(m, m["base"])) == ["base", "next"]
    assert read_structure(m, m["next"]).factorised  # its own values are its own


def test_observing_equal_values_is_not_reading_them():
    """PyMC merges equal constants: two variables observing one array stay factorised."""
    counts = np.array([2, 0, 7, 3, 1, 2])
    with pm.Model() as m:
        mu = pm.Normal("mu")
        pm.Poisson("a", pm.math.exp(mu), observed=counts)
        pm.NegativeBinomial("b", pm.math.exp(mu), 2.0, observed=counts)
    for name in ("a", "b"):
        assert read_structure(m, m[name]).factorised


def test_records_read_again_beside_their_values_are_refused():
    """A hand-written AR: ``mu = rho * y[:-1]`` beside ``observed=y[1:]``."""
    series = _data(3, 8)
    with pm.Model() as m:
        yy = pm.Data("yy", series)
        rho = pm.Normal("rho")
        pm.Normal("shifted", mu=rho * yy[:-1], sigma=1.0, observed=yy[1:])
    with pytest.raises(ValueError, match="reads its records' values again.*yy"):
        read_structure(m, m["shifted"])
    with pm.Model() as m:
        rho = pm.Normal("rho")
        pm.Normal("lagged", mu=rho * series[:-1], sigma=1.0, observed=series[1:])
    with pytest.raises(ValueError, match="reads its records' values again.*shifted by 1"):
        read_structure(m, m["lagged"])


def test_a_covariate_sharing_values_with_the_outcome_is_no_copy():
    """Data recorded to one decimal share values by chance: that is no lag."""
    rng = np.random.default_rng(2)
    x = np.round(rng.normal(20, 2, 30), 1)
    y = np.round(x + rng.normal(0, 1, 30), 1)
    with pm.Model() as m:
        beta = pm.Normal("beta")
        pm.Normal("y", beta * x, 1.0, observed=y)
    assert read_structure(m, m["y"]).factorised


@pytest.mark.parametrize(
    ("name", "quadratic"),
    [
        ("normal", True),
        ("mv_series", True),
        ("ar", True),
        ("grw", True),
        ("car", True),
        ("studentt", False),
        ("mvt", False),
        ("skew_walk", False),
        ("kalman", False),  # a scan: not proven (checked at the draws instead)
        ("gauss_laplace", False),
        ("censored", False),  # a bound check
    ],
)
def test_a_quadratic_form_is_proven_only_from_sums_products_and_linear_solves(
    model, logps, name, quadratic
):
    rv = model[name]
    logp = likelihood_terms(model, rv, logps)[name]
    value, data = observed_node(model, rv)
    y, (graph,) = values_as_input([logp.sum()], value, data, name)
    assert quadratic_in_values(graph, y) is quadratic

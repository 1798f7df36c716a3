"""Tests of The neighbour-model transform (:mod:`pymc_edp.model.transform`)."""

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr

from pymc_edp import refit
from pymc_edp.model import transform


def _coupled_model(y):
    with pm.Model() as model:
        m = pm.Normal("m", 0, 1)
        pm.MvNormal("y", m * np.ones(4), np.eye(4) + 0.5, observed=y)
    return model


def test_neighbour_model_leaves_a_coupled_record_unobserved():
    """An MvNormal over records: the neighbour's log density is the data's with record 2 free."""
    from scipy import stats

    y = np.array([0.3, -1.2, 2.5, 0.4])
    model = _coupled_model(y)
    nb = refit.neighbour_model(model)
    assert {"edp_missing_y", "edp_idx_y", "edp_on_y"} <= set(nb.named_vars)
    logp = nb.compile_logp()
    cov = np.eye(4) + 0.5

    def reference(m, values):
        return stats.norm.logpdf(m) + stats.multivariate_normal(m * np.ones(4), cov).logpdf(values)

    point = {"m": np.array(0.7), "edp_missing_y": np.array([5.0])}
    # no record left out: the model's own density, the free value apart (a normal of mean 1,
    # unnormalised, so that a sampler starting at 0 sees a gradient)
    assert logp(point) == pytest.approx(
        reference(0.7, y) + stats.norm.logpdf(5.0, 1.0) + 0.5 * np.log(2 * np.pi)
    )
    with nb:
        pm.set_data({"edp_idx_y": np.array([2]), "edp_on_y": np.array([1.0])})
    free = y.copy()
    free[2] += 5.0  # the free value is an offset from the observed one
    assert logp(point) == pytest.approx(reference(0.7, free), rel=1e-12)
    # replacement: the value is set, nothing is free
    alt = y.copy()
    alt[1] = -4.0
    with nb:
        pm.set_data({"edp_on_y": np.array([0.0]), "edp_alt_y": alt})
    assert logp(point) == pytest.approx(
        reference(0.7, alt) + stats.norm.logpdf(5.0, 1.0) + 0.5 * np.log(2 * np.pi), rel=1e-12
    )


def test_a_discrete_coupled_record_is_summed_over_a_range_of_integers():
    """A Poisson autoregression: record 3 unobserved, its value a uniform integer offset."""
    from scipy import special, stats

    counts = np.array([2, 3, 1, 4, 6, 3, 2, 2])

    def ingarch(v, a):
        rate = pt.exp(a + 0.3 * pt.log1p(v[:-1]))
        return pm.logp(pm.Poisson.dist(rate), v[1:]).sum() + pm.logp(pm.Poisson.dist(3.0), v[0])

    def log_lik(v, a):
        rate = np.exp(a + 0.3 * np.log1p(v[:-1]))
        return stats.poisson.logpmf(v[1:], rate).sum() + stats.poisson.logpmf(v[0], 3.0)

    with pm.Model() as model:
        a = pm.Normal("a")
        pm.CustomDist("y", a, logp=ingarch, observed=counts, dtype="int64")
    nb = refit.neighbour_model(model)
    missing = nb["edp_missing_y"]
    assert missing.dtype.startswith("int")
    with nb:
        pm.set_data({"edp_idx_y": np.array([3]), "edp_on_y": np.array([1])})
    logp = nb.compile_logp()
    reach = 5 * int(np.ptp(counts) + 1)  # the offsets range over the data's range, 5 times
    values = [
        logp({"a": np.array(0.4), "edp_missing_y": np.array([m])})
        for m in range(-reach, reach + 1)
    ]
    # summed over the offsets: the data's likelihood with y_3 summed out (uniform prior)
    joint = [
        log_lik(np.r_[counts[:3], counts[3] + m, counts[4:]], 0.4)
        if counts[3] + m >= 0
        else -np.inf
        for m in range(-reach, reach + 1)
    ]
    got = special.logsumexp(values)
    want = stats.norm.logpdf(0.4) + special.logsumexp(joint) - np.log(2 * reach + 1)
    assert got == pytest.approx(want, rel=1e-7)  # PyMC's Poisson and SciPy's agree to ~1e-8


def test_neighbour_model_censored_likelihood():
    """pm.Censored (the demo's survival model) refits without stray random variables."""
    from pymc_edp.datasets import heart_transplant_model, load_heart_transplant

    df = load_heart_transplant().iloc[:12]
    model = heart_transplant_model(df)
    nb = refit.neighbour_model(model)
    (obs,) = model.observed_RVs
    dw = np.zeros(12)
    dw[3] = -1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "RandomVariables were found in the derived graph"
        logp = nb.compile_logp()
        point = nb.initial_point()
        full = logp(point)
        with nb:
            pm.set_data({f"edp_dw_{obs.name}": dw})
        removed = logp(point)
    # removing record 3 subtracts exactly its log-likelihood term
    terms = model.compile_fn(model.logp(vars=[obs], sum=False)[0])(model.initial_point())
    assert full - removed == pytest.approx(terms[3], rel=1e-10)


def test_refit_tasks_hold_changes_not_full_data():
    """A task keeps its neighbour's rows only; full pm.Data vectors appear when it runs."""

    from pymc_edp.core.loglik import LogLikelihood, Neighbours

    ll = LogLikelihood.from_dataset(
        xr.Dataset(
            {
                "y1": (("chain", "draw", "i"), np.zeros((1, 4, 6))),
                "y2": (("chain", "draw", "j"), np.zeros((1, 4, 3))),
            }
        )
    )
    nbs = Neighbours.from_groups(ll, {"y1": [0, 0, 1, 1, 2, 2], "y2": [0, 1, 2]})
    y = {"y1": np.arange(6.0), "y2": np.arange(3.0) + 10}
    changes = transform.neighbour_changes(ll, nbs, 1, {"y1": -y["y1"], "y2": -y["y2"]})
    np.testing.assert_array_equal(changes["y1"][0], [2, 3])
    np.testing.assert_array_equal(changes["y2"][0], [1])
    np.testing.assert_array_equal(changes["y2"][1].ravel(), [-11.0])
    maker = transform.NeighbourDataMaker(y, {"y1": (6,), "y2": (3,)})
    data = maker(1, 1, changes)
    np.testing.assert_array_equal(data["edp_dw_y1"], [0, 0, -1, -1, 0, 0])
    np.testing.assert_array_equal(data["edp_alt_y1"], [0, 1, -2, -3, 4, 5])
    np.testing.assert_array_equal(data["edp_v_y2"], [0, 1, 0])
    removed = transform.NeighbourDataMaker(y, {"y1": (6,), "y2": (3,)}, builder=True)(
        1, 1, transform.neighbour_changes(ll, nbs, 1, None)
    )
    np.testing.assert_array_equal(removed["y1"], [0, 1, 4, 5])
    np.testing.assert_array_equal(removed.keep["y2"], [True, False, True])


def test_a_removal_only_neighbour_model_has_the_model_density_and_no_replacement_data():
    """``replace=False`` (removal audits, issue 40): no second log-likelihood at replacement
    values; its density with record 1 removed is the data's without record 1, and its
    compiled graph evaluates no more log-densities than the model's."""
    from scipy import stats

    y = np.array([0.3, -1.2, 2.5])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=y)
    full = refit.neighbour_model(model)
    nb = refit.neighbour_model(model, replace=False)
    assert "edp_alt_y" in full.named_vars
    assert {d.name for d in nb.data_vars} == {"edp_dw_y"}
    maker = transform.NeighbourDataMaker({"y": y}, {"y": (3,)}, replace=False)
    data = maker(1, 1, {"y": (np.array([1]), None)})
    assert set(data) == {"edp_dw_y"}
    with nb:
        pm.set_data(data)
    point = {"mu": np.array(0.4)}
    expected = stats.norm.logpdf(0.4) + stats.norm.logpdf(y[[0, 2]], 0.4).sum()
    assert nb.compile_logp()(point) == pytest.approx(expected)
    with pytest.raises(ValueError, match="only removes records"):
        maker(1, 1, {"y": (np.array([1]), np.array([9.0]))})

    def per_record_ops(m):  # (fused) elementwise operations reading the records' vectors
        nodes = m.compile_logp().f.maker.fgraph.apply_nodes
        return sum(
            "Elemwise" in type(n.op).__name__ and any(i.ndim == 1 for i in n.inputs) for n in nodes
        )

    assert per_record_ops(nb) == per_record_ops(model) < per_record_ops(full)

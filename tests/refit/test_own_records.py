"""A refit's log density ratio from its neighbour's own records only (refit.run).

``RefitProblem.refit_log_ratio`` evaluates, at a refit's draws, only the records of the
neighbour refitted (:class:`pymc_edp.model.stream.ModelColumns`); the reference evaluates
every record and keeps the neighbour's rows. Both must give the same log ratio up to
rounding: the per-record terms come from two compiled functions of the same PyMC graph.
"""

import warnings
from collections.abc import Mapping

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from refit_support import refit_kw

import pymc_edp as edp
from pymc_edp.core.loglik import LogLikelihood
from pymc_edp.core.neighbours import Neighbours, Remove, Replace
from pymc_edp.model.pymc import elementwise_loglik
from pymc_edp.refit import run
from pymc_edp.refit.run import RefitProblem

TOL = 1e-10
CHAINS, DRAWS = 2, 50


def fake_posterior(rng, **shapes) -> xr.Dataset:
    """Random draws ``(chain, draw, *shape)`` of each variable; positive ones end in ``+``."""
    data = {}
    for name, shape in shapes.items():
        values = rng.normal(0.0, 1.0, (CHAINS, DRAWS, *shape))
        if name.endswith("_pos"):
            values = np.abs(values) + 0.3
        dims = ("chain", "draw", *(f"{name}_dim_{i}" for i in range(len(shape))))
        data[name.removesuffix("_pos")] = (dims, values)
    return xr.Dataset(data)


def layout(observed: dict) -> LogLikelihood:
    """The record layout of a log_likelihood group with one term per observed element."""
    data = {}
    for name, y in observed.items():
        dims = ("chain", "draw", *(f"{name}_dim_{i}" for i in range(np.ndim(y))))
        data[name] = xr.DataArray(np.zeros((1, 1, *np.shape(y))), dims=dims)
    return LogLikelihood.from_dataset(xr.Dataset(data))


def problem_of(model, observed: dict, groups=None, candidates=None, seed=0) -> RefitProblem:
    ll = layout(observed)
    nbs = Neighbours.records(ll) if groups is None else Neighbours.from_groups(ll, groups)
    worst = None
    if candidates is not None:
        n_cand = next(iter(candidates.values())).shape[0]
        worst = np.random.default_rng(seed).integers(0, n_cand, len(nbs))
    return RefitProblem(
        model=model,
        ll=ll,
        neighbours=nbs,
        names=(),
        bins=None,
        smoothing=0.0,
        observed_y=observed,
        relation=Remove() if candidates is None else Replace().with_candidates(candidates, []),
        worst_candidate=worst,
    )


class Refusing(Mapping):
    """Log-likelihood functions that must not be called (every record evaluated)."""

    def __init__(self, names):
        self.names = list(names)

    def __getitem__(self, name):
        raise AssertionError(f"every record of {name!r} was evaluated")

    def __iter__(self):
        return iter(self.names)

    def __len__(self):
        return len(self.names)


def fns(model, names):
    return {n: elementwise_loglik(model, n) for n in names}


def assert_same(problem, model, posterior, neighbours=None, streamed=True):
    """The own-records log ratio equals the all-records one for every neighbour."""
    names = problem.ll.names
    reference = fns(model, names)
    own = Refusing(names) if streamed else reference
    for k in range(len(problem.neighbours)) if neighbours is None else neighbours:
        want = problem._all_records_log_ratio(reference, k, posterior)
        got = problem.refit_log_ratio(own, k, posterior)
        assert got.shape == want.shape == (CHAINS * DRAWS,)
        np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)
        assert np.any(got != 0)


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(1)
    n = 25
    X = rng.normal(size=(n, 3))
    y = X @ np.array([0.5, -1.0, 2.0]) + rng.normal(0.0, 0.7, n)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        beta = pm.Normal("beta", 0, 1, shape=3)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", a + pm.math.dot(X, beta), sigma, observed=y)
    posterior = fake_posterior(rng, a=(), beta=(3,), sigma_pos=())
    return model, {"y": y}, posterior


def test_removal_matches_every_record(regression):
    model, observed, posterior = regression
    problem = problem_of(model, observed)
    assert_same(problem, model, posterior)
    # compiled once for the problem, shared by every neighbour
    cols, _ = problem._own["y"]
    assert cols.shape[1] == 25


def test_replacement_with_candidates_matches_every_record(regression):
    model, observed, posterior = regression
    y = observed["y"]
    candidates = {"y": np.stack([np.full_like(y, c) for c in (-3.0, 0.0, 4.5)])}
    problem = problem_of(model, observed, candidates=candidates)
    assert_same(problem, model, posterior)


def test_groups_of_several_rows_match_every_record(regression):
    model, observed, posterior = regression
    groups = np.random.default_rng(2).integers(0, 6, observed["y"].size)  # shuffled rows
    problem = problem_of(model, observed, groups=groups)
    assert np.all(problem.neighbours.n_rows > 1)
    assert_same(problem, model, posterior)
    y = observed["y"]
    candidates = {"y": np.stack([y + 1.0, y - 2.0])}
    assert_same(
        problem_of(model, observed, groups=groups, candidates=candidates), model, posterior
    )


def test_two_observed_variables_match_every_record():
    rng = np.random.default_rng(3)
    y1 = rng.normal(1.0, 1.0, 12)
    counts = rng.poisson(3.0, 6)
    exposure = rng.uniform(0.5, 2.0, 6)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 3)
        b = pm.Normal("b", 0, 1)
        pm.Normal("y1", a, 1.0, observed=y1)
        pm.Poisson("y2", exposure * pm.math.exp(b + 0.1 * a), observed=counts)
    observed = {"y1": y1, "y2": counts}
    posterior = fake_posterior(rng, a=(), b=())
    assert_same(problem_of(model, observed), model, posterior)
    # individuals spanning both variables (two rows of y1 and one of y2 each)
    groups = {"y1": np.repeat(np.arange(6), 2)[::-1], "y2": np.arange(6)}
    problem = problem_of(model, observed, groups=groups)
    assert set(problem.neighbours.observed) == {"*"}
    assert_same(problem, model, posterior)
    candidates = {
        "y1": np.stack([np.full(12, 5.0), np.full(12, -1.0)]),
        "y2": np.stack([np.full(6, 9), np.zeros(6, dtype=counts.dtype)]),
    }
    problem = problem_of(model, observed, groups=groups, candidates=candidates)
    assert_same(problem, model, posterior)


def test_a_variable_that_cannot_stream_evaluates_every_record():
    """Two columns per record (a 2-d elementwise log-likelihood): the reference path."""
    rng = np.random.default_rng(4)
    y_ok = rng.normal(0.0, 1.0, 8)
    y_wide = rng.normal(1.0, 1.0, (5, 2))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        pm.Normal("y_ok", mu, 1.0, observed=y_ok)
        pm.Normal("y_wide", mu + 1.0, 1.0, observed=y_wide)
    observed = {"y_ok": y_ok, "y_wide": y_wide}
    posterior = fake_posterior(rng, mu=())
    problem = problem_of(model, observed)
    assert_same(problem, model, posterior, streamed=False)
    assert isinstance(problem._own["y_wide"], str)  # why not, kept for the log
    assert not isinstance(problem._own["y_ok"], str)
    # a record of the streamed variable alone never evaluates the other one
    assert_same(problem, model, posterior, neighbours=range(8), streamed=True)
    groups = np.concatenate([np.arange(8) % 4, np.repeat(np.arange(5), 2) % 4])
    candidates = {"y_ok": np.full((1, 8), 3.0), "y_wide": np.full((1, 5, 2), -2.0)}
    problem = problem_of(model, observed, groups=groups, candidates=candidates)
    assert_same(problem, model, posterior, streamed=False)


def test_without_a_model_or_with_the_flag_off_every_record_is_evaluated(regression, monkeypatch):
    model, observed, posterior = regression
    problem = problem_of(model, observed)
    want = problem._all_records_log_ratio(fns(model, ["y"]), 3, posterior)
    monkeypatch.setattr(run, "_OWN_RECORDS", False)
    with pytest.raises(AssertionError, match="every record"):
        problem.refit_log_ratio(Refusing(["y"]), 3, posterior)
    np.testing.assert_array_equal(problem.refit_log_ratio(fns(model, ["y"]), 3, posterior), want)
    assert problem._own == {}


def test_non_finite_terms_raise_as_before():
    y = np.array([1, 0, 3, 2])
    with pm.Model() as model:
        lam = pm.HalfNormal("lam", 2)
        pm.Poisson("y", lam, observed=y)
    posterior = fake_posterior(np.random.default_rng(5), lam_pos=())
    problem = problem_of(model, {"y": y}, candidates={"y": np.full((1, 4), -1)})
    reference = fns(model, ["y"])
    with pytest.raises(ValueError) as old:
        problem._all_records_log_ratio(reference, 2, posterior)
    with pytest.raises(ValueError) as new:
        problem.refit_log_ratio(reference, 2, posterior)
    assert str(new.value) == str(old.value)
    assert "replacement values" in str(new.value)


@pytest.mark.slow
def test_audit_gives_the_same_epsilon_either_way(monkeypatch):
    rng = np.random.default_rng(6)
    x = rng.normal(size=20)
    y = 1.0 + 2.0 * x + rng.normal(0.0, 0.5, 20)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 3)
        b = pm.Normal("b", 0, 3)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", a + b * x, sigma, observed=y)
        idata = pm.sample(
            200,
            tune=200,
            chains=2,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
        pm.compute_log_likelihood(idata, progressbar=False)
    kw = refit_kw({"draws": 200, "tune": 200, "chains": 2}, max_refits=2)
    results = {}
    for own in (True, False):
        monkeypatch.setattr(run, "_OWN_RECORDS", own)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", edp.EDPWarning)
            results[own] = edp.audit(idata, model, var_names=["b"], bins=5, method="refit", **kw)
    new, old = results[True], results[False]
    refitted = new.pointwise["method"].values == "refit"
    assert refitted.sum() == 2
    np.testing.assert_array_equal(refitted, old.pointwise["method"].values == "refit")
    np.testing.assert_allclose(
        new.pointwise["epsilon"].values, old.pointwise["epsilon"].values, rtol=TOL, atol=TOL
    )
    assert new.epsilon == pytest.approx(old.epsilon, rel=TOL, abs=TOL)

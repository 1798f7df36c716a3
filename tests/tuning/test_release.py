"""Tests of :func:`pymc_edp.tune_prior` with a release target (``release=``)."""

import math

import pymc as pm
import pytest

import pymc_edp as edp
from pymc_edp import EDPWarning, ReleaseResult, tune_prior
from pymc_edp.results.tuning import LEAKAGE_CAVEAT
from pymc_edp.tuning import prior as prior_module
from pymc_edp.tuning.release import ReleaseAuditor

SIGMA = math.sqrt(5.0)
SIGMA0 = math.sqrt(3.0)


def _normal_model(y, sigma0=SIGMA0):
    with pm.Model() as model:
        s0 = pm.Data("sigma0", sigma0)
        mu = pm.Normal("mu", 10.0, s0)
        pm.Normal("y", mu, SIGMA, observed=y)
    return model


@pytest.fixture
def y50(rng):
    return rng.normal(10.0, SIGMA, 50)


def test_release_target_checked_before_sampling(y50, monkeypatch):
    model = _normal_model(y50)

    def no_sampling(*args, **kwargs):
        raise AssertionError("sampled before the release target was checked")

    monkeypatch.setattr(prior_module._Sampler, "__call__", no_sampling)
    kw = dict(hyperparameter="sigma0", target_epsilon=1.0, progressbar=False)
    with pytest.raises(ValueError, match=r"release must be one of \('draws', 'synthetic'\)"):
        tune_prior(model, release="nonsense", **kw)
    with pytest.raises(ValueError, match="k must be an integer >= 1, got 0"):
        tune_prior(model, release="draws", k=0, **kw)
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
        tune_prior(model, release="synthetic", delta=1.0, **kw)
    with pytest.raises(ValueError, match="describe synthetic data"):
        tune_prior(model, release="draws", n_synthetic=5, **kw)
    with pytest.raises(TypeError, match="statistic must be a function"):
        tune_prior(model, release="synthetic", statistic=3.0, **kw)
    with pytest.raises(TypeError, match="unexpected keyword argument 'copies'"):
        tune_prior(model, release="synthetic", copies=5, **kw)
    with pytest.raises(ValueError, match="not an observed variable"):
        tune_prior(model, release="synthetic", observed="nope", **kw)
    with pytest.raises(ValueError, match="bootstrap"):
        tune_prior(model, release="synthetic", options={"n_bootstrap": -1}, **kw)
    with pytest.raises(ValueError, match="release"):
        tune_prior(model, release=5, **kw)


def test_release_target_kwargs_are_audit_release_arguments():
    """tune_prior's release keywords are audit_release's, with the same defaults."""
    import inspect

    import pymc_edp as edp

    params = inspect.signature(tune_prior).parameters
    target = {
        name: p.default
        for name, p in inspect.signature(edp.audit_release).parameters.items()
        if name not in ("idata", "model", "random_seed", "progressbar")
    }
    assert {name: params[name].default for name in target if name != "release"} == {
        name: default for name, default in target.items() if name != "release"
    }
    target.update(release="draws", k=5, delta=1e-3)
    kwargs = ReleaseAuditor(target).kwargs
    assert kwargs["k"] == 5 and kwargs["delta"] == 1e-3 and kwargs["release"] == "draws"
    assert ReleaseAuditor(target).trial_kwargs()["options"].n_bootstrap == 50
    small = {**target, "options": {"n_bootstrap": 20}}
    assert ReleaseAuditor(small).trial_kwargs()["options"].n_bootstrap == 20


@pytest.mark.slow
@pytest.mark.both_stacks
def test_tune_prior_to_a_draws_release_target(y50, tmp_path):
    """k = 5 posterior draws at epsilon <= 1.5, delta = 1e-3, neighbour "remove"."""
    model = _normal_model(y50)
    target = dict(release="draws", k=5, delta=1e-3, options={"n_bootstrap": 100})
    rtol = 0.05
    with pytest.warns(EDPWarning) as record:
        res = tune_prior(
            model,
            hyperparameter="sigma0",
            target_epsilon=1.5,
            random_seed=11,
            progressbar=False,
            refit=edp.RefitOptions(draws=1000, tune=500, chains=2),
            search=edp.SearchOptions(rtol=rtol),
            **target,
        )
    assert any(LEAKAGE_CAVEAT == str(w.message) for w in record)
    assert res.warnings[0] == LEAKAGE_CAVEAT
    audit = res.audit
    assert isinstance(audit, ReleaseResult)
    assert audit.release == "draws" and audit.k == 5 and audit.target_delta == 1e-3
    assert res.epsilon == audit.headline
    assert not audit.lower_bound
    # the stated tolerance: rtol plus three Monte-Carlo errors of the confirmation
    assert abs(res.epsilon - 1.5) <= rtol * 1.5 + 3 * res.mcse, (res.epsilon, audit.interval)
    assert 0 < res.mcse < 0.1
    # a stronger prior than the untuned one, whose release epsilon was above the target
    assert res.value < res.initial_value
    assert res.initial_epsilon > 1.5
    assert res.direction == "increasing"
    assert "audit_release" in res.method
    assert list(res.utility.children) == ["mu"]
    assert float(res.utility["mu"]["sd_ratio"]) < 1
    assert "leaks information" in repr(res)
    # the model is left as it was given
    assert float(model["sigma0"].get_value()) == pytest.approx(SIGMA0)
    # the confirmation's release result round-trips through netCDF
    path = tmp_path / "release.nc"
    audit.to_netcdf(path)
    back = ReleaseResult.from_netcdf(path)
    assert back.headline == audit.headline and back.interval == audit.interval
    print(
        f"target 1.5: confirmed {res.epsilon:.4f} +- {res.mcse:.4f}, interval "
        f"{audit.interval}, value {res.value:.4g} (untuned {res.initial_value:.4g}, "
        f"epsilon {res.initial_epsilon:.4f}), {res.trials.sizes['trial']} trials"
    )


@pytest.mark.slow
def test_tune_prior_to_a_synthetic_release_target(rng):
    """m = 3 synthetic copies of 10 Bernoulli records (listed exactly) at delta = 1e-3."""
    y = (rng.random(10) < 0.3).astype(int)
    with pm.Model() as model:
        a = pm.Data("a", 1.0)
        p = pm.Beta("p", a, a)
        pm.Bernoulli("y", p, observed=y)
    with pytest.warns(EDPWarning):
        res = tune_prior(
            model,
            hyperparameter="a",
            target_epsilon=1.0,
            release="synthetic",
            k=3,
            delta=1e-3,
            random_seed=5,
            progressbar=False,
            refit=edp.RefitOptions(draws=1000, tune=500, chains=2),
            search=edp.SearchOptions(rtol=0.05),
        )
    assert res.audit.release == "synthetic" and res.audit.k == 3
    assert abs(res.epsilon - 1.0) <= 0.05 + 3 * res.mcse + 3 * float(res.trials["mcse"].max())
    assert res.direction == "decreasing" and res.value > res.initial_value
    print(
        f"synthetic target 1.0: confirmed {res.epsilon:.4f} +- {res.mcse:.4f}, interval "
        f"{res.audit.interval}, a = {res.value:.4g}"
    )


def _two_observed_model(rng):
    """A mean ``mu`` observed twice: ``y`` and ``z`` (a draws release publishes ``mu``)."""
    with pm.Model() as model:
        s0 = pm.Data("sigma0", SIGMA0)
        mu = pm.Normal("mu", 10.0, s0)
        pm.Normal("y", mu, SIGMA, observed=rng.normal(10.0, SIGMA, 20))
        pm.Normal("z", mu, SIGMA, observed=rng.normal(10.0, SIGMA, 15))
    return model


def _target(**given):
    """audit_release's keywords at their defaults, with ``given``."""
    import inspect

    skip = ("idata", "model", "random_seed", "progressbar")
    params = inspect.signature(edp.audit_release).parameters.items()
    return {**{n: p.default for n, p in params if n not in skip}, **given}


def test_release_target_kinds_are_read_from_the_kind_not_a_string(rng):
    """A draws target names no observed variable, whatever the model observes; the label
    says what each kind publishes."""
    model = _two_observed_model(rng)
    draws = ReleaseAuditor(_target(release="draws", k=5, delta=1e-3), model)
    assert draws.label == "audit_release: posterior draws, k = 5 at delta 0.001"
    synthetic = ReleaseAuditor(_target(release="synthetic", observed="z", k=3), model)
    assert synthetic.label == "audit_release: synthetic datasets, k = 3 at delta 1e-05"
    # a synthetic release draws one observed variable: with two, it must be named
    with pytest.raises(ValueError, match=r"observed variables \['y', 'z'\]: say which one"):
        ReleaseAuditor(_target(release="synthetic"), model)


@pytest.mark.slow
def test_tune_prior_to_a_draws_release_of_a_model_with_two_observed_variables(rng):
    """audit_release reads every observed variable's records: so does a draws target."""
    model = _two_observed_model(rng)
    with pytest.warns(EDPWarning):
        res = tune_prior(
            model,
            hyperparameter="sigma0",
            target_epsilon=1.5,
            release="draws",
            k=2,
            delta=1e-3,
            options={"n_bootstrap": 20},
            random_seed=3,
            progressbar=False,
            refit=edp.RefitOptions(draws=500, tune=300, chains=2),
            search=edp.SearchOptions(rtol=0.1),
        )
    assert res.audit.release == "draws" and res.audit.n_neighbours == 35
    assert res.method == "audit_release: posterior draws, k = 2 at delta 0.001"
    assert "posterior draws, k = 2" in repr(res)

"""After ``pm.set_data``, an audit of the same model equals a fresh process's (issue 39, item 4).

What pymc_edp compiles from a model is cached per model: the elementwise log-likelihood (and
the leave-one-out conditionals of a coupled likelihood), the moment-matching densities, the
refits' neighbour model and its sampler. A cache that kept the data it was built with gave a
coupled AR a wrong epsilon after ``pm.set_data`` and refused a regression's stored
log-likelihood as "shuffled draws". Each test fits a model, audits it, sets new data (of the
same length, then of another length), fits and audits again in the same process; a new Python
process, where nothing is cached, audits the same posteriors with the model built on the new
data. Same code, same draws, same seed: the audits agree to the last bits (1e-12).
"""

import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_edp as edp

FIT = dict(draws=300, tune=300, chains=2, cores=1, progressbar=False, nuts_sampler="pymc")
#: Two runs of the same code on the same draws: only the last bits may differ (they do not).
RTOL = ATOL = 1e-12


def _regression(x, y_obs):
    """A factorised regression; covariate and observed values are ``pm.Data``."""
    with pm.Model() as model:
        x_data = pm.Data("x", x)
        y_data = pm.Data("y_obs", y_obs)
        a = pm.Normal("a", 0.0, 5.0)
        b = pm.Normal("b", 0.0, 5.0)
        s = pm.HalfNormal("s", 2.0)
        pm.Normal("y", a + b * x_data, s, observed=y_data, shape=x_data.shape)
    return model


def _ar(y_obs):
    """A coupled likelihood: ``pm.AR`` over ``pm.Data`` observed values."""
    with pm.Model() as model:
        y_data = pm.Data("y_obs", y_obs)
        rho = pm.Normal("rho", 0.0, 0.5)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.AR("y", rho=[rho], sigma=sigma, init_dist=pm.Normal.dist(0.0, 4.0), observed=y_data)
    return model


BUILDERS = {"regression": _regression, "ar": _ar}


def _regression_data(seed, n, slope):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = 1.0 + slope * x + rng.normal(size=n)
    y[3] += 6.0  # an outlier: epsilons far apart
    return {"x": x, "y_obs": y}


def _ar_data(seed, n, rho):
    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    for t in range(1, n):
        y[t] = rho * y[t - 1] + rng.normal()
    y[n // 2] += 4.0
    return {"y_obs": y}


def _audit(idata, model, kwargs) -> dict:
    """What two audits must share: every number of the result, its verdict and warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", edp.EDPWarning)
        res = edp.audit(idata, model, progressbar=False, **kwargs)
    out = {
        "epsilon": np.asarray(res.epsilon),
        "verification": str(res.verification),
        "warnings": sorted(str(w.message) for w in caught if w.category is edp.EDPWarning),
    }
    for name, da in res.pointwise.data_vars.items():
        out[f"pointwise {name}"] = np.asarray(da.values)
    for name, da in res.epsilon_by_var.data_vars.items():
        out[f"epsilon_by_var {name}"] = np.asarray(da.values)
    return out


_FRESH = """
import importlib.util, pickle, sys
spec = importlib.util.spec_from_file_location("set_data_case", sys.argv[1])
case = importlib.util.module_from_spec(spec)
spec.loader.exec_module(case)
with open(sys.argv[2], "rb") as f:
    jobs = pickle.load(f)
out = [case._audit(idata, case.BUILDERS[name](**data), kw) for name, data, idata, kw in jobs]
with open(sys.argv[3], "wb") as f:
    pickle.dump(out, f)
"""


def _fresh_process(tmp_path, jobs) -> list[dict]:
    """``_audit`` of each ``(builder, data, idata, kwargs)`` in a new Python process."""
    jobs_file, out_file = tmp_path / "jobs.pkl", tmp_path / "out.pkl"
    with open(jobs_file, "wb") as f:
        pickle.dump(jobs, f)
    # the same modules as this process (this worktree's pymc_edp), nothing else cached
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    args = [sys.executable, "-c", _FRESH, __file__, str(jobs_file), str(out_file)]
    run = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    with open(out_file, "rb") as f:
        return pickle.load(f)


def _assert_same(got: dict, fresh: dict, what: str) -> None:
    assert sorted(got) == sorted(fresh), what
    for key, value in fresh.items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            np.testing.assert_allclose(
                got[key], value, rtol=RTOL, atol=ATOL, equal_nan=True, err_msg=f"{what}: {key}"
            )
        elif isinstance(value, np.ndarray):
            np.testing.assert_array_equal(got[key], value, err_msg=f"{what}: {key}")
        else:
            assert got[key] == value, f"{what}: {key}"


def _audits_after_set_data(tmp_path, name, datasets, kwargs, *, log_likelihood=False):
    """Audit, ``pm.set_data``, refit and audit again per dataset; then a fresh process's audits.

    With ``log_likelihood`` the fits store it (the audit checks it against the model's).
    """
    model = BUILDERS[name](**datasets[0])
    same_process, jobs = [], []
    for k, data in enumerate(datasets):
        with model:
            if k:
                pm.set_data(data)
            idata = pm.sample(random_seed=10 + k, **FIT)
            if log_likelihood:
                pm.compute_log_likelihood(idata, extend_inferencedata=True, progressbar=False)
        same_process.append(_audit(idata, model, kwargs))
        jobs.append((name, data, idata, kwargs))
    fresh = _fresh_process(tmp_path, jobs[1:])
    for k, (got, ref) in enumerate(zip(same_process[1:], fresh, strict=True), start=1):
        n = len(next(iter(datasets[k].values())))
        _assert_same(got, ref, f"audit after pm.set_data #{k} ({n} records)")
    return same_process


@pytest.mark.slow
@pytest.mark.both_stacks
def test_a_factorised_regression_after_set_data_audits_as_a_fresh_process(tmp_path):
    """Its stored log-likelihood was refused as "shuffled draws" (compared with stale data)."""
    datasets = [
        _regression_data(1, 30, 2.0),
        _regression_data(2, 30, -0.5),  # same length, other values
        _regression_data(3, 41, 1.0),  # another length
    ]
    kwargs = dict(method="psis", bins=10, random_seed=0)
    audits = _audits_after_set_data(tmp_path, "regression", datasets, kwargs, log_likelihood=True)
    assert [a["pointwise epsilon"].size for a in audits] == [30, 30, 41]
    # the outlier leads each audit, and the audits differ: other data, other epsilons
    assert all(int(np.argmax(a["pointwise epsilon"])) == 3 for a in audits)
    assert len({float(a["epsilon"]) for a in audits}) == 3


@pytest.mark.slow
@pytest.mark.both_stacks
def test_a_coupled_ar_after_set_data_audits_as_a_fresh_process(tmp_path):
    """The conditionals p(y_i | y_-i) were computed around the first fit's series."""
    datasets = [_ar_data(1, 40, 0.6), _ar_data(2, 40, 0.3), _ar_data(3, 52, 0.5)]
    kwargs = dict(method="psis", bins=10, random_seed=0)
    audits = _audits_after_set_data(tmp_path, "ar", datasets, kwargs)
    assert [a["pointwise epsilon"].size for a in audits] == [40, 40, 52]
    assert len({float(a["epsilon"]) for a in audits}) == 3


@pytest.mark.slow
def test_the_default_audit_with_refits_after_set_data_audits_as_a_fresh_process(tmp_path):
    """The cached neighbour model and sampler refit the new data, as a fresh process does."""
    datasets = [_regression_data(1, 30, 2.0), _regression_data(2, 30, -0.5)]
    refit = edp.RefitOptions(draws=300, tune=300, chains=2)
    kwargs = dict(bins=10, random_seed=0, refit=refit)
    audits = _audits_after_set_data(tmp_path, "regression", datasets, kwargs, log_likelihood=True)
    second = audits[1]
    assert "refit" in set(second["pointwise method"].tolist())  # the refits ran
    assert second["verification"] == "confirmed"


@pytest.mark.slow
def test_the_default_audit_of_a_coupled_ar_after_set_data_audits_as_a_fresh_process(tmp_path):
    """Refits with the record unobserved, on the cached neighbour model, as a fresh process's."""
    datasets = [_ar_data(1, 30, 0.6), _ar_data(2, 30, 0.3)]
    refit = edp.RefitOptions(draws=300, tune=300, chains=2)
    kwargs = dict(bins=10, random_seed=0, refit=refit)
    audits = _audits_after_set_data(tmp_path, "ar", datasets, kwargs)
    # the refits ran (an agreeing raw refit keeps the reweighted estimate it confirms)
    assert audits[1]["verification"] in {"confirmed", "corrected"}

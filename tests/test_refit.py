import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_edp as edp
from pymc_edp import conjugate, refit
from pymc_edp.model.compat import get_group, make_container, set_group
from pymc_edp.model.loglik import NonFactorisedError

SAMPLE_KW = {"progressbar": False, "compute_convergence_checks": False}
REFIT_OPTS = {"draws": 1000, "tune": 500, "chains": 2}
SMALL_OPTS = {**REFIT_OPTS, "draws": 300, "tune": 300}


def refit_kw(base=REFIT_OPTS, **opts):
    """Audit keywords: refit options (``base`` updated by ``opts``), seed, no progress bar."""
    return {"refit": edp.RefitOptions(**{**base, **opts}), "random_seed": 7, "progressbar": False}


REFIT_KW = refit_kw()


def sample(model, draws, chains=4, seed=1, **kw):
    with model:
        idata = pm.sample(
            draws,
            tune=1000,
            chains=chains,
            cores=min(chains, 2),
            random_seed=seed,
            **SAMPLE_KW,
            **kw,
        )
        pm.compute_log_likelihood(idata, progressbar=False)
    return idata


# ------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def normal30():
    rng = np.random.default_rng(30)
    sigma, mu0, sigma0 = np.sqrt(5.0), 10.0, np.sqrt(3.0)
    y = rng.normal(10.0, sigma, 30)
    with pm.Model() as model:
        mu = pm.Normal("mu", mu0, sigma0)
        pm.Normal("y", mu, sigma, observed=y)
    return sample(model, 2500), model, (y, sigma, mu0, sigma0)


@pytest.fixture(scope="module")
def normal30_refits(tmp_path_factory):
    """One set of refits (a checkpoint) serves every B and both estimators."""
    return tmp_path_factory.mktemp("nn30")


# ------------------------------------------------------------------- accuracy
@pytest.mark.slow
@pytest.mark.parametrize("bins", [5, 10, 20])
def test_normal_normal_refit_within_5_percent(normal30, normal30_refits, bins):
    idata, model, (y, sigma, mu0, sigma0) = normal30
    exact = conjugate.normal_normal_edp(y, sigma, mu0, sigma0, bins)
    res = edp.audit(
        idata,
        model,
        bins=bins,
        method="refit",
        **refit_kw(checkpoint=normal30_refits),
    )
    raw = edp.audit(
        idata,
        model,
        bins=bins,
        method="refit",
        **refit_kw(estimator="raw", checkpoint=normal30_refits),
    )
    assert set(res.pointwise["method"].values) == {"refit"}
    assert len(res.refits) == 30
    assert res.epsilon == pytest.approx(exact, rel=0.05)
    # Charest & Han's procedure on the same refit draws: biased upward (their Tables 3-4);
    # the pooled estimator removes most of it
    assert raw.epsilon > exact
    assert abs(res.epsilon - exact) < 0.5 * abs(raw.epsilon - exact)
    # the refit posteriors are the exact neighbour posteriors
    worst = res.worst_neighbour
    post = res.refits[worst].posterior["mu"].values
    mean, sd = conjugate.normal_normal_posterior(np.delete(y, worst), sigma, mu0, sigma0)
    assert post.mean() == pytest.approx(mean, abs=4 * sd / np.sqrt(500))
    assert post.std() == pytest.approx(sd, rel=0.1)


@pytest.fixture(scope="module")
def bernoulli_table2():
    y = np.array([1, 0, 0, 0, 0])
    with pm.Model() as model:
        p = pm.Beta("p", 0.5, 0.5)
        pm.Bernoulli("y", p, observed=y)
    return sample(model, 2500, seed=5), model


@pytest.mark.slow
@pytest.mark.parametrize("bins", [5, 10, 20])
def test_bernoulli_replace_refit(bernoulli_table2, bins, tmp_path_factory):
    idata, model = bernoulli_table2
    res = edp.audit(
        idata,
        model,
        bins=bins,
        method="refit",
        neighbour="replace",
        **refit_kw(checkpoint=tmp_path_factory.getbasetemp() / "bb"),
    )
    exact = conjugate.beta_binomial_edp(5, 1, 0.5, 0.5, bins, neighbour="replace")
    assert res.epsilon == pytest.approx(exact, rel=0.05)
    assert set(res.pointwise["method"].values) == {"refit"}


# ------------------------------------------------------- auto refits the bad k-hat
@pytest.fixture(scope="module")
def outlier_model():
    """Normal mean with one gross outlier: removing it moves the posterior by ~4 sd."""
    rng = np.random.default_rng(3)
    y = np.append(rng.normal(0.0, 1.0, 19), 9.0)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=y)
    return sample(model, 1000, chains=2), model, y


@pytest.mark.slow
def test_auto_refits_the_extreme_record(outlier_model):
    idata, model, y = outlier_model
    with pytest.warns(edp.EDPWarning, match="k-hat above"):
        psis = edp.audit(idata, model, bins=10, method="psis", progressbar=False)
    assert psis.pointwise["pareto_k"].values[-1] > psis.khat_threshold
    auto = edp.audit(idata, model, bins=10, method="auto", **REFIT_KW)
    full = edp.audit(idata, model, bins=10, method="refit", **REFIT_KW)
    methods = auto.pointwise["method"].values
    assert methods[-1] == "refit"
    assert np.all(methods[:-1] == "psis")
    assert auto.warnings == ()
    # same seed per neighbour: auto's refit of the outlier is refit's refit of it
    assert auto.pointwise["epsilon"].values[-1] == full.pointwise["epsilon"].values[-1]
    exact = conjugate.normal_normal_edp(y, 1.0, 0.0, 10.0, 10, pointwise=True)
    # 2,000 full-data draws: ~5% MC error at this epsilon
    assert auto.pointwise["epsilon"].values[-1] == pytest.approx(exact[-1], rel=0.1)
    assert auto.epsilon == pytest.approx(exact.max(), rel=0.1)


def test_pm_sample_with_nutpie_audited_end_to_end_with_refits():
    """What a PyMC 6 user runs: pm.sample through nutpie, pm.compute_log_likelihood, an
    audit with method="auto" that refits the bad-k-hat record (nutpie engine); every object
    that comes back is the stack's own container."""
    pytest.importorskip("nutpie")
    rng = np.random.default_rng(3)
    y = np.append(rng.normal(0.0, 1.0, 14), 12.0)  # PSIS k-hat of the outlier about 1
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=y)
        idata = pm.sample(
            1000, tune=500, chains=2, nuts_sampler="nutpie", random_seed=4, progressbar=False
        )
        pm.compute_log_likelihood(idata, progressbar=False)
    container = type(make_container({}))
    assert isinstance(idata, container)
    res = edp.audit(idata, model, bins=10, method="auto", **refit_kw(engine="nutpie"))
    assert res.pointwise["pareto_k"].values[-1] > res.khat_threshold
    assert res.pointwise["method"].values[-1] == "refit"
    assert res.pointwise["status"].values[-1] == "ok"
    assert list(res.refits) == [res.pointwise["neighbour"].values[-1]]
    refit = res.refits[res.pointwise["neighbour"].values[-1]]
    assert isinstance(refit, container)
    assert dict(get_group(refit, "posterior").sizes) == {"chain": 2, "draw": 1000}
    exact = conjugate.normal_normal_edp(y, 1.0, 0.0, 10.0, 10, pointwise=True)
    assert res.epsilon == pytest.approx(exact.max(), rel=0.1)


def test_max_refits_leaves_the_rest_flagged(outlier_model):
    idata, model, _ = outlier_model
    with pytest.warns(edp.EDPWarning) as record:
        res = edp.audit(idata, model, bins=10, method="refit", **refit_kw(max_refits=0))
    assert set(res.pointwise["method"].values) == {"psis"}
    messages = [str(w.message) for w in record]
    # the outlier stays flagged, and the budget names what it left to reweighting
    assert any("k-hat above" in m for m in messages)
    assert any(m.startswith("max_refits=0: 20 neighbour(s) left to reweighting") for m in messages)
    assert res.warnings == tuple(messages)


# --------------------------------------------------------- groups and several obs
@pytest.mark.slow
def test_hierarchical_leave_one_group_out():
    rng = np.random.default_rng(8)
    groups = np.repeat(np.arange(5), 6)
    y = rng.normal(rng.normal(0, 1, 5)[groups], 1.0)
    coords = {"school": ["a", "b", "c", "d", "e"], "obs": np.arange(30)}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", 0, 2)
        tau = pm.HalfNormal("tau", 1)
        z = pm.Normal("z", 0, 1, dims="school")
        theta = pm.Deterministic("theta", mu + tau * z, dims="school")
        pm.Normal("y", theta[groups], 1.0, observed=y, dims="obs")
    idata = sample(model, 1000, chains=2, target_accept=0.9)
    set_group(
        idata,
        "log_likelihood",
        get_group(idata, "log_likelihood").assign_coords(
            pupil_school=("obs", np.array(coords["school"])[groups])
        ),
    )
    res = edp.audit(
        idata,
        model,
        var_names="mu",
        bins=5,
        method="refit",
        groups="pupil_school",
        **refit_kw(sampler_kwargs={"target_accept": 0.99}),
    )
    assert list(res.pointwise["neighbour"].values) == coords["school"]
    np.testing.assert_array_equal(res.pointwise["n_rows"], 6)
    assert set(res.pointwise["method"].values) == {"refit"}
    assert np.all(np.isfinite(res.pointwise["epsilon"]))
    # the refit of school "a" is the model without any of its pupils
    post = res.refits["a"].posterior
    assert {"mu", "tau", "z"} <= set(post.data_vars)


@pytest.mark.slow
def test_two_observed_variables_sharing_individuals():
    rng = np.random.default_rng(9)
    person1 = np.repeat(np.arange(6), 2)
    y1 = rng.normal(1.0, 1.0, 12)
    y2 = rng.normal(2.0, 1.0, 6)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 3)
        b = pm.Normal("b", 0, 3)
        pm.Normal("y1", a, 1.0, observed=y1)
        pm.Normal("y2", a + b, 1.0, observed=y2)
    idata = sample(model, 1000, chains=2)
    groups = {"y1": person1, "y2": np.arange(6)}
    res = edp.audit(idata, model, bins=5, method="refit", groups=groups, **REFIT_KW)
    assert res.n_neighbours == 6
    np.testing.assert_array_equal(res.pointwise["n_rows"], 3)
    assert set(res.pointwise["observed"].values) == {"*"}
    # person 0 removed: a's posterior is conjugate in y1[2:] and y2[1:] - b (b integrated):
    # check against the PSIS estimate, which is reliable here (all k-hat good)
    psis = edp.audit(idata, model, bins=5, method="psis", groups=groups, progressbar=False)
    np.testing.assert_allclose(
        res.pointwise["epsilon"], psis.pointwise["epsilon"], rtol=0.25, atol=0.03
    )


# ------------------------------------------------------------- resumable refits
def test_interrupted_audit_resumes(outlier_model, tmp_path, monkeypatch):
    idata, model, _ = outlier_model
    reference = edp.audit(idata, model, bins=5, method="refit", **REFIT_KW)
    engine_cls = refit.NutpieEngine
    original = engine_cls.sample
    calls = {"n": 0}

    def flaky(self, data, seed):
        calls["n"] += 1
        if calls["n"] == 8:
            raise KeyboardInterrupt("simulated kill after 7 refits")
        return original(self, data, seed)

    monkeypatch.setattr(engine_cls, "sample", flaky)
    ckpt = tmp_path / "ckpt"
    with pytest.raises(KeyboardInterrupt):
        edp.audit(
            idata,
            model,
            bins=5,
            method="refit",
            **refit_kw(checkpoint=ckpt),
        )
    assert len(list(ckpt.glob("refit_*.nc"))) == 7
    calls["n"] = 100  # no more interruptions; count the refits of the rerun
    res = edp.audit(idata, model, bins=5, method="refit", **refit_kw(checkpoint=ckpt))
    assert calls["n"] - 100 == 20 - 7
    np.testing.assert_array_equal(res.pointwise["epsilon"], reference.pointwise["epsilon"])
    # a different configuration is refused rather than mixed in
    with pytest.raises(ValueError, match="different audit"):
        edp.audit(
            idata,
            model,
            bins=5,
            method="refit",
            **refit_kw(draws=500, checkpoint=ckpt),
        )


def test_failed_refit_is_recorded(outlier_model, monkeypatch):
    idata, model, _ = outlier_model
    original = refit.NutpieEngine.sample

    def broken(self, data, seed):
        if data["edp_dw_y"][3] == -1:
            raise RuntimeError("sampler exploded")
        return original(self, data, seed)

    monkeypatch.setattr(refit.NutpieEngine, "sample", broken)
    with pytest.warns(edp.EDPWarning, match="1 refit.s. failed"):
        res = edp.audit(idata, model, bins=5, method="refit", **REFIT_KW)
    assert res.pointwise["method"].values[3] == "psis"
    assert res.pointwise["status"].values[3] == "error: RuntimeError: sampler exploded"
    assert res.refits.status.loc[3, "status"] == "error"
    # the result says what happened: not every neighbour was refitted
    assert res.method == "auto" and "B = 5, auto)" in repr(res)


@pytest.mark.filterwarnings("ignore:Pareto k-hat above:pymc_edp.EDPWarning")
@pytest.mark.filterwarnings("ignore:.*refit.s. failed:pymc_edp.EDPWarning")
def test_method_says_psis_when_no_refit_succeeded(outlier_model, monkeypatch):
    """Every refit fails (e.g. nutpie on a model it cannot sample): not reported as 'refit'."""
    idata, model, _ = outlier_model

    def broken(self, data, seed):
        raise TypeError("Cannot convert Type Scalar(float64) into Type Scalar(int64)")

    monkeypatch.setattr(refit.NutpieEngine, "sample", broken)
    monkeypatch.setattr(refit.PymcEngine, "sample", broken)
    with pytest.warns(edp.EDPWarning, match="none of the 20 refit.s. succeeded"):
        res = edp.audit(idata, model, bins=5, method="refit", **REFIT_KW)
    assert res.method == "psis"
    assert "B = 5, psis)" in repr(res)
    assert set(res.pointwise["method"].values) == {"psis"}


# ------------------------------------------------------- self-healing checkpoints
SMALL_KW = refit_kw(SMALL_OPTS)


@pytest.fixture(scope="module")
def normal10():
    """A Normal mean with 10 records and its refit audit without a checkpoint."""
    y = np.random.default_rng(10).normal(1.0, 1.0, 10)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        pm.Normal("y", mu, 1.0, observed=y)
    idata = sample(model, 300, chains=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        reference = edp.audit(idata, model, bins=5, method="refit", **SMALL_KW)
    return idata, model, reference


def _count_engine_calls(monkeypatch, fail_once=None):
    """Count the nutpie refits; optionally make the refit of record ``fail_once`` fail once."""
    original = refit.NutpieEngine.sample
    calls = {"n": 0, "failed": False}

    def counting(self, data, seed):
        calls["n"] += 1
        if fail_once is not None and data["edp_dw_y"][fail_once] == -1 and not calls["failed"]:
            calls["failed"] = True
            raise RuntimeError("worker lost")
        return original(self, data, seed)

    monkeypatch.setattr(refit.NutpieEngine, "sample", counting)
    return calls


def test_damaged_checkpoint_heals_itself(normal10, tmp_path, monkeypatch):
    idata, model, reference = normal10
    ckpt = tmp_path / "ckpt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        edp.audit(
            idata,
            model,
            bins=5,
            method="refit",
            **refit_kw(SMALL_OPTS, checkpoint=ckpt),
        )
    half, empty = ckpt / "refit_000002.nc", ckpt / "refit_000005.nc"
    half.write_bytes(half.read_bytes()[: half.stat().st_size // 2])
    empty.write_bytes(b"")
    (ckpt / "manifest.json").write_text('{"draws": 300, "tu')
    calls = _count_engine_calls(monkeypatch)
    with pytest.warns(edp.EDPWarning) as record:
        res = edp.audit(
            idata,
            model,
            bins=5,
            method="refit",
            **refit_kw(SMALL_OPTS, checkpoint=ckpt),
        )
    text = "\n".join(str(w.message) for w in record)
    assert "refit_000002.nc is damaged" in text and "refit_000005.nc is damaged" in text
    assert "manifest" in text and "manifest.json.damaged" in text
    assert calls["n"] == 2  # exactly the two damaged neighbours
    np.testing.assert_array_equal(res.pointwise["epsilon"], reference.pointwise["epsilon"])
    assert set(res.pointwise["method"].values) == {"refit"}
    assert (ckpt / "refit_000002.nc.damaged").exists()
    assert (ckpt / "refit_000005.nc.damaged").stat().st_size == 0
    assert (ckpt / "manifest.json.damaged").read_text() == '{"draws": 300, "tu'
    # healed: the next rerun restores everything silently
    with warnings.catch_warnings():
        warnings.simplefilter("error", edp.EDPWarning)
        again = edp.audit(
            idata,
            model,
            bins=5,
            method="refit",
            **refit_kw(SMALL_OPTS, checkpoint=ckpt),
        )
    assert calls["n"] == 2
    np.testing.assert_array_equal(again.pointwise["epsilon"], reference.pointwise["epsilon"])
    # with the manifest damaged again, refit files of another configuration are refused
    (ckpt / "manifest.json").write_text("garbage")
    with pytest.raises(ValueError, match="different audit"):
        edp.audit(
            idata,
            model,
            bins=5,
            method="refit",
            **refit_kw(SMALL_OPTS, draws=200, checkpoint=ckpt),
        )
    assert (ckpt / "manifest.json").read_text() == "garbage"  # nothing touched


def test_checkpoint_checks_the_configuration_hash(tmp_path):
    import xarray as xr

    post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, 4)))})
    out = refit.RefitOutcome(3, 3, "ok", "", 11, 0.5, post)
    a, b = {"draws": 10}, {"draws": 20}
    refit.Checkpoint(tmp_path / "a", a).save(out)
    assert refit.Checkpoint(tmp_path / "a", a).load(3).posterior["mu"].shape == (1, 4)
    # a refit file of another audit next to this audit's manifest
    ckpt_b = refit.Checkpoint(tmp_path / "b", b)
    (tmp_path / "b" / "refit_000003.nc").write_bytes(
        (tmp_path / "a" / "refit_000003.nc").read_bytes()
    )
    with pytest.raises(ValueError, match="different audit.*configuration hash"):
        ckpt_b.load(3)
    # a file without a hash (older checkpoints): accepted while the manifest is intact ...
    with xr.open_dataset(tmp_path / "a" / "refit_000003.nc") as ds:
        old = ds.load()
    del old.attrs["config_hash"]
    old.to_netcdf(tmp_path / "a" / "refit_000003.nc")
    assert refit.Checkpoint(tmp_path / "a", a).load(3).status == "ok"
    # ... and set aside (unverifiable) when the manifest was damaged
    (tmp_path / "a" / "manifest.json").write_text("[1, 2")
    ckpt = refit.Checkpoint(tmp_path / "a", a)
    assert ckpt.load(3) is None
    assert (tmp_path / "a" / "refit_000003.nc.unverified").exists()
    assert "manifest" in ckpt.messages[0] and "refit_000003.nc" in ckpt.messages[1]
    # garbled attributes count as damage
    bad = post.copy()
    bad.attrs = {"index": 4, "status": "ok"}
    bad.to_netcdf(tmp_path / "a" / "refit_000004.nc")
    assert ckpt.load(4) is None
    assert "refit_000004.nc is damaged" in ckpt.messages[-1]
    assert "missing attribute" in ckpt.messages[-1]


def test_failed_refit_is_retried(normal10, tmp_path, monkeypatch):
    import json

    idata, model, reference = normal10
    ckpt = tmp_path / "ckpt"
    calls = _count_engine_calls(monkeypatch, fail_once=3)
    with pytest.warns(edp.EDPWarning, match="1 refit.s. failed"):
        first = edp.audit(
            idata,
            model,
            bins=5,
            method="refit",
            **refit_kw(SMALL_OPTS, checkpoint=ckpt),
        )
    assert first.refits.status.loc[3, "status"] == "error"
    assert calls["n"] == 10
    # retry_failed=False keeps the saved failure
    config = json.loads((ckpt / "manifest.json").read_text())
    tasks = [refit.RefitTask(k, k, None, refit.refit_seed(7, k)) for k in range(10)]

    class Unused:
        def sample(self, data, seed):
            raise AssertionError("nothing should be refitted")

    kept = refit.run_refits(
        Unused(),
        tasks,
        checkpoint=refit.Checkpoint(ckpt, config),
        progressbar=False,
        retry_failed=False,
    )
    assert kept[3].status == "error" and kept[3].reason == "RuntimeError: worker lost"
    assert {kept[k].status for k in range(10) if k != 3} == {"ok"}
    # by default a rerun refits the failure, and it now succeeds
    res = edp.audit(idata, model, bins=5, method="refit", **refit_kw(SMALL_OPTS, checkpoint=ckpt))
    assert calls["n"] == 11
    assert res.refits.status.loc[3, "status"] == "ok"
    assert set(res.pointwise["method"].values) == {"refit"}
    np.testing.assert_array_equal(res.pointwise["epsilon"], reference.pointwise["epsilon"])


def test_discrete_latent_variable_refits_with_pymc(caplog):
    import logging

    y = np.random.default_rng(11).normal(3.0, 1.0, 10)
    with pm.Model() as model:
        k = pm.Poisson("k", 3.0)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu + k, 1.0, observed=y)
    idata = sample(model, 300, chains=2)
    with caplog.at_level(logging.INFO, logger="pymc_edp"), warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        res = edp.audit(idata, model, bins=5, method="refit", **SMALL_KW)
    assert "discrete latent variable" in caplog.text and "'k'" in caplog.text
    status = res.refits.status["status"]
    assert len(status) == 10 and set(status) <= {"ok", "diverged"}
    assert set(res.pointwise["method"].values) == {"refit"}
    assert np.all(np.isfinite(res.pointwise["epsilon"]))
    with pytest.raises(ValueError, match="nutpie cannot sample discrete latent.*engine='pymc'"):
        edp.audit(
            idata,
            model,
            bins=5,
            method="refit",
            **refit_kw(SMALL_OPTS, engine="nutpie"),
        )


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:max_refits=3:pymc_edp.EDPWarning")
def test_pymc_engine_and_dask_give_the_same_result(outlier_model):
    distributed = pytest.importorskip("distributed")
    idata, model, _ = outlier_model
    kw = refit_kw(max_refits=3)
    serial = edp.audit(idata, model, bins=5, method="refit", **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dask's own start-up chatter
        cluster = distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        dist = edp.audit(
            idata, model, bins=5, method="refit", **refit_kw(max_refits=3, executor=client)
        )
    finally:
        client.close()
        cluster.close()
    np.testing.assert_array_equal(dist.pointwise["epsilon"], serial.pointwise["epsilon"])
    pymc_engine = edp.audit(
        idata, model, bins=5, method="refit", **refit_kw(max_refits=3, engine="pymc")
    )
    # a different sampler: equal within Monte-Carlo error
    np.testing.assert_allclose(
        pymc_engine.pointwise["epsilon"], serial.pointwise["epsilon"], rtol=0.15
    )


# ----------------------------------------------------------------- build_model path
def test_neighbour_model_refuses_non_factorised():
    with pm.Model() as model:
        m = pm.Normal("m", 0, 1)
        pm.MvNormal("y", m * np.ones(4), np.eye(4) + 0.5, observed=np.zeros(4))
    with pytest.raises(NonFactorisedError, match="build_model"):
        refit.neighbour_model(model)


@pytest.mark.slow
def test_build_model_refits_a_non_factorised_model():
    rng = np.random.default_rng(4)
    y = rng.normal(1.0, 1.0, 8)

    def build_model(data):
        n = len(data["y"])
        with pm.Model() as m:
            mu = pm.Normal("mu", 0, 3)
            pm.MvNormal("y", mu * np.ones(n), np.eye(n), observed=data["y"])
        return m

    model = build_model({"y": y})
    with model:
        idata = pm.sample(1000, tune=500, chains=2, random_seed=2, **SAMPLE_KW)
    with pytest.raises(ValueError, match="method='psis' needs a factorised"):
        edp.audit(
            idata,
            bins=5,
            method="psis",
            progressbar=False,
            refit=edp.RefitOptions(build_model=build_model),
        )
    with pytest.warns(edp.EDPWarning, match="raw estimator"):
        res = edp.audit(
            idata,
            bins=5,
            method="auto",
            **refit_kw(build_model=build_model),
        )
    assert res.n_neighbours == 8
    assert set(res.pointwise["method"].values) == {"refit"}
    # MvNormal with identity covariance is the Normal-Normal model in disguise
    exact = conjugate.normal_normal_edp(y, 1.0, 0.0, 3.0, 5)
    assert res.epsilon == pytest.approx(exact, rel=0.5)  # raw estimator, 2,000 draws


def test_refit_seeds_do_not_depend_on_order_or_resumption(tmp_path):
    """Each refit samples with the seed of (audit seed, neighbour) whatever the run order."""

    class Echo:  # a posterior that records the seed it was sampled with
        def sample(self, data, seed):
            return xr.Dataset({"mu": (("chain", "draw"), np.full((1, 2), float(seed)))}), 0

    tasks = [refit.RefitTask(k, f"r{k}", None, refit.refit_seed(7, k)) for k in range(6)]
    assert len({t.seed for t in tasks}) == 6
    forward = refit.run_refits(Echo(), tasks, progressbar=False)
    backward = refit.run_refits(Echo(), tasks[::-1], progressbar=False)
    pooled = refit.run_refits(Echo(), tasks, executor=2, progressbar=False)
    config = {"draws": 1}
    refit.run_refits(Echo(), tasks[:3], checkpoint=refit.Checkpoint(tmp_path, config))
    resumed = refit.run_refits(
        Echo(), tasks[::-1], checkpoint=refit.Checkpoint(tmp_path, config), progressbar=False
    )
    for task in tasks:
        k = task.index
        for run in (forward, backward, pooled, resumed):
            assert run[k].seed == task.seed
            assert float(run[k].posterior["mu"][0, 0]) == float(task.seed)


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


@pytest.mark.filterwarnings("ignore:max_refits=2:pymc_edp.EDPWarning")
@pytest.mark.parametrize("engine", ["nutpie", "pymc"])
def test_integer_data_and_step_settings(engine):
    """0/1 data (int pm.Data vs int64 values) refit; NUTS settings reach the PyMC step."""
    y = np.array([1, 0, 0, 1, 1, 1, 0, 1])
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("y", p, observed=y)
    idata = sample(model, 500, chains=2)
    res = edp.audit(
        idata,
        model,
        bins=5,
        method="refit",
        **refit_kw(
            draws=300,
            tune=300,
            max_refits=2,
            engine=engine,
            sampler_kwargs={"target_accept": 0.9},
        ),
    )
    refitted = res.pointwise["method"].values == "refit"
    assert refitted.sum() == 2
    assert set(res.pointwise["status"].values[refitted]) == {"ok"}


def test_nutpie_raw_trace_equals_inference_data_path():
    """The fast arrow conversion gives the draws nutpie's own InferenceData holds."""
    pytest.importorskip("nutpie")
    import nutpie

    rng = np.random.default_rng(2)
    coords = {"coef": ["a", "b"]}
    with pm.Model(coords=coords) as model:
        beta = pm.Normal("beta", 0, 1, dims="coef")
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", beta[0] + beta[1], sigma, observed=rng.normal(size=10))
    eng = refit.make_engine(
        "nutpie",
        model=refit.neighbour_model(model),
        draws=200,
        tune=200,
        chains=2,
        var_names=("beta", "sigma"),
    )
    dw = np.zeros(10)
    dw[4] = -1.0
    compiled = eng._compiled().with_data(edp_dw_y=dw)
    raw = nutpie.sample(
        compiled,
        draws=200,
        tune=200,
        chains=2,
        seed=11,
        progress_bar=False,
        return_raw_trace=True,
    )
    fast, div = eng._from_arrow(raw, compiled)  # the fast path itself, not its fallback
    via_engine, _ = eng.sample({"edp_dw_y": dw}, seed=11)
    np.testing.assert_array_equal(via_engine["beta"].values, fast["beta"].values)
    idata = nutpie.sample(compiled, draws=200, tune=200, chains=2, seed=11, progress_bar=False)
    slow, div_slow = eng._finish(idata)
    assert div == div_slow
    for name in ("beta", "sigma"):
        np.testing.assert_array_equal(fast[name].values, slow[name].values)
    assert list(fast["beta"].dims) == ["chain", "draw", "coef"]
    assert list(fast["coef"].values) == ["a", "b"]


def test_make_engine_passes_sampler_kwargs_to_every_engine():
    kw = {"target_accept": 0.95}
    common = {"draws": 10, "tune": 10, "chains": 1, "var_names": (), "sampler_kwargs": kw}
    builder = refit.make_engine(None, build_model=lambda data: None, **common)
    assert isinstance(builder, refit.BuilderEngine)
    assert builder.nuts_sampler == "pymc" and builder.sampler_kwargs == kw
    for name, cls in [("pymc", refit.PymcEngine), ("nutpie", refit.NutpieEngine)]:
        eng = refit.make_engine(name, model=None, **common)
        assert isinstance(eng, cls) and eng.sampler_kwargs == kw
    with pytest.raises(ValueError, match="engine must be"):
        refit.make_engine("stan", model=None, **common)


def test_refit_tasks_hold_changes_not_full_data():
    """A task keeps its neighbour's rows only; full pm.Data vectors appear when it runs."""
    import xarray as xr

    from pymc_edp.model.loglik import LogLikelihood, Neighbours

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
    changes = refit.neighbour_changes(ll, nbs, 1, {"y1": -y["y1"], "y2": -y["y2"]})
    np.testing.assert_array_equal(changes["y1"][0], [2, 3])
    np.testing.assert_array_equal(changes["y2"][0], [1])
    np.testing.assert_array_equal(changes["y2"][1].ravel(), [-11.0])
    maker = refit.NeighbourDataMaker(y, {"y1": (6,), "y2": (3,)})
    data = maker(1, 1, changes)
    np.testing.assert_array_equal(data["edp_dw_y1"], [0, 0, -1, -1, 0, 0])
    np.testing.assert_array_equal(data["edp_alt_y1"], [0, 1, -2, -3, 4, 5])
    np.testing.assert_array_equal(data["edp_v_y2"], [0, 1, 0])
    removed = refit.NeighbourDataMaker(y, {"y1": (6,), "y2": (3,)}, builder=True)(
        1, 1, refit.neighbour_changes(ll, nbs, 1, None)
    )
    np.testing.assert_array_equal(removed["y1"], [0, 1, 4, 5])
    np.testing.assert_array_equal(removed.keep["y2"], [True, False, True])

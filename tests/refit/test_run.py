"""Tests of refits through the audit: accuracy, auto, groups, builders (refit.run)."""

import numpy as np
import pymc as pm
import pytest
from refit_support import REFIT_KW, SAMPLE_KW, refit_kw, sample
from support import set_group

import pymc_edp as edp
from pymc_edp import conjugate
from pymc_edp.model.compat import get_group, make_container


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
    # refits started at full-data draws with a quarter of the tuning (as short verification
    # refits start, here for every neighbour): the same accuracy
    from pymc_edp.auditing import verification
    from pymc_edp.refit import run

    def warm_refits(*args, **kwargs):
        return run.refit_neighbours(*args, **{**kwargs, "warm_start": True})

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(verification, "refit_neighbours", warm_refits)
        warm = edp.audit(
            idata,
            model,
            bins=bins,
            method="refit",
            **refit_kw(checkpoint=normal30_refits / "warm"),
        )
    assert warm.epsilon == pytest.approx(exact, rel=0.05)
    post = warm.refits[worst].posterior["mu"].values
    assert post.mean() == pytest.approx(mean, abs=4 * sd / np.sqrt(500))
    assert post.std() == pytest.approx(sd, rel=0.1)


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


@pytest.mark.slow
def test_auto_refits_the_extreme_record(outlier_model):
    idata, model, y = outlier_model
    with pytest.warns(edp.EDPWarning, match="k-hat above"):
        psis = edp.audit(idata, model, bins=10, method="psis", progressbar=False)
    assert psis.pointwise["pareto_k"].values[-1] > psis.khat_threshold
    # moment matching would repair the outlier first (tests/test_auditing_moment_match.py),
    # and verification would refit the worst reweighted records too (tests/test_auditing_verify.py)
    auto = edp.audit(
        idata,
        model,
        bins=10,
        method=edp.Auto(match=False, verify=False),
        **REFIT_KW,
    )
    full = edp.audit(idata, model, bins=10, method="refit", **REFIT_KW)
    methods = auto.pointwise["method"].values
    assert methods[-1] == "refit"
    assert np.all(methods[:-1] == "psis")
    assert auto.warnings == ()
    # auto's refit of the outlier starts warm (issue 40), refit's cold: the same epsilon
    # within their Monte-Carlo errors (~5% each)
    assert auto.pointwise["epsilon"].values[-1] == pytest.approx(
        full.pointwise["epsilon"].values[-1], rel=0.15
    )
    exact = conjugate.normal_normal_edp(y, 1.0, 0.0, 10.0, 10, pointwise=True)
    # 2,000 full-data draws: ~5% MC error at this epsilon
    assert auto.pointwise["epsilon"].values[-1] == pytest.approx(exact[-1], rel=0.1)
    assert auto.epsilon == pytest.approx(exact.max(), rel=0.1)


@pytest.mark.slow
@pytest.mark.both_stacks
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
    res = edp.audit(
        idata,
        model,
        bins=10,
        method=edp.Auto(match=False),
        **refit_kw(engine="nutpie"),
    )
    assert res.pointwise["pareto_k"].values[-1] > res.khat_threshold
    assert res.pointwise["method"].values[-1] == "refit"
    assert res.pointwise["status"].values[-1] == "ok"
    # the outlier's k-hat refit, and the verification refits of the K worst others
    verified = res.pointwise["verification"].values > 0
    assert verified.sum() == edp.VerifyOptions().top and not verified[-1]
    assert res.verification == "confirmed"
    labels = res.pointwise["neighbour"].values
    assert sorted(res.refits) == sorted([labels[-1], *labels[verified]])
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
        neighbour={"groups": "pupil_school"},
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
    res = edp.audit(idata, model, bins=5, method="refit", neighbour={"groups": groups}, **REFIT_KW)
    assert res.n_neighbours == 6
    np.testing.assert_array_equal(res.pointwise["n_rows"], 3)
    assert set(res.pointwise["observed"].values) == {"*"}
    # person 0 removed: a's posterior is conjugate in y1[2:] and y2[1:] - b (b integrated):
    # check against the PSIS estimate, which is reliable here (all k-hat good)
    psis = edp.audit(
        idata, model, bins=5, method="psis", neighbour={"groups": groups}, progressbar=False
    )
    np.testing.assert_allclose(
        res.pointwise["epsilon"], psis.pointwise["epsilon"], rtol=0.25, atol=0.03
    )


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
    with pytest.raises(ValueError, match="method='psis' needs each record's log-likelihood"):
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
    assert res.verification == "refit" and not res.lower_bound
    # MvNormal with identity covariance is the Normal-Normal model in disguise
    exact = conjugate.normal_normal_edp(y, 1.0, 0.0, 3.0, 5)
    assert res.epsilon == pytest.approx(exact, rel=0.5)  # raw estimator, 2,000 draws
    # issue 21: max_refits=3 left 5 neighbours without an estimate, labelled "psis" and said
    # to be "left to reweighting" (impossible here), and epsilon the max of 3 unflagged
    with pytest.warns(edp.EDPWarning) as record:
        part = edp.audit(
            idata, bins=5, method="auto", **refit_kw(build_model=build_model, max_refits=3)
        )
    messages = [str(w.message) for w in record]
    assert any("5 of 8 neighbour(s) not evaluated" in m and "lower bound" in m for m in messages)
    assert not any("left to reweighting" in m for m in messages)
    method = part.pointwise["method"].values.astype(str)
    assert (method == "refit").sum() == 3 and (method == "not evaluated").sum() == 5
    assert np.isnan(part.pointwise["epsilon"].values[method == "not evaluated"]).all()
    assert part.lower_bound and part.verification == "incomplete"
    assert part.interval()["epsilon"].values[1] == np.inf
    assert "5 neighbour(s) not evaluated" in repr(part)


def test_divergent_refits_are_run_again_with_smaller_steps():
    """A refit with divergences is sampled again at target_accept 0.95, then 0.99."""
    import dataclasses

    import xarray as xr

    from pymc_edp.refit.engines import NutpieEngine, stricter
    from pymc_edp.refit.outcome import RefitTask
    from pymc_edp.refit.run import run_refits

    @dataclasses.dataclass
    class Funnel(NutpieEngine):
        """Diverges unless target_accept reaches ``cure``."""

        cure: float = 0.95

        def sample(self, data, seed):
            ta = self.sampler_kwargs.get("target_accept", 0.8)
            post = xr.Dataset({"mu": (("chain", "draw"), np.full((1, 4), ta))})
            return post, 0 if ta >= self.cure else 7

    tasks = [RefitTask(0, "a", {}, 1)]
    funnel = Funnel(draws=4, chains=1)  # the shape it returns: a whole trace
    done = run_refits(funnel, tasks, progressbar=False, retry_divergent=True)[0]
    assert done.status == "ok"
    assert done.reason == "rerun with target_accept=0.95 after 7 divergent transitions at " + (
        "target_accept=0.8"
    )
    assert float(done.posterior["mu"][0, 0]) == 0.95
    stubborn = Funnel(draws=4, chains=1, cure=1.0)
    out = run_refits(stubborn, tasks, progressbar=False, retry_divergent=True)[0]
    assert out.status == "diverged" and "target_accept=0.95" in out.reason
    assert float(out.posterior["mu"][0, 0]) == 0.99  # the last rerun's draws
    plain = run_refits(funnel, tasks, progressbar=False)[0]  # retry is opt-in here
    assert plain.status == "diverged" and plain.reason == "7 divergent transitions"
    assert stricter(Funnel(sampler_kwargs={"max_treedepth": 12}), 0.99).sampler_kwargs == {
        "max_treedepth": 12,
        "target_accept": 0.99,
    }


def test_a_cut_short_refit_is_never_saved_and_ends_the_run(tmp_path):
    """Issue 21 item 9: Ctrl-C makes nutpie return a partial, NaN-padded trace.

    It must not be saved as "ok": the run stops at once with what finished saved, and a
    rerun with the same checkpoint refits only the missing neighbours.
    """
    import dataclasses

    import xarray as xr

    from pymc_edp.refit import Checkpoint
    from pymc_edp.refit.engines import NutpieEngine
    from pymc_edp.refit.outcome import RefitTask
    from pymc_edp.refit.run import RefitInterrupted, run_refits

    @dataclasses.dataclass
    class Interrupted(NutpieEngine):
        """Whole traces, except that the refit of ``cut`` is cut short like nutpie's."""

        cut: int = -1
        seen: list = dataclasses.field(default_factory=list)

        def sample(self, data, seed):
            self.seen.append(data["k"])
            values = np.full((self.chains, self.draws), float(data["k"]))
            if data["k"] == self.cut:
                values[1, 3:] = np.nan  # the second chain stopped after 3 draws
            return xr.Dataset({"mu": (("chain", "draw"), values)}), 0

    tasks = [RefitTask(k, f"r{k}", {"k": k}, k + 1) for k in range(5)]
    config = {"draws": 10}
    engine = Interrupted(draws=10, chains=2, cut=2)
    with pytest.raises(RefitInterrupted, match=r"refit of r2 was cut short.*'mu' \(chain 1\)"):
        run_refits(engine, tasks, checkpoint=Checkpoint(tmp_path, config), progressbar=False)
    assert engine.seen == [0, 1, 2]  # stopped at once: nothing after the interrupt ran
    assert sorted(p.name for p in tmp_path.glob("refit_*.nc")) == [
        "refit_000000.nc",
        "refit_000001.nc",
    ]
    rerun = Interrupted(draws=10, chains=2)
    done = run_refits(rerun, tasks, checkpoint=Checkpoint(tmp_path, config), progressbar=False)
    assert rerun.seen == [2, 3, 4]  # the cut-short refit is refitted, the others kept
    assert {out.status for out in done.values()} == {"ok"}
    assert float(done[2].posterior["mu"].mean()) == 2.0

    # fewer draws than asked for is cut short too; it is an interrupt, never an error outcome
    @dataclasses.dataclass
    class Short(Interrupted):
        def sample(self, data, seed):
            post, div = super().sample(data, seed)
            return post.isel(draw=slice(0, 4)), div

    with pytest.raises(RefitInterrupted, match=r"2 chain\(s\) x 4 draws of 2 x 10"):
        run_refits(Short(draws=10, chains=2), tasks[:1], progressbar=False)


def test_ctrl_c_caught_by_the_sampler_still_ends_the_run(tmp_path):
    """nutpie catches Ctrl-C itself; near a refit's end it returns a whole trace.

    The interrupt is recorded all the same: that refit is not saved, nothing after it runs.
    """
    import dataclasses
    import os
    import signal

    import xarray as xr

    from pymc_edp.refit import Checkpoint, RefitInterrupted
    from pymc_edp.refit.engines import NutpieEngine
    from pymc_edp.refit.outcome import RefitTask
    from pymc_edp.refit.run import run_refits

    @dataclasses.dataclass
    class Swallows(NutpieEngine):
        at: int = -1
        seen: list = dataclasses.field(default_factory=list)

        def sample(self, data, seed):
            self.seen.append(data["k"])
            if data["k"] == self.at:
                try:  # Ctrl-C arrives while sampling; the sampler catches it and finishes
                    os.kill(os.getpid(), signal.SIGINT)
                    for _ in range(10_000):  # the handler runs between bytecodes
                        pass
                except KeyboardInterrupt:
                    pass
            values = np.full((self.chains, self.draws), float(data["k"]))
            return xr.Dataset({"mu": (("chain", "draw"), values)}), 0

    tasks = [RefitTask(k, f"r{k}", {"k": k}, k + 1) for k in range(4)]
    before = signal.getsignal(signal.SIGINT)
    engine = Swallows(draws=10, chains=2, at=1)
    with pytest.raises(RefitInterrupted, match=r"interrupted \(Ctrl-C\) during the refit of r1"):
        run_refits(engine, tasks, checkpoint=Checkpoint(tmp_path, {"d": 1}), progressbar=False)
    assert engine.seen == [0, 1]
    assert [p.name for p in tmp_path.glob("refit_*.nc")] == ["refit_000000.nc"]
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back
    # a later run is not haunted by the old interrupt
    done = run_refits(Swallows(draws=10, chains=2), tasks, progressbar=False)
    assert {out.status for out in done.values()} == {"ok"}


def test_a_cut_short_nutpie_trace_is_never_sampled_again():
    """nutpie's raw trace after Ctrl-C: chains of unequal length (36,749 and 37,171 draws of
    2,000,000 in one try). It used to fail the conversion, and the fallback sampled the whole
    refit again, swallowing the interrupt."""
    pytest.importorskip("nutpie")
    from pymc_edp.refit import RefitInterrupted
    from pymc_edp.refit.engines import NutpieEngine

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=np.array([0.2, -0.4, 1.1]))
    engine = NutpieEngine(draws=40, tune=30, chains=2, model=model)
    compiled = engine._compiled()
    import nutpie

    raw = nutpie.sample(
        compiled, draws=40, tune=30, chains=2, seed=1, progress_bar=False, return_raw_trace=True
    )
    draws, stats = raw.get_arrow_trace()  # nutpie hands its trace over once

    class Raw:
        def __init__(self, cut=0):
            self.cut = cut

        def get_arrow_trace(self):  # the second chain stopped ``cut`` draws early
            rows = [b.num_rows - (self.cut if i == 1 else 0) for i, b in enumerate(draws)]
            return (
                [b.slice(0, n) for b, n in zip(draws, rows, strict=True)],
                [b.slice(0, n) for b, n in zip(stats, rows, strict=True)],
            )

    whole, _ = engine._from_arrow(Raw(), compiled)
    assert dict(whole.sizes) == {"chain": 2, "draw": 40}
    with pytest.raises(RefitInterrupted, match=r"cut short: a chain has 28 of 40 draws"):
        engine._from_arrow(Raw(12), compiled)


class _ThreadEcho:
    """A toy engine whose refits may run side by side; it records where each one ran."""

    side_by_side = True
    chains = 2

    def __init__(self):
        self.compiled, self.threads = 0, []

    def compile(self):
        self.compiled += 1

    def sample(self, data, seed):
        import threading
        import time

        import xarray as xr

        self.threads.append(threading.current_thread().name)
        time.sleep(0.05)
        return xr.Dataset({"mu": (("chain", "draw"), np.full((2, 3), data["v"] + seed))}), 0


def test_refit_pool_runs_refits_side_by_side_where_the_cores_hold_their_chains():
    from pymc_edp.refit.run import refit_pool

    eng = _ThreadEcho()
    assert refit_pool(eng, 5, cores=2) is None  # 2 chains fill 2 cores
    assert refit_pool(eng, 1, cores=8) is None and eng.compiled == 0
    pool = refit_pool(eng, 5, cores=8)
    assert pool._max_workers == 4 and eng.compiled == 1  # compiled once, before the threads
    pool.shutdown()
    assert refit_pool(eng, 3, cores=8)._max_workers == 3
    eng.side_by_side = False  # PyMC's NUTS holds the GIL: one refit after another
    assert refit_pool(eng, 5, cores=8) is None


def test_side_by_side_refits_give_the_serial_outcomes(monkeypatch):
    from pymc_edp.refit import run
    from pymc_edp.refit.outcome import RefitTask

    tasks = [RefitTask(k, f"r{k}", {"v": float(k)}, 10 + k) for k in range(6)]
    serial_eng = _ThreadEcho()
    serial = run.run_refits(serial_eng, tasks, progressbar=False)
    assert set(serial_eng.threads) == {"MainThread"}
    monkeypatch.setattr(run, "resolve_n_workers", lambda n: 6)  # 6 cores: 3 refits at once
    eng = _ThreadEcho()
    side = run.run_refits(eng, tasks, progressbar=False)
    assert len(set(eng.threads)) > 1 and all(t.startswith("pymc_edp-refit") for t in eng.threads)
    for k, out in serial.items():
        assert side[k].status == out.status and side[k].seed == out.seed
        assert side[k].posterior.equals(out.posterior)


@pytest.mark.slow
@pytest.mark.both_stacks
def test_nutpie_refits_side_by_side_equal_those_run_one_after_another(monkeypatch):
    """nutpie samples in threads of this process without the GIL: the same seeded draws."""
    from pymc_edp.refit import run

    y = np.random.default_rng(5).normal(size=8)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=y)
        idata = sample(model, draws=500, seed=3)
    kw = dict(bins=5, method="refit", random_seed=9, progressbar=False)
    opts = edp.RefitOptions(draws=200, tune=200, engine="nutpie")
    serial = edp.audit(idata, model, refit=opts, **kw)
    monkeypatch.setattr(run, "resolve_n_workers", lambda n: 8)
    side = edp.audit(idata, model, refit=opts, **kw)
    assert side.epsilon == serial.epsilon
    for label in serial.refits:
        a, b = serial.refits[label].posterior, side.refits[label].posterior
        np.testing.assert_array_equal(a["mu"].values, b["mu"].values)

"""Tests of checkpoints: saved as they finish, resumed, healed (refit.checkpoint)."""

import warnings

import numpy as np
import pytest
import xarray as xr
from refit_support import (
    REFIT_KW,
    SMALL_OPTS,
    count_engine_calls,
    refit_kw,
)

import pymc_edp as edp
from pymc_edp import refit
from pymc_edp.refit import engines


@pytest.mark.slow
@pytest.mark.both_stacks
def test_interrupted_audit_resumes(outlier_model, tmp_path, monkeypatch):
    idata, model, _ = outlier_model
    reference = edp.audit(idata, model, bins=5, method="refit", **REFIT_KW)
    engine_cls = engines.NutpieEngine
    original = engine_cls.sample
    calls = {"n": 0}

    def flaky(self, data, seed):
        calls["n"] += 1
        if calls["n"] == 8:
            raise KeyboardInterrupt("simulated kill after 7 refits")
        return original(self, data, seed)

    monkeypatch.setattr(engine_cls, "sample", flaky)
    ckpt = tmp_path / "ckpt"
    # the audit returns what it has: the seven refits, the rest reweighted, and says so
    with pytest.warns(edp.EDPWarning, match=r"7 of 20 refits finished and 13 did not"):
        cut = edp.audit(idata, model, bins=5, method="refit", **refit_kw(checkpoint=ckpt))
    assert len(list(ckpt.glob("refit_*.nc"))) == 7
    assert (cut.pointwise["method"] == "refit").sum() == 7 and len(cut.refits) == 7
    assert cut.verification == "unverified"
    assert any("simulated kill after 7 refits" in w for w in cut.warnings)
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


def _interrupt_at(monkeypatch, call: int) -> dict:
    """Ctrl-C (a real SIGINT) as nutpie refit number ``call`` starts; counts the refits."""
    import os
    import signal

    original = engines.NutpieEngine.sample
    calls = {"n": 0}

    def sample(self, data, seed):
        calls["n"] += 1
        if calls["n"] == call:
            os.kill(os.getpid(), signal.SIGINT)
        return original(self, data, seed)

    monkeypatch.setattr(engines.NutpieEngine, "sample", sample)
    return calls


@pytest.mark.slow
@pytest.mark.both_stacks
def test_an_audit_interrupted_during_verification_returns_the_reweighted_result(
    normal10, tmp_path, monkeypatch
):
    """Ctrl-C during the verification refits: the headline is "unverified", the estimates
    are an uninterrupted ``method="psis"`` audit's, the note names the refits that finished
    and those missing, and a rerun with the same checkpoint refits only what is missing."""
    idata, model, _ = normal10
    kw = dict(bins=5, random_seed=7, progressbar=False)
    psis = edp.audit(idata, model, method="psis", **kw)
    whole = edp.audit(idata, model, refit={**SMALL_OPTS, "checkpoint": tmp_path / "a"}, **kw)
    assert whole.verification == "confirmed"
    n_whole = len(list((tmp_path / "a").rglob("refit_*.nc")))
    assert n_whole >= 5  # the short refits of the five worst, and any at full length

    ckpt = tmp_path / "b"
    calls = _interrupt_at(monkeypatch, 3)
    with pytest.warns(edp.EDPWarning, match="the headline is unverified") as record:
        cut = edp.audit(idata, model, refit={**SMALL_OPTS, "checkpoint": ckpt}, **kw)
    assert calls["n"] == 3  # nothing started after the interrupt
    assert cut.verification == "unverified"
    np.testing.assert_array_equal(cut.pointwise["epsilon"], psis.pointwise["epsilon"])
    assert cut.epsilon == psis.epsilon
    assert set(cut.pointwise["method"].values) == {"psis"}
    assert (cut.pointwise["verification"].values == 0).all()
    note = cut.verification_note
    assert "2 finished" in note and "3 did not" in note and "interrupted" in note, note
    assert str(ckpt) in note and note.removeprefix("unverified: ") in str(record[0].message)
    assert len(list(ckpt.rglob("refit_*.nc"))) == 2  # the interrupted refit is not kept
    # the rerun resumes: every refit of the whole run but the two saved
    calls["n"] = 100
    again = edp.audit(idata, model, refit={**SMALL_OPTS, "checkpoint": ckpt}, **kw)
    assert calls["n"] - 100 == n_whole - 2
    assert again.verification == "confirmed" and again.epsilon == whole.epsilon


def test_a_spent_time_budget_returns_the_reweighted_result(normal10):
    """A budget spent before verification starts (1 microsecond): no refit runs, and the
    result is the reweighted one, "unverified", its missing refits named."""
    idata, model, _ = normal10
    kw = dict(bins=5, random_seed=7, progressbar=False)
    psis = edp.audit(idata, model, method="psis", **kw)
    method = edp.Auto(verify={"time_budget": 1e-6})
    with pytest.warns(edp.EDPWarning, match="time budget was spent before they started"):
        res = edp.audit(idata, model, method=method, refit=SMALL_OPTS, **kw)
    assert res.verification == "unverified" and res.refits is None
    np.testing.assert_array_equal(res.pointwise["epsilon"], psis.pointwise["epsilon"])
    assert "0 finished (none) and 5 did not" in res.verification_note


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
    calls = count_engine_calls(monkeypatch)
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
    calls = count_engine_calls(monkeypatch, fail_once=3)
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


def test_edited_draws_are_caught_by_the_checksum(tmp_path):
    """Issue 21: overwriting the draws of a readable refit file changed epsilon silently."""
    post = xr.Dataset({"mu": (("chain", "draw"), np.arange(8.0).reshape(2, 4))})
    out = refit.RefitOutcome(3, 3, "ok", "", 11, 0.5, post)
    config = {"draws": 4}
    refit.Checkpoint(tmp_path, config).save(out)
    f = tmp_path / "refit_000003.nc"
    with xr.open_dataset(f) as ds:
        edited = ds.load()
    assert len(edited.attrs["checksum"]) == 64
    edited["mu"][0, 0] = 100.0  # the file still opens, with every attribute
    edited.to_netcdf(f)
    ckpt = refit.Checkpoint(tmp_path, config)
    assert ckpt.load(3) is None  # refitted, not used
    assert (tmp_path / "refit_000003.nc.damaged").exists()
    assert "do not match their checksum" in ckpt.messages[-1]
    # an untouched file loads, bit for bit
    refit.Checkpoint(tmp_path, config).save(out)
    back = refit.Checkpoint(tmp_path, config).load(3)
    np.testing.assert_array_equal(back.posterior["mu"].values, post["mu"].values)


def test_brief_never_carries_a_sampler_backtrace():
    """nutpie's Rust errors carry a cause chain and a raw stack backtrace: one line is kept."""
    from pymc_edp.refit.checkpoint import _brief

    err = RuntimeError(
        "All initialization points failed\n\nCaused by:\n    Logp function returned error: "
        "ErrorCode(4)\nStack backtrace:\n   0: <unknown>\n  10: start_thread\n"
        "             at ./nptl/pthread_create.c:442:8"
    )
    text = _brief(err)
    assert "\n" not in text and "backtrace" not in text and "pthread" not in text
    assert text.startswith("RuntimeError: All initialization points failed")
    assert "ErrorCode(4)" in text
    assert _brief(ValueError("one\ntwo")) == "ValueError: one"

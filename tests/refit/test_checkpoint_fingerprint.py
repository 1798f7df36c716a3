"""A refit checkpoint is bound to what its refits were computed from (issue 32).

The model's graph, the data, each neighbour's records and replacement values: a saved refit
computed from anything else is refitted (and named in a warning), never reused.
"""

import shutil
import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

import pymc_edp as edp
from pymc_edp import refit
from pymc_edp.model.compat import from_dict
from pymc_edp.refit import engines

N = 8
#: record 0, an outlier, is the neighbour refitted (``max_refits=1``: the worst k-hat)
Y = np.append(6.0, np.random.default_rng(32).normal(1.0, 1.0, N - 1))
GROUPS = np.repeat(["a", "b", "c", "d"], 2)  # four people, two records each
REGROUPED = np.tile(["a", "b", "c", "d"], 2)  # the same people, other records
REFIT = {
    "draws": 100,
    "tune": 100,
    "chains": 2,
    "engine": "pymc",
    "max_refits": 1,
}


def exact_fit(y, prior_sd=1.0):
    """``mu ~ Normal(0, prior_sd)``, ``y ~ Normal(mu, 1)``: the model and exact draws."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, prior_sd)
        pm.Normal("y", mu, 1.0, observed=y)
    precision = 1.0 / prior_sd**2 + y.size
    draws = y.sum() / precision + np.random.default_rng(1).normal(size=(4, 500)) / np.sqrt(
        precision
    )
    idata = from_dict(
        {
            "posterior": {"mu": draws},
            "log_likelihood": {"y": stats.norm.logpdf(y, draws[..., None], 1.0)},
            "observed_data": {"y": y},
        }
    )
    return idata, model


def audit(fit, folder, **neighbour):
    """The audit refitting every neighbour into ``folder``, and its warnings' messages."""
    idata, model = fit
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", edp.EDPWarning)
        res = edp.audit(
            idata,
            model,
            bins=5,
            method="refit",
            neighbour=edp.NeighbourOptions(**neighbour),
            refit=edp.RefitOptions(**REFIT, checkpoint=folder),
            random_seed=7,
            progressbar=False,
        )
    return res, " ".join(str(w.message) for w in caught)


@pytest.fixture
def count_refits(monkeypatch):
    """How many refits the PyMC engine samples."""
    calls = {"n": 0}
    original = engines.PymcEngine.sample

    def counting(self, data, seed):
        calls["n"] += 1
        return original(self, data, seed)

    monkeypatch.setattr(engines.PymcEngine, "sample", counting)
    return calls


@pytest.fixture(scope="module")
def fits():
    return {
        "A": exact_fit(Y),
        "another prior": exact_fit(Y, prior_sd=0.3),
        "shifted data": exact_fit(Y + 5.0),
    }


#: Replacement neighbours of people (two records each), with their own values: the
#: outlier's far below the data, so that its person, "a", is the one refitted.
REPLACE = {
    "relation": "replace",
    "groups": GROUPS,
    "replacements": edp.PerRecord(np.append(2.0, 0.5 * Y[1:])),
}


@pytest.fixture(scope="module")
def removed(fits, tmp_path_factory):
    """Model A's checkpoint of record removals, and its audit."""
    folder = tmp_path_factory.mktemp("removed")
    return folder, audit(fits["A"], folder)[0]


@pytest.fixture(scope="module")
def replaced(fits, tmp_path_factory):
    """Model A's checkpoint of people replaced by ``REPLACE``'s values, and its audit."""
    folder = tmp_path_factory.mktemp("replaced")
    return folder, audit(fits["A"], folder, **REPLACE)[0]


def shared_and_fresh(base, fit, tmp_path, count_refits, **neighbour):
    """Audit ``fit`` with a copy of ``base``'s checkpoint: its epsilons are a fresh folder's.

    Returns the warnings' text. Every refit ran (none was reused), and those the checkpoint
    held were set aside.
    """
    folder, base_res = base
    shared = shutil.copytree(folder, tmp_path / "shared")
    res, text = audit(fit, shared, **neighbour)
    refitted = count_refits["n"]
    fresh, _ = audit(fit, tmp_path / "fresh", **neighbour)
    np.testing.assert_array_equal(res.pointwise["epsilon"], fresh.pointwise["epsilon"])
    assert res.epsilon == fresh.epsilon
    held = set(base_res.refits.status.index) & set(res.refits.status.index)
    assert held  # the checkpoint held refits of neighbours this audit refits
    assert refitted == len(res.refits.status.index)  # none reused
    assert f"the saved refits of {len(held)} neighbour(s)" in text
    assert len(list(shared.glob("refit_*.nc.stale"))) == len(held)
    return text


def test_identical_rerun_reuses_every_refit(removed, fits, tmp_path, count_refits):
    folder = shutil.copytree(removed[0], tmp_path / "copy")
    res, text = audit(fits["A"], folder)
    assert count_refits["n"] == 0 and "checkpoint" not in text
    np.testing.assert_array_equal(res.pointwise["epsilon"], removed[1].pointwise["epsilon"])
    assert not list(folder.glob("*.stale"))


@pytest.mark.parametrize(
    ("which", "named", "not_named"),
    [
        ("another prior", "another model graph", "other data"),
        ("shifted data", "other data", "another model graph"),
    ],
)
def test_refits_of_another_model_or_data_are_redone(
    removed, fits, which, named, not_named, tmp_path, count_refits
):
    text = shared_and_fresh(removed, fits[which], tmp_path, count_refits)
    assert f"computed from {named} than this audit's" in text and not_named not in text


@pytest.mark.slow
@pytest.mark.both_stacks
@pytest.mark.parametrize(
    ("neighbour", "named"),
    [
        ({**REPLACE, "replacements": [-1.0, 3.0]}, "other replacement values"),
        (
            {**REPLACE, "replacements": edp.PerRecord(np.append(1.0, 0.5 * Y[1:]))},
            "other replacement values",
        ),
        ({**REPLACE, "groups": REGROUPED}, "other records (neighbour or group membership)"),
    ],
    ids=["candidates", "per-record", "groups"],
)
def test_refits_of_other_neighbours_are_redone(
    replaced, fits, neighbour, named, tmp_path, count_refits
):
    text = shared_and_fresh(replaced, fits["A"], tmp_path, count_refits, **neighbour)
    assert named in text and "another model graph" not in text and "other data" not in text


class Echo:
    """A toy engine: the posterior is the refit's data."""

    def __init__(self):
        self.calls = 0

    def sample(self, data, seed):
        self.calls += 1
        return xr.Dataset({"mu": (("chain", "draw"), np.full((1, 4), data))}), 0


def test_checkpoint_refits_what_another_fingerprint_computed(tmp_path):
    base = {"model": "m", "data": "d", "records": "r", "replacement": "v"}

    def tasks(value=1.0, **changed):
        return [
            refit.RefitTask(k, f"p{k}", value, 10 + k, {**base, **(changed if k else {})})
            for k in range(3)
        ]

    engine = Echo()
    refit.run_refits(engine, tasks(), checkpoint=refit.Checkpoint(tmp_path, {}))
    ckpt = refit.Checkpoint(tmp_path, {})
    again = refit.run_refits(engine, tasks(), checkpoint=ckpt, progressbar=False)
    assert engine.calls == 3 and not ckpt.messages  # the same: reused
    assert float(again[2].posterior["mu"].mean()) == 1.0
    # neighbours 1 and 2 with other records and replacement values: refitted, 0 reused
    ckpt = refit.Checkpoint(tmp_path, {})
    done = refit.run_refits(
        engine, tasks(2.0, records="r2", replacement="v2"), checkpoint=ckpt, progressbar=False
    )
    assert engine.calls == 5
    assert [float(done[k].posterior["mu"].mean()) for k in range(3)] == [1.0, 2.0, 2.0]
    (message,) = ckpt.messages
    assert "the saved refits of 2 neighbour(s) (p1, p2) were computed from other records" in (
        message
    )
    assert "and other replacement values than this audit's" in message
    assert "another model graph" not in message and "other data" not in message
    assert sorted(f.name for f in tmp_path.glob("*.stale")) == [
        "refit_000001.nc.stale",
        "refit_000002.nc.stale",
    ]
    # a refit saved without a fingerprint (pymc_edp 0.7) is not reused either
    refit.Checkpoint(tmp_path, {}).save(
        refit.RefitOutcome(0, "p0", "ok", "", 10, 0.1, done[0].posterior)
    )
    ckpt = refit.Checkpoint(tmp_path, {})
    refit.run_refits(engine, tasks(2.0, records="r2", replacement="v2"), checkpoint=ckpt)
    assert engine.calls == 6
    assert "p0) were written by an older version of pymc_edp" in ckpt.messages[0]

"""Tests of :mod:`pymc_edp.pipeline.verification` (the logic, with refits faked)."""

from types import SimpleNamespace

import numpy as np
from pipeline_support import make_settings

from pymc_edp.base import limits
from pymc_edp.pipeline.estimates import Errors, Estimates
from pymc_edp.pipeline.inputs import read_inputs
from pymc_edp.pipeline.reweighting import reweight
from pymc_edp.pipeline.verification import (
    Verification,
    _all_refitted,
    choose_refits,
    refit_and_verify,
    refit_problem,
    verify,
)
from pymc_edp.refit.options import VERIFY_AGREE, VERIFY_DISAGREE, VERIFY_FAILED, VerifyOptions

EPS = np.array([0.5, 0.48, 0.3, 0.2, 0.1, 0.05])


def _row(value):
    return SimpleNamespace(
        eps=np.array([value]),
        argbin=np.array([0]),
        eps_unsmoothed=np.array([value]),
        bin_draws=np.array([100.0]),
        limit=np.zeros(1, np.int8),
    )


class FakeRefitter:
    """Refits give ``truth`` (or fail where it is NaN), with standard error 0.01."""

    def __init__(self, truth):
        est = Estimates.empty(EPS.size, 1, 100, keep_weights=False)
        est.eps[:, 0] = EPS
        self.estimates, self.truth, self.runs = est, np.asarray(truth), []
        labels = np.array([f"r{i}" for i in range(EPS.size)])
        self.problem = SimpleNamespace(neighbours=SimpleNamespace(labels=labels))

    def run(self, batch):
        self.runs.append([int(k) for k in batch])
        for k in batch:
            if np.isfinite(self.truth[k]):
                self.estimates.set_row(k, _row(self.truth[k]), 0.01, "refit")


ERRORS = Errors(np.full(EPS.size, 0.01), EPS - 0.02, EPS + 0.02)


def test_agreement_confirms():
    refitter = FakeRefitter(EPS)
    check = verify(VerifyOptions(top=2), refitter, ERRORS)
    assert check.status == "confirmed" and check.note.startswith("confirmed by refitting")
    assert refitter.runs == [[0, 1]] and check.messages == ()
    assert list(check.code[:3]) == [VERIFY_AGREE, VERIFY_AGREE, 0]


def test_disagreement_escalates_and_corrects():
    truth = EPS * 1.5
    refitter = FakeRefitter(truth)
    check = verify(VerifyOptions(top=1), refitter, ERRORS)
    assert check.status == "corrected" and len(refitter.runs) > 1
    assert (check.code == VERIFY_DISAGREE).sum() == sum(len(run) for run in refitter.runs)
    assert any("Reweighting is unreliable" in m for m in check.messages)


def test_a_budget_leaves_lower_bounds():
    truth = EPS.copy()
    truth[0] = 1.0  # twice the estimate: neighbour 1 could reach the new headline
    refitter = FakeRefitter(truth)
    check = verify(VerifyOptions(top=1, max_refits=1), refitter, ERRORS)
    assert check.status == "incomplete" and refitter.runs == [[0]]
    assert refitter.estimates.limit[1, 0] == limits.UNVERIFIED
    assert any("budget" in m for m in check.messages)


def test_failed_refits_leave_it_unverified():
    refitter = FakeRefitter(np.full(EPS.size, np.nan))
    check = verify(VerifyOptions(top=2), refitter, ERRORS)
    assert check.status == "unverified" and list(check.code[:2]) == [VERIFY_FAILED] * 2


def test_a_failed_refit_of_the_headline_leaves_it_unverified():
    """The other refits agreeing does not confirm an epsilon whose own refit failed."""
    truth = EPS.copy()
    truth[0] = np.nan  # the neighbour that sets epsilon
    check = verify(VerifyOptions(top=2), FakeRefitter(truth), ERRORS)
    assert check.status == "unverified" and "r0, whose estimate sets epsilon" in check.note
    assert list(check.code[:2]) == [VERIFY_FAILED, VERIFY_AGREE]
    truth = EPS.copy()
    truth[1] = np.nan  # another one: confirmed, and the failure said
    check = verify(VerifyOptions(top=2), FakeRefitter(truth), ERRORS)
    assert check.status == "confirmed" and check.note.endswith("1 refit(s) failed")


def test_verification_records():
    off = Verification.off(3, "every neighbour refitted (method='refit')")
    assert off.status == "refit" and (off.code == 0).all()
    assert Verification.off(3, None).status == "unverified"
    more = off.but("incomplete", "note", "a message")
    assert more.code is off.code and more.messages == ("a message",) and off.messages == ()
    est = Estimates.empty(3, 1, 10, keep_weights=False)
    est.method[:2] = "refit"
    assert _all_refitted(est).status == "incomplete"


def test_choose_refits(normal):
    inp = read_inputs(normal, None, make_settings())
    khat = np.linspace(0.0, 1.4, 8)
    assert choose_refits(khat, inp, make_settings())[0].size == 0  # psis: none
    builder = {"build_model": lambda data: None}
    inp = read_inputs(normal, None, make_settings(method="refit", refit=builder))
    to_refit, messages = choose_refits(khat, inp, make_settings(method="refit", refit=builder))
    np.testing.assert_array_equal(to_refit, np.arange(8)[::-1])  # worst k-hat first
    settings = make_settings(method="refit", refit={**builder, "max_refits": 3})
    to_refit, messages = choose_refits(khat, inp, settings)
    assert list(to_refit) == [7, 6, 5] and "max_refits=3: 5 neighbour(s)" in messages[0]


def test_nothing_to_refit_or_verify(normal):
    settings = make_settings()
    inp = read_inputs(normal, None, settings)
    rw = reweight(inp, settings)

    out = refit_and_verify(
        inp, settings, refit_problem(inp, settings, rw.estimates), rw.estimates, rw
    )
    assert out.refits is None and out.messages == ()
    assert out.verification.status == "unverified"
    np.testing.assert_array_equal(out.estimates.eps, rw.estimates.eps)
    assert out.estimates is not rw.estimates

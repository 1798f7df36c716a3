"""Tests of :mod:`pymc_edp.auditing.methods`: the audit methods as objects."""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
from support import OutlierNormal as ON

import pymc_edp as edp
from pymc_edp.auditing.methods import METHODS, Method
from pymc_edp.conjugate import normal_normal_edp


def test_names_give_the_methods_and_their_defaults():
    assert [type(Method.coerce(n)) for n in ("auto", "psis", "moment_match", "refit")] == [
        edp.Auto,
        edp.Psis,
        edp.MomentMatch,
        edp.Refit,
    ]
    assert Method.coerce(None) == edp.Auto() == edp.Auto(match=True, verify=True)
    auto = edp.Auto()
    assert auto.moment_match == edp.MomentMatchOptions() and auto.verify == edp.VerifyOptions()
    assert auto.refits and auto.refits_unreliable and not auto.refits_all
    assert auto.unverified is None
    assert edp.Psis().moment_match is None and edp.Psis().verify is None
    assert not edp.Psis().refits and not edp.MomentMatch().refits
    assert edp.Refit().refits_all and edp.Refit().moment_match is None
    assert edp.MomentMatch({"max_iters": 3}).moment_match == edp.MomentMatchOptions(max_iters=3)
    assert edp.MomentMatch(max_iters=3, split=False) == edp.MomentMatch(
        edp.MomentMatchOptions(max_iters=3, split=False)
    )
    off = edp.Auto(match=False, verify=False)
    assert off.moment_match is None and off.verify is None and "turned off" in off.unverified
    assert edp.Auto(verify={"top": 2}).verify == edp.VerifyOptions(top=2)
    with pytest.raises(ValueError, match="method must be one of"):
        Method.coerce("laplace")
    with pytest.raises(TypeError, match="unknown verify option"):
        edp.Auto(verify={"k": 1})
    with pytest.raises(TypeError, match="unknown moment_match option"):
        edp.MomentMatch({"iters": 1})


def test_what_a_method_needs_is_refused_before_any_work(normal):
    """No model, no builder: moment matching and refitting every neighbour cannot run."""
    with pytest.raises(ValueError, match="moves the draws with the model's joint density"):
        edp.audit(normal, method=edp.MomentMatch(), progressbar=False)
    with pytest.raises(ValueError, match=r"method='refit' needs the model \(model=\)"):
        edp.audit(normal, method="refit", progressbar=False)
    with pytest.raises(ValueError, match=r"prune=True\) needs reweighting"):
        edp.Refit().check(object(), None, prune=True)


# ---------------------------------------------------- the recipe: a method added in one place
@pytest.fixture
def checked_psis():
    """The docs' recipe (docs/concepts.md, "Adding an audit method"), in one place.

    Reweighting only, no moment matching and no refits of bad k-hat neighbours, but the
    headline confirmed by refitting the two worst: a cheap method that is still checked.
    """

    @dataclass(frozen=True)
    class CheckedPsis(edp.Psis):
        top: int = 2

        name: ClassVar[str] = "checked_psis"
        unverified: ClassVar[str | None] = None

        @property
        def verify(self):
            return edp.VerifyOptions(top=self.top, max_refits=self.top)

    yield CheckedPsis
    METHODS.pop("checked_psis")


@pytest.mark.slow
@pytest.mark.both_stacks
def test_a_method_added_in_one_place_runs_end_to_end(outlier, checked_psis):
    """Its refits verify the headline; the outlier (k-hat 1.1) is refitted by verification
    alone, and agrees with the closed form."""
    model, idata = outlier
    exact = normal_normal_edp(ON.Y, ON.SIGMA, ON.MU0, ON.SIGMA0, bins=10, pointwise=True)
    kw = dict(bins=10, random_seed=1, progressbar=False, refit={"draws": 1000, "tune": 500})
    res = edp.audit(idata, model, method="checked_psis", **kw)
    methods = res.pointwise["method"].values.astype(str)
    assert set(methods) == {"psis", "refit"} and (methods == "refit").sum() == 2
    assert res.pointwise["pareto_k"].values[ON.OUTLIER] > res.khat_threshold
    assert methods[ON.OUTLIER] == "refit"
    assert res.verification in ("confirmed", "corrected"), res.verification_note
    assert res.epsilon == pytest.approx(exact.max(), rel=0.1)
    np.testing.assert_allclose(
        res.pointwise["epsilon"].values[ON.OUTLIER], exact[ON.OUTLIER], rtol=0.1
    )

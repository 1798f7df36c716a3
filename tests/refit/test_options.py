"""Tests of the refit and verification options (:mod:`pymc_edp.refit.options`)."""

import pytest

import pymc_edp as edp
from pymc_edp.refit.options import VerifyOptions


def test_verify_options_defaults_and_coercion():
    opts = VerifyOptions()
    assert (opts.top, opts.max_refits, opts.time_budget, opts.z) == (5, 20, None, 3.0)
    assert VerifyOptions.coerce({"top": 2, "time_budget": 60}).time_budget == 60
    assert VerifyOptions.coerce(None) == opts
    with pytest.raises(TypeError, match="unknown verify option"):
        VerifyOptions.coerce({"k": 3})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"top": 0}, "top must be an integer >= 1"),
        ({"top": 6, "max_refits": 5}, "below top=6"),
        ({"time_budget": 0}, "time_budget must be"),
        ({"z": -1.0}, "z must be"),
    ],
)
def test_verify_options_refuse_nonsense(kwargs, match):
    with pytest.raises(ValueError, match=match):
        VerifyOptions(**kwargs)


def test_refit_options_retry_flags_are_booleans():
    assert edp.RefitOptions().retry_divergent is True
    assert edp.RefitOptions(retry_divergent=False).config()["retry_divergent"] is False
    with pytest.raises(TypeError, match="retry_divergent must be True or False"):
        edp.RefitOptions(retry_divergent="yes")


def test_verify_is_for_method_auto(rng):
    from test_auditing import fake_idata

    idata = fake_idata(rng)
    with pytest.raises(ValueError, match="verify= confirms method='auto'"):
        edp.audit(idata, method="psis", verify=True, progressbar=False)
    res = edp.audit(idata, method="psis", progressbar=False)
    assert res.verification == "unverified"
    assert res.verification_note == "unverified: method='psis' reweights only"
    off = edp.audit(idata, verify=False, progressbar=False)
    assert "turned off (verify=False)" in off.verification_note

"""Tests of :mod:`pymc_edp.auditing.settings`."""

import pytest
from pipeline_support import make_settings

import pymc_edp as edp
from pymc_edp.auditing.settings import Smoothing


def test_smoothing_of():
    assert Smoothing.of(None) == Smoothing(0.0, 0.01)
    assert Smoothing.of(2) == Smoothing(2.0, 2.0)
    with pytest.raises(ValueError, match="smoothing"):
        Smoothing.of(-1.0)


def test_settings_resolve_the_options():
    s = make_settings(method="auto", neighbour={"relation": "replace", "groups": "g"})
    assert s.neighbour == edp.Replace(groups="g") and s.neighbour.label == "replace (groups)"
    assert s.refit == edp.RefitOptions() and s.chunks == edp.ChunkOptions()
    assert s.method == edp.Auto() and s.method.verify == edp.VerifyOptions()
    assert s.method.unverified is None
    assert s.method.moment_match == edp.MomentMatchOptions()
    assert s.seed_given and s.seed == 1
    s = make_settings(method=edp.Auto(verify=False, match=False), random_seed=None)
    assert s.method.verify is None and "turned off" in s.method.unverified
    assert s.method.moment_match is None and not s.seed_given
    assert make_settings().neighbour.label == "remove"

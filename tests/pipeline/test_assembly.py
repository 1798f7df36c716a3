"""Tests of :mod:`pymc_edp.pipeline.assembly`: the stages put together are the audit."""

import warnings

import numpy as np
from pipeline_support import make_settings

import pymc_edp as edp
from pymc_edp.pipeline.assembly import assemble
from pymc_edp.pipeline.inputs import read_inputs
from pymc_edp.pipeline.reweighting import reweight
from pymc_edp.pipeline.verification import refit_and_verify, refit_problem


def test_stages_put_together_are_the_audit(normal):
    settings = make_settings()
    inp = read_inputs(normal, None, settings)
    rw = reweight(inp, settings)
    verified = refit_and_verify(
        inp, settings, refit_problem(inp, settings, rw.estimates), rw.estimates, rw
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = assemble(inp, settings, verified, ["a message of an earlier stage"])
    assert [str(w.message) for w in caught] == list(res.warnings)
    assert "a message of an earlier stage" in res.warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        ref = edp.audit(normal, bins=10, method="psis", random_seed=1, progressbar=False)
    assert res.epsilon == ref.epsilon and res.method == "psis" and res.neighbour == "remove"
    np.testing.assert_array_equal(res.pointwise["epsilon"], ref.pointwise["epsilon"])
    np.testing.assert_array_equal(res.parameters["epsilon"], ref.parameters["epsilon"])
    assert res.random_seed == 1 and res.noise_floor == ref.noise_floor
    # the verified estimates are left as they were
    assert np.isfinite(verified.estimates.eps).all() or np.isneginf(verified.estimates.eps).any()

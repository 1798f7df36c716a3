"""Tests of eps(B) and its continuous limit (:mod:`pymc_edp.diagnostics.curve`)."""

import numpy as np
import pytest
from support import MU0, SIGMA, SIGMA0, Y

import pymc_edp as edp
from pymc_edp.conjugate import normal_normal_edp
from pymc_edp.model.compat import from_dict


@pytest.mark.slow
def test_curve_from_stored_weights(nn_result):
    res = nn_result
    bins = [5, 10, 20, 50, 100]
    curve = res.curve(bins=bins)
    assert curve.dims == ("bins",)
    assert curve.sel(bins=20).item() == pytest.approx(res.epsilon, rel=1e-12)
    exact = normal_normal_edp(Y, SIGMA, MU0, SIGMA0, bins)
    # 10,000 draws: every B within its own 99.9% Monte-Carlo band (z = 3.3 x mcse)
    assert np.all(np.abs(curve.values - exact) <= 3.3 * curve["mcse"].values)
    assert np.all(np.diff(curve.values) > 0)  # epsilon grows with B (sec. 3.3)
    assert np.all(curve["lower"] <= curve) and np.all(curve <= curve["upper"])
    # the B -> inf reference bounds every B; normal tails: the supremum diverges
    assert curve.attrs["continuous_limit"] > curve.max()
    assert curve.attrs["continuous_limit_diverges"]
    assert "diverges" in curve.attrs["note"]


def test_continuous_limit_bounded_ratio(rng):
    # posterior of p uniform on (0.2, 0.8), one record y = 1: removing it reweights by 1/p,
    # so r = (1/p) / E[1/p] with E[1/p] = log(4) / 0.6, bounded: sup |log r| = log(5 E^-1)
    p = rng.uniform(0.2, 0.8, size=(1, 20_000))
    ll = np.log(p)[..., None]
    idata = from_dict({"posterior": {"p": p}, "log_likelihood": {"y": ll}})
    res = edp.audit(idata, var_names="p", bins=20, method="psis", progressbar=False)
    lim = res.continuous_limit()
    expected = np.log(5.0 * 0.6 / np.log(4.0))
    # the self-normalised E[1/p] has relative error ~0.3% at 20,000 draws
    assert float(lim["epsilon_inf"]) == pytest.approx(expected, abs=0.01)
    assert not bool(lim["diverges"])
    assert lim.attrs["note"] == ""


@pytest.mark.parametrize("bins", [(2.5, 10), (10, 0), (), "ten", [[5, 10]]])
def test_curve_refuses_bins_that_are_not_integers_of_two_or_more(nn_result, bins):
    # issue 32: bins=(2.5, 10) was cut to 2 bins without a word
    with pytest.raises(ValueError, match="bins must be a non-empty list of integers >= 2"):
        edp.diagnostics.epsilon_curve(nn_result, bins=bins, prob=None)

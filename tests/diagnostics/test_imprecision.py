"""Tests of EMI, empty bins and smoothing (:mod:`pymc_edp.diagnostics.imprecision`)."""

import numpy as np
import pytest
from support import MU0, SIGMA, SIGMA0, bb_audit, normal_audit

import pymc_edp as edp
from pymc_edp.base import limits
from pymc_edp.conjugate import (
    beta_binomial_edp,
    normal_normal_edp,
    normal_normal_posterior,
)
from pymc_edp.model.compat import from_dict


def test_emi_and_empty_bins_table2_setting(bb_model):
    """Table 2 setting (x = 0, B = 20) at M = 10,000: EMI, empty bins, smoothing."""
    res = bb_audit(bb_model, np.random.default_rng(2013))
    exact = beta_binomial_edp(5, 0, 0.5, 0.5, 20)
    assert abs(res.epsilon - exact) < 0.3  # MCSE is ~0.1 here
    em = res.emi()  # epsilon = 6.8 is far above the EMI: no warning
    assert em.attrs["n_draws"] == 5000
    # counts of 5,000 independent draws in 20 bins: relative s.d. of a bin's count ratio
    # sqrt(2 * 0.95 / 250) = 0.087 (both halves noisy); the max over 20 bins is 1-4 s.d.
    assert 0.087 <= float(em["emi"]) <= 0.35
    eb = res.empty_bins()
    # reweighting: every bin holds 500 draws with positive weight, so none is empty ...
    assert int(eb["n_empty"].sum()) == 0
    # ... but the lowest bin has a neighbour ratio e^-6.8: 500 * 0.0011 = 0.56 draws' worth
    assert int(eb["n_under_one_draw"].sum()) == 5  # that bin, for each of the 5 records
    assert eb.attrs["smoothing"] == 0.01
    sens = res.smoothing_sensitivity()
    assert np.all(np.isfinite(sens))  # no empty bin, so alpha = 0 stays finite
    assert float(sens.sel(smoothing=0.0)) > float(sens.sel(smoothing=1.0))


@pytest.mark.slow
def test_emi_is_no_verdict_on_a_reweighted_estimate():
    """3,000 records: epsilon is within 2 EMI, yet the reweighting estimate is precise.

    EMI is the noise floor of refit-and-count with S / 2 independent draws; the reweighted
    estimate's own interval is what says whether it is noise. Here it is clear of zero and
    covers the exact value, so nothing warns and no caution is printed.
    """
    rng = np.random.default_rng(5)
    y = rng.normal(10.0, SIGMA, 3000)  # 3,000 records: each moves the posterior very little
    m1, s1 = normal_normal_posterior(y, SIGMA, MU0, SIGMA0)
    res = normal_audit(m1 + s1 * rng.normal(size=(1, 2000)), y=y)
    em = res.emi()  # filterwarnings = error: no warning may be issued
    assert res.epsilon <= 2 * float(em["emi"]) and em.attrs["within_two_emi"] == 1
    lo, hi = res.interval()["epsilon"].values
    exact = normal_normal_edp(y, SIGMA, MU0, SIGMA0, bins=20)
    assert 0 < lo <= exact <= hi
    head = edp.report.headline(res)
    assert head.caution == ""
    assert "Caution" not in repr(res) and "EMI" not in repr(res)


def test_log_space_masses_never_underflow(rng):
    """Weights e^(300 mu) put e^-hundreds of mass on the lower bins: no empty bin, no inf.

    Summed in log space the masses stay positive, so without smoothing epsilon is finite;
    with smoothing=0.01 the same estimate is capped near log(S / (B alpha)) and flagged as a
    lower bound.
    """
    mu = rng.normal(size=(1, 2000))
    ll = (-300.0 * mu)[..., None]
    idata = from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    with pytest.warns(edp.EDPWarning) as record:
        res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    assert any("k-hat" in str(w.message) for w in record)
    assert np.isfinite(res.epsilon) and res.epsilon > 100
    # weights e^(300 mu) fall by e over 1/300 of a posterior s.d.: a handful of draws carry
    # the lowest bin's mass, so the estimate is also flagged at the draws' resolution
    assert int(res.pointwise["limit"].values[0]) in (0, limits.FEW_DRAWS)
    eb = res.empty_bins()
    assert int(eb["n_empty"].sum()) == 0 and int(eb["n_under_one_draw"].sum()) > 0
    sens = res.smoothing_sensitivity((0.0, 0.01))
    assert np.all(np.isfinite(sens.values))
    assert float(sens.sel(smoothing=0.0)) == pytest.approx(res.epsilon)
    # log((0 + 0.01) / (200 + 0.01)): the cap of a bin of 200 draws
    assert float(sens.sel(smoothing=0.01)) == pytest.approx(np.log(200.01 / 0.01), abs=0.01)
    with pytest.warns(edp.EDPWarning) as record:
        capped = edp.audit(
            idata, var_names="mu", bins=10, method="psis", smoothing=0.01, progressbar=False
        )
    assert any("smoothing constant, not the data" in str(w.message) for w in record)
    assert int(capped.pointwise["limit"].values[0]) == limits.SMOOTHING
    assert capped.lower_bound and capped.epsilon == pytest.approx(np.log(200.01 / 0.01), abs=0.01)
    assert capped.interval()["epsilon"].values[1] == np.inf

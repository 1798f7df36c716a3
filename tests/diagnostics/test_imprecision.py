"""Tests of EMI, empty bins and smoothing (:mod:`pymc_edp.diagnostics.imprecision`)."""

import numpy as np
import pytest
from support import MU0, SIGMA, SIGMA0, bb_audit, normal_audit

import pymc_edp as edp
from pymc_edp.conjugate import beta_binomial_edp, normal_normal_posterior
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


def test_emi_warns_when_epsilon_within_two_emi():
    rng = np.random.default_rng(5)
    y = rng.normal(10.0, SIGMA, 3000)  # 3,000 records: each moves the posterior very little
    m1, s1 = normal_normal_posterior(y, SIGMA, MU0, SIGMA0)
    res = normal_audit(m1 + s1 * rng.normal(size=(1, 2000)), y=y)
    with pytest.warns(edp.EDPWarning, match="not clearly above the noise floor"):
        em = res.emi()
    assert res.epsilon <= 2 * float(em["emi"])
    assert "within 2 EMI" in em.attrs["message"]


def test_zero_smoothing_infinite_is_announced(rng):
    mu = rng.normal(size=(1, 2000))
    # one record whose removal puts e^(-hundreds) weight on the lower half: empty bins
    ll = (-300.0 * mu)[..., None]
    idata = from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    with pytest.warns(edp.EDPWarning) as record:
        res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    messages = [str(w.message) for w in record]
    assert any("k-hat" in m for m in messages)
    # the audit itself says that alpha = 0 would be infinite (not silently smoothed)
    assert any("without smoothing epsilon would be infinite" in m for m in messages)
    eb = res.empty_bins()
    assert int(eb["n_empty"].sum()) > 0
    with pytest.warns(edp.EDPWarning, match="smoothing = 0 gives an infinite epsilon"):
        sens = res.smoothing_sensitivity((0.0, 0.01))
    assert np.isinf(sens.values[0]) and np.isfinite(sens.values[1])

"""Checking a number by hand (issue 31): a user's own refit counted in the audit's bins.

The reference is the conjugate Normal mean (``y_i ~ N(mu, 1)``, ``mu ~ N(0, 10^2)``), whose
full-data and neighbour posteriors are known: :func:`pymc_edp.conjugate.normal_normal_edp`
gives the exact epsilon, and the exact epsilon *of the audit's own bins* is the same
integral over the cut points the audit chose. "Refits" are exact draws of the neighbour's
closed-form posterior, many of them, so that what is compared is the method, not noise.
"""

import warnings

import numpy as np
import pytest
from scipy import stats

import pymc_edp as edp
from pymc_edp.conjugate import normal_normal_edp
from pymc_edp.diagnostics import refit_epsilon
from pymc_edp.model.compat import from_dict

B = 10
Y = np.append(np.random.default_rng(5).normal(0.0, 1.0, 19), 3.5)
LAST = Y.size - 1


def posterior(y):
    """Mean and standard deviation of the exact posterior of mu."""
    prec = y.size + 0.01
    return y.sum() / prec, prec**-0.5


def audited(mu):
    """A reweighting audit of full-data draws ``mu`` of shape (chain, draw)."""
    ll = stats.norm.logpdf(Y[None, None, :], mu[..., None], 1.0)
    idata = from_dict(
        {"posterior": {"mu": mu}, "log_likelihood": {"y": ll}, "observed_data": {"y": Y}}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)
        return edp.audit(idata, method="psis", bins=B, random_seed=0, progressbar=False)


def one_over_b_epsilon(check) -> float:
    """The mistaken check: refit shares against 1/B instead of the audit's probabilities."""
    share = check["refit_probability"].values[0]
    share = share[np.isfinite(share)]
    return float(np.max(np.abs(np.log(share) - np.log(1.0 / B))))


def exact_for_bins(check, shift: float = 0.0) -> float:
    """Exact epsilon of the last record's removal in the audit's own bins."""
    edges = check["edges"].values[0]
    edges = edges[np.isfinite(edges)] - shift

    def mass(m, s):
        return np.diff(np.concatenate([[0.0], stats.norm.cdf(edges, m, s), [1.0]]))

    full, nb = mass(*posterior(Y)), mass(*posterior(Y[:-1]))
    return float(np.max(np.abs(np.log(nb) - np.log(full))))


def test_refit_epsilon_matches_the_exact_normal_normal_epsilon():
    rng = np.random.default_rng(1)
    res = audited(rng.normal(*posterior(Y), (2, 10_000)))
    refit = rng.normal(*posterior(Y[:-1]), (2, 200_000))
    check = res.refit_epsilon({"mu": refit}, LAST)
    exact = normal_normal_edp(Y, 1.0, 0.0, 10.0, B, pointwise=True)[LAST]
    assert check.attrs["epsilon"] == pytest.approx(exact, rel=0.06)
    assert check.attrs["epsilon"] == pytest.approx(check.attrs["audit_epsilon"], rel=0.06)
    assert float(check["epsilon"].sel(parameter="mu")) == check.attrs["epsilon"]
    assert check.attrs["n_refit_draws"] == 400_000 and not check.attrs["lower_bound"]
    # The same numbers through the function and through the result's method.
    again = refit_epsilon(res, {"mu": refit}, LAST)
    assert again.attrs["epsilon"] == check.attrs["epsilon"]
    # No ties, 20,000 draws in 10 bins: here the audit's bins hold exactly 1/B each.
    np.testing.assert_allclose(check["full_probability"].values[0], 1.0 / B)


def test_with_tied_draws_one_over_b_gives_a_wrong_epsilon():
    # Draws kept to 0.05 (a posterior sd of 0.22): ties put unequal shares of the full-data
    # draws in the audit's bins, so their probabilities are not 1/B.
    h = 0.05
    rng = np.random.default_rng(2)
    mu = np.round(rng.normal(*posterior(Y), (2, 10_000)) / h) * h
    refit = np.round(rng.normal(*posterior(Y[:-1]), (1, 400_000)) / h) * h
    check = audited(mu).refit_epsilon({"mu": refit}, LAST)
    full = check["full_probability"].values[0]
    assert np.nansum(full) == pytest.approx(1.0)
    assert np.nanmax(np.abs(full - 1.0 / B)) > 0.02
    # A draw kept as v stands for a mu in [v - h/2, v + h/2).
    exact = exact_for_bins(check, shift=h / 2)
    assert check.attrs["epsilon"] == pytest.approx(exact, abs=0.04)
    wrong = one_over_b_epsilon(check)
    assert abs(wrong - exact) > 0.1, (wrong, exact)
    assert abs(wrong - check.attrs["epsilon"]) > 0.1


def test_a_refit_of_the_full_data_itself_gives_zero():
    rng = np.random.default_rng(3)
    res = audited(rng.normal(*posterior(Y), (2, 1_000)))
    same = res.draws["mu"].values.reshape(2, -1)
    check = res.refit_epsilon({"mu": same})
    assert check.attrs["epsilon"] == pytest.approx(0.0, abs=1e-12)
    assert "audit_epsilon" not in check.attrs


def test_refit_epsilon_says_what_is_missing():
    rng = np.random.default_rng(4)
    res = audited(rng.normal(*posterior(Y), (2, 1_000)))
    with pytest.raises(KeyError, match=r"no variable \['mu'\].*refit the same model"):
        res.refit_epsilon({"sigma": np.ones((1, 10))})
    with pytest.raises(KeyError, match="no neighbour 'nobody'"):
        res.refit_epsilon({"mu": np.ones((1, 10))}, "nobody")

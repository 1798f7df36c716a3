"""Tests of :mod:`pymc_edp.model.convergence`: R-hat, ESS and divergences of the fit."""

import dataclasses
import json

import numpy as np
import pytest
import xarray as xr

from pymc_edp.model.compat import ess, rhat
from pymc_edp.model.convergence import (
    ESS_PER_CHAIN,
    FitConvergence,
    checked_by,
    fit_convergence,
)


def _posterior(**variables):
    return xr.Dataset(
        {
            name: (("chain", "draw", *[f"{name}_dim_{i}" for i in range(v.ndim - 2)]), v)
            for name, v in variables.items()
        }
    )


def _ar1(rng, chains, draws, rho):
    e = rng.normal(size=(chains, draws))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0]
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * e[:, t]
    return x


def test_chains_with_different_means_have_not_converged(rng):
    h = rng.normal(size=(2, 1000))
    h[1] += 2.0  # the second chain is stuck elsewhere
    good = rng.normal(size=(2, 1000, 3))
    fit = fit_convergence(_posterior(h=h, good=good), ["good", "h"])
    assert fit.rhat_var == "h" and fit.max_rhat > 1.2
    # the stack's own rank-normalised split R-hat, on the audited variable
    assert fit.max_rhat == pytest.approx(float(rhat(_posterior(h=h))["h"]))
    assert not fit.converged and fit.sampler is None and not fit.checked
    msg = fit.message()
    assert msg.startswith(
        "Convergence checks as pm.sample runs them, on the audited variables (the fit does "
        "not record its sampler): The rhat statistic is larger than 1.01 for some parameters "
        f"(max {fit.max_rhat:.3f} for 'h'). This indicates problems during sampling."
    )
    assert msg.endswith("Every epsilon inherits the draws' Monte-Carlo error and bias.")
    assert "refit the model" not in msg and "not converged" not in msg
    assert fit.note() == msg  # nobody said it before: the views show the warning


def test_only_the_audited_variables_are_diagnosed(rng):
    stuck = rng.normal(size=(2, 1000))
    stuck[0] -= 5.0
    posterior = _posterior(mu=rng.normal(size=(2, 1000)), stuck=stuck)
    fit = fit_convergence(posterior, ["mu"])
    assert fit.converged and fit.message() == ""
    assert fit.max_rhat < 1.01 and fit.rhat_var == "mu"


def test_divergent_transitions_are_counted(rng):
    posterior = _posterior(mu=rng.normal(size=(2, 1000)))
    diverging = np.zeros((2, 1000), dtype=bool)
    diverging[0, [3, 50, 700]] = True
    stats = xr.Dataset({"diverging": (("chain", "draw"), diverging)})
    fit = fit_convergence(posterior, ["mu"], stats)
    assert fit.n_divergent == 3 and not fit.converged
    assert fit.problems == ("3 divergences after tuning",)
    assert "There were 3 divergences after tuning. Increase `target_accept` or " in fit.message()
    one = dataclasses.replace(fit, n_divergent=1)
    assert one.pymc_messages[0].startswith("There was 1 divergence after tuning.")
    # none recorded is not "none happened"; none happened is converged
    assert fit_convergence(posterior, ["mu"]).n_divergent is None
    stats["diverging"][:] = False
    assert fit_convergence(posterior, ["mu"], stats).converged


def test_low_bulk_ess_is_flagged_per_chain_and_tail_ess_is_kept(rng):
    x = _ar1(rng, 4, 1000, 0.95)  # ESS about 4000 / 39, far under 100 per chain
    fit = fit_convergence(_posterior(x=x), ["x"])
    assert fit.min_ess_bulk == pytest.approx(float(ess(_posterior(x=x), method="bulk")["x"]))
    assert fit.min_ess_bulk < 4 * ESS_PER_CHAIN and fit.min_ess_tail < 4 * ESS_PER_CHAIN
    assert f"min bulk ESS {fit.min_ess_bulk:.0f} for 'x' (under 400" in fit.problems[-1]
    assert "The effective sample size per chain is smaller than 100" in fit.message()
    # PyMC judges the bulk ESS only: a low tail ESS alone is kept, not judged
    tail_only = dataclasses.replace(fit, max_rhat=1.0, min_ess_bulk=4000.0)
    assert tail_only.min_ess_tail < 400 and tail_only.converged


def test_one_chain_or_under_100_draws_are_not_judged_by_rhat_or_ess(rng):
    """As pm.sample: R-hat and ESS are not checked with one chain or under 100 draws."""
    fit = fit_convergence(_posterior(mu=_ar1(rng, 1, 1000, 0.99)), ["mu"])
    assert fit.max_rhat is None and fit.n_chains == 1 and fit.min_ess_bulk < 100
    assert fit.converged and fit.message() == "" and fit.note() == ""
    stuck = rng.normal(size=(2, 99))
    stuck[1] += 3.0
    short = fit_convergence(_posterior(mu=stuck), ["mu"])
    assert short.n_draws == 99 and short.max_rhat > 1.5 and short.converged
    assert not dataclasses.replace(short, n_draws=100).converged
    # divergences are checked whatever the draws
    assert not dataclasses.replace(short, n_divergent=2).converged


def test_a_sampler_that_ran_pymcs_checks_is_not_repeated(rng):
    """pm.sample logged its checks: the audit keeps the diagnostic for the views, silently.

    nutpie (also through pm.sample) and fits that do not record their sampler are checked
    here, in PyMC's words.
    """
    h = rng.normal(size=(2, 1000))
    h[1] += 0.5
    posterior = _posterior(h=h)
    posterior.attrs = {"inference_library": "pymc", "tuning_steps": 1000}
    fit = fit_convergence(posterior, ["h"])
    assert (fit.sampler, fit.checked) == ("pymc", True) and not fit.converged
    assert fit.message() == ""
    assert fit.note() == f"Convergence, as PyMC reported when sampling: {'; '.join(fit.problems)}."
    posterior.attrs = {"inference_library": "nutpie", "tuning_steps": 1000}
    fit = fit_convergence(posterior, ["h"])
    assert (fit.sampler, fit.checked) == ("nutpie", False)
    assert "(sampled by nutpie, which does not run them): The rhat" in fit.message()
    assert fit.note() == fit.message()
    assert checked_by({"inference_library": "blackjax", "tuning_steps": 10}) == ("blackjax", True)
    assert checked_by({"inference_library": "numpyro"}) == ("numpyro", False)
    assert checked_by({"inference_library": "stan"}) == ("stan", False)


def test_messages_are_pymcs_own(rng):
    """PyMC's run_convergence_checks on the same fit says the same, with the same thresholds
    (what the audit adds is the parenthesis with the audited variable's value)."""
    import re

    import pymc as pm
    from pymc.stats.convergence import run_convergence_checks

    from pymc_edp.model.compat import from_dict

    h = _ar1(rng, 2, 400, 0.9)
    h[1] += 0.3
    diverging = np.zeros((2, 400), dtype=bool)
    diverging[1, 7] = True
    idata = from_dict({"posterior": {"h": h}, "sample_stats": {"diverging": diverging}})
    with pm.Model() as model:
        pm.Normal("h")
    expected = {
        " ".join(w.message.split())
        for w in run_convergence_checks(idata, model)
        if w.kind.name in ("CONVERGENCE", "DIVERGENCES")
    }
    stats = xr.Dataset({"diverging": (("chain", "draw"), diverging)})
    fit = fit_convergence(_posterior(h=h), ["h"], stats)
    ours = {re.sub(r" \((max|min) [^)]*\)", "", m).rstrip(".") for m in fit.pymc_messages}
    assert len(expected) == 3 and ours == {m.rstrip(".") for m in expected}


def test_constant_elements_are_skipped_not_fatal(rng):
    theta = rng.normal(size=(2, 1000, 2))
    theta[..., 1] = 3.0  # no R-hat, no ESS: someone else's diagnostic
    fit = fit_convergence(_posterior(theta=theta), ["theta"])
    assert np.isfinite(fit.max_rhat) and fit.converged


def test_round_trips_through_json(rng):
    h = rng.normal(size=(2, 500))
    h[1] += 2.0
    fit = fit_convergence(_posterior(h=h), ["h"])
    back = FitConvergence.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert back == fit and back.message() == fit.message()
    assert FitConvergence.from_dict(None) is None
    assert dataclasses.replace(fit, max_rhat=1.005).message() != fit.message()


def test_rhat_just_above_the_threshold_is_not_printed_as_the_threshold():
    fit = FitConvergence(n_chains=2, max_rhat=1.0104, rhat_var="lam")
    assert fit.problems == ("max R-hat 1.010 for 'lam' (above 1.01)",)
    assert "(max 1.010 for 'lam')" in fit.message()
    assert FitConvergence(n_chains=2, max_rhat=1.1234, rhat_var="h").problems == (
        "max R-hat 1.12 for 'h' (above 1.01)",
    )
    assert FitConvergence(n_chains=2, max_rhat=1.0099, rhat_var="h").converged

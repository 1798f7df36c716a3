"""Tests of :mod:`pymc_edp.model.convergence`: R-hat, ESS and divergences of the fit."""

import dataclasses
import json

import numpy as np
import pytest
import xarray as xr

from pymc_edp.model.compat import ess, rhat
from pymc_edp.model.convergence import ESS_PER_CHAIN, FitConvergence, fit_convergence


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
    assert not fit.converged
    msg = fit.message()
    assert msg.startswith(f"The fit has not converged (max R-hat {fit.max_rhat:.2f} for 'h'")
    assert "every epsilon here inherits" in msg and "refit the model" in msg


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
    assert "3 divergent transitions" in fit.message()
    # none recorded is not "none happened"; none happened is converged
    assert fit_convergence(posterior, ["mu"]).n_divergent is None
    stats["diverging"][:] = False
    assert fit_convergence(posterior, ["mu"], stats).converged


def test_low_bulk_and_tail_ess_is_flagged_per_chain(rng):
    x = _ar1(rng, 4, 1000, 0.95)  # ESS about 4000 / 39, far under 100 per chain
    fit = fit_convergence(_posterior(x=x), ["x"])
    assert fit.min_ess_bulk == pytest.approx(float(ess(_posterior(x=x), method="bulk")["x"]))
    assert fit.min_ess_bulk < 4 * ESS_PER_CHAIN and fit.min_ess_tail < 4 * ESS_PER_CHAIN
    assert f"min bulk ESS {fit.min_ess_bulk:.0f} for 'x' (under 400" in fit.message()
    assert "min tail ESS" in fit.message()


def test_one_chain_has_no_rhat_and_is_judged_by_ess(rng):
    fit = fit_convergence(_posterior(mu=rng.normal(size=(1, 2000))), ["mu"])
    assert fit.max_rhat is None and fit.n_chains == 1 and fit.converged
    bad = fit_convergence(_posterior(mu=_ar1(rng, 1, 1000, 0.99)), ["mu"])
    assert bad.max_rhat is None and not bad.converged
    assert "R-hat" not in bad.message() and "(under 100: 100 per chain)" in bad.message()


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
    assert "max R-hat 1.010 for 'lam'" in fit.message()
    assert FitConvergence(n_chains=2, max_rhat=1.1234, rhat_var="h").problems == (
        "max R-hat 1.12 for 'h'",
    )
    assert FitConvergence(n_chains=2, max_rhat=1.0099, rhat_var="h").converged

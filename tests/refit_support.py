"""Helpers of the refit tests: sampling and the audit's refit keywords."""

import pymc as pm

import pymc_edp as edp
from pymc_edp.refit import engines

SAMPLE_KW = {"progressbar": False, "compute_convergence_checks": False}
REFIT_OPTS = {"draws": 1000, "tune": 500, "chains": 2}
SMALL_OPTS = {**REFIT_OPTS, "draws": 300, "tune": 300}


def refit_kw(base=REFIT_OPTS, **opts):
    """Audit keywords: refit options (``base`` updated by ``opts``), seed, no progress bar."""
    return {"refit": edp.RefitOptions(**{**base, **opts}), "random_seed": 7, "progressbar": False}


REFIT_KW = refit_kw()
SMALL_KW = refit_kw(SMALL_OPTS)


def sample(model, draws, chains=4, seed=1, tune=1000, **kw):
    with model:
        idata = pm.sample(
            draws,
            tune=tune,
            chains=chains,
            cores=min(chains, 2),
            random_seed=seed,
            **SAMPLE_KW,
            **kw,
        )
        pm.compute_log_likelihood(idata, progressbar=False)
    return idata


def count_engine_calls(monkeypatch, fail_once=None):
    """Count the nutpie refits; optionally make the refit of record ``fail_once`` fail once."""
    original = engines.NutpieEngine.sample
    calls = {"n": 0, "failed": False}

    def counting(self, data, seed):
        calls["n"] += 1
        if fail_once is not None and data["edp_dw_y"][fail_once] == -1 and not calls["failed"]:
            calls["failed"] = True
            raise RuntimeError("worker lost")
        return original(self, data, seed)

    monkeypatch.setattr(engines.NutpieEngine, "sample", counting)
    return calls

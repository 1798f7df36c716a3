"""Where one default audit's wall time goes, stage by stage (issue 33).

Fits a zoo model (``tests/zoo.py``, its own 2 x 500 draws fit), then runs the default
``edp.audit`` twice in this process ("first": one-time compilation included; "again") with
timers around the pipeline's stages and the refits' internals: the neighbour model, the
sampler's compilation, the refits' sampling, the log-likelihood at the refit draws and the
refit estimates. Times are inclusive (the compilation is inside the sampling).

Run: python benchmarks/profile_audit.py [zoo builder, default glm_normal]
"""

from __future__ import annotations

import collections
import functools
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMES: collections.defaultdict = collections.defaultdict(float)
CALLS: collections.Counter = collections.Counter()


def _hook(obj, name: str, key: str) -> None:
    """Time every call of ``obj.name`` under ``key``."""
    original = getattr(obj, name)

    @functools.wraps(original)
    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            TIMES[key] += time.perf_counter() - t0
            CALLS[key] += 1

    setattr(obj, name, timed)


def main(argv=None) -> None:
    """Fit, audit twice and print each audit's breakdown."""
    import pymc_edp as edp
    import pymc_edp.auditing as auditing
    from pymc_edp.model import moment_match
    from pymc_edp.refit import engines
    from pymc_edp.refit import run as refit_run

    sys.path.insert(0, str(ROOT / "tests"))
    import zoo

    name = (argv or sys.argv[1:] or ["glm_normal"])[0]
    _hook(auditing, "read_inputs", "1 read_inputs (log-likelihood, bins)")
    _hook(auditing, "reweight", "2 reweight (PSIS)")
    _hook(auditing, "match_moments", "3 moment matching")
    _hook(moment_match.ModelDensity, "__init__", "3a its densities compiled (not when cached)")
    _hook(auditing, "refit_and_verify", "4 refit_and_verify (total)")
    _hook(auditing, "assemble", "5 assemble")
    _hook(refit_run, "cached_neighbour_model", "4a neighbour model (or cache hit)")
    _hook(engines.NutpieEngine, "_compiled", "4b nutpie compile (or cache hit)")
    _hook(engines.PymcEngine, "_step", "4b PyMC step method (or cache hit)")
    _hook(engines.NutpieEngine, "sample", "4c refit sampling, nutpie (incl. 4b)")
    _hook(engines.PymcEngine, "sample", "4c refit sampling, PyMC (incl. 4b)")
    _hook(refit_run.RefitProblem, "refit_log_ratio", "4d log-likelihood at refit draws")
    _hook(refit_run, "_estimate", "4e refit estimate + MCSE")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model, idata = getattr(zoo, name)()
        fit_s = time.perf_counter() - t0
        for label in ("first audit", "again"):
            TIMES.clear()
            CALLS.clear()
            t0 = time.perf_counter()
            res = edp.audit(idata, model, random_seed=1, progressbar=False)
            total = time.perf_counter() - t0
            print(
                f"\n== {name}, {label}: {total:.2f} s (fit with log-likelihood {fit_s:.2f} s); "
                f"epsilon {float(res.epsilon):.3f}; verification {res.verification}"
            )
            for key in sorted(TIMES):
                print(f"  {key:<45}{TIMES[key]:8.2f} s  x{CALLS[key]}")


if __name__ == "__main__":
    main()

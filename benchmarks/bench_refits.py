"""Warm-started refits against cold ones, and the default audit against the fit (issue 33).

For each zoo model (``tests/zoo.py``), fitted with PyMC's defaults (2 chains x 1,000 draws
after 1,000 tuning steps, 2 cores), in one process:

- ``fit s``: the wall time of that ``pm.sample`` (the pointwise log likelihood is computed
  after it, untimed);
- ``audit before``: the default audit as it ran before issue 33: refits started cold
  (``RefitOptions(warm_start=False)``) and the neighbour model built and compiled anew (the
  model's cached neighbour model is dropped first);
- ``default``: the default audit again (refits cold, as before, but the neighbour model
  compiled by the audit before is reused);
- ``audit first``: the first warm-started audit of the model in this process (it compiles
  the neighbour model; other one-time costs, numba's and PyTensor's, were paid by the fit or
  the audit before);
- ``audit again``: a second warm-started audit (nothing to compile);
- refits run, tuning steps + draws per chain of each, and the verification outcome;
- per refit, for the neighbour that sets epsilon: a cold ``pm.sample`` of the neighbour
  model (a fresh compile, ``tune=1000``, as a user refitting by hand would), the compiled
  engine started cold (``tune=1000``) and warm (a quarter of the tuning, at full-data draws).

Run: python benchmarks/bench_refits.py [--models glm_normal,hier_noncentred,...]
(``--draws``/``--tune`` change the fit, for a quick smoke run only.)
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from stack import stack_versions

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = "glm_normal,glm_poisson,hier_noncentred,coal_mining,mixture"
DRAWS, TUNE, CHAINS = 1000, 1000, 2  # PyMC's defaults, the refits' defaults too
FIT_DRAWS, FIT_TUNE = DRAWS, TUNE


def _zoo():
    sys.path.insert(0, str(ROOT / "tests"))
    import zoo

    return zoo


def _model(zoo, name: str):
    """The zoo model ``name`` without the zoo's own small fit."""
    fit = zoo.fit
    zoo.fit = lambda model, *args, **kwargs: None
    try:
        return getattr(zoo, name)()[0]
    finally:
        zoo.fit = fit


def _forget(model) -> None:
    """Drop the model's cached neighbour models and their compiled samplers (the 'before')."""
    from pymc_edp.refit import warm

    entry = warm._NEIGHBOUR_MODELS.pop(model, None)
    if entry is not None:
        warm._forget(entry[""])


def _audit(idata, model, *, warm: bool):
    import pymc_edp as edp

    t0 = time.perf_counter()
    res = edp.audit(
        idata,
        model,
        random_seed=1,
        progressbar=False,
        refit=edp.RefitOptions(warm_start=warm),
    )
    return res, time.perf_counter() - t0


def _neighbour_data(model, idata, label):
    """The neighbour model's data for removing record ``label`` of the first observed variable."""
    from pymc_edp.model.compat import get_group
    from pymc_edp.model.transform import NeighbourDataMaker

    name = model.observed_RVs[0].name
    y = np.asarray(get_group(idata, "observed_data")[name].values)
    names = [rv.name for rv in model.observed_RVs]
    observed = {n: np.asarray(get_group(idata, "observed_data")[n].values) for n in names}
    maker = NeighbourDataMaker(observed, {n: observed[n].shape for n in names})
    index = int(np.clip(int(label) if str(label).isdigit() else 0, 0, y.shape[0] - 1))
    changes = {n: (np.array([index] if n == name else [], dtype=int), None) for n in names}
    return maker(index, label, changes)


def _per_refit(model, idata, label) -> dict:
    """Seconds of one refit: cold ``pm.sample`` (compiling), engine cold, engine warm."""
    import pymc as pm

    from pymc_edp.model.compat import get_group
    from pymc_edp.model.transform import neighbour_model
    from pymc_edp.refit.engines import make_engine
    from pymc_edp.refit.warm import cached_neighbour_model, warm_start

    names = [rv.name for rv in model.observed_RVs]
    nb, token = cached_neighbour_model(model, names, {})
    data = _neighbour_data(model, idata, label)
    keep = tuple(rv.name for rv in model.free_RVs)
    common = dict(draws=DRAWS, tune=TUNE, chains=CHAINS, var_names=keep, token=token)
    posterior = get_group(idata, "posterior")
    warm = warm_start(nb, posterior, tune=TUNE)
    cold_eng = make_engine(None, model=nb, **common)
    warm_eng = make_engine(None, model=nb, warm=warm, **common)
    cold_eng.sample(data, 0)  # compile once, untimed
    warm_eng.sample(data, 0)
    out = {}
    t0 = time.perf_counter()
    cold_eng.sample(data, 1)
    out["engine cold"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    warm_eng.sample(data, 1)
    out["engine warm"] = time.perf_counter() - t0
    nb_fresh = neighbour_model(model, names)  # a user's own copy: pm.sample compiles it
    t0 = time.perf_counter()
    with nb_fresh:
        pm.set_data(data)
        pm.sample(
            draws=DRAWS,
            tune=TUNE,
            chains=CHAINS,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    out["pm.sample cold"] = time.perf_counter() - t0
    out["engine"] = type(cold_eng).__name__.replace("Engine", "").lower()
    out["warm tune"] = warm.tune if warm is not None else TUNE
    return out


def run_model(zoo, name: str) -> dict:
    """Fit, audit before / first / again, and time one refit each way."""
    import pymc as pm

    model = _model(zoo, name)
    with model:
        t0 = time.perf_counter()
        idata = pm.sample(
            FIT_DRAWS, tune=FIT_TUNE, chains=CHAINS, cores=2, random_seed=1, progressbar=False
        )
        fit_s = time.perf_counter() - t0
        pm.compute_log_likelihood(idata, progressbar=False)
    row = {"model": name, "fit s": fit_s}
    before, row["audit before"] = _audit(idata, model, warm=False)
    _, row["audit default"] = _audit(idata, model, warm=False)
    _forget(model)
    res, row["audit first"] = _audit(idata, model, warm=True)
    res, row["audit again"] = _audit(idata, model, warm=True)
    row["refits before"] = len(before.refits) if before.refits is not None else 0
    row["refits"] = len(res.refits) if res.refits is not None else 0
    row["verification before"] = before.verification
    row["verification"] = res.verification
    row["eps before/after"] = f"{float(before.epsilon):.2f}/{float(res.epsilon):.2f}"
    try:
        row.update(_per_refit(model, idata, res.worst_neighbour))
    except Exception as err:  # a model the per-refit timing cannot set up (coupled, ...)
        row["per refit"] = f"{type(err).__name__}: {err}"[:60]
    return row


def main(argv=None) -> None:
    """Print the table of every model, all measured in this run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=DEFAULT, help="comma-separated zoo builders")
    parser.add_argument("--draws", type=int, default=DRAWS, help="fit draws (a smoke test)")
    parser.add_argument("--tune", type=int, default=TUNE, help="fit tuning steps")
    args = parser.parse_args(argv)
    global FIT_DRAWS, FIT_TUNE
    FIT_DRAWS, FIT_TUNE = args.draws, args.tune
    warnings.simplefilter("ignore")
    for name in ("pymc", "pymc_edp", "pytensor", "nutpie"):
        logging.getLogger(name).setLevel(logging.ERROR)
    zoo = _zoo()
    rows = [run_model(zoo, name) for name in args.models.split(",")]
    print("stack: " + ", ".join(f"{k} {v}" for k, v in stack_versions().items()))
    print(
        f"{'model':<18}{'fit s':>7}{'before':>8}{'default':>8}{'warm 1st':>9}{'again':>7}"
        f"{'x fit':>7}"
        f"{'refits':>8}  {'verification (before/after)':<24}{'eps b/a':>11}"
        f"  {'engine':<7}{'pm.sample':>10}{'cold':>7}{'warm':>7}"
    )
    for r in rows:
        per = (
            f"  {r['engine']:<7}{r['pm.sample cold']:>10.2f}{r['engine cold']:>7.2f}"
            f"{r['engine warm']:>7.2f}"
            if "engine" in r
            else f"  {r.get('per refit', '')}"
        )
        print(
            f"{r['model']:<18}{r['fit s']:>7.1f}{r['audit before']:>8.1f}"
            f"{r['audit default']:>8.1f}{r['audit first']:>9.1f}"
            f"{r['audit again']:>7.1f}{r['audit again'] / r['fit s']:>7.2f}"
            f"{r['refits before']:>4}/{r['refits']:<3}  "
            f"{r['verification before'] + '/' + r['verification']:<24}{r['eps before/after']:>11}"
            + per
        )
    print(
        f"seconds; x fit: warm 'again' / fit; refits: before/warm, {DRAWS} draws per chain after "
        f"{TUNE} tuning steps cold, a quarter of them warm; per refit: the neighbour that sets "
        "epsilon, 2 chains, one core"
    )


if __name__ == "__main__":
    main()

"""The default audit's wall time against the fit's, per zoo model, each in a fresh process.

Issue 33's table. For each zoo model (``tests/zoo.py``), a fresh Python process:

- ``fit s``: ``pm.sample`` with PyMC's defaults (2 chains x 1,000 draws after 1,000 tuning
  steps, 2 cores), wall time (the process's first PyMC compile included, as a user's first
  fit pays it); the pointwise log likelihood is computed after it, untimed;
- ``cold``: the default ``edp.audit(idata, model, random_seed=1)``, the first audit of the
  process (it compiles the neighbour model, the log likelihood at refit draws, ...);
- ``warm``: the same audit again (what a notebook's next audit of the model costs);
- ``before``: the default audit as it ran before issue 33: every audit compiling the
  neighbour model and moment matching's densities anew (what the model's cache holds is
  dropped first), every verification refit at full length (``early_stop=False``);
  measured after ``warm``;
- refits run, draws per chain of each refit (issue 40: sized from the fit), and the
  verification outcome;
- per refit, for the neighbour that sets epsilon (``--per-refit``): a cold ``pm.sample`` of
  the neighbour model (compiling, ``tune=1000``, as a user refitting by hand would), and the
  audit's compiled engine started cold (``tune=1000``) and warm (a quarter of the tuning,
  at full-data draws).

The ratios are ``audit / fit`` in the same process; the summary gives their median and
maximum over the models. ``--baseline FOLDER`` runs each model a second time, in another
fresh process, with the ``pymc_edp`` of another checkout (the revision before), and adds its
cold and warm ratios.

Run: python benchmarks/bench_audit_cost.py [--models glm_normal,coal_mining,...]
[--per-refit] [--baseline FOLDER] [--markdown]
(``--draws``/``--tune`` change the fit, for a smoke run only).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from stack import format_table, refits_by_draws, run_json, stack_versions

ROOT = Path(__file__).resolve().parents[1]
DRAWS, TUNE, CHAINS = 1000, 1000, 2  # PyMC's defaults, the refits' defaults too
#: Too slow for a routine run (minutes of fit or audit): only with --models.
SLOW = ("stochastic_volatility", "gp_marginal")


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
    """Drop what is compiled from the model: neighbour models, samplers, densities."""
    try:
        from pymc_edp.model import cache
    except ImportError:  # a revision before issue 33 (``--baseline``): nothing is kept
        return
    cache._CACHE.pop(model, None)  # rebuilt with new tokens: every sampler compiled again


def _audit(idata, model, before: bool = False):
    """The default audit (``before``: as before issue 33, every refit at full length)."""
    import pymc_edp as edp

    if before:
        _forget(model)
    t0 = time.perf_counter()
    kw = {}
    if hasattr(edp, "Auto"):  # 0.9: verification is the method's
        kw["method"] = edp.Auto(verify=edp.VerifyOptions(early_stop=not before))
    elif "early_stop" in {f.name for f in dataclasses.fields(edp.VerifyOptions)}:
        kw["refit"] = edp.RefitOptions(verify=edp.VerifyOptions(early_stop=not before))
    res = edp.audit(idata, model, random_seed=1, progressbar=False, **kw)
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
    warm = warm_start(nb, get_group(idata, "posterior"), tune=TUNE)
    cold_eng = make_engine(None, model=nb, **common)
    warm_eng = make_engine(None, model=nb, warm=warm, **common)
    cold_eng.sample(data, 0)  # compile once, untimed
    warm_eng.sample(data, 0)
    out = {}
    for key, eng in (("engine cold", cold_eng), ("engine warm", warm_eng)):
        t0 = time.perf_counter()
        eng.sample(data, 1)
        out[key] = time.perf_counter() - t0
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
    return out


def one_model(name: str, draws: int, tune: int, per_refit: bool) -> dict:
    """Fit, audit cold / warm / before (and time one refit each way), in this process."""
    import pymc as pm

    warnings.simplefilter("ignore")
    for logger in ("pymc", "pymc_edp", "pytensor", "nutpie"):
        logging.getLogger(logger).setLevel(logging.ERROR)
    model = _model(_zoo(), name)
    with model:
        t0 = time.perf_counter()
        idata = pm.sample(
            draws, tune=tune, chains=CHAINS, cores=2, random_seed=1, progressbar=False
        )
        fit_s = time.perf_counter() - t0
        try:
            pm.compute_log_likelihood(idata, progressbar=False)
        except NotImplementedError:  # initval=: PyMC cannot; the audit computes it (timed)
            pass
    row = {"model": name, "fit s": fit_s}
    res, row["cold"] = _audit(idata, model)
    _, row["warm"] = _audit(idata, model)
    _, row["before"] = _audit(idata, model, before=True)
    row["refits"] = len(res.refits) if res.refits is not None else 0
    row["draws per refit"] = refits_by_draws(res)
    row["verification"] = str(res.verification)
    row["epsilon"] = float(res.epsilon)
    if per_refit:
        try:
            row.update(_per_refit(model, idata, res.worst_neighbour))
        except Exception as err:  # a model the per-refit timing cannot set up (coupled, ...)
            row["per refit"] = f"{type(err).__name__}: {err}"[:60]
    return row


def _run_fresh(name: str, args, package: str | None = None) -> dict:
    """:func:`one_model` in a fresh Python process (its first compile is the user's).

    ``package``: the folder of another checkout whose ``pymc_edp`` is imported instead.
    """
    cmd = [sys.executable, __file__, "--one", name, "--draws", str(args.draws)]
    cmd += ["--tune", str(args.tune)] + (["--per-refit"] if args.per_refit else [])
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    if package is not None:
        env["PYTHONPATH"] = os.pathsep.join([package, env.get("PYTHONPATH", "")])
    return run_json(cmd, env, name)


def table(rows: list[dict], markdown: bool) -> str:
    """The rows, and the median and maximum ratios of audit to fit."""
    head = ["model", "fit s", "cold s", "warm s", "before s", "cold/fit", "warm/fit"]
    head += ["before/fit", "refits", "draws per refit", "verification", "epsilon"]
    base = any("baseline" in r for r in rows)
    if base:
        head += ["baseline cold/fit", "baseline warm/fit"]
    per = any("engine" in r for r in rows)
    if per:
        head += ["engine", "pm.sample s", "engine cold s", "engine warm s"]
    body = []
    for r in rows:
        if "error" in r:
            body.append([r["model"], r["error"]] + [""] * (len(head) - 2))
            continue
        fit = r["fit s"]
        line = [r["model"], f"{fit:.1f}", f"{r['cold']:.1f}", f"{r['warm']:.1f}"]
        line += [f"{r['before']:.1f}", f"{r['cold'] / fit:.2f}", f"{r['warm'] / fit:.2f}"]
        line += [f"{r['before'] / fit:.2f}", str(r["refits"]), r["draws per refit"]]
        line += [r["verification"], f"{r['epsilon']:.3f}"]
        if base:
            b = r.get("baseline", {})
            line += (
                [f"{b['cold'] / b['fit s']:.2f}", f"{b['warm'] / b['fit s']:.2f}"]
                if "cold" in b
                else [b.get("error", "-"), ""]
            )
        if per:
            times = [r.get(k) for k in ("pm.sample cold", "engine cold", "engine warm")]
            if "engine" in r:
                line += [r["engine"], *(f"{t:.2f}" for t in times)]
            else:
                line += [r.get("per refit", ""), "", "", ""]
        body.append(line)
    ok = [r for r in rows if "error" not in r]
    summary = []
    for key in ("cold", "warm", "before"):
        ratios = np.array([r[key] / r["fit s"] for r in ok])
        if ratios.size:
            summary.append(
                f"{key} audit / fit: median {np.median(ratios):.2f}, max {ratios.max():.2f}"
            )
    for key in ("cold", "warm") if base else ():
        b = [r["baseline"] for r in ok if "cold" in r.get("baseline", {})]
        ratios = np.array([x[key] / x["fit s"] for x in b])
        if ratios.size:
            summary.append(
                f"baseline {key} audit / fit: median {np.median(ratios):.2f}, "
                f"max {ratios.max():.2f}"
            )
    return "\n".join([*format_table(head, body, markdown), "", *summary])


def main(argv=None) -> None:
    """Run every model in its own process and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=None, help="comma-separated zoo builders")
    parser.add_argument("--draws", type=int, default=DRAWS, help="fit draws (a smoke run)")
    parser.add_argument("--tune", type=int, default=TUNE, help="fit tuning steps")
    parser.add_argument("--per-refit", action="store_true", help="time one refit 3 ways")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument(
        "--baseline", default=None, help="folder of a checkout of the revision before"
    )
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        row = one_model(args.one, args.draws, args.tune, args.per_refit)
        print(json.dumps(row))
        return
    if args.models is None:
        names = [n for n in _zoo().ALL if n not in SLOW]
    else:
        names = args.models.split(",")
    rows = []
    for name in names:
        row = _run_fresh(name, args)
        if args.baseline is not None:
            row["baseline"] = _run_fresh(name, args, args.baseline)
        rows.append(row)
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print("stack: " + ", ".join(f"{k} {v}" for k, v in stack_versions().items()))
    print(f"fit: {CHAINS} chains x {args.draws} draws after {args.tune} tuning, 2 cores")
    print(table(rows, args.markdown))


if __name__ == "__main__":
    main()

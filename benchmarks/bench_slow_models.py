"""The default audit of slow models against their fit, each in a fresh process (issue 40).

For each model, a fresh Python process:

- ``fit s``: the fit as its users run it, wall time (the process's first compile included):
  pymc-marketing's CLV models with ``model.fit(method="mcmc", chains=2, draws=500,
  tune=500)`` (PyMC's NUTS, pymc-marketing's default sampler and its compile mode), zoo
  models (``tests/zoo.py``) with ``pm.sample`` at PyMC's defaults (2 chains x 1,000 draws
  after 1,000 tuning steps, 2 cores); for zoo models the pointwise log likelihood is
  computed after it, untimed, as ``idata_kwargs={"log_likelihood": True}`` would (the CLV
  fits have none: the audit computes it, timed);
- ``first s``: the default ``edp.audit(idata, model, random_seed=1)``, the first audit of
  the process (it compiles the neighbour model, ...), with its stages timed
  (``--breakdown``) and ``silence s``: once refits start, the longest wait for the next INFO
  line of the ``pymc_edp`` logger (the progress bar, off here, moves with every refit);
- ``next s``: the same audit again, what a notebook's next audit of the model costs;
- the refits run and their draws per chain (short verification refits have a quarter),
  and the verification outcome.

Targets (issue 40): Pareto/NBD first audit <= 2x the fit and progress within 10 s of the
refits' start; BG/NBD and the zoo's slow models <= 1.5x (first audit included).

The CLV models need pymc-marketing and Lifetimes (for the CDNOW table), which do not install
beside the project's stacks without a downgrade: run them in the venv of
``benchmarks/libraries/README.md``. Without pymc-marketing they are reported as skipped.

Run: python benchmarks/bench_slow_models.py [--models paretonbd,bgnbd,ordinal,...]
[--breakdown] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stack import format_table, refits_by_draws, run_json, stack_versions

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLV = ("paretonbd", "bgnbd")
#: The zoo's slow models: the five largest audit costs in issue 33's table (a compound step,
#: a scan, a GP, an ordinal likelihood, an LKJ prior).
ZOO = ("stochastic_volatility", "gp_marginal", "coal_mining", "ordinal", "mvnormal_lkj")
CLV_SIZE = dict(chains=2, draws=500, tune=500)
TARGET = {"paretonbd": 2.0}


class _Lines(logging.Handler):
    """Keeps ``(time, message)`` of every record of the ``pymc_edp`` logger."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.records: list[tuple[float, str]] = []

    def emit(self, record):
        self.records.append((time.perf_counter(), record.getMessage()))


def _fit_clv(name: str):
    sys.path.insert(0, str(HERE / "libraries"))
    import clv

    clv_model, data = clv.BUILDERS[name](clv.cdnow())
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clv_model.fit(data, method="mcmc", progressbar=False, random_seed=40, cores=2, **CLV_SIZE)
    return clv_model.model, clv_model.idata, time.perf_counter() - t0


def _fit_zoo(name: str):
    import pymc as pm

    sys.path.insert(0, str(HERE))
    from bench_audit_cost import _model, _zoo

    model = _model(_zoo(), name)
    with model:
        t0 = time.perf_counter()
        idata = pm.sample(random_seed=1, progressbar=False)
        seconds = time.perf_counter() - t0
    return model, idata, seconds


def _hooks():
    """Stage timers of :mod:`profile_audit` (cumulative seconds by stage)."""
    sys.path.insert(0, str(HERE))
    import profile_audit as prof

    import pymc_edp.auditing as auditing
    from pymc_edp.refit import engines
    from pymc_edp.refit import run as refit_run

    prof._hook(auditing, "read_inputs", "read inputs (log likelihood, bins)")
    prof._hook(auditing, "reweight", "reweight (PSIS)")
    prof._hook(auditing, "match_moments", "moment matching")
    prof._hook(auditing, "refit_and_verify", "refits and verification")
    for eng in (engines.NutpieEngine, engines.PymcEngine):
        if hasattr(eng, "compile"):
            prof._hook(eng, "compile", ". compile of the neighbour model")
        prof._hook(eng, "sample", ". refit sampling")
    prof._hook(refit_run.RefitProblem, "refit_log_ratio", ". log likelihood at refit draws")
    return prof.TIMES


def one_model(name: str, breakdown: bool) -> dict:
    """Fit, audit twice, in this process."""
    import pymc as pm

    import pymc_edp as edp

    warnings.simplefilter("ignore")
    for logger in ("pymc", "pytensor", "nutpie"):
        logging.getLogger(logger).setLevel(logging.ERROR)
    model, idata, fit_s = (_fit_clv if name in CLV else _fit_zoo)(name)
    if name not in CLV:  # pymc-marketing's fit has none: the audit computes it (timed)
        with model:
            try:
                pm.compute_log_likelihood(idata, progressbar=False)
            except NotImplementedError:  # initval=: the audit computes it (timed)
                pass
    lines = _Lines()
    log = logging.getLogger("pymc_edp")
    log.addHandler(lines)
    log.setLevel(logging.INFO)
    times = _hooks() if breakdown else {}
    row: dict = {"model": name, "fit s": fit_s}
    t0 = time.perf_counter()
    res = edp.audit(idata, model, random_seed=1, progressbar=False)
    row["first"] = time.perf_counter() - t0
    row["stages"] = dict(times)
    start = [t for t, m in lines.records if m.startswith("refitting")]
    if start:  # the longest wait for the next line once refits start, the audit's end included
        times = [t for t, _ in lines.records if t >= start[0]] + [t0 + row["first"]]
        row["silence s"] = float(np.max(np.diff(times))) if len(times) > 1 else 0.0
    row["log"] = [f"{t - t0:7.1f} s  {m}" for t, m in lines.records]
    t0 = time.perf_counter()
    again = edp.audit(idata, model, random_seed=1, progressbar=False)
    row["next"] = time.perf_counter() - t0
    row["refits"] = len(res.refits) if res.refits is not None else 0
    row["draws per refit"] = refits_by_draws(res)
    row["fit draws"] = int(idata.posterior.sizes["draw"])
    row["verification"] = str(res.verification)
    row["epsilon"] = float(res.epsilon)
    row["same epsilon"] = bool(float(again.epsilon) == float(res.epsilon))
    return row


def _run_fresh(name: str, args) -> dict:
    cmd = [sys.executable, __file__, "--one", name] + (["--breakdown"] if args.breakdown else [])
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    if name in CLV:
        try:
            import pymc_marketing  # noqa: F401
        except ImportError:
            return {"model": name, "error": "skipped: pymc-marketing is not installed here"}
    return run_json(cmd, env, name)


def table(rows: list[dict], markdown: bool) -> str:
    head = ["model", "fit s", "first audit s", "next audit s", "first/fit", "next/fit"]
    head += ["target", "refits", "draws per refit (fit's)", "verification", "epsilon"]
    head += ["silence s"]
    body, ratios = [], []
    for r in rows:
        if "error" in r:
            body.append([r["model"], r["error"]] + [""] * (len(head) - 2))
            continue
        fit = r["fit s"]
        target = TARGET.get(r["model"], 1.5)
        ratios.append((r["first"] / fit, r["next"] / fit, target))
        prog = "-" if r.get("silence s") is None else f"{r['silence s']:.1f}"
        body.append(
            [
                r["model"],
                f"{fit:.1f}",
                f"{r['first']:.1f}",
                f"{r['next']:.1f}",
                f"{r['first'] / fit:.2f}",
                f"{r['next'] / fit:.2f}",
                f"<= {target:g}",
                str(r["refits"]),
                f"{r['draws per refit']} ({r['fit draws']})",
                r["verification"],
                f"{r['epsilon']:.3f}",
                prog,
            ]
        )
    lines = format_table(head, body, markdown)
    if ratios:
        first = np.array([r[0] for r in ratios])
        met = sum(r[0] <= r[2] for r in ratios)
        lines += [
            "",
            f"first audit / fit: median {np.median(first):.2f}, max {first.max():.2f}; "
            f"{met} of {len(ratios)} within their target",
        ]
    for r in rows:
        if r.get("stages"):
            lines += ["", f"{r['model']}, the first audit's stages (s, inclusive):"]
            lines += [f"  {k:<42}{v:8.1f}" for k, v in sorted(r["stages"].items())]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(CLV + ZOO))
    parser.add_argument("--breakdown", action="store_true", help="time the first audit's stages")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one_model(args.one, args.breakdown)))
        return
    rows = []
    for name in args.models.split(","):
        rows.append(_run_fresh(name, args))
        short = {k: v for k, v in rows[-1].items() if k != "log"}
        print(json.dumps(short), file=sys.stderr, flush=True)
        for line in rows[-1].get("log", []):
            print("   ", line, file=sys.stderr, flush=True)
    print("stack: " + ", ".join(f"{k} {v}" for k, v in stack_versions().items()))
    print(table(rows, args.markdown))


if __name__ == "__main__":
    main()

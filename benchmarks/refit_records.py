"""Refits evaluate only their neighbour's own records (issue: refit log ratios at scale).

A pooled refit estimate (the default estimator) needs the neighbour's log density ratio at
the refit's draws. Before, ``RefitProblem.refit_log_ratio`` evaluated every record's
log-likelihood at every refit draw (twice for a replacement) and kept the neighbour's rows;
now one compiled :class:`~pymc_edp.model.stream.ModelColumns` per observed variable
evaluates the neighbour's rows alone.

Model: a Normal regression with ``n`` records (an intercept and four standard-normal
covariates, unknown sigma). ``refits`` leave-one-out neighbours, spread over the records,
are refitted once each (after a warm-up refit that compiles the sampler) with the audit's
refit engine (nutpie when installed, else PyMC's
NUTS; 2 chains x 1,000 draws, 1,000 tuning steps); on each refit's draws the log ratio is
computed both ways, "before" (every record, ``refit.run._OWN_RECORDS = False``) and
"after" (own records), and the two are checked to agree to 1e-10.

Reported per refit: wall seconds of the refit (sampling plus its log ratio) before and
after, and the part of it spent evaluating log-likelihoods. The one-off costs (compiling
the log-likelihood functions, and for "after" the check of the chunked graph against
PyMC's) are reported apart: they are paid once per audit, not per refit.

Usage::

    python benchmarks/refit_records.py                 # n = 10,000, 5 refits
    python benchmarks/refit_records.py --n 2000 --refits 3 --engine pymc
    python benchmarks/refit_records.py --neighbour replace   # y_i replaced by max(y) + 3
    python benchmarks/refit_records.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

SEED = 20261124
N_COEF = 5


def simulate(n: int, seed: int = SEED):
    """Covariates ``(n, 5)`` and outcomes of the Normal regression."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(n), rng.normal(size=(n, N_COEF - 1))])
    y = x @ np.array([-0.5, 0.8, -0.4, 0.3, 0.2]) + rng.normal(size=n)
    return x, y


def build(x, y):
    import pymc as pm

    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 10.0, shape=N_COEF)
        sigma = pm.HalfNormal("sigma", 10.0)
        pm.Normal("y", pm.math.dot(x, beta), sigma, observed=y)
    return model


def default_engine() -> str:
    try:
        import nutpie  # noqa: F401
    except ImportError:
        return "pymc"
    return "nutpie"


def _problem(model, y, neighbour: str = "remove"):
    import xarray as xr

    from pymc_edp.core.loglik import LogLikelihood
    from pymc_edp.core.neighbours import Neighbours, Replace
    from pymc_edp.refit.run import RefitProblem

    observed = xr.Dataset({"y": (("obs",), y)})
    ll = LogLikelihood.from_observed(observed, ["y"], 1, 1)  # the record layout only
    nbs = Neighbours.records(ll)
    replace = {}
    if neighbour == "replace":  # every record replaced by one far value
        replace = dict(
            relation=Replace().with_candidates(
                {"y": np.full((1, y.size), float(y.max()) + 3.0)}, []
            ),
            worst_candidate=np.zeros(len(nbs), dtype=np.int64),
        )
    return RefitProblem(
        model=model,
        ll=ll,
        neighbours=nbs,
        names=("beta", "sigma"),
        bins=None,
        smoothing=0.0,
        observed_y={"y": y},
        **replace,
    )


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def run(
    n: int = 10_000,
    refits: int = 5,
    seed: int = SEED,
    *,
    engine: str | None = None,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    neighbour: str = "remove",
) -> dict:
    """Time ``refits`` refits with their log ratio from every record and from their own.

    Returns
    -------
    dict
        ``n``, ``refits``, ``neighbour``, ``engine``, ``draws``, ``chains``; ``sample_s``
        (sampling seconds per refit); ``loglik_before_s`` and ``loglik_after_s`` (log-ratio
        seconds per refit);
        ``refit_before_s`` and ``refit_after_s`` (their sums: wall seconds per refit);
        ``setup_before_s`` and ``setup_after_s`` (one-off compilation and checks, and a first
        evaluation); ``first_refit_s`` (a warm-up refit that compiles the engine, not
        counted);
        ``speedup_loglik``, ``speedup_refit``; ``max_abs_diff`` between the two log ratios.
    """
    from pymc_edp.refit import run as refit_run
    from pymc_edp.refit.options import RefitOptions

    engine = default_engine() if engine is None else engine
    x, y = simulate(n, seed)
    model = build(x, y)
    problem = _problem(model, y, neighbour)
    options = RefitOptions(engine=engine, draws=draws, tune=tune, chains=chains)
    eng, _ = refit_run._engine_for(problem, options, [])
    to_refit = np.linspace(0, n - 1, refits).round().astype(np.int64)
    warm = int(np.setdiff1d(np.arange(n), to_refit)[0])  # compiles the engine; not counted
    tasks = refit_run._refit_tasks(problem, np.append(warm, to_refit), seed, builder=False)
    # the refits themselves (sampled once; both log ratios are computed on the same draws)
    samples, sample_s = [], []
    for task in tasks:
        out, secs = _timed(refit_run._run_one, eng, task)
        if out.posterior is None:
            raise RuntimeError(f"refit {task.label} failed: {out.reason}")
        samples.append(out.posterior)
        sample_s.append(secs)
    first_refit_s, sample_s, (warm_post, *samples) = sample_s[0], sample_s[1:], samples
    # one-off costs: compiling (and, for own records, checking on the first refit's draws),
    # and a first evaluation (allocations), on the warm-up refit's draws
    fns = {}

    def setup_before():
        fns["y"] = _elementwise(model)
        return problem._all_records_log_ratio(fns, warm, warm_post)

    def setup_after():
        own = problem._own_columns("y", warm_post)
        if isinstance(own, str):
            raise RuntimeError(f"own records unavailable: {own}")
        return problem._own_records_log_ratio(fns, warm, warm_post)

    _, setup_before_s = _timed(setup_before)
    _, setup_after_s = _timed(setup_after)
    before_s, after_s, diff = [], [], 0.0
    previous = refit_run._OWN_RECORDS
    try:
        for k, post in zip(map(int, to_refit), samples, strict=True):
            refit_run._OWN_RECORDS = True
            after, secs_after = _timed(problem.refit_log_ratio, fns, k, post)
            refit_run._OWN_RECORDS = False
            before, secs_before = _timed(problem.refit_log_ratio, fns, k, post)
            after_s.append(secs_after)
            before_s.append(secs_before)
            diff = max(diff, float(np.max(np.abs(after - before))))
    finally:
        refit_run._OWN_RECORDS = previous
    if not diff <= 1e-10:
        raise AssertionError(f"the two log ratios differ by {diff:g}")
    sample, ll_before, ll_after = (float(np.mean(v)) for v in (sample_s, before_s, after_s))
    return {
        "n": int(n),
        "refits": int(refits),
        "neighbour": neighbour,
        "engine": engine,
        "draws": int(draws),
        "chains": int(chains),
        "sample_s": sample,
        "loglik_before_s": ll_before,
        "loglik_after_s": ll_after,
        "refit_before_s": sample + ll_before,
        "refit_after_s": sample + ll_after,
        "setup_before_s": float(setup_before_s),
        "setup_after_s": float(setup_after_s),
        "first_refit_s": float(first_refit_s),
        "speedup_loglik": ll_before / ll_after,
        "speedup_refit": (sample + ll_before) / (sample + ll_after),
        "max_abs_diff": diff,
    }


def _elementwise(model):
    from pymc_edp.model.pymc import elementwise_loglik

    return elementwise_loglik(model, "y")


def table(res: dict) -> str:
    """The result of :func:`run` as a small text table."""
    head = (
        f"n = {res['n']:,} records, {res['refits']} refits ({res['neighbour']}) of "
        f"{res['chains']} x {res['draws']} draws ({res['engine']}); seconds per refit"
    )
    rows = [
        ("", "before", "after", "ratio"),
        (
            "log-likelihood",
            f"{res['loglik_before_s']:.4f}",
            f"{res['loglik_after_s']:.4f}",
            f"{res['speedup_loglik']:.0f}x",
        ),
        ("sampling", f"{res['sample_s']:.3f}", f"{res['sample_s']:.3f}", ""),
        (
            "refit (wall)",
            f"{res['refit_before_s']:.3f}",
            f"{res['refit_after_s']:.3f}",
            f"{res['speedup_refit']:.2f}x",
        ),
        ("one-off setup", f"{res['setup_before_s']:.2f}", f"{res['setup_after_s']:.2f}", ""),
    ]
    rows.append(("first refit", f"{res['first_refit_s']:.2f}", "", "(compiles the engine)"))
    lines = [head] + [f"{a:<16}{b:>10}{c:>10}{d:>8}" for a, b, c, d in rows]
    lines.append(f"max |after - before| of the log ratios: {res['max_abs_diff']:.1e}")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--refits", type=int, default=5)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--engine", choices=("nutpie", "pymc"), default=None)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--neighbour", choices=("remove", "replace"), default="remove")
    parser.add_argument("--json", help="also write the result to this file")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import logging

    import pymc  # noqa: F401  (sets its logger's level on import)

    logging.getLogger("pymc").setLevel(logging.ERROR)
    res = run(
        args.n,
        args.refits,
        args.seed,
        engine=args.engine,
        draws=args.draws,
        tune=args.tune,
        neighbour=args.neighbour,
    )
    print(table(res))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)
    return res


if __name__ == "__main__":
    main()

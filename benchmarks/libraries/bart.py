"""pymc-bart's canonical BART regression, fitted small, then audited.

The model as pymc-bart's README and introduction write it::

    with pm.Model() as model:
        mu = pmb.BART("mu", X, Y, m=50)
        sigma = pm.HalfNormal("sigma", 1)
        y = pm.Normal("y", mu, sigma, observed=Y)
        idata = pm.sample()

on Friedman's test function (Friedman 1991; the function of Chipman, George & McCulloch's
BART paper): ``y = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5 + N(0, 1)``, five
uniform covariates, ``n = 200`` (seed 39), ``Y`` standardised. pm.sample assigns PGBART to
``mu`` and NUTS to ``sigma`` (BART cannot be sampled by nutpie).

Sizes: ``--chains 2 --draws 300 --tune 300`` (default), ``cores=1``. The model is audited with
``pymc_edp.audit(idata, model, random_seed=1)``; ``--anatomy DIR`` writes the graph dump
(:func:`libcommon.anatomy`) plus what BART's op, its PGBART step and the audit's neighbour
model hold (``bart_regression.txt``).

Usage (in the BART venv of ``benchmarks/libraries/README.md``)::

    python benchmarks/libraries/bart.py
    python benchmarks/libraries/bart.py --no-audit --anatomy /tmp/anatomy
"""

from __future__ import annotations

import argparse
import io
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from libcommon import Timer, anatomy, audit_report, stack


def friedman(n: int = 200, seed: int = 39):
    """Friedman's test function with five uniform covariates and unit noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 5))
    f = (
        10 * np.sin(np.pi * X[:, 0] * X[:, 1])
        + 20 * (X[:, 2] - 0.5) ** 2
        + 10 * X[:, 3]
        + 5 * X[:, 4]
    )
    y = f + rng.normal(size=n)
    return X, (y - y.mean()) / y.std()


def bart_regression(X, Y, m: int = 50):
    import pymc as pm
    import pymc_bart as pmb

    with pm.Model() as model:
        mu = pmb.BART("mu", X, Y, m=m)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=Y)
    return model


def bart_anatomy(model) -> str:
    """What BART's op, its PGBART step and the audit's neighbour model hold."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import graph_inputs

    buf = io.StringIO()

    def say(*a):
        print(*a, file=buf)

    mu = model["mu"]
    op = mu.owner.op
    say("## the BART variable 'mu'")
    say(
        f"op: {type(op).__name__} (a class made per BART call, subclass of "
        f"{type(op).__mro__[1].__name__}); signature {op.signature}"
    )
    say(
        f"op class attributes: X {np.shape(op.X)} {type(op.X).__name__}, "
        f"Y {np.shape(op.Y)} {type(op.Y).__name__}, m {op.m}, response {op.response!r}, "
        f"all_trees {type(op.all_trees).__name__}"
    )
    say("rv inputs (rng, size, X, Y, m, alpha, beta):")
    for i, inp in enumerate(mu.owner.inputs):
        kind = (
            "shared"
            if isinstance(inp, SharedVariable)
            else "constant"
            if isinstance(inp, Constant)
            else "graph"
        )
        say(f"    [{i}] {kind} {inp.type} name={inp.name!r}")
    (lp,) = model.logp(vars=[mu], sum=False)
    say(f"logp of mu: {lp} ({lp.owner.op if lp.owner else None}): BART.logp is zeros_like(x)")
    say(f"mu is a free RV: {mu in model.free_RVs}; value var {model.rvs_to_values[mu]}")

    say("\n## the PGBART step (pymc-bart 0.13 / bartrs)")
    from pymc.sampling.mcmc import assign_step_methods

    with model:
        _, selected = assign_step_methods(model, None)
    for step_type, variables in selected.items():
        say(f"pm.sample assigns {step_type.__name__} to {[v.name for v in variables]}")
    import bartrs

    pg = bartrs.PGBART([mu], model=model)
    say(
        f"PGBART: X {pg.X.shape}, Y {pg.Y.shape} (copies of the op's class attributes, read "
        f"once at construction), m {pg.m}"
    )
    cm = pg.compiled_pymc_model
    say("PGBART.compiled_pymc_model.shared (make_shared_replacements: value var -> shared):")
    for k, v in cm.shared.items():
        say(f"    {k.name} -> shared {v.name!r} shape {np.shape(v.get_value())}")
    say("inputs of its compiled model.datalogp (input_storage of the NUMBA function):")
    for item in cm.logp_fn_ptr.maker.fgraph.inputs:
        val = None
        if isinstance(item, SharedVariable):
            val = np.shape(item.get_value())
        say(f"    {type(item).__name__} {item.name!r} {item.type} {val}")
    say(f"persistent copies handed to Rust (logp_args): {[a.shape for a in cm.logp_args]}")

    say("\n## model-level shared variables and constants")
    say(f"pm.Data: {[d.name for d in model.data_vars]}")
    ins = graph_inputs([model.logp()])
    for v in ins:
        if isinstance(v, SharedVariable):
            say(f"    shared {v.name!r} {v.type}")
        elif isinstance(v, Constant) and v.type.ndim > 0:
            say(f"    constant {v.name!r} shape {np.shape(v.data)}")

    say("\n## the audit's neighbour model (pymc_edp.refit.neighbour_model)")
    try:
        from pymc_edp.refit import neighbour_model

        nb = neighbour_model(model)
        nb_data = [(d.name, np.shape(d.get_value())) for d in nb.data_vars]
        say(f"pm.Data of the neighbour model: {nb_data}")
        say(f"potentials: {[p.name for p in nb.potentials]}")
        nb_mu = nb["mu"]
        say(f"cloned BART op is the same class: {type(nb_mu.owner.op) is type(op)}")
        try:
            import nutpie

            compiled = nutpie.compile_pymc_model(nb)
            say(
                "nutpie.compile_pymc_model(neighbour) shared variables it knows: "
                f"{sorted(v.name for v in compiled.shared_var_keys)}"
            )
            try:
                compiled.with_data(edp_alt_y=np.zeros(len(op.Y)))
                say("with_data(edp_alt_y=...) works")
            except Exception as exc:
                say(f"with_data(edp_alt_y=...): {type(exc).__name__}: {exc}")
            say(
                "nutpie samples mu as a free vector with BART's logp = 0 (a flat, improper "
                "prior): a refit through nutpie is not a BART refit whatever the data."
            )
        except Exception as exc:
            say(f"nutpie.compile_pymc_model(neighbour): {type(exc).__name__}: {exc}")
    except Exception as exc:
        say(f"neighbour_model: {type(exc).__name__}: {exc}")
    return buf.getvalue()


def main(argv=None):
    import pymc as pm

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--m", type=int, default=50)
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--draws", type=int, default=300)
    p.add_argument("--tune", type=int, default=300)
    p.add_argument("--seed", type=int, default=39)
    p.add_argument("--anatomy", type=Path, help="write the graph dump into this folder")
    p.add_argument("--no-audit", action="store_true")
    args = p.parse_args(argv)
    print(stack())
    X, Y = friedman(args.n, args.seed)
    print(f"Friedman: n = {args.n}, 5 covariates; BART m = {args.m}")
    model = bart_regression(X, Y, args.m)
    if args.anatomy is not None:
        text = anatomy(model, f"pymc-bart BART regression (Friedman, n = {args.n})")
        text += "\n" + bart_anatomy(model)
        args.anatomy.mkdir(parents=True, exist_ok=True)
        (args.anatomy / "bart_regression.txt").write_text(text)
        print(text)
    if args.no_audit:
        return
    with Timer() as t_fit, model, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
        idata = pm.sample(
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=1,
            random_seed=args.seed,
            progressbar=False,
        )
        pm.compute_log_likelihood(idata, progressbar=False)
    print(f"fit: {t_fit.seconds:.1f} s ({args.chains} x {args.draws}, tune {args.tune})")
    res = audit_report("bart_regression", idata, model)
    head = (
        f"eps {res['epsilon']:.3f} worst {res['worst']}, {res['verification']}"
        if "epsilon" in res
        else res["error"][:300]
    )
    print(
        f"\n===== summary\nbart_regression fit {t_fit.seconds:.1f} s "
        f"audit {res['seconds']:.1f} s  {head}"
    )


if __name__ == "__main__":
    main()

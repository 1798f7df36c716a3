"""The cost of confirming the headline by refits (issue 20), measured in the same run.

``method="auto"`` refits the ``VerifyOptions().top`` neighbours with the largest estimated
epsilons and compares (``edp.Auto(verify=)``). Two cases, each audited with verification
(the default) and without it (``method=edp.Auto(verify=False)``, the baseline), in the same
process after a warm-up (imports, numba; not PyTensor's compilation of the neighbour model,
which is part of what a user pays):

* the demo: ``pymc-edp demo``'s survival model of the 69 heart-transplant patients
  (:func:`pymc_edp.cli.fit_demo_model`, nutpie, 2 x 1,000 draws). The figures are the audit
  alone and the whole demo (fit + audit), as the command runs them;
* a Normal regression of 10,000 records with three coefficients (known sigma, one
  high-leverage outlier), sampled with nutpie (2 x 1,000 draws), its log-likelihood
  streamed from the model.

Wall time is the median of ``--repeats`` audits after the first. The first verified audit
of a model compiles its neighbour model (reported separately as "first"); later audits of
the same model reuse it (issue 33), as a notebook's next audit does.

Run: python benchmarks/bench_verify.py [--repeats 3] [--records 10000]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np


def _stack() -> str:
    import arviz
    import numpy
    import pymc
    import pytensor
    import xarray

    return (
        f"pymc {pymc.__version__}, pytensor {pytensor.__version__}, arviz {arviz.__version__}, "
        f"xarray {xarray.__version__}, numpy {numpy.__version__}"
    )


def regression(n: int, seed: int = 10):
    """A Normal regression of ``n`` records with one high-leverage outlier, and its fit."""
    import pymc as pm

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    x[0] = [12.0, -8.0]
    y = 0.5 + x @ np.array([0.3, -0.2]) + rng.normal(size=n)
    y[0] += 9.0
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b0 = pm.Normal("b0", 0.0, 10.0)
        beta = pm.Normal("beta", 0.0, 10.0, shape=2)
        pm.Normal("y", b0 + xd @ beta, 1.0, observed=y)
        idata = pm.sample(
            1000, chains=2, nuts_sampler="nutpie", random_seed=seed, progressbar=False
        )
    return model, idata


def timed(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def measure(name: str, model, idata, repeats: int, var_names=None, fit_seconds=None) -> dict:
    import pymc_edp as edp

    kw = dict(var_names=var_names, random_seed=1, progressbar=False)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    edp.audit(idata, model, **kw)  # the first, cold verified audit
    cold = time.perf_counter() - start
    t_off, off = timed(
        lambda: edp.audit(idata, model, method=edp.Auto(verify=False), **kw), repeats
    )
    t_on, on = timed(lambda: edp.audit(idata, model, **kw), repeats)
    n_refits = int((on.pointwise["verification"].values > 0).sum())
    row = dict(
        case=name,
        unverified=t_off,
        verified=t_on,
        cold=cold,
        ratio=t_on / t_off,
        refits=n_refits,
        status=on.verification,
        eps_off=off.epsilon,
        eps_on=on.epsilon,
        interval=on.mc_interval90,
    )
    if fit_seconds is not None:
        row["whole_ratio"] = (fit_seconds + t_on) / (fit_seconds + t_off)
        row["fit"] = fit_seconds
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args(argv)
    print("stack:", _stack())

    import pymc_edp as edp
    from pymc_edp.cli import fit_demo_model
    from pymc_edp.datasets import load_eight_schools

    # warm-up: imports, numba, the PyTensor caches of a tiny audit
    edp.audit(load_eight_schools(), var_names="mu", method="psis", progressbar=False)

    start = time.perf_counter()
    model, idata, _ = fit_demo_model(progressbar=False)
    fit = time.perf_counter() - start
    names = [rv.name for rv in model.free_RVs]
    rows = [measure("demo (69 patients)", model, idata, args.repeats, names, fit)]
    model, idata = regression(args.records)
    rows.append(measure(f"regression ({args.records:,} records)", model, idata, args.repeats))

    print()
    print(
        "| case | audit, unverified | audit, verified | ratio | first (cold) verified "
        "audit | refits | verification | epsilon unverified / verified | 90% interval |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---|---|")
    for r in rows:
        lo, hi = r["interval"]
        print(
            f"| {r['case']} | {r['unverified']:.2f} s | {r['verified']:.2f} s | "
            f"{r['ratio']:.1f}x | {r['cold']:.2f} s | {r['refits']} | {r['status']} | "
            f"{r['eps_off']:.3f} / {r['eps_on']:.3f} | [{lo:.3f}, {hi:.3f}] |"
        )
    demo = rows[0]
    print()
    print(
        f"whole demo (fit {demo['fit']:.1f} s + audit): verified / unverified = "
        f"{demo['whole_ratio']:.2f}x (target: about 2x or less)"
    )


if __name__ == "__main__":
    main()

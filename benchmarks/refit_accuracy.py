"""Refit estimators against exact B-EDP: pooled (ours) vs raw counts (Charest & Han).

Normal-Normal (n = 30, sigma^2 = 5, prior N(10, 3)) with neighbour "remove", and the
Beta-Bernoulli Table 2 setting (n = 5, x = 1, Beta(0.5, 0.5)) with neighbour "replace";
4 x 2,500 full-data draws, every neighbour refitted with 2 x 1,000 draws. Both estimators
use the same refit draws (one checkpoint), so the difference is the estimator alone.

Run: python benchmarks/refit_accuracy.py
"""

from __future__ import annotations

import tempfile
import warnings

import numpy as np


def main() -> None:
    import pymc as pm

    import pymc_edp as edp
    from pymc_edp import conjugate

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(30)
    sigma, mu0, sigma0 = np.sqrt(5.0), 10.0, np.sqrt(3.0)
    y = rng.normal(10.0, sigma, 30)
    with pm.Model() as nn:
        mu = pm.Normal("mu", mu0, sigma0)
        pm.Normal("y", mu, sigma, observed=y)
    yb = np.array([1, 0, 0, 0, 0])
    with pm.Model() as bb:
        p = pm.Beta("p", 0.5, 0.5)
        pm.Bernoulli("y", p, observed=yb)

    cases = [
        (
            "Normal-Normal n=30, remove",
            nn,
            "remove",
            lambda b: conjugate.normal_normal_edp(y, sigma, mu0, sigma0, b),
        ),
        (
            "Beta-Bernoulli n=5 x=1, replace",
            bb,
            "replace",
            lambda b: conjugate.beta_binomial_edp(5, 1, 0.5, 0.5, b, neighbour="replace"),
        ),
    ]
    print(f"{'case':34} {'B':>3} {'exact':>7} {'psis':>14} {'pooled':>14} {'raw (C&H)':>14}")
    for name, model, relation, exact_fn in cases:
        with model:
            idata = pm.sample(
                2500,
                tune=1000,
                chains=4,
                cores=2,
                random_seed=11,
                progressbar=False,
                compute_convergence_checks=False,
            )
            pm.compute_log_likelihood(idata, progressbar=False)
        kw = dict(
            neighbour=relation, draws=1000, tune=500, chains=2, random_seed=7, progressbar=False
        )
        with tempfile.TemporaryDirectory() as ckpt:
            for b in (5, 10, 20):
                exact = float(exact_fn(b))
                psis = edp.audit(
                    idata, model, bins=b, method="psis", neighbour=relation, progressbar=False
                ).epsilon
                pooled = edp.audit(
                    idata,
                    model,
                    bins=b,
                    method="refit",
                    **kw,
                    refit=edp.RefitOptions(checkpoint=ckpt),
                ).epsilon
                raw = edp.audit(
                    idata,
                    model,
                    bins=b,
                    method="refit",
                    **kw,
                    refit=edp.RefitOptions(estimator="raw", checkpoint=ckpt),
                ).epsilon

                def cell(v, exact=exact):
                    return f"{v:6.3f} ({100 * (v / exact - 1):+5.1f}%)"

                print(f"{name:34} {b:3d} {exact:7.3f} {cell(psis)} {cell(pooled)} {cell(raw)}")


if __name__ == "__main__":
    main()

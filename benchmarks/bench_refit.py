"""Refit engine vs a loop of fresh ``pm.sample`` calls (issue: exact refits).

A 3-coefficient linear regression with n = 200 records; 200 leave-one-out refits of
2 x 1,000 draws (1,000 tuning steps). Baseline, measured in the same run: a fresh model and
``pm.sample(1000, tune=1000, chains=2, cores=1)`` per neighbour, timed on a few neighbours
and scaled to 200. Reported: total time ratio (compilation included) and marginal cost per
refit. Then the same audit on a ``dask.distributed.LocalCluster`` must give the same result.

The total is the first audit in a fresh process (every one-time cost inside); the marginal
cost per refit is the difference of two warm audits with 20 and 200 refits, divided by 180.

Run: python benchmarks/bench_refit.py [--n-baseline 3] [--no-dask]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


def make_data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    y = x @ np.array([1.0, -0.5, 0.25]) + rng.normal(scale=1.0, size=n)
    return x, y


def build(x, y):
    import pymc as pm

    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 2.0, shape=3)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("y", pm.math.dot(x, beta), sigma, observed=y)
    return model


def main(argv=None) -> None:
    import pymc as pm

    import pymc_edp as edp
    from pymc_edp.refit import engines

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-baseline", type=int, default=3)
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")

    x, y = make_data()
    n = len(y)
    model = build(x, y)
    with model:
        idata = pm.sample(
            1000,
            tune=1000,
            chains=2,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
        pm.compute_log_likelihood(idata, progressbar=False)

    # baseline: fresh model + pm.sample per neighbour
    times = []
    for i in range(args.n_baseline):
        t0 = time.perf_counter()
        keep = np.arange(n) != i
        with build(x[keep], y[keep]):
            pm.sample(
                1000,
                tune=1000,
                chains=2,
                cores=1,
                random_seed=i,
                progressbar=False,
                compute_convergence_checks=False,
            )
        times.append(time.perf_counter() - t0)
    per_fresh = float(np.median(times))
    baseline_total = per_fresh * n

    def run(max_refits=None):
        t0 = time.perf_counter()
        res = edp.audit(
            idata,
            model,
            var_names="beta",
            bins=20,
            method="refit",
            random_seed=3,
            progressbar=False,
            refit=edp.RefitOptions(draws=1000, tune=1000, chains=2, max_refits=max_refits),
        )
        return res, time.perf_counter() - t0

    # ours, cold: the first audit in this process, so every one-time cost is inside it
    # (compiling the neighbour model, numba and PyTensor warm-ups); each audit compiles
    # its own neighbour model
    engines._COMPILED.clear()
    res, ours_total = run()
    # marginal cost per refit: two warm audits of 20 and 200 refits, differenced, so the
    # fixed costs (compilation included) cancel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, t_small = run(max_refits=20)
    _, t_full = run()
    marginal = (t_full - t_small) / (n - 20)
    fixed = t_full - n * marginal
    sampling = float(res.refits.status["seconds"].median())

    print(f"n = {n} neighbours, 2 x 1000 draws (+1000 tune) per refit")
    print(
        f"baseline: fresh pm.sample per refit   {per_fresh:8.3f} s  (median of "
        f"{args.n_baseline}) -> {baseline_total:8.1f} s for {n}"
    )
    print(f"ours: whole audit, cold process       {ours_total:8.1f} s  (compilation included)")
    print(f"ours: fixed cost of a warm audit      {fixed:8.1f} s  (compiles its neighbour model)")
    print(
        f"ours: marginal cost per refit         {marginal:8.3f} s  (sampling alone "
        f"{sampling:.3f} s)"
    )
    print(
        f"ratio total baseline/ours             {baseline_total / ours_total:8.1f}x  "
        "(target >= 10x)"
    )
    print(f"ratio marginal baseline/ours          {per_fresh / marginal:8.1f}x  (target >= 20x)")
    print(f"epsilon = {res.epsilon:.4f}")

    if not args.no_dask:
        from distributed import Client, LocalCluster

        with (
            LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            t0 = time.perf_counter()
            dist = edp.audit(
                idata,
                model,
                var_names="beta",
                bins=20,
                method="refit",
                random_seed=3,
                progressbar=False,
                refit=edp.RefitOptions(draws=1000, tune=1000, chains=2, executor=client),
            )
            dask_s = time.perf_counter() - t0
        same = np.array_equal(dist.pointwise["epsilon"].values, res.pointwise["epsilon"].values)
        print(f"dask LocalCluster (2 workers): {dask_s:.1f} s, identical epsilons: {same}")


if __name__ == "__main__":
    main()

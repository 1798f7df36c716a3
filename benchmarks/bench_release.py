"""Release audit benchmark: ``edp.audit_release`` of 5 synthetic copies against ``edp.audit``.

A release audit does the parameter audit's core work (Pareto-smoothed importance weights of
every neighbour) and then, for synthetic data, the density of every sampled synthetic dataset
under every posterior draw, the per-neighbour privacy loss distributions, their 5-fold FFT
composition, the fine-grid refinement of the pairs that can be the worst and the bootstrap.
The yardstick is ``edp.audit(idata, model, method="psis")`` of the same posterior, measured
in the same run, so the ratio says what auditing the release costs on top of auditing the
parameters.

Data: 1,000 simulated records of a Normal linear regression, ``y_i ~ N(a + b x_i, sigma)``
(``x_i ~ N(0, 1)``, a = 1, b = 0.5, sigma = 1, seed fixed), fitted with PyMC (nutpie when
installed), 4 chains x 1,000 draws. The release: ``k = 5`` synthetic datasets of ``n = 1,000``
records each from the posterior predictive of ``y`` (continuous, so outputs are sampled:
``outputs`` from each mechanism: 200 here, the library default is 1,000; 50 bootstrap
replicates), at ``delta = 1e-6``.

Times are wall-clock (and process CPU) of one call each after a warm-up of both calls on a
200-record model (compilation, numba cache).

Usage::

    python benchmarks/bench_release.py                  # a few minutes on 2 cores
    python benchmarks/bench_release.py --outputs 1000   # the library's default outputs
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

SEED = 20261124


def fit(n_obs: int, draws: int = 1_000, chains: int = 4, seed: int = SEED):
    """The benchmark's model and posterior (with its log-likelihood)."""
    import pymc as pm

    rng = np.random.default_rng(seed)
    x = rng.normal(size=n_obs)
    y = 1.0 + 0.5 * x + rng.normal(size=n_obs)
    try:
        import nutpie  # noqa: F401

        sampler = "nutpie"
    except ImportError:
        sampler = "pymc"
    with pm.Model(coords={"obs": np.arange(n_obs)}) as model:
        xd = pm.Data("x", x, dims="obs")
        a = pm.Normal("a", 0, 5)
        b = pm.Normal("b", 0, 5)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", a + b * xd, sigma, observed=y, dims="obs")
        idata = pm.sample(
            draws,
            tune=1_000,
            chains=chains,
            cores=min(chains, os.cpu_count() or 1),
            random_seed=seed,
            progressbar=False,
            nuts_sampler=sampler,
        )
        pm.compute_log_likelihood(idata, progressbar=False)
    return model, idata, sampler


def timed(fn):
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--obs", type=int, default=1_000)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--outputs", type=int, default=200)
    parser.add_argument("--bootstrap", type=int, default=50)
    args = parser.parse_args()

    import numba
    from stack import stack_versions

    import pymc_edp as edp

    warnings.filterwarnings("ignore")
    print(
        f"== bench_release: {args.obs:,} records, 4 chains x 1,000 draws, k = {args.k} "
        f"synthetic copies of n = {args.obs:,}, delta = {args.delta:g} =="
    )
    print("stack: " + ", ".join(f"{k} {v}" for k, v in stack_versions().items()))
    print(
        f"cores={os.cpu_count()} numba threads={numba.get_num_threads()} "
        f"load avg={os.getloadavg()[0]:.2f}"
    )
    opts = {"n_outputs": args.outputs, "n_bootstrap": args.bootstrap}

    def audit(model, idata):
        return edp.audit(idata, model, method="psis", progressbar=False)

    def release(model, idata):
        return edp.audit_release(
            idata,
            model,
            release="synthetic",
            k=args.k,
            delta=args.delta,
            options=opts,
            random_seed=1,
            progressbar=False,
        )

    t0 = time.perf_counter()
    small_model, small_idata, _ = fit(200, draws=250)
    audit(small_model, small_idata)
    edp.audit_release(
        small_idata,
        small_model,
        release="synthetic",
        k=args.k,
        delta=args.delta,
        options={"n_outputs": 50, "n_bootstrap": 5},
        random_seed=1,
        progressbar=False,
    )
    print(f"warm-up (200 records, compilation, numba cache): {time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    model, idata, sampler = fit(args.obs)
    print(f"fit ({sampler}, 4 x 1,000 draws): {time.perf_counter() - t0:.1f} s")

    t_a, c_a, res_a = timed(lambda: audit(model, idata))
    print(
        f"edp.audit(method='psis')                  {t_a:8.2f} s wall {c_a:8.2f} s cpu   "
        f"(B-EDP epsilon = {res_a.epsilon:.4f})"
    )
    t_r, c_r, res_r = timed(lambda: release(model, idata))
    lo, hi = res_r.interval
    print(
        f"edp.audit_release(synthetic, k={args.k})       {t_r:8.2f} s wall {c_r:8.2f} s cpu   "
        f"(epsilon = {res_r.headline:.4f} at delta {args.delta:g}, {res_r.prob:.0%} interval "
        f"{lo:.4f} to {hi:.4f}{', lower bound' if res_r.lower_bound else ''})"
    )
    comp = res_r.comparison["worst"].to_series()
    print(
        "same pairs, k releases: "
        + ", ".join(f"{lvl} {val:.4f}" for lvl, val in comp.items())
        + f"; one copy {res_r.epsilon(args.delta, k=1):.4f}"
    )
    d = res_r.details
    print(
        f"details: outputs {d.get('outputs')}, contributing {d.get('contributing'):.1f}, "
        f"log-mean bias {d.get('log_mean_bias'):.2e}, discretisation "
        f"{d.get('discretisation'):.2e}, notes {len(res_r.notes)}"
    )
    print(f"ratio audit_release / audit: {t_r / t_a:.2f}")


if __name__ == "__main__":
    main()

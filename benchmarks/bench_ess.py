"""Our vectorised ESS kernel against the stack's own ESS, on the same rows.

``pymc_edp.base.mcse.ess_mean`` computes ``ess(method="mean")`` for every row of a
``(n_rows, S)`` matrix at once (the MCSE of epsilon needs it for thousands of influence
series). The baseline is the stack's estimator on the same data as one Dataset
(``arviz.ess`` on ArviZ 0.23, ``arviz_stats.ess`` on ArviZ 1.x), measured in the same run.

Usage::

    python benchmarks/bench_ess.py            # 2,000 rows x 4 chains x 1,000 draws
    python benchmarks/bench_ess.py --rows 500
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
import xarray as xr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    from stack import stack_versions

    from pymc_edp.base.mcse import ess_mean
    from pymc_edp.model.compat import ARVIZ_1, ess

    name = "arviz_stats.ess" if ARVIZ_1 else "arviz.ess"
    print("stack: " + ", ".join(f"{k} {v}" for k, v in stack_versions().items()))
    rng = np.random.default_rng(1)
    n, c, d = args.rows, args.chains, args.draws
    # AR(1) rows with a spread of autocorrelations, chain-major samples
    rho = rng.uniform(0.0, 0.9, size=(n, 1, 1))
    eps = rng.normal(size=(n, c, d))
    x = np.empty_like(eps)
    x[..., 0] = eps[..., 0]
    for t in range(1, d):
        x[..., t] = rho[..., 0] * x[..., t - 1] + eps[..., t]
    flat = x.reshape(n, c * d)
    ds = xr.Dataset({"x": (("row", "chain", "draw"), x)})
    ess_mean(flat[:4], c)  # numba compile or cache load
    ess(ds.isel(row=slice(0, 4)))

    def timed(fn):
        times, out = [], None
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times), out

    t_ours, ours = timed(lambda: ess_mean(flat, c))
    t_ref, ref = timed(lambda: ess(ds)["x"].values)
    print(f"== bench_ess: {n:,} rows x {c} chains x {d:,} draws, median of {args.repeats} ==")
    print(f"max relative difference: {np.max(np.abs(ours - ref) / ref):.1e}")
    print(f"{'pymc_edp ess_mean':30s} {t_ours:8.3f} s")
    print(f"{name:30s} {t_ref:8.3f} s")
    print(f"ratio ours / {name}: {t_ours / t_ref:.3f}")


if __name__ == "__main__":
    main()

"""A million records: streamed, pruned, lazy (zarr) and dask audits against the full audit.

Model: Normal regression with five coefficients (an intercept and four standard-normal
covariates; 0.1% of the records have an outlying covariate pattern, x1 = 6) and an unknown
sigma, simulated with a fixed seed. Posterior: 4 chains x 1,000 i.i.d. draws from the exact
posterior under a flat prior (Normal-inverse-gamma; the model's N(0, 10^2) and
HalfNormal(10) priors make no visible difference at n >= 1e5). Sampling a million records
with NUTS is what a user would do, but it is slow here, and the audit's cost does not
depend on how the draws were made.

Cases (each in a fresh subprocess; wall time includes computing or reading the
log-likelihood, not building the posterior):

- ``full``: the full in-memory audit as before issue 13 (the named baseline):
  ``pm.compute_log_likelihood`` (n x S float64 in memory) then
  ``audit(chunks={"prune": False})``;
  n = 1e5 only (1e6 would need 32 GB).
- ``streamed``: ``audit(model=..., chunks={"log_likelihood": "model", "prune": False})``.
- ``pruned``: the same with ``"prune": True``.
- ``zarr``: the log-likelihood stored as float32 in a zarr store (written beforehand, not
  timed), opened lazily with dask chunks and audited with ``chunks={"prune": True}``.
- ``dask``: ``pruned`` on a 2-worker ``dask.distributed.LocalCluster`` (one thread each),
  started and warmed up (a small audit) before the clock starts, as a user's cluster is.

Peak RSS is the largest resident size of the process and its children (the dask workers),
sampled every 20 ms. Time per record-draw is wall time / (n x S). The ratio column is the
time per record-draw of the full in-memory audit at n = 1e5 measured in the same run,
divided by the case's (so 5 means five times faster per record).

Usage::

    python benchmarks/bench_scale.py                    # n = 1e5 and 1e6, ~15 minutes
    python benchmarks/bench_scale.py --sizes 20000      # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing", category=FutureWarning)

SEED = 20261123
N_COEF = 5
CASES = ("full", "streamed", "pruned", "zarr", "dask")


def simulate(n: int, seed: int = SEED):
    """Covariates and outcomes of the Normal regression."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(n), rng.normal(size=(n, N_COEF - 1))])
    outlying = rng.choice(n, size=max(1, n // 1000), replace=False)
    x[outlying, 1] = 6.0
    beta = np.array([-0.5, 0.8, -0.4, 0.3, 0.2])
    y = x @ beta + rng.normal(size=n)
    return x, y


def posterior_draws(x, y, n_chains=4, n_draws=1000, seed=SEED):
    """Exact i.i.d. draws of (beta, sigma) under the flat prior (Normal-inverse-gamma)."""
    n, p = x.shape
    xtx_inv = np.linalg.inv(x.T @ x)
    beta_hat = xtx_inv @ (x.T @ y)
    ssr = float(np.sum((y - x @ beta_hat) ** 2))
    rng = np.random.default_rng(seed + 1)
    sigma2 = ssr / rng.chisquare(n - p, size=(n_chains, n_draws))
    z = rng.standard_normal((n_chains, n_draws, p)) @ np.linalg.cholesky(xtx_inv).T
    beta = beta_hat + np.sqrt(sigma2)[..., None] * z
    return beta, np.sqrt(sigma2)


def build(n: int, n_draws: int):
    """The model and the posterior container (no log_likelihood group)."""
    import pymc as pm

    from pymc_edp.model.compat import from_dict

    x, y = simulate(n)
    beta, sigma = posterior_draws(x, y, n_draws=n_draws // 4)
    with pm.Model(coords={"obs": np.arange(n), "coef": np.arange(N_COEF)}) as model:
        xd = pm.Data("x", x, dims=("obs", "coef"))
        b = pm.Normal("beta", 0.0, 10.0, dims="coef")
        s = pm.HalfNormal("sigma", 10.0)
        pm.Normal("y", xd @ b, s, observed=y, dims="obs")
    idata = from_dict(
        {"posterior": {"beta": beta, "sigma": sigma}, "observed_data": {"y": y}},
        coords={"obs": np.arange(n), "coef": np.arange(N_COEF)},
        dims={"beta": ["coef"], "y": ["obs"]},
    )
    return model, idata


def write_zarr(n: int, n_draws: int, path: str, chunk: int = 4_000) -> None:
    """The float32 log-likelihood as a zarr store, computed and written chunk by chunk."""
    import xarray as xr
    import zarr  # noqa: F401  (xarray's backend)

    from pymc_edp.model.stream import model_log_likelihood

    model, idata = build(n, n_draws)
    ll = model_log_likelihood(model, idata, ["y"])
    cols = ll.arrays[0]
    n_chains = 4
    template = xr.Dataset(
        {
            "y": (
                ("chain", "draw", "obs"),
                __import__("dask.array").array.zeros(
                    (n_chains, n_draws // n_chains, n), chunks=(-1, -1, chunk), dtype=np.float32
                ),
            )
        },
        coords={
            "chain": np.arange(n_chains),
            "draw": np.arange(n_draws // n_chains),
            "obs": np.arange(n),
        },
    )
    template.to_zarr(path, compute=False, mode="w", consolidated=False)
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        block = cols[:, lo:hi].astype(np.float32).reshape(n_chains, n_draws // n_chains, -1)
        ds = xr.Dataset({"y": (("chain", "draw", "obs"), block)})
        ds.to_zarr(path, region={"obs": slice(lo, hi)}, consolidated=False)


class PeakRSS:
    """Largest resident size of this process and its children, sampled in a thread."""

    def __init__(self, interval: float = 0.02):
        import psutil

        self.proc = psutil.Process()
        self.peak = 0
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _rss(self) -> int:
        total = self.proc.memory_info().rss
        for child in self.proc.children(recursive=True):
            try:
                total += child.memory_info().rss
            except Exception:  # a worker that just exited
                pass
        return total

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss())
            time.sleep(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())


def run_case(case: str, n: int, n_draws: int, zarr_path: str | None) -> dict:
    """One case in this process; returns its figures."""
    from stack import set_group

    import pymc_edp as edp
    from pymc_edp.model.compat import compute_log_likelihood

    model, idata = build(n, n_draws)
    # warm-up: numba and PyTensor compilation caches, imports
    m_small, i_small = build(2000, n_draws)
    edp.audit(i_small, m_small, bins=20, method="psis", progressbar=False, chunks={"prune": True})
    kw = dict(bins=20, method="psis", progressbar=False)
    client = cluster = None
    if case == "dask":  # a running cluster, as a user has one (start-up not timed)
        from distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
        edp.audit(
            i_small,
            m_small,
            chunks={"executor": client, "log_likelihood": "model", "prune": True},
            **kw,
        )
    with PeakRSS() as rss:
        t0 = time.perf_counter()
        if case == "full":
            ll = compute_log_likelihood(idata, model, progressbar=False)
            set_group(idata, "log_likelihood", ll)
            t_ll = time.perf_counter() - t0
            res = edp.audit(idata, chunks={"log_likelihood": "group", "prune": False}, **kw)
        elif case in ("streamed", "pruned"):
            chunks = {"log_likelihood": "model", "prune": case == "pruned"}
            res = edp.audit(idata, model, chunks=chunks, **kw)
        elif case == "zarr":
            import xarray as xr

            lazy = xr.open_zarr(zarr_path, consolidated=False)
            set_group(idata, "log_likelihood", lazy)
            res = edp.audit(idata, chunks={"log_likelihood": "group", "prune": True}, **kw)
        elif case == "dask":
            res = edp.audit(
                idata,
                model,
                chunks={"executor": client, "log_likelihood": "model", "prune": True},
                **kw,
            )
        else:
            raise ValueError(case)
        wall = time.perf_counter() - t0
    if client is not None:
        client.close()
        cluster.close()
    method = res.pointwise["method"].values.astype(str)
    return {
        "case": case,
        "n": n,
        "draws": n_draws,
        "wall_s": wall,
        "loglik_s": t_ll if case == "full" else None,
        "peak_rss_gb": rss.peak / 1e9,
        "ns_per_record_draw": 1e9 * wall / (n * n_draws),
        "pruned_frac": float(np.mean(method == "pruned")),
        "epsilon": res.epsilon,
        "worst": str(res.worst_neighbour),
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e5, 1e6])
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--cases", nargs="+", default=list(CASES))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--zarr", help=argparse.SUPPRESS)
    ap.add_argument("--write-zarr", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.write_zarr:
        write_zarr(int(args.sizes[0]), args.draws, args.zarr)
        return
    if args.child:
        out = run_case(args.child, int(args.sizes[0]), args.draws, args.zarr)
        print("RESULT " + json.dumps(out))
        return
    rows = []
    tmp = tempfile.mkdtemp(prefix="edp_scale_")
    try:
        for n in (int(s) for s in args.sizes):
            for case in args.cases:
                if case == "full" and n > 200_000:
                    continue  # n x S float64 would not fit in memory
                zpath = os.path.join(tmp, f"ll_{n}.zarr")
                if case == "zarr" and not os.path.exists(zpath):
                    t0 = time.perf_counter()
                    _child(
                        [
                            "--write-zarr",
                            "--sizes",
                            str(n),
                            "--draws",
                            str(args.draws),
                            "--zarr",
                            zpath,
                        ],
                        expect=False,
                    )
                    print(
                        f"(zarr store for n={n} written in {time.perf_counter() - t0:.0f} s)",
                        flush=True,
                    )
                out = _child(
                    [
                        "--child",
                        case,
                        "--sizes",
                        str(n),
                        "--draws",
                        str(args.draws),
                        "--zarr",
                        zpath,
                    ]
                )
                rows.append(out)
                print(json.dumps(out), flush=True)
            shutil.rmtree(os.path.join(tmp, f"ll_{n}.zarr"), ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _report(rows)


def _child(args, expect=True):
    cmd = [sys.executable, os.path.abspath(__file__), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"child failed: {' '.join(args)}")
    if not expect:
        return None
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


def _report(rows) -> None:
    base = [r for r in rows if r["case"] == "full"]
    ref = base[0]["ns_per_record_draw"] if base else None
    print()
    print(
        f"{'n':>9} {'case':>9} {'wall s':>8} {'peak RSS GB':>12} {'ns/rec-draw':>12} "
        f"{'pruned':>7} {'epsilon':>8} {'vs full':>8}"
    )
    for r in rows:
        ratio = f"{ref / r['ns_per_record_draw']:.1f}x" if ref else "-"
        print(
            f"{r['n']:>9} {r['case']:>9} {r['wall_s']:>8.1f} {r['peak_rss_gb']:>12.2f} "
            f"{r['ns_per_record_draw']:>12.2f} {100 * r['pruned_frac']:>6.1f}% "
            f"{r['epsilon']:>8.4f} {ratio:>8}"
        )
    if base and base[0]["loglik_s"] is not None:
        b = base[0]
        print(
            f"\nfull at n={b['n']}: pm.compute_log_likelihood {b['loglik_s']:.1f} s of "
            f"{b['wall_s']:.1f} s"
        )
    # float64 cases must agree exactly (to rounding of the log-likelihood); the zarr store
    # holds float32, which moves epsilon in about the 6th digit
    for n in sorted({r["n"] for r in rows}):
        f64 = [r["epsilon"] for r in rows if r["n"] == n and r["case"] != "zarr"]
        f32 = [r["epsilon"] for r in rows if r["n"] == n and r["case"] == "zarr"]
        spread = max(f64) - min(f64) if f64 else float("nan")
        line = f"n={n}: float64 cases' epsilons differ by at most {spread:.2e}"
        if f32 and f64:
            line += f"; float32 zarr differs by {abs(f32[0] - f64[0]):.2e}"
        print(line)


if __name__ == "__main__":
    main()

"""Headline benchmark: a PSIS EDP audit against ArviZ's PSIS-LOO on the same posterior.

Both do the same core work, Pareto-smoothed importance weights for every record from the
``log_likelihood`` group, so the stack's own PSIS-LOO (``az.loo`` on ArviZ 0.23,
``arviz_stats.loo`` on ArviZ 1.x, both measured in the same run) is the natural yardstick for
``edp.audit``
(targets: audit/loo time <= 0.5, audit peak extra memory < 3x the log-likelihood array).

Data: the stack's container (InferenceData / DataTree) from ArviZ's ``from_dict``:
posterior ``mu`` with 4 chains x 1,000 draws from N(0.1, 0.01) (the posterior sd of a
Normal mean from 10,000 unit-variance records), and the log-likelihood ``y`` of 10,000
fixed simulated records y_i ~ N(0.1, 1) under N(mu, 1), dims ("chain", "draw", "obs"):
4 x 1,000 x 10,000 float64 = 305 MiB.

Times are medians of 3 after a warm-up on a small InferenceData (numba compilation or
cache load, imports). Peak extra memory is measured in a fresh subprocess per method: the
process's peak-RSS counter is reset (``/proc/self/clear_refs``) just before the call and the
peak resident size during it (``VmHWM``) minus the resident size before it is reported,
relative to the log-likelihood array's size (``ru_maxrss`` fallback without clear_refs).

Usage::

    python benchmarks/bench_audit_vs_loo.py              # ~2 minutes on 2 cores
    python benchmarks/bench_audit_vs_loo.py --obs 2000   # quicker
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing", category=FutureWarning)

SEED = 20261121


def make_idata(n_obs: int = 10_000, n_chains: int = 4, n_draws: int = 1_000, seed: int = SEED):
    """The benchmark's InferenceData; the log-likelihood is built without temporaries."""
    from pymc_edp.model.compat import from_dict

    rng = np.random.default_rng(seed)
    y = rng.normal(0.1, 1.0, size=n_obs)
    mu = rng.normal(0.1, 0.01, size=(n_chains, n_draws))
    ll = np.empty((n_chains, n_draws, n_obs))
    np.subtract(y, mu[..., None], out=ll)
    np.square(ll, out=ll)
    ll *= -0.5
    ll -= 0.5 * math.log(2 * math.pi)
    return from_dict(
        {"posterior": {"mu": mu}, "log_likelihood": {"y": ll}, "observed_data": {"y": y}},
        dims={"y": ["obs"]},
    )


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        return int(re.search(rf"^{field}:\s+(\d+) kB", fh.read(), re.M).group(1))


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def _audit_kwargs(store_weights: bool | None) -> dict:
    kwargs = {"method": "psis", "bins": 20, "progressbar": False}
    if store_weights is not None:
        kwargs["chunks"] = {"store_weights": store_weights}
    return kwargs


def _run(method: str, idata):
    warnings.simplefilter("ignore")
    if method == "loo":
        from pymc_edp.model.compat import stack_loo

        return stack_loo(idata)
    import pymc_edp as edp

    store = {"audit": None, "audit-nostore": False}[method]
    return edp.audit(idata, **_audit_kwargs(store))


def memory_child(method: str, n_obs: int) -> None:
    """Subprocess body: print the peak extra memory of one call as JSON."""
    _run(method, make_idata(n_obs=200, n_draws=250))  # warm-up
    idata = make_idata(n_obs=n_obs)
    ll_bytes = idata["log_likelihood"]["y"].nbytes
    rss_before = _status_kib("VmRSS")
    reset = _reset_peak()
    _run(method, idata)
    if reset:
        peak, how = _status_kib("VmHWM"), "VmHWM after clear_refs"
    else:
        peak, how = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "ru_maxrss"
    print(json.dumps({"extra": (peak - rss_before) * 1024, "ll": ll_bytes, "how": how}))


def measure_memory(method: str, n_obs: int) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--memory-child", method]
    cmd += ["--obs", str(n_obs)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def median_time(fn, repeats: int) -> tuple[float, float, object]:
    """Median wall-clock, median process CPU time (all threads) and the last result."""
    wall, cpu, out = [], [], None
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--obs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, args.obs)
        return

    import numba
    from stack import stack_versions

    from pymc_edp.model.compat import ARVIZ_1, stack_loo

    loo_name = "arviz_stats.loo" if ARVIZ_1 else "az.loo"

    print(f"== bench_audit_vs_loo: 4 chains x 1,000 draws, {args.obs:,} records ==")
    try:
        import pymc_edp as edp

        audit = edp.audit
    except (ImportError, AttributeError) as err:
        audit = None
        print(f"pymc_edp.audit is not importable ({err}): timing {loo_name} only")
    print("stack: " + ", ".join(f"{k} {v}" for k, v in stack_versions().items()))
    print(
        f"cores={os.cpu_count()} numba threads={numba.get_num_threads()} "
        f"load avg={os.getloadavg()[0]:.2f}"
    )
    small = make_idata(n_obs=200, n_draws=250)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stack_loo(small)
        if audit is not None:
            audit(small, **_audit_kwargs(None))
    print(f"warm-up (imports, numba compile or cache load): {time.perf_counter() - t0:.2f} s")

    idata = make_idata(n_obs=args.obs)
    ll_bytes = idata["log_likelihood"]["y"].nbytes
    print(f"log-likelihood: {ll_bytes / 2**20:.0f} MiB float64")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_loo, c_loo, loo = median_time(lambda: stack_loo(idata), args.repeats)
        elpd = getattr(loo, "elpd_loo", getattr(loo, "elpd", float("nan")))
        print(
            f"{loo_name + '(pointwise=True)':31s} {t_loo:8.3f} s wall {c_loo:8.3f} s cpu   "
            f"(elpd_loo = {float(elpd):.1f})"
        )
        methods = ["loo"]
        if audit is not None:
            t_audit, c_audit, res = median_time(
                lambda: audit(idata, **_audit_kwargs(None)), args.repeats
            )
            print(
                f"edp.audit(method='psis', B=20)  {t_audit:8.3f} s wall {c_audit:8.3f} s cpu   "
                f"(epsilon = {res.epsilon:.4f})"
            )
            print(f"ratio audit / loo: {t_audit / t_loo:.3f}   (target <= 0.5)")
            methods.append("audit")
            if "store_weights" in inspect.signature(audit).parameters:
                methods.append("audit-nostore")
    if args.no_memory:
        return
    print("peak extra resident memory during one call (fresh subprocess each):")
    for method in methods:
        mem = measure_memory(method, args.obs)
        label = {
            "loo": loo_name,
            "audit": "edp.audit",
            "audit-nostore": "edp.audit(chunks={'store_weights': False})",
        }[method]
        target = "   (target < 3x)" if method == "audit" else ""
        print(
            f"  {label:31s} {mem['extra'] / 2**20:7.0f} MiB = {mem['extra'] / mem['ll']:.2f} x "
            f"log-likelihood [{mem['how']}]{target}"
        )


if __name__ == "__main__":
    main()

"""Benchmark the compiled PSIS kernel against ArviZ's reference implementation.

Times ``pymc_edp.base.psis.psislw`` (with a fresh output array and in place) and
``arviz.psislw`` on the same ``n x S`` matrix of synthetic log weights (default
10,000 x 4,000), reports the ratio, the agreement of the two results, the cost of a plain
Python loop of ``arviz.psislw`` over rows, and the peak extra resident memory of each call
relative to the input array.

Peak memory is measured in a fresh subprocess per method: after the input is built and the
kernel warmed up, the process's peak-RSS counter is reset (``echo 5 > /proc/self/clear_refs``,
Linux >= 4.0) and the peak resident set size (``VmHWM``) reached during the call, minus the
resident size (``VmRSS``) just before it, is the extra memory. This sees every allocation
(NumPy, numba, ArviZ) actually touched, unlike ``tracemalloc``. Without ``clear_refs`` the
script falls back to ``resource.getrusage(...).ru_maxrss`` after the call (valid because the
call sets a new peak) and says so.

Usage::

    python benchmarks/bench_psis.py                 # the full benchmark (~1 minute)
    python benchmarks/bench_psis.py --rows 1000     # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

from pymc_edp.base.psis import PSIS_TAIL_RULE

warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing", category=FutureWarning)

SEED = 20261121


def make_log_weights(n_rows: int, n_samples: int, seed: int = SEED) -> np.ndarray:
    """Row i is ``sd_i * z`` with ``sd_i`` log-uniform on [0.05, 4]: k-hat from ~0 to ~2.

    Built in place (no temporary of the full size), so the input is the only large array.
    """
    rng = np.random.default_rng(seed)
    x = np.empty((n_rows, n_samples))
    rng.standard_normal(out=x)
    x *= np.exp(rng.uniform(np.log(0.05), np.log(4.0), size=(n_rows, 1)))
    return x


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


def _run(method: str, x: np.ndarray):
    if method == "ours":
        from pymc_edp.base.psis import psislw

        return psislw(x, tail_rule=PSIS_TAIL_RULE)
    if method == "ours-inplace":
        from pymc_edp.base.psis import psislw

        return psislw(x, out=x, tail_rule=PSIS_TAIL_RULE)
    from stack import stack_psislw

    with np.errstate(all="ignore"):
        return stack_psislw(x)


def memory_child(method: str, n_rows: int, n_samples: int) -> None:
    """Subprocess body: print the peak extra memory of one call as JSON."""
    _run(method, make_log_weights(4, 200))  # warm-up: numba compile / cache load
    x = make_log_weights(n_rows, n_samples)
    rss_before = _status_kib("VmRSS")
    reset = _reset_peak()
    _run(method, x)
    if reset:
        peak, how = _status_kib("VmHWM"), "VmHWM after clear_refs"
    else:
        peak, how = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "ru_maxrss"
    print(json.dumps({"extra": (peak - rss_before) * 1024, "input": x.nbytes, "how": how}))


def measure_memory(method: str, n_rows: int, n_samples: int) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--memory-child", method]
    cmd += ["--rows", str(n_rows), "--samples", str(n_samples)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def median_time(fn, repeats: int, setup=None) -> tuple[float, float]:
    """Median wall-clock and median process CPU time (all threads) of ``repeats`` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        if setup is not None:
            setup()
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=4_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--loop-rows", type=int, default=1_000, help="rows for the loop timing")
    parser.add_argument("--threads", type=int, default=None, help="numba threads")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, args.rows, args.samples)
        return

    import numba
    from stack import stack_psislw, stack_versions

    from pymc_edp.base.psis import psislw as _psislw
    from pymc_edp.model.compat import ARVIZ_1

    def psislw(x, **kw):
        return _psislw(x, tail_rule=PSIS_TAIL_RULE, **kw)

    ref_name = "arviz_stats psislw" if ARVIZ_1 else "arviz.psislw"
    print("stack: " + ", ".join(f"{k} {v}" for k, v in stack_versions().items()))

    if args.threads:
        numba.set_num_threads(args.threads)
    n, s = args.rows, args.samples
    print(f"== bench_psis: {n:,} rows x {s:,} samples, {args.repeats} repeats (median) ==")
    t0 = time.perf_counter()
    psislw(make_log_weights(4, 200))
    print(f"numba warm-up (compile or cache load): {time.perf_counter() - t0:.2f} s")
    print(
        f"cores={os.cpu_count()} numba threads={numba.get_num_threads()} "
        f"layer={numba.threading_layer()} load avg={os.getloadavg()[0]:.2f}"
    )

    x = make_log_weights(n, s)
    print(f"input: {x.nbytes / 2**20:.0f} MiB float64")
    # Touch (and free) three inputs' worth of memory first: in a VM the very first touch of
    # guest memory is several times slower than later page faults, which would otherwise
    # penalise whichever method allocates first.
    np.ones(3 * x.size).sum()

    result = {}
    t_ours = median_time(
        lambda: result.__setitem__("ours", psislw(x)),
        args.repeats,
        setup=lambda: result.pop("ours", None),
    )
    scratch = {"buf": np.empty_like(x)}
    t_inplace = median_time(
        lambda: psislw(scratch["buf"], out=scratch["buf"]),
        args.repeats,
        setup=lambda: np.copyto(scratch["buf"], x),
    )
    scratch.clear()
    with np.errstate(all="ignore"):
        t_az = median_time(
            lambda: result.__setitem__("az", stack_psislw(x)),
            args.repeats,
            setup=lambda: result.pop("az", None),
        )
        n_loop = min(args.loop_rows, n)
        c0, t0 = time.process_time(), time.perf_counter()
        for row in x[:n_loop]:
            stack_psislw(row)
        t_loop = ((time.perf_counter() - t0) * n / n_loop, (time.process_time() - c0) * n / n_loop)

    (lw, k), (lw_az, k_az) = result["ours"], result["az"]
    fin = np.isfinite(lw_az)
    kf = np.isfinite(k_az)
    same_pattern = np.array_equal(fin, np.isfinite(lw)) and np.array_equal(kf, np.isfinite(k))
    print(
        f"agreement with {ref_name}: max |lw diff| = {np.max(np.abs(lw - lw_az)[fin]):.1e}, "
        f"max |k diff| = {np.max(np.abs(k - k_az)[kf]):.1e}, same inf/nan: {same_pattern}; "
        f"k-hat > 0.7 in {np.mean(k > 0.7):.0%} of rows"
    )
    result.clear()
    del lw, lw_az
    print(f"{'method':44s} {'wall [s]':>9s} {'vs arviz':>9s} {'cpu [s]':>9s}")
    rows = [
        ("pymc_edp psislw (new output)", t_ours),
        ("pymc_edp psislw (in place, out=input)", t_inplace),
        (ref_name, t_az),
        (f"python loop of {ref_name} per row (x{n / n_loop:g})", t_loop),
    ]
    for name, (wall, cpu) in rows:
        print(f"{name:44s} {wall:9.3f} {wall / t_az[0]:9.3f} {cpu:9.3f}")
    print(
        f"wall-clock speed-up over {ref_name}: {t_az[0] / t_ours[0]:.1f}x "
        f"(in place {t_az[0] / t_inplace[0]:.1f}x)"
    )

    if not args.no_memory:
        print("peak extra resident memory during one call (fresh subprocess each):")
        for method in ("ours", "ours-inplace", "arviz"):
            mem = measure_memory(method, n, s)
            print(
                f"  {method:13s} {mem['extra'] / 2**20:8.0f} MiB = "
                f"{mem['extra'] / mem['input']:.2f} x input  [{mem['how']}]"
            )


if __name__ == "__main__":
    main()

"""The audit's time against an earlier revision of the package, in the same run.

A restructure must not slow the audit down. This runs the headline audit of
``bench_audit_vs_loo.py`` (a PSIS audit, ``B = 20``, of 4 chains x 1,000 draws and 10,000
records) with the package of a base revision and with the working tree, in alternation, each
in a fresh interpreter that imports only that tree (``PYTHONPATH``), so that both see the same
machine load. Each interpreter warms up (imports, numba compilation or cache load) on a small
posterior first, then times ``--repeats`` audits (after a garbage collection each); the report
is the median over all rounds and the ratio working tree / base (target <= 1.10). Single
audits vary by +-20% on a loaded 2-core machine, so use at least 4 rounds.

The base revision's package is exported with ``git archive`` into a temporary folder; numba
caches its kernels per source path, so the two trees never share compiled code.

Usage::

    python benchmarks/bench_revisions.py                    # against e4b4e6c (before issue 22)
    python benchmarks/bench_revisions.py --base HEAD~3 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

#: The last revision before the restructure of issue 22.
DEFAULT_BASE = "e4b4e6c"

CHILD = r"""
import gc, json, sys, time, warnings
sys.path.insert(0, {bench!r})
from bench_audit_vs_loo import make_idata
import pymc_edp as edp

warnings.simplefilter("ignore")
assert edp.__file__.startswith({tree!r}), edp.__file__
kwargs = dict(method="psis", bins=20, progressbar=False)
edp.audit(make_idata(n_obs=200, n_draws=250), **kwargs)
idata = make_idata(n_obs={obs})
times = []
for _ in range({repeats}):
    gc.collect()
    t0 = time.perf_counter()
    res = edp.audit(idata, **kwargs)
    times.append(time.perf_counter() - t0)
print(json.dumps({{"times": times, "epsilon": res.epsilon}}))
"""


def export(rev: str, dest: Path) -> Path:
    """Write the ``pymc_edp`` folder of ``rev`` into ``dest``; return ``dest``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", rev, "pymc_edp"],
        check=True,
        capture_output=True,
    ).stdout
    tar_path = dest / "src.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(dest, filter="data")
    return dest


def run_in_tree(code: str, tree: Path) -> subprocess.CompletedProcess:
    """``python -c code`` in a fresh interpreter that imports ``pymc_edp`` from ``tree``."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree)},
        check=False,
        cwd=tempfile.gettempdir(),  # not the repository: only PYTHONPATH names a package
    )


def time_tree(tree: Path, obs: int, repeats: int) -> dict:
    """Audit times with the package in ``tree``, in a fresh interpreter."""
    code = CHILD.format(bench=str(HERE), tree=str(tree), obs=obs, repeats=repeats)
    res = run_in_tree(code, tree)
    res.check_returncode()
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=DEFAULT_BASE, help="git revision to compare with")
    parser.add_argument("--obs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {args.base: export(args.base, Path(tmp)), "working tree": REPO}
        times: dict[str, list[float]] = {name: [] for name in trees}
        eps = {}
        for r in range(args.rounds):
            for name, tree in trees.items() if r % 2 == 0 else reversed(trees.items()):
                res = time_tree(tree, args.obs, args.repeats)
                times[name] += res["times"]
                eps[name] = res["epsilon"]
    print(f"== bench_revisions: edp.audit(method='psis', B=20), {args.obs:,} records ==")
    med = {name: statistics.median(t) for name, t in times.items()}
    for name in trees:
        print(
            f"{name:14s} median {med[name]:7.3f} s over {len(times[name])} audits "
            f"(min {min(times[name]):.3f} s)   epsilon = {eps[name]:.6f}"
        )
    ratio = med["working tree"] / med[args.base]
    print(f"ratio working tree / {args.base}: {ratio:.3f}   (target <= 1.10)")
    same = eps["working tree"] == eps[args.base]
    print(f"same epsilon: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

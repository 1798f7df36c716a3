"""Run every ``bench_*.py`` in this folder, one after the other, and print their output.

Usage::

    python benchmarks/run_all.py              # all benchmarks with their default sizes
    python benchmarks/run_all.py psis         # only those whose name contains "psis"

Each benchmark runs in its own interpreter (so one's memory and threads do not disturb the
next). The exit status is non-zero if any benchmark failed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    if argv:
        scripts = [p for p in scripts if any(word in p.stem for word in argv)]
    failed = []
    for script in scripts:
        print(f"\n### {script.name}", flush=True)
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, str(script)], check=False)
        print(f"### {script.name}: exit {res.returncode} in {time.perf_counter() - t0:.0f} s")
        if res.returncode:
            failed.append(script.name)
    if failed:
        print(f"\nFAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

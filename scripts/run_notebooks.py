"""Execute the notebooks top to bottom, outside Sphinx, and report how long each took.

Usage::

    python scripts/run_notebooks.py                      # every notebooks/*.ipynb
    python scripts/run_notebooks.py notebooks/01_quickstart.ipynb --out /tmp/executed

Exits non-zero when any cell raises or a notebook exceeds ``--budget`` seconds. The docs
build (``scripts/build_docs.sh``) executes the same notebooks itself; this script is for
quick iteration and for timing them one by one.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    """Execute the notebooks; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, help="write executed copies to this folder")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    parser.add_argument("--budget", type=float, default=180.0, help="seconds per notebook")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb"))
    os.environ.setdefault("MPLBACKEND", "Agg")
    failed = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(
            nb,
            timeout=args.timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        )
        start = time.perf_counter()
        try:
            client.execute()
            status = "ok"
        except Exception as err:
            status = f"FAILED: {type(err).__name__}: {str(err).strip().splitlines()[-1]}"
        elapsed = time.perf_counter() - start
        if status == "ok" and elapsed > args.budget:
            status = f"TOO SLOW (budget {args.budget:.0f} s)"
        print(f"{path.name:40s} {elapsed:7.1f} s  {status}", flush=True)
        if status != "ok":
            failed.append(path.name)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, args.out / path.name)
    if failed:
        print(f"{len(failed)} notebook(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

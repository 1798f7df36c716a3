"""The zoo of gallery-style models (``tests/zoo.py``, issue 31): fit, audit and time each.

One command runs ``tests/test_zoo.py`` (every zoo model fitted with ``pm.sample``, 2 x 500
draws after 500 tuning steps, and audited with the default ``edp.audit(idata, model,
random_seed=1)``: method ``"auto"``, verification on) under pytest in this Python, with
``ZOO_TABLE`` set so that each test records its row, and prints the table: model, test
outcome, fit wall time, audit wall time, epsilon, worst record, verification outcome and how
many neighbours each method served (or the exception, for a model that does not audit).

Run: python benchmarks/zoo_table.py [-k EXPR] [--markdown] [--rows FILE]

``--rows FILE`` prints the table of an earlier run's rows without running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from stack import stack_versions

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("model", "test", "fit s", "audit s", "epsilon", "worst", "verification", "methods")


def _outcomes(junit: Path) -> dict[str, str]:
    """Test outcome by test name (with its parameter), from pytest's JUnit XML."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        key = case.get("name", "")
        tags = {child.tag for child in case}
        if "skipped" in tags:
            msg = next(c for c in case if c.tag == "skipped").get("type", "")
            out[key] = "xfail" if "xfail" in msg else "skipped"
        elif "failure" in tags or "error" in tags:
            out[key] = "FAILED"
        else:
            out[key] = "passed"
    return out


def run(rows: Path, junit: Path, keyword: str | None) -> None:
    """Run the zoo tests in a subprocess, rows appended to ``rows``."""
    cmd = [sys.executable, "-m", "pytest", "tests/test_zoo.py", "-q", "-p", "no:cacheprovider"]
    cmd += [f"--junitxml={junit}"] + (["-k", keyword] if keyword else [])
    env = dict(os.environ, ZOO_TABLE=str(rows))
    subprocess.run(cmd, cwd=ROOT, env=env, check=False, stdout=sys.stderr)


def table(rows: list[dict], outcomes: dict[str, str], markdown: bool) -> str:
    """The rows as a plain-text or Markdown table."""
    lines = []
    if markdown:
        lines += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    else:
        lines.append(
            f"{'model':<28}{'test':<8}{'fit s':>7}{'audit s':>9}{'epsilon':>9}  "
            f"{'worst':<8}{'verification':<14}methods"
        )
    for r in rows:
        test = outcomes.get(r.get("test", ""), "-")
        eps = f"{r['epsilon']:.2f}" if "epsilon" in r else "-"
        methods = ", ".join(f"{k} {v}" for k, v in r.get("methods", {}).items())
        verification = r.get("verification", r.get("error", ""))
        worst = r.get("worst", "-")
        if markdown:
            lines.append(
                f"| {r['model']} | {test} | {r['fit_s']:.1f} | {r['audit_s']:.1f} | "
                f"{eps} | {worst} | {verification} | {methods} |"
            )
        else:
            lines.append(
                f"{r['model']:<28}{test:<8}{r['fit_s']:>7.1f}{r['audit_s']:>9.1f}"
                f"{eps:>9}  {worst:<8}{verification:<14}{methods}"
            )
    return "\n".join(lines)


def main(argv=None) -> None:
    """Run the zoo (or read ``--rows``) and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="keyword", default=None, help="pytest -k expression")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--rows", type=Path, default=None, help="rows of an earlier run")
    args = parser.parse_args(argv)
    outcomes = {}
    if args.rows is None:
        tmp = Path(tempfile.mkdtemp(prefix="zoo_"))
        args.rows, junit = tmp / "rows.jsonl", tmp / "junit.xml"
        run(args.rows, junit, args.keyword)
        outcomes = _outcomes(junit)
        print(f"rows: {args.rows}")
    rows = [json.loads(line) for line in args.rows.read_text().splitlines() if line]
    print("stack: " + ", ".join(f"{k} {v}" for k, v in stack_versions().items()))
    print(table(rows, outcomes, args.markdown))


if __name__ == "__main__":
    main()

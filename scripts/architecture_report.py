"""The package's shape in numbers: the import graph, lines by folder, the fit's path.

* **Import graph** (read from the source, as ``scripts/check_layers.py`` does): modules and
  layers, import edges between modules, edges between folders, imports crossing the layers
  (upward, or sideways between side wings), cycles.
* **Lines by folder** (``wc -l`` of the package's Python files).
* **The path of ``audit``'s fit**: an audit of the README's quick-start model (100 records,
  ``method="auto"`` with its verification refits, then ``neighbour="replace"`` with
  ``method="psis"``) is traced with :func:`sys.setprofile`. Every call of a package function
  that receives the raw container (an ``arviz.InferenceData`` or an ``xarray.DataTree``)
  counts: the files it visits, how many calls, how often it goes down a layer and how often
  it comes back up (a call or a return into a higher layer than the one before it).

Usage: ``python scripts/architecture_report.py [--no-trace]`` (run from the checkout).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _checker():
    spec = importlib.util.spec_from_file_location("check_layers", REPO / "scripts/check_layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def import_graph() -> dict:
    """Modules, layers, import edges (module and folder level), crossing imports, cycles."""
    chk = _checker()
    paths = sorted(chk.ROOT.rglob("*.py"))
    modules = {chk.module_name(p) for p in paths}
    graph = {chk.module_name(p): {m for m, _ in chk.imports(p, modules)} for p in paths}
    edges = sum(len(v) for v in graph.values())
    folder_edges = Counter()
    upward = 0
    for a, targets in graph.items():
        for b in targets:
            fa, fb = a.split(".")[1:2] or ["top"], b.split(".")[1:2] or ["top"]
            if fa != fb:
                folder_edges[(fa[0], fb[0])] += 1
            if chk.crossing(a, b) is not None:
                upward += 1
    return {
        "modules": len(modules),
        "layers": len(chk.layer_names()),
        "import edges": edges,
        "folder pairs importing": len(folder_edges),
        "upward or sideways imports": upward,
        "cycles": len(chk.cycles(graph)),
    }


def lines_by_folder() -> dict[str, int]:
    """Lines of the package's Python files, by folder (``"(top)"``: beside ``__init__``)."""
    out = Counter()
    root = REPO / "pymc_edp"
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        folder = rel.parts[0] if len(rel.parts) > 1 else "(top)"
        out[folder] += len(path.read_text().splitlines())
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def trace_fit() -> dict:
    """The files and layer crossings of the raw container during two audits."""
    import warnings

    import numpy as np
    import pymc as pm

    import pymc_edp as edp

    chk = _checker()
    containers = tuple(
        t
        for t in (
            getattr(__import__("arviz"), "InferenceData", None),
            getattr(__import__("xarray"), "DataTree", None),
        )
        if isinstance(t, type)
    )
    y = np.random.default_rng(0).normal(10, 5**0.5, size=100)
    with pm.Model() as model:
        mu = pm.Normal("mu", 10, 3**0.5)
        pm.Normal("y", mu, 5**0.5, observed=y)
        idata = pm.sample(random_seed=1, progressbar=False)
        pm.compute_log_likelihood(idata, progressbar=False)
    package = str(REPO / "pymc_edp")
    calls, files, stack = [], Counter(), []

    def layer(filename: str) -> int:
        rel = Path(filename).relative_to(REPO).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.parts[-1] == "__init__" else rel.parts)
        return chk.layer_of(module)

    def profile(frame, event, arg):
        code = frame.f_code
        if not code.co_filename.startswith(package):
            return
        if event == "call":
            args = [frame.f_locals.get(n) for n in code.co_varnames[: code.co_argcount]]
            holds = any(isinstance(a, containers) for a in args)
            stack.append(holds)
            if holds:
                calls.append(("call", layer(code.co_filename), code.co_filename))
                files[code.co_filename] += 1
        elif event == "return" and stack:
            if stack.pop():
                back = frame.f_back
                if back is not None and back.f_code.co_filename.startswith(package):
                    calls.append(("return", layer(back.f_code.co_filename), ""))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sys.setprofile(profile)
        try:
            edp.audit(idata, model, random_seed=1, progressbar=False)
            replacements = {"neighbour": {"relation": "replace", "replacements": [0.0, 20.0]}}
            edp.audit(idata, model, method="psis", progressbar=False, **replacements)
        finally:
            sys.setprofile(None)
    down = up = 0
    for (_, a, _), (_, b, _) in itertools.pairwise(calls):
        down += b < a
        up += b > a
    return {
        "files visited": len(files),
        "calls receiving it": sum(files.values()),
        "steps down a layer": down,
        "climbs back up": up,
        "files": sorted(str(Path(f).relative_to(REPO)) for f in files),
    }


def main() -> int:
    """Print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-trace", action="store_true", help="skip the traced audit")
    args = parser.parse_args()
    print("import graph:", import_graph())
    lines = lines_by_folder()
    print(f"lines: {sum(lines.values())} in all;", ", ".join(f"{k} {v}" for k, v in lines.items()))
    if not args.no_trace:
        out = trace_fit()
        files = out.pop("files")
        print("audit's fit:", out)
        print("  files:", ", ".join(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())

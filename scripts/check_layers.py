"""Fail on an import cycle inside ``pymc_edp`` or an import that runs up across its layers.

Every ``import`` in the package is read from the source: at module level, inside functions
and methods, and under ``if TYPE_CHECKING:``. An import that runs only when a function is
called, or only for a type checker, is still a dependency of the module (and the annotation it
serves names a type of the upper layer), so it counts like any other. A module may import
modules of its own layer or of the layers below it; the import graph must have no cycle at all.

Usage: ``python scripts/check_layers.py`` (exit status 1 and one line per problem on
failure). The layers are :data:`LAYERS`, lowest first; README's "Layout" section draws them.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "pymc_edp"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

#: Lowest first. A module belongs to the first layer one of whose prefixes it starts with.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("pymc_edp.base",)),
    ("model", ("pymc_edp.model", "pymc_edp.conjugate")),
    ("refit", ("pymc_edp.refit", "pymc_edp.risk", "pymc_edp.datasets", "pymc_edp.query")),
    ("diagnostics", ("pymc_edp.diagnostics",)),
    ("report", ("pymc_edp.report",)),
    ("plots", ("pymc_edp.plots",)),
    ("results", ("pymc_edp.results",)),
    ("audit", ("pymc_edp.auditing", "pymc_edp.pipeline")),
    ("release", ("pymc_edp.release",)),
    ("tuning", ("pymc_edp.tuning",)),
    ("package", ("pymc_edp",)),
    ("cli", ("pymc_edp.cli",)),
]


def module_name(path: Path) -> str:
    """Dotted name of the module in ``path``."""
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int:
    """Index in :data:`LAYERS` of the layer ``module`` belongs to."""
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if prefix == PACKAGE and module != PACKAGE:
                    continue  # only the package's own __init__ is the top layer
                return i
    raise KeyError(f"{module} is in no layer: add it to LAYERS in scripts/check_layers.py")


def imports(path: Path, modules: set[str]) -> list[tuple[str, int]]:
    """``(imported pymc_edp module, line)`` for every import in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.startswith(PACKAGE)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith(PACKAGE):
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.append((sub if sub in modules else node.module, node.lineno))
    return out


def main() -> int:
    """Print every upward import and cycle; 0 when there is none."""
    files = sorted(ROOT.rglob("*.py"))
    modules = {module_name(f) for f in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    problems = []
    for f in files:
        src = module_name(f)
        for target, line in imports(f, modules):
            if target not in modules:
                problems.append(f"{f}:{line}: imports {target}, which does not exist")
                continue
            if target == src:
                continue
            graph[src].add(target)
            if layer_of(target) > layer_of(src):
                problems.append(
                    f"{f.relative_to(ROOT.parent)}:{line}: {src} (layer "
                    f"{LAYERS[layer_of(src)][0]}) imports {target} (layer "
                    f"{LAYERS[layer_of(target)][0]}), which is above it"
                )
    problems += [f"import cycle: {' -> '.join([*c, c[0]])}" for c in cycles(graph)]
    for p in problems:
        print(p)
    if not problems:
        print(f"{len(modules)} modules in {len(LAYERS)} layers: no cycle, no upward import")
    return 1 if problems else 0


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


if __name__ == "__main__":
    sys.exit(main())

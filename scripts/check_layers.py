"""Fail on an import cycle inside ``pymc_edp`` or an import that runs up across its layers.

The layers are the package's folders: :data:`LAYERS` orders them, lowest first, and the check
fails on a folder that is not in it (or a name in it that is not a folder), so a new folder
must take its place in the order. Above every folder sit the package's ``__init__.py`` (the
front door) and ``cli.py``; no other module may sit at the top. A module may import modules
of its own folder or of the folders below it, and the import graph must have no cycle at all.

Every ``import`` in the package is read from the source: at module level, inside functions
and methods, and under ``if TYPE_CHECKING:``. An import that runs only when a function is
called, or only for a type checker, is still a dependency of the module, so it counts like
any other.

Usage: ``python scripts/check_layers.py`` (exit status 1 and one line per problem on
failure). ``docs/architecture.md`` and README's "Layout" draw the same layers
(``tests/test_layers.py`` compares them with the tree).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "pymc_edp"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

#: The folders of the package, lowest layer first.
LAYERS: tuple[str, ...] = (
    "runtime",
    "base",
    "core",
    "model",
    "conjugate",
    "datasets",
    "refit",
    "query",
    "risk",
    "diagnostics",
    "report",
    "plots",
    "results",
    "auditing",
    "release",
    "tuning",
)

#: The modules at the top of the package, above every folder, lowest first.
TOP: tuple[str, ...] = ("__init__", "cli")


def module_name(path: Path) -> str:
    """Dotted name of the module in ``path``."""
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_names() -> list[str]:
    """The layers, lowest first: :data:`LAYERS`, then the top modules."""
    return [*LAYERS, *(f"{m}.py" for m in TOP)]


def layer_of(module: str) -> int:
    """Index in :func:`layer_names` of the layer ``module`` belongs to."""
    parts = module.split(".")
    if len(parts) == 1:
        return len(LAYERS) + TOP.index("__init__")
    if parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return len(LAYERS) + TOP.index(parts[1])


def tree_problems() -> list[str]:
    """Folders missing from :data:`LAYERS`, layers that are no folder, stray top modules."""
    folders = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    tops = {p.stem for p in ROOT.glob("*.py")}
    out = [
        f"{PACKAGE}/{name}/ is in no layer: give it its place in LAYERS "
        "(scripts/check_layers.py), lowest first"
        for name in sorted(folders - set(LAYERS))
    ]
    out += [
        f"layer {name!r} is not a folder of {PACKAGE}" for name in LAYERS if name not in folders
    ]
    out += [
        f"{PACKAGE}/{name}.py sits at the top beside __init__.py: move it into the folder "
        "of its layer"
        for name in sorted(tops - set(TOP))
    ]
    return out


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
    """Print every misplaced folder, upward import and cycle; 0 when there is none."""
    problems = tree_problems()
    if problems:  # the layers themselves are wrong: say that alone
        for p in problems:
            print(p)
        return 1
    files = sorted(ROOT.rglob("*.py"))
    modules = {module_name(f) for f in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    names = layer_names()
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
                    f"{names[layer_of(src)]}) imports {target} (layer "
                    f"{names[layer_of(target)]}), which is above it"
                )
    problems += [f"import cycle: {' -> '.join([*c, c[0]])}" for c in cycles(graph)]
    for p in problems:
        print(p)
    if not problems:
        print(f"{len(modules)} modules in {len(names)} layers: no cycle, no upward import")
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

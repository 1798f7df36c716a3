"""Fail on an import cycle inside ``pymc_edp`` or an import that crosses its layers.

The layers are the package's folders. Most stand in one main chain, :data:`LAYERS`, lowest
first: a folder of the chain may import its own modules and those of the folders below it.
Beside the chain stand the side wings, :data:`WINGS`, that the chain does not depend on: a
wing may import the chain's layers up to the one it stands on (:attr:`Wing.on`) and its own
lower folders, never another wing; only the layer a wing names as its first user
(:attr:`Wing.used_from`), the layers above that one, and the top modules may import it.
Above every folder sit the package's ``__init__.py`` (the front door) and ``cli.py``; no
other module may sit at the top. The check fails on a folder that is in no layer and no
wing (or a name in them that is not a folder), so a new folder must take its place, and the
import graph must have no cycle at all.

Every ``import`` in the package is read from the source: at module level, inside functions
and methods, and under ``if TYPE_CHECKING:``. An import that runs only when a function is
called, or only for a type checker, is still a dependency of the module, so it counts like
any other.

Usage: ``python scripts/check_layers.py`` (exit status 1 and one line per problem on
failure). ``docs/architecture.md`` and README's "Layout" draw the same layers in the order
of :func:`layer_names` (``tests/test_layers.py`` compares them with the tree).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import NamedTuple

PACKAGE = "pymc_edp"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

#: The main chain of folders, lowest layer first.
LAYERS: tuple[str, ...] = (
    "runtime",
    "base",
    "core",
    "model",
    "refit",
    "diagnostics",
    "report",
    "plots",
    "results",
    "auditing",
    "release",
    "tuning",
)


class Wing(NamedTuple):
    """A side wing: folders beside the main chain, which does not depend on them.

    ``folders`` are stacked lowest first: each may import its own modules and those of the
    wing's folders before it. The wing may import the layers of :data:`LAYERS` up to ``on``
    and no other wing. Only ``used_from`` and the layers above it, and the top modules, may
    import the wing; ``used_from=None``: the top modules alone (the front door and ``cli.py``).
    """

    folders: tuple[str, ...]
    on: str
    used_from: str | None = None

    @property
    def name(self) -> str:
        """``"query"``, ``"conjugate/risk"``: the wing's folders, lowest first."""
        return "/".join(self.folders)


#: The side wings. query/ and the exact conjugate oracles with the papers' risk measures
#: (risk/ builds on conjugate/) need nothing of the PyMC glue; the shipped datasets need it
#: to build their containers. Only plots/ (query-level figures) uses a wing from the chain.
WINGS: tuple[Wing, ...] = (
    Wing(("query",), on="core", used_from="plots"),
    Wing(("conjugate", "risk"), on="core"),
    Wing(("datasets",), on="model"),
)

#: The modules at the top of the package, above every folder, lowest first.
TOP: tuple[str, ...] = ("__init__", "cli")


def module_name(path: Path) -> str:
    """Dotted name of the module in ``path``."""
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def folders() -> list[str]:
    """Every folder, lowest first: the main chain, each wing just above the layer it stands on.

    An order in which every allowed import runs down; the drawings of the layers follow it.
    """
    out = []
    for layer in LAYERS:
        out.append(layer)
        for wing in WINGS:
            if wing.on == layer:
                out += wing.folders
    return out


def layer_names() -> list[str]:
    """The layers, lowest first: :func:`folders`, then the top modules."""
    return [*folders(), *(f"{m}.py" for m in TOP)]


def layer_of(module: str) -> int:
    """Index in :func:`layer_names` of the layer ``module`` belongs to."""
    parts = module.split(".")
    names = folders()
    if len(parts) == 1:
        return len(names) + TOP.index("__init__")
    if parts[1] in names:
        return names.index(parts[1])
    return len(names) + TOP.index(parts[1])


def wing_of(folder: str) -> Wing | None:
    """The side wing ``folder`` belongs to; None for a layer of the main chain or the top."""
    return next((w for w in WINGS if folder in w.folders), None)


def describe(name: str) -> str:
    """``"layer base"``, ``"side wing query"`` (a name of :func:`layer_names`)."""
    return f"side wing {name}" if wing_of(name) else f"layer {name}"


def crossing(src: str, target: str) -> str | None:
    """Why module ``src`` may not import module ``target``; None when it may."""
    names = layer_names()
    low, high = layer_of(target), layer_of(src)
    a, b = names[high], names[low]
    wa, wb = wing_of(a), wing_of(b)
    if wa is wb or b.endswith(".py"):  # one chain: the main one and the top, or one wing's
        return None if low <= high else "which is above it"
    if wa is not None and wb is not None:
        return "another side wing: side wings do not import each other"
    if wa is not None:  # a wing importing the main chain
        if LAYERS.index(b) <= LAYERS.index(wa.on):
            return None
        return f"which is above {wa.on}, the layer side wing {wa.name} stands on"
    if a.endswith(".py"):  # the top imports every wing
        return None
    if wb.used_from is not None and LAYERS.index(a) >= LAYERS.index(wb.used_from):
        return None
    users = f"{wb.used_from} and the layers above it" if wb.used_from else "the top modules"
    return f"a side wing only {users} may import"


def tree_problems() -> list[str]:
    """Folders in no layer, layers that are no folder, misplaced wings, stray top modules."""
    present = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    tops = {p.stem for p in ROOT.glob("*.py")}
    placed = folders()
    out = [
        f"{PACKAGE}/{name}/ is in no layer: give it its place in LAYERS, lowest first, or in "
        "a side wing of WINGS (scripts/check_layers.py)"
        for name in sorted(present - set(placed))
    ]
    out += [
        f"layer {name!r} is not a folder of {PACKAGE}" for name in placed if name not in present
    ]
    named = [*LAYERS, *(f for w in WINGS for f in w.folders)]
    out += [
        f"folder {name!r} is placed twice"
        for name in sorted({n for n in named if named.count(n) > 1})
    ]
    for wing in WINGS:
        if wing.on not in LAYERS:
            out.append(f"side wing {wing.name} stands on {wing.on!r}, which is not in LAYERS")
        elif wing.used_from is not None and (
            wing.used_from not in LAYERS or LAYERS.index(wing.used_from) <= LAYERS.index(wing.on)
        ):
            out.append(
                f"side wing {wing.name} is used from {wing.used_from!r}, which is not a layer "
                f"of LAYERS above {wing.on!r}"
            )
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
    """Print every misplaced folder, crossing import and cycle; 0 when there is none."""
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
            why = crossing(src, target)
            if why is not None:
                problems.append(
                    f"{f.relative_to(ROOT.parent)}:{line}: {src} "
                    f"({describe(names[layer_of(src)])}) imports {target} "
                    f"({describe(names[layer_of(target)])}), {why}"
                )
    problems += [f"import cycle: {' -> '.join([*c, c[0]])}" for c in cycles(graph)]
    for p in problems:
        print(p)
    if not problems:
        print(
            f"{len(modules)} modules in {len(LAYERS)} layers, {len(WINGS)} side wings and "
            f"{len(TOP)} top modules: no cycle, no upward or sideways import"
        )
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

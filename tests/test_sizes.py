"""Size limits of the public interface and of the code (issue 22).

No public function or class constructor takes more than 12 parameters (group options into
the ``*Options`` objects instead), and at most 3 functions in the package have more than 80
lines of code (docstring, blank and comment lines not counted).

The public interface is what ``pymc_edp`` and its subpackages list in ``__all__``. Exempt:
the result containers, whose constructors take the fields of what an audit or a prior tuning
returns (users receive them and never build them by hand), and the three front doors, which
take every setting as a flat keyword spelled as in the others (issue 34).
"""

import ast
import inspect
import pkgutil
from pathlib import Path

import pymc_edp

MAX_PARAMETERS = 12
MAX_LINES = 80
MAX_LONG_FUNCTIONS = 3
ROOT = Path(pymc_edp.__file__).resolve().parent


#: Constructed by the package, never by users, and the front doors: see the module docstring.
EXEMPT = {
    "EDPResult",
    "PriorTuningResult",
    "ReleaseResult",
    "audit",
    "audit_release",
    "tune_prior",
}


def _public_objects():
    """Every function and class listed in the ``__all__`` of the package or a subpackage."""
    seen = {}
    modules = [pymc_edp] + [
        __import__(m.name, fromlist=["_"])
        for m in pkgutil.walk_packages(pymc_edp.__path__, "pymc_edp.")
        if m.ispkg and not any(part.startswith("_") for part in m.name.split("."))
    ]
    for module in modules:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                seen[id(obj)] = (f"{module.__name__}.{name}", obj)
    return list(seen.values())


def _n_parameters(obj) -> int:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):  # a builtin without a signature
        return 0
    return len([p for p in sig.parameters.values() if p.name != "self"])


def _code_lines(node: ast.FunctionDef, lines: list[str]) -> int:
    skip = set()
    if ast.get_docstring(node, clean=False) is not None:
        doc = node.body[0]
        skip = set(range(doc.lineno, doc.end_lineno + 1))
    return sum(
        1
        for ln in range(node.lineno, node.end_lineno + 1)
        if ln not in skip and lines[ln - 1].strip() and not lines[ln - 1].strip().startswith("#")
    )


def long_functions() -> list[tuple[int, str]]:
    """``(lines of code, place)`` of every function over :data:`MAX_LINES`, longest first."""
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = _code_lines(node, lines)
                if n > MAX_LINES:
                    out.append((n, f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}"))
    return sorted(out, reverse=True)


def test_public_signatures_have_at_most_12_parameters():
    objects = _public_objects()
    assert len(objects) > 50  # the walk found the public interface
    too_many = {
        name: _n_parameters(obj) for name, obj in objects if name.rsplit(".", 1)[1] not in EXEMPT
    }
    too_many = {k: v for k, v in too_many.items() if v > MAX_PARAMETERS}
    assert not too_many, too_many


def test_at_most_three_long_functions():
    found = long_functions()
    assert len(found) <= MAX_LONG_FUNCTIONS, found


def test_the_line_count_skips_docstrings_and_comments():
    src = 'def f():\n    """Doc.\n\n    More.\n    """\n    # note\n\n    x = 1\n    return x\n'
    node = ast.parse(src).body[0]
    assert _code_lines(node, src.splitlines()) == 3  # def, assignment, return

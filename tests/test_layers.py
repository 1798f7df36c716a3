"""The package's layering holds, and the pictures of it are the tree.

``scripts/check_layers.py`` passes, and catches a violation (an upward import, a cycle, a
side wing importing another or used from too low, a folder that has no layer, a stray
top-level module); ``docs/architecture.md`` and README's "Layout" draw the layers in the
check's order, each with the modules its folder holds.
"""

import importlib.util
import re
import shutil
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "check_layers.py"


@pytest.fixture
def checker():
    spec = importlib.util.spec_from_file_location("check_layers", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_cycle_and_no_upward_import(checker, capsys):
    assert checker.main() == 0, capsys.readouterr().out


def _package(tmp_path: Path, folders) -> Path:
    pkg = tmp_path / "pymc_edp"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for folder in folders:
        (pkg / folder).mkdir()
        (pkg / folder / "__init__.py").write_text("")
    return pkg


def test_checker_finds_upward_imports_and_cycles(checker, tmp_path, monkeypatch, capsys):
    pkg = _package(tmp_path, checker.folders())
    (pkg / "base" / "a.py").write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from pymc_edp.results.edp import Thing  # for the type checker: still upward

            def f():
                from pymc_edp import auditing  # hidden in a function: still upward
            """
        )
    )
    (pkg / "results" / "edp.py").write_text("import pymc_edp.auditing\n")
    (pkg / "auditing" / "__init__.py").write_text("from pymc_edp.results import edp\n")
    monkeypatch.setattr(checker, "ROOT", pkg)
    assert checker.main() == 1
    lines = capsys.readouterr().out.splitlines()
    assert "pymc_edp/base/a.py:5: pymc_edp.base.a (layer base) imports pymc_edp.results.edp " in (
        "\n".join(lines)
    )
    assert any(
        line.startswith(
            "pymc_edp/base/a.py:8: pymc_edp.base.a (layer base) imports "
            "pymc_edp.auditing (layer auditing)"
        )
        for line in lines
    )
    assert any(
        line.startswith(
            "pymc_edp/results/edp.py:1: pymc_edp.results.edp (layer results) "
            "imports pymc_edp.auditing (layer auditing)"
        )
        for line in lines
    )
    assert "import cycle: pymc_edp.auditing -> pymc_edp.results.edp -> pymc_edp.auditing" in lines
    # the downward import auditing -> results.edp is no problem of its own
    assert not any(line.startswith("pymc_edp/auditing/__init__.py") for line in lines)


def test_a_folder_is_a_layer_and_nothing_else_sits_at_the_top(
    checker, tmp_path, monkeypatch, capsys
):
    folders = checker.folders()
    pkg = _package(tmp_path, [*folders[:-1], "extras"])
    (pkg / "helpers.py").write_text("")
    (pkg / "cli.py").write_text("import pymc_edp\n")
    monkeypatch.setattr(checker, "ROOT", pkg)
    assert checker.main() == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("pymc_edp/extras/ is in no layer: give it its place in LAYERS")
    assert f"layer {folders[-1]!r} is not a folder of pymc_edp" in out
    assert any(line.startswith("pymc_edp/helpers.py sits at the top") for line in out)
    assert len(out) == 3
    # with the folders right, the same package passes
    shutil.rmtree(pkg / "extras")
    (pkg / "helpers.py").unlink()
    (pkg / folders[-1]).mkdir()
    (pkg / folders[-1] / "__init__.py").write_text("import pymc_edp.base\n")
    assert checker.main() == 0


def test_side_wings_import_neither_each_other_nor_above_their_footing(
    checker, tmp_path, monkeypatch, capsys
):
    wing = checker.Wing
    monkeypatch.setattr(
        checker,
        "WINGS",
        (wing(("left",), on="core", used_from="plots"), wing(("low", "high"), on="core")),
    )
    pkg = _package(tmp_path, checker.folders())
    assert checker.folders().index("left") < checker.folders().index("model")
    (pkg / "left" / "a.py").write_text("import pymc_edp.high.b\nimport pymc_edp.core\n")
    (pkg / "low" / "c.py").write_text("from pymc_edp.model import d\n")
    (pkg / "model" / "d.py").write_text("")
    (pkg / "high" / "b.py").write_text("from pymc_edp.low import c\n")  # its own lower folder
    (pkg / "report" / "e.py").write_text("import pymc_edp.left\n")  # below plots
    (pkg / "plots" / "f.py").write_text("import pymc_edp.left.a\n")  # its first user
    (pkg / "tuning" / "g.py").write_text("import pymc_edp.high\n")  # for the top modules only
    (pkg / "__init__.py").write_text("import pymc_edp.high, pymc_edp.left\n")
    monkeypatch.setattr(checker, "ROOT", pkg)
    assert checker.main() == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "pymc_edp/left/a.py:1: pymc_edp.left.a (side wing left) imports pymc_edp.high.b "
        "(side wing high), another side wing: side wings do not import each other",
        "pymc_edp/low/c.py:1: pymc_edp.low.c (side wing low) imports pymc_edp.model.d "
        "(layer model), which is above core, the layer side wing low/high stands on",
        "pymc_edp/report/e.py:1: pymc_edp.report.e (layer report) imports pymc_edp.left "
        "(side wing left), a side wing only plots and the layers above it may import",
        "pymc_edp/tuning/g.py:1: pymc_edp.tuning.g (layer tuning) imports pymc_edp.high "
        "(side wing high), a side wing only the top modules may import",
    ]


def test_a_side_wing_stands_on_the_main_chain_below_its_users(
    checker, tmp_path, monkeypatch, capsys
):
    wing = checker.Wing
    wings = (wing(("query",), on="plots", used_from="core"), wing(("risk",), on="nowhere"))
    monkeypatch.setattr(checker, "WINGS", wings)
    monkeypatch.setattr(checker, "LAYERS", (*checker.LAYERS, "risk"))
    pkg = _package(tmp_path, ["query", *checker.LAYERS])  # LAYERS ends with risk
    monkeypatch.setattr(checker, "ROOT", pkg)
    assert checker.main() == 1
    assert capsys.readouterr().out.splitlines() == [
        "folder 'risk' is placed twice",
        "side wing query is used from 'core', which is not a layer of LAYERS above 'plots'",
        "side wing risk stands on 'nowhere', which is not in LAYERS",
    ]


def _copy_of_package(tmp_path: Path) -> Path:
    """A copy of the real ``pymc_edp`` sources (no caches, no data files) under ``tmp_path``."""
    src = REPO / "pymc_edp"
    dst = tmp_path / "pymc_edp"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dst


_BROKEN = {
    "function": """

def _upward():
    from pymc_edp.auditing import audit

    return audit
""",
    "type_checking": """

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pymc_edp.auditing import audit
""",
}


@pytest.mark.parametrize("where", sorted(_BROKEN))
def test_checker_catches_a_broken_import_in_the_real_package(
    checker, tmp_path, monkeypatch, capsys, where
):
    pkg = _copy_of_package(tmp_path)
    target = pkg / "base" / "validate.py"
    source = target.read_text()
    target.write_text(source + _BROKEN[where])
    line = (
        source.count("\n")
        + _BROKEN[where]
        .splitlines()
        .index(next(s for s in _BROKEN[where].splitlines() if "import audit" in s))
        + 1
    )
    monkeypatch.setattr(checker, "ROOT", pkg)
    assert checker.main() == 1
    out = capsys.readouterr().out
    expected = (
        f"pymc_edp/base/validate.py:{line}: pymc_edp.base.validate (layer base) imports "
        "pymc_edp.auditing (layer auditing), which is above it"
    )
    assert expected in out.splitlines()
    # auditing imports base, so the broken import also closes a cycle through it
    assert any(
        c.startswith("import cycle:")
        and "pymc_edp.base.validate" in c
        and "pymc_edp.auditing" in c
        for c in out.splitlines()
    )


def test_checker_catches_a_new_folder_in_the_real_package(checker, tmp_path, monkeypatch, capsys):
    pkg = _copy_of_package(tmp_path)
    (pkg / "extras").mkdir()
    (pkg / "extras" / "__init__.py").write_text("from pymc_edp.base import validate\n")
    monkeypatch.setattr(checker, "ROOT", pkg)
    assert checker.main() == 1
    assert "pymc_edp/extras/ is in no layer" in capsys.readouterr().out


_ROW = re.compile(r"^ ?([a-z_]+/|__init__\.py|cli\.py)\s")


def drawn_layers(text: str) -> list[tuple[str, set[str]]]:
    """``(folder or top module, {modules named})`` for each row of a layer drawing, top first.

    A row starts at a line whose first word is a folder (``model/``) or a top module; the
    modules are the ``*.py`` names on it and on the lines up to the next row (a folder's
    ``__init__.py`` may be named, and is not counted).
    """
    block = text.split("```text", 1)[1].split("```", 1)[0]
    rows: list[tuple[str, set[str]]] = []
    for line in block.splitlines():
        m = _ROW.match(line)
        if m:
            rows.append((m.group(1), set()))
            line = line[m.end() :]
        if rows:
            rows[-1][1].update(re.findall(r"\b([a-z_]+)\.py\b", line))
    return [(name, named - {"__init__"}) for name, named in rows]


def tree_layers(checker) -> list[tuple[str, set[str]]]:
    """The same, read from the package: every folder's modules, top first."""
    root = REPO / "pymc_edp"
    rows = [(f"{m}.py", set()) for m in reversed(checker.TOP)]
    for folder in reversed(checker.folders()):
        rows.append((f"{folder}/", {p.stem for p in (root / folder).glob("*.py")} - {"__init__"}))
    return rows


@pytest.mark.parametrize(
    "page, heading", [("docs/architecture.md", "# Architecture"), ("README.md", "## Layout")]
)
def test_the_drawings_of_the_layers_are_the_tree(checker, page, heading):
    text = (REPO / page).read_text().split(heading, 1)[1]
    drawn = drawn_layers(text)
    tree = tree_layers(checker)
    assert [name for name, _ in drawn] == [name for name, _ in tree], (
        f"{page} draws the layers {[n for n, _ in drawn]}, the tree has {[n for n, _ in tree]}"
    )
    for (name, named), (_, modules) in zip(drawn, tree, strict=True):
        assert named == modules, (
            f"{page}, {name}: not drawn {sorted(modules - named)}, "
            f"not in the tree {sorted(named - modules)}"
        )


def test_drawn_layers_reads_rows_and_their_modules():
    text = "```text\n cli.py   demo\n base/    a.py (x, y.py), b.py\n          c.py\n```"
    assert drawn_layers(text) == [("cli.py", set()), ("base/", {"a", "y", "b", "c"})]

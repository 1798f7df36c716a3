"""The package's layering holds: ``scripts/check_layers.py`` passes and catches violations."""

import importlib.util
import shutil
import textwrap
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check_layers.py"


@pytest.fixture
def checker():
    spec = importlib.util.spec_from_file_location("check_layers", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_cycle_and_no_upward_import(checker, capsys):
    assert checker.main() == 0, capsys.readouterr().out


def test_checker_finds_upward_imports_and_cycles(checker, tmp_path, monkeypatch, capsys):
    pkg = tmp_path / "pymc_edp"
    (pkg / "base").mkdir(parents=True)
    (pkg / "results").mkdir()
    for init in ("__init__.py", "base/__init__.py", "results/__init__.py"):
        (pkg / init).write_text("")
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
    (pkg / "auditing.py").write_text("from pymc_edp.results import edp\n")
    monkeypatch.setattr(checker, "ROOT", pkg)
    assert checker.main() == 1
    lines = capsys.readouterr().out.splitlines()
    assert "pymc_edp/base/a.py:5: pymc_edp.base.a (layer base) imports pymc_edp.results.edp " in (
        "\n".join(lines)
    )
    assert any(
        line.startswith(
            "pymc_edp/base/a.py:8: pymc_edp.base.a (layer base) imports "
            "pymc_edp.auditing (layer audit)"
        )
        for line in lines
    )
    assert any(
        line.startswith(
            "pymc_edp/results/edp.py:1: pymc_edp.results.edp (layer results) "
            "imports pymc_edp.auditing (layer audit)"
        )
        for line in lines
    )
    assert "import cycle: pymc_edp.auditing -> pymc_edp.results.edp -> pymc_edp.auditing" in lines
    # the downward import auditing -> results.edp is no problem of its own
    assert not any(line.startswith("pymc_edp/auditing.py") for line in lines)


def _copy_of_package(tmp_path: Path) -> Path:
    """A copy of the real ``pymc_edp`` sources (no caches, no data files) under ``tmp_path``."""
    src = SCRIPT.parents[1] / "pymc_edp"
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
        "pymc_edp.auditing (layer audit), which is above it"
    )
    assert expected in out.splitlines()
    # auditing imports base, so the broken import also closes a cycle through it
    assert any(
        c.startswith("import cycle:")
        and "pymc_edp.base.validate" in c
        and "pymc_edp.auditing" in c
        for c in out.splitlines()
    )

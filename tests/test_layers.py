"""The package's layering holds: ``scripts/check_layers.py`` passes and catches violations."""

import importlib.util
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
    (pkg / "__init__.py").write_text("")
    (pkg / "base" / "__init__.py").write_text("")
    (pkg / "base" / "a.py").write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from pymc_edp.results.edp import Thing  # never runs: allowed

            def f():
                from pymc_edp import result  # hidden in a function: still upward
            """
        )
    )
    (pkg / "result.py").write_text("import pymc_edp.auditing\n")
    (pkg / "auditing.py").write_text("from pymc_edp import result\n")
    monkeypatch.setattr(checker, "ROOT", pkg)
    assert checker.main() == 1
    out = capsys.readouterr().out
    assert "pymc_edp.base.a (layer base) imports pymc_edp.results.edp (layer result)" in out
    assert "pymc_edp.results.edp (layer result) imports pymc_edp.auditing (layer audit)" in out
    assert "import cycle: pymc_edp.auditing -> pymc_edp.results.edp -> pymc_edp.auditing" in out
    assert out.count("imports pymc_edp.results.edp") == 1  # the TYPE_CHECKING import is not one

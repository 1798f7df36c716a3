"""Every module of ``pymc_edp`` has its own test file, at the mirrored path.

``pymc_edp/<package>/<module>.py`` is tested in ``tests/<package>/test_<module>.py`` (the
leading underscore of a private module dropped: ``risk/_common.py`` ->
``tests/risk/test_common.py``); a top-level module ``pymc_edp/<module>.py`` in
``tests/test_<module>.py``. Packages' ``__init__.py`` files are not required to have one.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pymc_edp"
TESTS = ROOT / "tests"


def mirror(module: Path) -> Path:
    """The test file of ``module`` (a path under ``pymc_edp/``)."""
    rel = module.relative_to(PACKAGE)
    return TESTS.joinpath(*rel.parts[:-1], f"test_{rel.stem.lstrip('_')}.py")


def expected_test_files() -> dict[Path, Path]:
    """``{module: its test file}`` for every module that needs one."""
    return {m: mirror(m) for m in sorted(PACKAGE.rglob("*.py")) if m.name != "__init__.py"}


def test_mirror_paths():
    assert mirror(PACKAGE / "risk" / "_common.py") == TESTS / "risk" / "test_common.py"
    assert mirror(PACKAGE / "base" / "psis.py") == TESTS / "base" / "test_psis.py"
    assert mirror(PACKAGE / "auditing.py") == TESTS / "test_auditing.py"


def test_every_module_has_its_test_file():
    missing = [
        f"{module.relative_to(ROOT)} -> {test.relative_to(ROOT)}"
        for module, test in expected_test_files().items()
        if not test.is_file()
    ]
    assert not missing, "modules without their test file:\n" + "\n".join(missing)

"""Docstring examples run, and every public function has one.

* ``test_docstring_examples`` runs every ``>>>`` example in every ``pymc_edp`` module with
  :mod:`doctest` (one test per documented object), so an example that no longer runs, or
  prints something else, fails the suite. The examples share the names of
  ``tests/doctest_namespace.py`` (``np``, ``edp``, ``idata``, ``res``, ...) and do not import
  them.
* ``test_public_functions_have_examples`` is a ratchet: every public function and class
  (the names in a public module's ``__all__``, and the public methods of
  :class:`pymc_edp.EDPResult`) must have an ``Examples`` section with a ``>>>`` example,
  except those still listed in ``MISSING_EXAMPLES``. Adding an example to a listed object
  makes the test fail until the object is removed from the list, so the list only shrinks.

The executed notebooks and documentation pages are checked by ``scripts/build_docs.sh``.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import warnings
from pathlib import Path

import doctest_namespace
import pytest

import pymc_edp

ROOT = Path(__file__).resolve().parents[1]

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

PUBLIC_MODULES = [
    "pymc_edp",
    "pymc_edp.conjugate.calibration",
    "pymc_edp.cli",
    "pymc_edp.conjugate.posteriors",
    "pymc_edp.datasets",
    "pymc_edp.diagnostics",
    "pymc_edp.plots",
    "pymc_edp.query",
    "pymc_edp.refit",
    "pymc_edp.report",
    "pymc_edp.risk",
    "pymc_edp.tuning",
]

# Public objects without a ``>>>`` example yet. Remove a name once its example is added.
MISSING_EXAMPLES: set[str] = set()

OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _all_modules() -> list[str]:
    names = ["pymc_edp"]
    for info in pkgutil.walk_packages(pymc_edp.__path__, prefix="pymc_edp."):
        names.append(info.name)
    return sorted(names)


def _doctests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = []
    for name in _all_modules():
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional dependency of one module
            continue
        for test in finder.find(module, name):
            if test.examples:
                tests.append(test)
    return sorted(tests, key=lambda t: t.name)


DOCTESTS = _doctests()


@pytest.mark.skipif(not DOCTESTS, reason="no docstring examples yet")
@pytest.mark.parametrize("test", DOCTESTS, ids=[t.name for t in DOCTESTS])
def test_docstring_examples(test, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples may write files
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    test.globs = {**doctest_namespace.namespace(), **test.globs}
    report: list[str] = []  # doctest swaps sys.stdout while it runs: collect, then show
    # The shipped eight-schools draws (ArviZ's centered_eight: R-hat 1.02 for mu, 1.06 for
    # tau) were sampled by PyMC, which reported that: audits of them do not warn again, and
    # where the examples print the result, the printout says it.
    result = runner.run(test, out=report.append)
    import matplotlib.pyplot as plt

    plt.close("all")
    assert result.failed == 0, (
        f"{result.failed} of {result.attempted} examples failed:\n{''.join(report)}"
    )


def public_objects() -> dict[str, object]:
    """Qualified name -> object for every public function, class and EDPResult method."""
    out: dict[str, object] = {}
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if inspect.ismodule(obj) or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if inspect.isclass(obj) and issubclass(obj, Warning):
                continue
            if any(obj is seen for seen in out.values()):  # re-exported: listed once
                continue
            out[f"{name}.{attr}"] = obj
    for attr, member in vars(pymc_edp.EDPResult).items():
        if attr.startswith("_"):
            continue
        if isinstance(member, property):
            member = member.fget
        elif isinstance(member, classmethod | staticmethod):
            member = member.__func__
        if inspect.isfunction(member):
            out[f"pymc_edp.EDPResult.{attr}"] = member
    return out


def has_example(obj) -> bool:
    return ">>>" in (inspect.getdoc(obj) or "")


def test_public_functions_have_examples():
    objects = public_objects()
    missing = {name for name, obj in objects.items() if not has_example(obj)}
    new = sorted(missing - MISSING_EXAMPLES)
    done = sorted(MISSING_EXAMPLES & (set(objects) - missing))
    gone = sorted(MISSING_EXAMPLES - set(objects))
    msg = []
    if new:
        msg.append("public objects without a '>>>' example:\n  " + "\n  ".join(new))
    if done:
        msg.append(
            "now have an example; remove them from MISSING_EXAMPLES:\n  " + "\n  ".join(done)
        )
    if gone:
        msg.append("no longer public; remove them from MISSING_EXAMPLES:\n  " + "\n  ".join(gone))
    assert not msg, "\n".join(msg)


def _readme_block(heading: str) -> str:
    """The first Python code block under ``heading`` in README.md."""
    text = (ROOT / "README.md").read_text()
    section = text.split(heading, 1)[1]
    return section.split("```python", 1)[1].split("```", 1)[0]


@pytest.mark.slow
def test_readme_quick_start_runs_and_says_one_thing(tmp_path, monkeypatch):
    """The quick start runs as printed, and its printout does not contradict itself.

    Its epsilon is clearly above zero (its interval says so): no caution, no EMI verdict.
    """
    monkeypatch.chdir(tmp_path)  # it writes audit.nc and fit.nc
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # PyMC's own notices while sampling
        exec(compile(_readme_block("## Quick start"), "README quick start", "exec"), namespace)
    import matplotlib.pyplot as plt

    plt.close("all")  # res.plot()
    res = namespace["res"]
    text = repr(res)
    lo, hi = res.mc_interval90
    assert 0 < lo <= res.epsilon <= hi
    assert f"90% Monte-Carlo interval of epsilon: [{lo:.3f}, {hi:.3f}]" in text
    assert "Caution" not in text and "EMI" not in text
    assert res.verification == "confirmed" and "Verification: confirmed by refitting" in text
    assert (tmp_path / "audit.nc").is_file() and (tmp_path / "fit.nc").is_file()
    # the exact epsilon of this conjugate model, quoted in the README beside the output
    from pymc_edp.conjugate import normal_normal_edp

    exact = normal_normal_edp(namespace["y"], 5**0.5, 10, 3**0.5, bins=20)
    assert f"its exact epsilon is {exact:.3f}" in (ROOT / "README.md").read_text()
    assert res.epsilon == pytest.approx(exact, rel=0.1)


def test_readme_setup_commands_are_what_ci_runs():
    """The README's two set-up commands, in order: CI reads them with scripts/readme.py."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "readme.py"), "setup"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    assert out == [
        'pip install -e ".[plots]" && pymc-edp demo',
        'pip install -e ".[test]" && python -m pytest',
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/readme.py setup" in ci and "scripts/readme.py quickstart" in ci

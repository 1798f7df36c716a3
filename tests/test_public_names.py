"""One import path per public name.

Every object a package namespace exports (``pymc_edp``, ``pymc_edp.query``,
``pymc_edp.risk``, ...: a package whose ``__init__`` defines ``__all__``) is listed in the
``__all__`` of exactly one of them, so the documentation, the examples and the users spell it
one way. Modules may list their own names in their ``__all__`` (they are not namespaces), and
the internal layers (:mod:`pymc_edp.base`, :mod:`pymc_edp.core`, :mod:`pymc_edp.model`, ...)
are not namespaces.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import defaultdict

import pymc_edp

#: Packages that hold the implementation and are not imported from by users.
INTERNAL = (
    "pymc_edp.runtime",
    "pymc_edp.base",
    "pymc_edp.core",
    "pymc_edp.model",
    "pymc_edp.auditing",
)

#: Immutable values compared by name as well as identity: equal small ints or interned
#: strings are one object without being one name.
_VALUES = (bool, int, float, complex, str, bytes, tuple, frozenset, type(None))


def _is_internal(name: str) -> bool:
    private = any(part.startswith("_") for part in name.split("."))
    return private or any(name == p or name.startswith(p + ".") for p in INTERNAL)


def _all_modules() -> dict[str, object]:
    """Every module of the package, imported, by dotted name."""
    names = ["pymc_edp"]
    names += [m.name for m in pkgutil.walk_packages(pymc_edp.__path__, prefix="pymc_edp.")]
    return {name: importlib.import_module(name) for name in sorted(names)}


def _namespaces() -> dict[str, object]:
    """The public package namespaces: packages (not modules) that define ``__all__``."""
    return {
        name: module
        for name, module in _all_modules().items()
        if hasattr(module, "__path__") and hasattr(module, "__all__") and not _is_internal(name)
    }


def _key(name: str, obj: object) -> tuple:
    return (id(obj), name) if isinstance(obj, _VALUES) else (id(obj), None)


def _listings(modules: dict[str, object]) -> dict[tuple, list[str]]:
    """``{object key: ["namespace.name", ...]}`` over the ``__all__`` of ``modules``."""
    where: dict[tuple, list[str]] = defaultdict(list)
    for ns, module in modules.items():
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                continue
            where[_key(name, obj)].append(f"{ns}.{name}")
    return where


def test_the_namespaces_are_found():
    found = set(_namespaces())
    expected = {
        "pymc_edp",
        "pymc_edp.conjugate",
        "pymc_edp.datasets",
        "pymc_edp.diagnostics",
        "pymc_edp.plots",
        "pymc_edp.query",
        "pymc_edp.refit",
        "pymc_edp.risk",
        "pymc_edp.tuning",
    }
    assert expected <= found, sorted(expected - found)


def test_every_listed_name_exists():
    missing = [
        f"{ns}.{name}"
        for ns, module in _namespaces().items()
        for name in module.__all__
        if not hasattr(module, name)
    ]
    assert not missing, missing


def test_each_public_object_is_listed_in_exactly_one_namespace():
    duplicates = sorted(paths for paths in _listings(_namespaces()).values() if len(paths) > 1)
    assert not duplicates, (
        "public objects listed in more than one namespace's __all__ (keep one): "
        + "; ".join(" = ".join(paths) for paths in duplicates)
    )


def test_the_options_are_public_at_the_top_level_only():
    where = _listings(_namespaces())
    for name in ("RefitOptions", "VerifyOptions", "ChunkOptions", "MomentMatchOptions"):
        obj = getattr(pymc_edp, name)
        assert where[_key(name, obj)] == [f"pymc_edp.{name}"], name


def test_edp_warning_is_public_only_as_pymc_edp_edp_warning():
    from pymc_edp.base.common import EDPWarning

    assert pymc_edp.EDPWarning is EDPWarning
    listed = sorted(
        name
        for name, module in _all_modules().items()
        if any(getattr(module, n, None) is EDPWarning for n in getattr(module, "__all__", []))
    )
    # its home among the internal kernels, and the front door; no other __all__
    assert listed == ["pymc_edp", "pymc_edp.base.common"], listed

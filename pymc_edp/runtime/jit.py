"""Where the numba kernels' compiled code is cached: the user's cache folder, never the package.

numba's ``cache=True`` writes into ``site-packages/pymc_edp/base/__pycache__``, which
``pip uninstall`` leaves behind as a namespace package shadowing an editable install.
:func:`install` sends this package's kernels to numba's user-wide cache; a user's
``NUMBA_CACHE_DIR`` still wins.

Examples
--------
>>> from pathlib import Path
>>> from pymc_edp.runtime import jit
>>> jit.install()  # done on import of pymc_edp.base; a second call changes nothing
>>> Path(jit.cache_dir()).name.startswith("base_")  # this package's kernels' folder
True
"""

from __future__ import annotations

import os
from pathlib import Path

from numba.core import caching, config

__all__ = ["cache_dir", "install"]

#: The folder of this package's sources: files below it are cached by our locator.
PACKAGE_DIR = Path(__file__).resolve().parents[1]


class _PackageCacheLocator(caching.UserWideCacheLocator):
    """numba's user-wide cache locator, for this package's files only, ahead of in-tree."""

    @classmethod
    def from_function(cls, py_func, py_file):
        if config.CACHE_DIR:  # the user's NUMBA_CACHE_DIR: numba's own locator serves
            return None
        try:
            Path(py_file).resolve().relative_to(PACKAGE_DIR)
        except (ValueError, OSError):
            return None  # not ours: numba decides as usual
        return super().from_function(py_func, py_file)


def install() -> None:
    """Put the package's cache locator before numba's in-tree one (once)."""
    classes = caching.CacheImpl._locator_classes
    if _PackageCacheLocator in classes:
        return
    # after the user-provided locator (NUMBA_CACHE_DIR), before the in-tree one
    at = 1 if classes and classes[0] is caching.UserProvidedCacheLocator else 0
    classes.insert(at, _PackageCacheLocator)


def cache_dir() -> str:
    """The folder the kernels of :mod:`pymc_edp.base` are cached in."""
    root = config.CACHE_DIR or caching.AppDirs(appname="numba", appauthor=False).user_cache_dir
    base = PACKAGE_DIR / "base" / "binning.py"
    return os.path.join(root, caching._CacheLocator.get_suitable_cache_subpath(str(base)))

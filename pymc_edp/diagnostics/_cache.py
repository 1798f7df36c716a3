"""What the diagnostics computed from an audit (bins, influence functions), kept for reuse.

The diagnostics own this cache; the results hold data only. It is a dictionary per audit
object, keyed by the object's ``id`` and dropped by :func:`weakref.finalize` when the object
is collected: it lives exactly as long as the result, is never saved nor compared, and a
copy made with :func:`dataclasses.replace` (a new object) starts empty. The values must not
refer to the object itself (they would keep it alive): they are arrays and xarray objects
computed from its data.
"""

from __future__ import annotations

import threading
import weakref

__all__ = ["cache_of", "cached_keys", "clear"]

_CACHES: dict[int, dict] = {}
_LOCK = threading.Lock()


def _drop(key: int) -> None:
    _CACHES.pop(key, None)


def cache_of(obj: object) -> dict:
    """The diagnostics' cache of ``obj``: a dict that lives as long as ``obj``.

    An object that cannot be weakly referenced gets a fresh, unshared dict every time (its
    diagnostics are then recomputed, never wrong).

    Parameters
    ----------
    obj : object
        An audit result (any weakly referenceable object).

    Returns
    -------
    dict

    Examples
    --------
    >>> from pymc_edp.diagnostics._cache import cache_of, cached_keys
    >>> class Audit:
    ...     pass
    >>> a = Audit()
    >>> cache_of(a)["bins"] = [0.0, 1.0]
    >>> cache_of(a)["bins"]
    [0.0, 1.0]
    >>> cached_keys(Audit())  # another object: its own, empty cache
    []
    """
    key = id(obj)
    cache = _CACHES.get(key)
    if cache is not None:
        return cache
    with _LOCK:
        cache = _CACHES.get(key)
        if cache is None:
            cache = {}
            try:
                weakref.finalize(obj, _drop, key)
            except TypeError:  # not weakly referenceable: nothing is kept
                return cache
            _CACHES[key] = cache
    return cache


def cached_keys(obj: object) -> list:
    """The keys of what is cached for ``obj`` (without creating a cache).

    Examples
    --------
    >>> from pymc_edp.diagnostics._cache import cache_of, cached_keys
    >>> class Audit:
    ...     pass
    >>> a = Audit()
    >>> cache_of(a)["order"] = [1, 0]
    >>> cached_keys(a)
    ['order']
    """
    return list(_CACHES.get(id(obj), ()))


def clear(obj: object) -> None:
    """Forget what was cached for ``obj``.

    Examples
    --------
    >>> from pymc_edp.diagnostics._cache import cache_of, cached_keys, clear
    >>> class Audit:
    ...     pass
    >>> a = Audit()
    >>> cache_of(a)["order"] = [1, 0]
    >>> clear(a)
    >>> cached_keys(a)
    []
    """
    cache = _CACHES.get(id(obj))
    if cache is not None:
        cache.clear()

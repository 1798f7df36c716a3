"""What pymc_edp compiles from a user's model, kept for as long as the model lives.

Built once per model and :func:`structure_key` (``tune_prior`` audits one model many times
at other ``pm.Data`` values, which compiled functions read at every call). Weakly keyed by
the model; a cached value must not hold the model itself (hold a :func:`weakref.ref`).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

__all__ = ["per_model", "structure_key"]

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def structure_key(model) -> str:
    """A hash of the variable names, ``pm.Data`` names, dtypes and shapes, and constant data."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr(sorted(model.named_vars)).encode())
    for var in getattr(model, "data_vars", ()):
        value = var.get_value(borrow=True)
        h.update(f"{var.name}:{np.asarray(value).dtype}:{np.shape(value)};".encode())
    shared = {id(v) for v in getattr(model, "data_vars", ())}
    for rv in model.observed_RVs:
        data = model.rvs_to_values.get(rv)
        if data is None or id(data) in shared:
            continue
        value = getattr(data, "data", None)
        if value is not None:
            value = np.ascontiguousarray(np.asarray(value))
            h.update(f"{rv.name}:{value.dtype}:{value.shape};".encode())
            h.update(value.tobytes())
    return h.hexdigest()


def per_model(model, key: Hashable, build: Callable[[], Any]) -> Any:
    """``build()`` once per ``model``, ``key`` and :func:`structure_key`."""
    try:
        entry = _CACHE.setdefault(model, {})
    except TypeError:  # pragma: no cover - a model that cannot be weakly referenced
        return build()
    full = (key, structure_key(model))
    if full not in entry:
        entry[full] = build()
    return entry[full]

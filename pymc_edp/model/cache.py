"""What pymc_edp compiles from a user's model, kept for as long as the model lives.

A notebook audits one model many times (``tune_prior`` runs an audit per trial value of a
prior's strength, set with ``pm.set_data``). What is compiled from the model's graph does
not change between those audits, so it is built once per model and *structure*
(:func:`structure_key`): the variables' names, the ``pm.Data`` shapes and dtypes, and the
observed values compiled in as constants. ``pm.Data`` values are read by the compiled
functions at every call, so a ``pm.set_data`` between audits needs nothing compiled again.

Entries are weakly keyed by the model (a model that is gone takes its entries with it); a
cached value must not hold the model itself (hold a :func:`weakref.ref`).
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
    """A hash of what is compiled from ``model``, but for ``pm.Data`` values.

    The variables' names, each ``pm.Data``'s name, dtype and shape, and observed values that
    are not ``pm.Data`` (constants of the graph). ``pm.Data`` values are not in it: compiled
    functions read them at every call (and refits set the model's current ones,
    :func:`pymc_edp.refit.warm.current_data`), so changing a prior's strength with
    ``pm.set_data`` between audits (``tune_prior``) compiles nothing again.
    """
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
    """``build()``, once per ``model``, ``key`` and model structure.

    ``key`` names what is built (and its arguments); the model's :func:`structure_key` is
    added to it, so a model changed in place (a variable added, a data shape or a constant
    observed value changed) builds again. A model that cannot be weakly referenced builds
    every time.
    """
    try:
        entry = _CACHE.setdefault(model, {})
    except TypeError:  # pragma: no cover - a model that cannot be weakly referenced
        return build()
    full = (key, structure_key(model))
    if full not in entry:
        entry[full] = build()
    return entry[full]

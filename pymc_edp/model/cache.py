"""What pymc_edp compiles from a user's model, kept for as long as the model lives.

Built once per model and :func:`structure_key` (``tune_prior`` audits one model at many
``pm.Data`` values), weakly keyed by the model: a cached value must not hold the model (hold a
:func:`weakref.ref`), nor data of its own. What it compiled reads the model's current
``pm.Data`` at every call, so that after ``pm.set_data`` an audit equals a fresh process's:
functions compiled from a clone (PyMC's model rewrites deep-copy every shared variable) do
once :func:`share_data` has given the clone the model's storage. A clone that must hold other
values (the refits' neighbour model) takes :func:`current_data` before each use.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

__all__ = ["current_data", "per_model", "share_data", "structure_key"]

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _storage(model) -> dict[tuple[str, str], Any]:
    """The model's ``pm.Data`` and coordinate lengths, by kind and name (not its generators)."""
    from pytensor.compile.sharedvalue import SharedVariable

    out = {
        ("data", name): var
        for name, var in model.named_vars.items()
        if isinstance(var, SharedVariable)
    }
    for name, var in getattr(model, "dim_lengths", {}).items():
        if isinstance(var, SharedVariable):
            out[("dim", name)] = var
    return out


def share_data(model, clone):
    """``clone`` with its copies of ``model``'s ``pm.Data`` reading ``model``'s storage.

    Each copy (matched by name and type) takes its original's container, as
    ``SharedVariable.clone`` does. Call it before compiling anything from ``clone``, which must
    never be given data of its own.

    Examples
    --------
    >>> from pymc.model.fgraph import clone_model
    >>> from pymc_edp.model.cache import share_data
    >>> with pm.Model() as model:
    ...     x = pm.Data("x", np.array([1.0, 2.0]))
    >>> clone = share_data(model, clone_model(model))
    >>> model.set_data("x", np.array([5.0, 6.0]))
    >>> clone["x"].get_value()
    array([5., 6.])
    """
    own = _storage(model)
    for key, var in _storage(clone).items():
        original = own.get(key)
        if original is not None and original is not var and original.type == var.type:
            var.container = original.container
    return clone


def current_data(model, clone) -> dict[str, np.ndarray]:
    """``model``'s ``pm.Data`` values now (copies), by name, for those ``clone`` also has."""
    names = set(clone.named_vars)
    return {
        var.name: np.array(var.get_value(borrow=True))
        for var in getattr(model, "data_vars", ())
        if var.name in names
    }


def structure_key(model) -> str:
    """A hash of what compiled functions cannot follow by themselves.

    The variable names, the ``pm.Data`` names, dtypes and shapes, the coordinates' lengths,
    and the values of observed data that are constants (not ``pm.Data``).
    """
    from pytensor.compile.sharedvalue import SharedVariable

    h = hashlib.blake2b(digest_size=16)
    h.update(repr(sorted(model.named_vars)).encode())
    for var in getattr(model, "data_vars", ()):
        value = var.get_value(borrow=True)
        h.update(f"{var.name}:{np.asarray(value).dtype}:{np.shape(value)};".encode())
    for name, length in sorted(getattr(model, "dim_lengths", {}).items()):
        if isinstance(length, SharedVariable):
            h.update(f"dim {name}:{np.asarray(length.get_value(borrow=True)).tolist()};".encode())
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
    """``build()`` once per ``model``, ``key`` and :func:`structure_key`.

    What ``build`` returns must read the model's ``pm.Data`` at each use (see the module's
    notes). Values built for the model's earlier structure are dropped.
    """
    try:
        entry = _CACHE.setdefault(model, {})
    except TypeError:  # pragma: no cover - a model that cannot be weakly referenced
        return build()
    structure = structure_key(model)
    for old in [k for k in entry if k[1] != structure]:
        del entry[old]
    full = (key, structure)
    if full not in entry:
        entry[full] = build()
    return entry[full]

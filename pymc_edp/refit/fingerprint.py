"""Fingerprints of what a refit is computed from, so that a checkpoint never reuses another's.

A saved refit is reused only if computed from the same model graph, data, neighbour
records and replacement values (refit settings are the checkpoint's configuration hash).
Each part is a short SHA-256 digest, the same in any process (never of ``id()``, string
hashing or addresses): the model and data once per audit (:class:`AuditFingerprint`),
each neighbour's part when its refit is set up (:func:`neighbour_fingerprint`).
"""

from __future__ import annotations

import functools
import hashlib
import re
import types
from collections.abc import Callable, Mapping

import numpy as np

__all__ = [
    "PARTS",
    "AuditFingerprint",
    "builder_fingerprint",
    "data_fingerprint",
    "model_fingerprint",
    "neighbour_fingerprint",
]

#: What a refit's fingerprint covers, and how a difference in each part is named.
PARTS = {
    "model": "another model graph",
    "data": "other data",
    "records": "other records (neighbour or group membership)",
    "replacement": "other replacement values",
}

#: Memory addresses in a ``repr`` (``<function f at 0x7f...>``): never hashed.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+|0x[0-9a-fA-F]{6,}")


def _short(h) -> str:
    return h.hexdigest()[:16]


def _update_array(h, value) -> None:
    """Feed an array's dtype, shape and bytes (objects by their ``repr``) to ``h``."""
    arr = np.asarray(value)
    if arr.dtype.kind == "O":
        h.update(f"O|{arr.shape}|".encode())
        for x in arr.ravel():
            h.update(_text(x).encode() + b"|")
        return
    arr = np.ascontiguousarray(arr)
    h.update(f"{arr.dtype.str}|{arr.shape}|".encode())
    h.update(arr.tobytes())


def _text(x) -> str:
    """A ``repr`` without memory addresses."""
    return _ADDRESS.sub("", repr(x))


def _op_text(op) -> str:
    """An op's class, its ``str`` and its properties, without memory addresses."""
    parts = [f"{type(op).__module__}.{type(op).__qualname__}", str(op)]
    for prop in getattr(op, "__props__", ()):
        value = getattr(op, prop, None)
        if isinstance(value, np.ndarray):
            h = hashlib.sha256()
            _update_array(h, value)
            parts.append(f"{prop}=array:{h.hexdigest()}")
        else:
            parts.append(f"{prop}={value!s}")
    return _ADDRESS.sub("", "|".join(parts))


def _graph_hashes(outputs, data: Mapping[int, str]) -> tuple[str, str]:
    """``(graph, data)`` digests of the PyTensor graph of ``outputs``.

    ``data`` maps the ``id`` of data variables (observed values, ``pm.Data``) to their names:
    their values go to the data digest, a placeholder to the graph's. Variables are numbered
    in depth-first order, so the digests depend on the graph's structure only.
    """
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    g, d = hashlib.sha256(), hashlib.sha256()
    number: dict[int, int] = {}
    alive = []  # keeps every numbered variable alive, so that no id() is reused

    def numbered(var) -> None:
        number[id(var)] = len(number)
        alive.append(var)

    stack = [(out, False) for out in reversed(outputs)]
    while stack:
        var, ready = stack.pop()
        if id(var) in number:
            continue
        node = var.owner
        if node is None:
            numbered(var)
            name = data.get(id(var))
            if name is not None:
                g.update(f"data|{name}|{var.type}\n".encode())
                d.update(f"{name}|".encode())
                value = var.data if isinstance(var, Constant) else var.get_value(borrow=True)
                _update_array(d, value)
            elif isinstance(var, Constant):
                g.update(f"constant|{var.type}|".encode())
                _update_array(g, var.data)
                g.update(b"\n")
            elif isinstance(var, SharedVariable):
                value = var.get_value(borrow=True)
                g.update(f"shared|{var.name}|{var.type}|".encode())
                if isinstance(value, np.ndarray | np.generic | int | float | bool):
                    _update_array(g, value)  # random generators: their type only
                g.update(b"\n")
            else:
                g.update(f"input|{var.name}|{var.type}\n".encode())
            continue
        if not ready:
            stack.append((var, True))
            stack.extend((x, False) for x in reversed(node.inputs) if id(x) not in number)
            continue
        inputs = ",".join(str(number[id(x)]) for x in node.inputs)
        outs = ",".join(f"{o.name}:{o.type}" for o in node.outputs)
        g.update(f"apply|{_op_text(node.op)}|{inputs}|{outs}\n".encode())
        for out in node.outputs:
            numbered(out)
    g.update(f"outputs|{','.join(str(number[id(o)]) for o in outputs)}".encode())
    return _short(g), _short(d)


def model_fingerprint(model) -> tuple[str, str]:
    """``(graph, data)`` digests of a PyMC model, the same for two builds of it.

    The graph: the joint log density (constants included), deterministics, free variables'
    graphs and initial values; the data: observed values and ``pm.Data`` containers.

    Examples
    --------
    >>> from pymc_edp.refit.fingerprint import model_fingerprint
    >>> def build(prior_sd, y):
    ...     with pm.Model() as model:
    ...         mu = pm.Normal("mu", 0.0, prior_sd)
    ...         pm.Normal("y", mu, 1.0, observed=y)
    ...     return model
    >>> a = model_fingerprint(build(1.0, [0.5, 1.5]))
    >>> b = model_fingerprint(build(2.0, [0.5, 1.5]))  # another prior: another graph
    >>> a == model_fingerprint(build(1.0, [0.5, 1.5])), b[0] != a[0], b[1] == a[1]
    (True, True, True)
    """
    data: dict[int, str] = {}
    for rv in model.observed_RVs:
        data[id(model.rvs_to_values[rv])] = f"observed:{rv.name}"
    for var in getattr(model, "data_vars", ()):
        data.setdefault(id(var), f"pm.Data:{var.name}")
    outputs = [model.logp(), *model.deterministics, *model.free_RVs]
    graph, values = _graph_hashes(outputs, data)
    h = hashlib.sha256(graph.encode())
    for rv in model.free_RVs:  # where the sampler starts
        initval = model.rvs_to_initial_values.get(rv)
        h.update(f"|initval:{rv.name}:".encode())
        if isinstance(initval, str) or initval is None:
            h.update(str(initval).encode())
        elif hasattr(initval, "type"):  # a symbolic initial value
            h.update(_graph_hashes([initval], {})[0].encode())
        else:
            _update_array(h, initval)
    return _short(h), values


def data_fingerprint(observed: Mapping[str, object]) -> str:
    """Digest of observed values per variable (names, dtypes, shapes and values).

    Examples
    --------
    >>> from pymc_edp.refit.fingerprint import data_fingerprint
    >>> a = data_fingerprint({"y": np.array([1.0, 2.0])})
    >>> a == data_fingerprint({"y": np.array([1.0, 7.0])})
    False
    """
    h = hashlib.sha256()
    for name in sorted(observed):
        h.update(f"{name}|".encode())
        _update_array(h, observed[name])
    return _short(h)


#: How deep :func:`builder_fingerprint` follows the functions a builder calls.
_DEPTH = 3


def _code_text(code: types.CodeType) -> str:
    """A code object's bytecode, names and constants (nested code objects included)."""
    consts = []
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            consts.append(_code_text(c))
        elif isinstance(c, frozenset):  # its iteration order depends on string hashing
            consts.append(repr(sorted(map(repr, c))))
        else:
            consts.append(repr(c))
    return "|".join(
        [code.co_code.hex(), ",".join(code.co_names), ",".join(code.co_varnames), *consts]
    )


def _update_value(h, value, depth: int, seen: set) -> None:
    """Feed what a builder uses (arrays, numbers, frames, functions) to ``h``."""
    if id(value) in seen:
        h.update(b"<seen>|")
        return
    if isinstance(value, types.ModuleType):
        h.update(f"module:{value.__name__}|".encode())
    elif isinstance(value, str | bytes | int | float | complex | bool | type(None)):
        h.update(f"{type(value).__name__}:{value!r}|".encode())
    elif isinstance(value, np.ndarray | np.generic):
        _update_array(h, value)
    elif hasattr(value, "to_numpy") and hasattr(value, "shape"):  # pandas
        columns = _text(list(getattr(value, "columns", [])))
        h.update(f"{type(value).__qualname__}|{columns}|".encode())
        _update_array(h, value.to_numpy())
    elif isinstance(value, list | tuple):
        h.update(f"{type(value).__name__}[{len(value)}]|".encode())
        seen.add(id(value))
        for x in value:
            _update_value(h, x, depth, seen)
    elif isinstance(value, Mapping):
        h.update(f"mapping[{len(value)}]|".encode())
        seen.add(id(value))
        for key in sorted(value, key=repr):
            h.update(f"{key!r}=".encode())
            _update_value(h, value[key], depth, seen)
    elif callable(value):
        if depth >= _DEPTH:
            name = getattr(value, "__qualname__", type(value).__qualname__)
            h.update(f"callable:{name}|".encode())
            return
        seen.add(id(value))
        _update_callable(h, value, depth + 1, seen)
    else:
        h.update(f"{type(value).__module__}.{type(value).__qualname__}|".encode())


def _update_callable(h, fn, depth: int, seen: set) -> None:
    if isinstance(fn, functools.partial):
        h.update(b"partial|")
        _update_value(h, fn.func, depth, seen)
        _update_value(h, fn.args, depth, seen)
        _update_value(h, dict(fn.keywords), depth, seen)
        return
    if isinstance(fn, types.MethodType):
        h.update(f"method:{type(fn.__self__).__qualname__}|".encode())
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):  # a builtin, a class, an object with __call__
        h.update(f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}|".encode())
        call = type(fn).__call__
        if isinstance(call, types.FunctionType):
            _update_callable(h, call, depth, seen)
            _update_value(h, dict(getattr(fn, "__dict__", {})), depth, seen)
        return
    code = fn.__code__
    h.update(f"function:{fn.__module__}.{fn.__qualname__}|{_code_text(code)}|".encode())
    _update_value(h, fn.__defaults__, depth, seen)
    _update_value(h, fn.__kwdefaults__, depth, seen)
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
        h.update(f"closure:{name}=".encode())
        try:
            _update_value(h, cell.cell_contents, depth, seen)
        except ValueError:  # an empty cell
            h.update(b"<empty>|")
    for name in code.co_names:  # module-level data and helpers it uses
        if name in fn.__globals__:
            h.update(f"global:{name}=".encode())
            _update_value(h, fn.__globals__[name], depth, seen)


def builder_fingerprint(build_model: Callable) -> str:
    """Digest of a ``build_model`` function: its code, and the values and helpers it uses.

    Bytecode and constants, defaults, closed-over values and the module-level values it names
    (arrays, frames, numbers, the code of functions it calls, a few levels deep).

    Examples
    --------
    >>> from pymc_edp.refit.fingerprint import builder_fingerprint
    >>> def maker(sd):
    ...     def build(data):
    ...         return sd
    ...     return build
    >>> builder_fingerprint(maker(1.0)) == builder_fingerprint(maker(2.0))
    False
    """
    h = hashlib.sha256()
    _update_value(h, build_model, 0, set())
    return _short(h)


def neighbour_fingerprint(changes: Mapping[str, tuple]) -> dict[str, str]:
    """``{"records": ..., "replacement": ...}`` digests of one neighbour's ``changes``.

    ``changes`` as :func:`pymc_edp.model.transform.neighbour_changes` gives them.

    Examples
    --------
    >>> from pymc_edp.refit.fingerprint import neighbour_fingerprint
    >>> a = neighbour_fingerprint({"y": (np.array([3]), np.array([[2.5]]))})
    >>> b = neighbour_fingerprint({"y": (np.array([3]), np.array([[4.0]]))})
    >>> a["records"] == b["records"], a["replacement"] == b["replacement"]
    (True, False)
    """
    records, values = hashlib.sha256(), hashlib.sha256()
    for name in sorted(changes):
        local, new = changes[name]
        records.update(f"{name}|".encode())
        _update_array(records, np.asarray(local, dtype=np.int64))
        values.update(f"{name}|".encode())
        if new is None:
            values.update(b"removed|")
        else:
            _update_array(values, new)
    return {"records": _short(records), "replacement": _short(values)}


class AuditFingerprint:
    """The model and data parts of an audit's refit fingerprints, computed once.

    ``model`` is None with ``build_model`` and no model; ``observed`` holds the observed
    values the refits start from.
    """

    def __init__(self, model, observed: Mapping, build_model: Callable | None = None):
        graph = data = ""
        if model is not None:
            graph, data = model_fingerprint(model)
        if build_model is not None:
            graph = f"{graph}+{builder_fingerprint(build_model)}"
        self.model = _short(hashlib.sha256(graph.encode()))
        self.data = _short(hashlib.sha256(f"{data}+{data_fingerprint(observed)}".encode()))

    def of(self, changes: Mapping[str, tuple]) -> dict[str, str]:
        """The full fingerprint of the refit of a neighbour with these ``changes``."""
        return {"model": self.model, "data": self.data, **neighbour_fingerprint(changes)}

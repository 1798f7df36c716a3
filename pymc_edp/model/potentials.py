"""Likelihoods written in a ``pm.Potential``, read from the graph and audited as records.

pymc-marketing's Gamma-Gamma spend model and the gallery's Weibull survival model put one
log-likelihood term per record in a Potential of shape ``(n,)``: element ``i`` is computed
from row ``i`` of a few data arrays (constants or ``pm.Data`` of leading length ``n``) and
the parameters. :func:`read_potentials` proves it from the graph, as
:func:`~pymc_edp.model.structure.read_structure` does for an observed variable: every data
array the Potential reads is followed through the graph, the record axis (the leading axis
of length ``n``) as one axis shared by all of them; the Potential holds one term per record
when its first axis runs along that axis and nothing merges it (a sum, a shifted slice, a
gather by a data index). Arrays of another length (a lookup table, a vector of constants)
are read as fixed values, and must not be aligned with the records either.

Such a Potential *is* the likelihood of its records, and :func:`potentials_as_observed`
writes it as one, an observed ``pm.CustomDist``: the posterior is unchanged, and every stage
of the audit sees the records as those of an observed variable. Switching element ``i`` off
is removing record ``i`` exactly: the graph proves no other element, and no other term,
reads its data.

A Potential that reads data but is not proven so (summed to one term, reading other rows)
is not audited: :attr:`PotentialLikelihood.advice` says how to write it as
``pm.CustomDist(..., observed=)``.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field

import numpy as np

from pymc_edp.model.cache import per_model, share_data
from pymc_edp.model.compat import graph_ancestors, initial_values, without_initial_values
from pymc_edp.model.structure import (
    _Dep,
    _propagate,
    _Unreadable,
    holds_values,
    observed_node,
    read_structure,
)

__all__ = [
    "PotentialLikelihood",
    "Potentials",
    "potentials_as_observed",
    "read_potentials",
]

#: The label of the record axis (the data arrays' leading axis) in the alignment analysis.
_RECORD = "record"

#: Integer inputs of these operations (from the given position on) are shapes, not data.
_SHAPE_INPUTS = {"Reshape": 1, "Alloc": 1, "AllocEmpty": 0, "SpecifyShape": 1}

#: Largest integer a float64 column holds exactly (integer arrays beside float ones).
_EXACT_INT = 2**53


@dataclass(frozen=True)
class PotentialLikelihood:
    """A ``pm.Potential`` that reads data, and whether its elements are records.

    Attributes
    ----------
    name : str
    shape : tuple of int
        The Potential's shape (``()`` for a single term).
    arrays : tuple of str
        The data arrays it reads, described (``"pm.Data 'x'"``, ``"a constant of shape
        (60,)"``); those holding its records first.
    n_records : int
        Rows of the data arrays along the Potential's first axis (0 when none).
    proven : bool
        One term per record: element ``i`` reads row ``i`` of each of its record arrays only.
    reason : str
        What the graph shows, in a sentence.
    """

    name: str
    shape: tuple
    arrays: tuple
    n_records: int
    proven: bool
    reason: str
    # the graph pieces the rewrite needs (not compared, not shown)
    _graph: object = field(default=None, repr=False, compare=False)
    _params: tuple = field(default=(), repr=False, compare=False)
    _records: tuple = field(default=(), repr=False, compare=False)
    _shared: tuple = field(default=(), repr=False, compare=False)
    _labels: tuple = field(default=(), repr=False, compare=False)

    def describe(self) -> str:
        """What its records are, in a sentence for ``res.records``."""
        held = _summary(self._records) if self._records else "its data"
        return (
            f"Potential {self.name!r}: {self.n_records} records (its elements), element i "
            f"reading row i of {held} only (proven from the graph); audited as the observed "
            f"variable {self.name!r}, a record removed by switching its element off"
        )

    def advice(self) -> str:
        """Why its records are not audited, and how to write it so that they are."""
        what = ", ".join(self.arrays) if self.arrays else "data"
        params = ", ".join(name for name, _ in self._params) or "*params"
        return (
            f"the model's Potential {self.name!r} reads data ({what}) but {self.reason}: the "
            "records in it are no neighbour of this audit (their epsilon is not measured). "
            "Write the likelihood as an observed variable with one term per record, "
            f'pm.CustomDist("{self.name}", {params}, logp=logp, observed=data) with data '
            "holding one row per record (np.column_stack of the arrays) and "
            f"logp(value, {params}) the Potential's expression with the arrays read from "
            "value's columns and not summed; or keep the Potential with one element per "
            "record, each computed from its own row of the data (docs/troubleshooting.md)"
        )


@dataclass(frozen=True)
class Potentials:
    """The model the audit reads, and the Potentials holding data that it found.

    Attributes
    ----------
    model : pymc.Model
        The user's model, or (when some Potential's elements are proven to be records) a
        clone in which each such Potential is an observed ``pm.CustomDist`` of its name.
    found : dict of str to PotentialLikelihood
        Every Potential reading data arrays other than observed values.
    """

    model: object
    found: dict

    @property
    def audited(self) -> tuple[str, ...]:
        """Potentials whose elements are audited as records (observed variables of ``model``)."""
        return tuple(n for n, p in self.found.items() if p.proven)

    @property
    def unproven(self) -> tuple[PotentialLikelihood, ...]:
        """Potentials holding data whose records cannot be audited."""
        return tuple(p for p in self.found.values() if not p.proven)


# ---------------------------------------------------------------------------- reading
def read_potentials(model) -> dict[str, PotentialLikelihood]:
    """Every ``pm.Potential`` of ``model`` that reads data, and whether its elements are records.

    Data are arrays of more than one element: constants and ``pm.Data`` (not the integer
    shapes of a reshape). A Potential that reads an observed variable's values (regression
    weights as ``(w - 1) * pm.logp(y, y_data)``) holds part of those records' likelihood
    and is left to :func:`~pymc_edp.model.pymc.potential_records`; one on the parameters
    alone is part of the prior.

    Examples
    --------
    >>> from pymc_edp.model.potentials import read_potentials
    >>> x, z = np.array([1.0, 3.0, 2.0]), np.array([0.5, 1.5, 0.2])
    >>> with pm.Model() as m:
    ...     b = pm.Normal("b")
    ...     _ = pm.Potential("lik", pm.logp(pm.Normal.dist(b * x, 1.0), z))
    ...     _ = pm.Potential("total", pm.logp(pm.Normal.dist(b, 1.0), x + z).sum())
    ...     _ = pm.Potential("penalty", -(b**2))
    >>> found = read_potentials(m)
    >>> sorted(found), found["lik"].proven, found["lik"].n_records
    (['lik', 'total'], True, 3)
    >>> found["total"].reason
    'it is a single term for all its records'
    """
    out = {}
    for pot in model.potentials:
        found = _read_potential(model, pot)
        if found is not None:
            out[pot.name] = found
    return out


def _read_potential(model, pot) -> PotentialLikelihood | None:
    from pytensor.graph.replace import clone_replace

    name = pot.name
    free = list(model.free_RVs)
    placeholders = {rv: rv.type(name=f"{rv.name}_param") for rv in free}
    observed = {rv: rv.type() for rv in model.observed_RVs}
    (graph,) = clone_replace([pot], replace={**placeholders, **observed}, rebuild_strict=False)
    seen = set(graph_ancestors([graph]))
    if any(v in seen for v in observed.values()) or _reads_observed_values(model, seen):
        return None  # part of observed records' likelihood: potential_records
    arrays = _data_arrays(graph, seen)
    if not arrays:
        return None  # on the parameters alone: part of the prior
    params = tuple((rv.name, p) for rv, p in placeholders.items() if p in seen)
    if not params:
        return None  # a constant: no parameter's posterior depends on it
    shape = _shape(model, pot, graph)
    common = dict(name=name, _graph=graph, _params=params)
    if shape is None or int(np.prod(shape)) <= 1:
        why = "it is a single term for all its records"
        if shape is None:
            why = "its shape cannot be read"
        described = tuple(_label(a) for a in arrays)
        return PotentialLikelihood(shape=shape or (), arrays=described, n_records=0,
                                   proven=False, reason=why, **common)  # fmt: skip
    n = int(shape[0])
    records = [a for a in arrays if a.ndim >= 1 and len(_value(a)) == n]
    others = [a for a in arrays if a not in records]
    described = tuple(_label(a) for a in (*records, *others))
    proven, reason = _elementwise(graph, records, others, n)
    elsewhere = _read_elsewhere(model, pot, records) if proven else None
    if elsewhere is not None:
        proven, reason = False, f"its records' data are also read by {elsewhere}"
    if proven and any(a.ndim > 2 for a in records):
        proven, reason = False, "a record array has more than two axes"
    if proven and n < 2:
        proven, reason = False, "it has a single element"
    shared = tuple(a for a in others if _is_shared(a) and a.name)
    labels = _column_labels(records)
    return PotentialLikelihood(
        shape=tuple(int(s) for s in shape),
        arrays=described,
        n_records=n if records else 0,
        proven=proven,
        reason=reason,
        _records=tuple(records),
        _shared=shared,
        _labels=labels,
        **common,
    )


def _read_elsewhere(model, pot, records) -> str | None:
    """The first other term of the joint density reading ``records`` (or equal constants)."""
    others = [p for p in model.potentials if p is not pot]
    graphs = [
        (f"the Potential {p.name!r}", g)
        for p, g in zip(others, model.replace_rvs_by_values(others), strict=True)
    ]
    for rv in (*model.free_RVs, *model.observed_RVs):
        graphs.append((f"the log-density of {rv.name!r}", rv))
    for name, graph in graphs:
        if graph in model.basic_RVs:
            (graph,) = model.logp(vars=[graph], jacobian=False, sum=False)
        if any(_same_array(v, r) for v in graph_ancestors([graph]) for r in records):
            return name
    return None


def _same_array(var, record) -> bool:
    """``var`` is the array ``record`` or a constant equal to it."""
    from pytensor.graph.basic import Constant

    if var is record:
        return True
    if not isinstance(var, Constant) or _is_shared(record):
        return False
    a, b = np.asarray(var.data), _value(record)
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))


def _reads_observed_values(model, seen) -> bool:
    """Whether a graph reads an observed variable's data (its values, or an equal constant)."""
    for rv in model.observed_RVs:
        value, data = observed_node(model, rv)
        if any(holds_values(v, value, data) for v in seen):
            return True
    return False


def _is_shared(var) -> bool:
    from pytensor.compile.sharedvalue import SharedVariable

    return isinstance(var, SharedVariable)


def _value(var) -> np.ndarray:
    if _is_shared(var):
        return np.asarray(var.get_value(borrow=True))
    return np.asarray(var.data)


def _data_arrays(graph, seen) -> list:
    """Constants and shared arrays (more than one numeric element) whose values ``graph`` reads."""
    from pytensor.graph.basic import Constant
    from pytensor.tensor.type import TensorType

    from pymc_edp.model.compat import graph_toposort

    shape_only: dict = {}
    for node in graph_toposort([graph]):
        first = _SHAPE_INPUTS.get(type(node.op).__name__)
        for k, var in enumerate(node.inputs):
            is_shape = first is not None and k >= first
            shape_only[var] = shape_only.get(var, True) and is_shape
    out = []
    for var in seen:
        if var.owner is not None or not isinstance(var.type, TensorType):
            continue
        if not (isinstance(var, Constant) or _is_shared(var)) or shape_only.get(var, False):
            continue
        value = _value(var)
        if value.size >= 2 and value.dtype.kind in "biuf":
            out.append(var)
    return sorted(out, key=lambda v: (not _is_shared(v), v.name or "", id(v)))


def _label(var) -> str:
    """``pm.Data 'x' (60,)``, or ``a constant (60, 2)``."""
    shape = tuple(int(s) for s in np.shape(_value(var)))
    if _is_shared(var) and var.name:
        return f"pm.Data {var.name!r} {shape}"
    return f"a constant {shape}"


def _summary(records) -> str:
    """The record arrays in a few words: ``pm.Data 'x' and 2 constant arrays``."""
    named = [f"pm.Data {v.name!r}" for v in records if _is_shared(v) and v.name]
    unnamed = len(records) - len(named)
    if unnamed:
        named.append("a constant array" if unnamed == 1 else f"{unnamed} constant arrays")
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def _column_labels(records) -> tuple[str, ...]:
    """A label per column of the records' data (an array's name, or ``data<j>``)."""
    out = []
    for j, var in enumerate(records):
        base = var.name if _is_shared(var) and var.name else f"data{j}"
        width = int(np.prod(np.shape(_value(var))[1:], dtype=np.int64))
        out += [base] if _value(var).ndim == 1 else [f"{base}[{k}]" for k in range(width)]
    return tuple(out)


def _shape(model, pot, graph) -> tuple | None:
    """The Potential's shape: static, else evaluated at the model's initial point."""
    static = graph.type.shape
    if all(s is not None for s in static):
        return tuple(int(s) for s in static)
    try:
        (value_graph,) = model.replace_rvs_by_values([pot])
        fn = model.compile_fn(
            value_graph.shape, inputs=model.value_vars, on_unused_input="ignore", point_fn=True
        )
        return tuple(int(s) for s in np.asarray(fn(model.initial_point())))
    except Exception:  # a shape that depends on what cannot be evaluated here
        return None


def _elementwise(graph, records, others, n: int) -> tuple[bool, str]:
    """``(proven, reason)``: element ``i`` of ``graph`` reads row ``i`` of ``records`` only."""
    if not records:
        return False, f"none of the data arrays it reads has one row per element ({n})"
    start = {}
    for j, var in enumerate(records):
        start[var] = _Dep((_RECORD, *((j, k) for k in range(1, var.ndim))))
    for j, var in enumerate(others):
        start[var] = _Dep(tuple(("other", j, k) for k in range(var.ndim)))
    try:
        dep = _propagate(start, [graph]).get(graph)
    except _Unreadable as err:
        return False, f"its structure cannot be read from the graph ({err})"
    if dep is None:
        return False, "its elements do not read the data"
    if _RECORD in dep.merged:
        why = f" ({dep.why})" if dep.why else ""
        return False, f"its elements read other records' rows{why}"
    if not dep.axes or dep.axes[0] != _RECORD:
        return False, "its first axis does not run along the rows of its data"
    if _RECORD in dep.axes[1:]:  # an element per pair of records, summed into a row's term
        return False, "its elements read other records' rows (a later axis runs along them)"
    return True, "one element per record, each reading its own row of the data"


# ---------------------------------------------------------------------------- rewriting
def potentials_as_observed(model) -> Potentials:
    """``model`` with every Potential proven to hold one term per record as observed records.

    Each such Potential becomes ``pm.CustomDist(name, *params, logp=..., observed=data)``:
    ``data`` holds its record arrays side by side (one row per record, an integer array
    cast exactly to floats beside float ones, and back in the log-density), ``logp`` is the
    Potential's expression with the arrays read from ``data``'s columns (summed over any
    axes after the first). The joint density is the model's; the clone's ``pm.Data`` read
    the model's. Built once per model and values of the ``pm.Data`` it stacks (kept by
    :func:`~pymc_edp.model.cache.per_model`).

    Returns
    -------
    Potentials
        With ``model`` itself when no Potential is proven per record.

    Examples
    --------
    >>> from pymc_edp.model.potentials import potentials_as_observed
    >>> x, z = np.array([1.0, 3.0, 2.0]), np.array([0.5, 1.5, 0.2])
    >>> with pm.Model() as m:
    ...     b = pm.Normal("b")
    ...     _ = pm.Potential("lik", pm.logp(pm.Normal.dist(b * x, 1.0), z))
    >>> pots = potentials_as_observed(m)
    >>> pots.audited, [rv.name for rv in pots.model.observed_RVs], pots.model.potentials
    (('lik',), ['lik'], [])
    >>> bool(pots.model.compile_logp()({"b": 0.3}) == m.compile_logp()({"b": 0.3}))
    True
    """
    if not model.potentials:
        return Potentials(model, {})
    stacked = {}
    found = read_potentials(model)
    for p in found.values():
        for var in p._records if p.proven else ():
            if _is_shared(var):
                stacked[var.name] = _value(var)
    h = hashlib.blake2b(digest_size=16)
    for key in sorted(stacked):
        value = np.ascontiguousarray(stacked[key])
        h.update(f"{key}:{value.dtype}:{value.shape};".encode())
        h.update(value.tobytes())
    key = ("potentials as observed", h.hexdigest())
    return per_model(model, key, lambda: _as_observed(model, read_potentials(model)))


def _as_observed(model, found: dict) -> Potentials:
    proven = [p for p in found.values() if p.proven]
    if not proven:
        return Potentials(model, found)
    new = _without_potentials(model, {p.name for p in proven})
    kept = {}
    for p in proven:
        rv = _add_custom_dist(model, new, p)
        st = read_structure(new, rv)
        if st.coupled:  # the rewritten graph must say so too; never guess
            kept[p.name] = dataclasses.replace(p, proven=False, reason=st.reason)
            return _as_observed(model, {**found, **kept})
        kept[p.name] = p
    return Potentials(new, {**found, **kept})


def _without_potentials(model, names: set):
    """A clone of ``model`` without the Potentials ``names``, reading the model's ``pm.Data``."""
    from pymc.model.fgraph import ModelPotential, fgraph_from_model, model_from_fgraph

    fgraph, _ = fgraph_from_model(without_initial_values(model))
    for i in reversed(range(len(fgraph.outputs))):
        out = fgraph.outputs[i]
        if isinstance(getattr(out.owner, "op", None), ModelPotential) and out.name in names:
            fgraph.remove_output(i)
    new = model_from_fgraph(fgraph, mutate_fgraph=True)
    for name, value in initial_values(model).items():
        new.set_initval(new[name], value)
    return share_data(model, new)


def _stacked(records) -> tuple[np.ndarray, list]:
    """The record arrays side by side, ``(n, columns)`` (a single vector: ``(n,)``), and layout."""
    values = [_value(v) for v in records]
    if len(values) == 1 and values[0].ndim == 1:
        return values[0].copy(), [(records[0], None, None, 1, values[0].dtype)]
    kinds = {v.dtype.kind for v in values}
    if kinds <= {"b", "i", "u"}:
        dtype = np.dtype("int64")
    else:
        floats = [v.dtype for v in values if v.dtype.kind == "f"]
        dtype = np.result_type(*floats)
        if len(kinds) > 1:
            dtype = np.dtype("float64")
    columns, layout, at = [], [], 0
    for var, value in zip(records, values, strict=True):
        flat = value.reshape(value.shape[0], -1)
        if value.dtype.kind in "iu" and dtype.kind == "f" and np.abs(flat).max() > _EXACT_INT:
            raise ValueError(f"integers too large for float64 in {_label(var)}")
        columns.append(flat.astype(dtype))
        layout.append((var, at, at + flat.shape[1], value.ndim, value.dtype))
        at += flat.shape[1]
    return np.concatenate(columns, axis=1), layout


def _add_custom_dist(model, new, p: PotentialLikelihood):
    """Add the observed ``pm.CustomDist`` holding ``p``'s records to ``new``; return it."""
    import pymc as pm
    import pytensor.tensor as pt
    from pytensor.graph.replace import clone_replace

    data, layout = _stacked(p._records)
    graph = p._graph
    shared = {var: new.named_vars[var.name] for var in p._shared if var.name in new.named_vars}
    placeholders = [ph for _, ph in p._params]

    def logp(value, *params):
        # a RandomVariable hands its parameters over with leading batch axes of length 1
        params = [
            pt.squeeze(q, axis=tuple(range(q.ndim - ph.ndim))) if q.ndim > ph.ndim else q
            for q, ph in zip(params, placeholders, strict=True)
        ]
        replace = dict(zip(placeholders, params, strict=True))
        replace.update(shared)
        for var, lo, hi, ndim, dtype in layout:
            if lo is None:  # the data are this one vector
                replace[var] = value
                continue
            piece = value[:, lo] if ndim == 1 else value[:, lo:hi]
            if np.dtype(dtype) == np.dtype(bool):
                piece = piece > 0
            replace[var] = piece.astype(dtype) if piece.dtype != dtype else piece
        (out,) = clone_replace([graph], replace=replace, rebuild_strict=False)
        if out.ndim > 1:
            out = out.sum(axis=tuple(range(1, out.ndim)))
        return out

    params = [new[name] for name, _ in p._params]
    letters = [f"({','.join(f'a{j}_{k}' for k in range(v.ndim))})" for j, v in enumerate(params)]
    core = f"({data.shape[1]})" if data.ndim == 2 else "()"
    signature = f"{','.join(letters)}->{core}"
    dims = model.named_vars_to_dims.get(p.name)
    if dims and data.ndim == 1:
        dims = (dims[0],)
    elif dims:
        column = f"{p.name}_data"
        if column not in new.coords:
            new.add_coord(column, list(p._labels))
        dims = (dims[0], column)
    with new:
        return pm.CustomDist(
            p.name,
            *params,
            logp=logp,
            signature=signature,
            dtype=str(data.dtype),
            observed=data,
            dims=dims or None,
        )

"""What a record is, read from the model's graph.

A likelihood is *factorised* when it has one log-density term per record and each term
depends on its own record's value only. :func:`read_structure` proves it by following the
observed values through the log-density graph: every variable that depends on them carries,
per axis, the axis of the values it runs along (the same index, element for element), and
the set of the values' axes it depends on as a whole (a sum, a solve, a shifted slice,
anything else). A term per record is proven when the log-density's axes run along the
values' leading axes and only the trailing (within-record) axes were merged. An operation
the rules do not know (a ``scan``, a sort, a sparse product) proves nothing: the likelihood
is then *coupled*, as is one whose values another term reads (through a Deterministic),
however many terms it has. Nothing is concluded from one evaluation.

:func:`quadratic_in_values` proves, from the same graph, that a log-density is a quadratic
form in the values with coefficients that do not depend on them (a Gaussian likelihood).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pymc_edp.core.neighbours import RECORDS
from pymc_edp.model.compat import graph_ancestors, graph_toposort

__all__ = [
    "RECORDS",
    "Structure",
    "holds_values",
    "likelihood_terms",
    "observed_node",
    "quadratic_in_values",
    "read_structure",
    "values_as_input",
]

#: Distributions whose values lie on a manifold: one value is fixed by the others.
_CONSTRAINED = {
    "DirichletRV": "a simplex (Dirichlet)",
    "MultinomialRV": "counts with a fixed total (Multinomial)",
    "DirichletMultinomialRV": "counts with a fixed total (DirichletMultinomial)",
    "ZeroSumNormalRV": "a zero-sum vector (ZeroSumNormal)",
    "LKJCorrRV": "a correlation matrix (LKJCorr)",
    "LKJCholeskyCovRV": "a Cholesky factor (LKJCholeskyCov)",
    "WishartRV": "a positive-definite matrix (Wishart)",
}


@dataclass(frozen=True)
class Structure:
    """How the log-likelihood of observed variable ``name`` is laid over its records.

    Attributes
    ----------
    name : str
    factorised : bool
        One term per record, each depending on its own record only (proven from the graph).
    record_ndim : int
        Leading axes of the observed values that index records; the others are one record's
        components (a row of a multivariate observation). ``value_ndim`` for elements.
    value_shape : tuple of int
    reason : str
        One sentence: what the graph shows.
    terms : tuple of str
        The log-density terms that read the values besides the variable's own.
    constrained : str
        Non-empty when the values lie on a manifold (a simplex): no element can change alone.
    """

    name: str
    factorised: bool
    record_ndim: int
    value_shape: tuple
    reason: str
    terms: tuple = ()
    constrained: str = ""

    @property
    def n_records(self) -> int:
        """Number of records."""
        return int(np.prod(self.value_shape[: self.record_ndim], dtype=np.int64))

    @property
    def record_size(self) -> int:
        """Values per record (1 for elements)."""
        return int(np.prod(self.value_shape[self.record_ndim :], dtype=np.int64))

    @property
    def coupled(self) -> bool:
        """Not factorised: removing a record is not switching its term off."""
        return not self.factorised

    @property
    def plain(self) -> bool:
        """One term per value: nothing to say about what a record is."""
        return self.factorised and self.record_size == 1

    def check_changeable(self) -> None:
        """Refuse records that cannot change on their own (values of one simplex)."""
        if self.constrained and self.coupled:
            raise ValueError(
                f"the values of {self.name!r} are {self.constrained}: one value is fixed by "
                "the others, so no value can be removed or replaced on its own and a "
                "neighbour of one record is not a dataset the model could have seen. Observe "
                "several such vectors as the rows of an array (one row per record), or audit "
                "other observed variables (edp.Remove(observed=[...]))."
            )

    def describe(self) -> str:
        """What a record is, in a sentence for the printout."""
        count = f"{self.n_records} record{'' if self.n_records == 1 else 's'}"
        if self.record_ndim == len(self.value_shape):
            what = f"{count} (its values)"
        elif self.record_ndim == 1:
            what = f"{count} (the rows of its first axis)"
        else:
            what = f"{count} (along its first {self.record_ndim} axes)"
        return f"{self.name!r}: {what}; {self.reason}"


# ---------------------------------------------------------------------------- alignment
class _Unreadable(Exception):
    """An operation on the values whose dependence structure the rules do not know."""


@dataclass(frozen=True)
class _Dep:
    """How a variable depends on the observed values.

    ``axes[k]`` is the values' axis that axis ``k`` runs along, element for element, or
    None; ``merged`` the values' axes an element depends on beyond its own index; ``why``
    the first operation that merged a record axis.
    """

    axes: tuple
    merged: frozenset = frozenset()
    why: str = ""

    def merge(self, axes, why: str) -> _Dep:
        new = frozenset(a for a in axes if a is not None)
        if not new - self.merged:
            return self
        return _Dep(self.axes, self.merged | new, self.why or why)


def _combine(deps: Sequence[_Dep | None], ndim: int, why: str) -> _Dep:
    """Elementwise combination of inputs of ``ndim`` axes (right-aligned broadcasting)."""
    axes: list = [None] * ndim
    merged: set = set()
    first = ""
    for dep in deps:
        if dep is None:
            continue
        merged |= dep.merged
        first = first or dep.why
        pad = ndim - len(dep.axes)
        for k, a in enumerate(dep.axes):
            if a is None:
                continue
            j = k + pad
            if axes[j] is None:
                axes[j] = a
            elif axes[j] != a:  # y[i, j] beside y[j, i]: both axes read as a whole
                merged |= {axes[j], a}
                first = first or why
                axes[j] = None
    return _Dep(tuple(axes), frozenset(merged), first)


def _const(var):
    from pytensor.graph.basic import Constant

    if isinstance(var, Constant):
        return np.asarray(var.data)
    return None


def _is_full_slice(entry, length) -> bool:
    """Whether an index entry is a slice taking a whole axis, in order."""
    if not isinstance(entry, slice):
        return False
    parts = []
    for part in (entry.start, entry.stop, entry.step):
        if part is None:
            parts.append(None)
            continue
        value = _const(part) if not isinstance(part, int | np.integer) else part
        if value is None:
            return False
        parts.append(int(value))
    start, stop, step = parts
    if step not in (None, 1) or start not in (None, 0):
        return False
    return stop is None or (length is not None and stop >= length)


def _subtensor(node, dep: _Dep) -> _Dep:
    from pytensor.tensor.subtensor import indices_from_subtensor

    x = node.inputs[0]
    entries = indices_from_subtensor(node.inputs[1:], node.op.idx_list)
    axes, merged = [], []
    for k, a in enumerate(dep.axes):
        if k >= len(entries):
            axes.append(a)
            continue
        entry = entries[k]
        if isinstance(entry, slice):
            if _is_full_slice(entry, x.type.shape[k]):
                axes.append(a)
            else:  # a shifted or partial slice: element j is no longer record j
                axes.append(None)
                merged.append(a)
        else:  # an integer index drops the axis
            merged.append(a)
    out = _Dep(tuple(axes), dep.merged, dep.why)
    return out.merge(merged, f"a slice of the values ({_opname(node)})")


def _advanced_entries(node):
    """The index entries of an advanced subtensor: ``("slice", full) | ("array", var)``."""
    op = node.op
    if hasattr(op, "idx_list"):  # PyTensor 3
        from pytensor.tensor.subtensor import indices_from_subtensor

        out = []
        for entry in indices_from_subtensor(node.inputs[1:], op.idx_list):
            if isinstance(entry, slice):
                out.append(("slice", _is_full_slice(entry, None)))
            else:
                out.append(("array", entry))
        return out
    if type(op).__name__ == "AdvancedSubtensor1":
        return [("array", node.inputs[1])]
    out = []
    for var in node.inputs[1:]:
        kind = type(var.type).__name__
        if kind == "SliceType":
            full = var.owner is not None and all(
                type(i.type).__name__ == "NoneTypeT" or (_const(i) is None and i.owner is None)
                for i in var.owner.inputs
            )
            full = full or (_const(var) is not None and _const(var) == slice(None))
            out.append(("slice", bool(full)))
        elif kind == "NoneTypeT":
            raise _Unreadable("a new axis inside an advanced index")
        else:
            out.append(("array", var))
    return out


def _advanced_subtensor(node, deps) -> _Dep:
    x, out = node.inputs[0], node.outputs[0]
    entries = _advanced_entries(node)
    dep_of = dict(zip(node.inputs, deps, strict=True))
    arrays = [(k, e[1]) for k, e in enumerate(entries) if e[0] == "array"]
    x_dep = dep_of.get(x)
    if any(not full for kind, full in entries if kind == "slice"):
        if x_dep is not None:
            raise _Unreadable("a partial slice beside an advanced index of the values")
    index_ndim = max((v.ndim for _, v in arrays), default=0)
    index = _combine([dep_of.get(v) for _, v in arrays], index_ndim, "an advanced index")
    if x_dep is not None:
        # elements of the values picked by (data-independent) indices: no longer in order
        picked = [x_dep.axes[k] for k, _ in arrays]
        index = index.merge(picked, f"values gathered by an index ({_opname(node)})")
        index = _Dep(index.axes, index.merged | x_dep.merged, index.why or x_dep.why)
    positions = [k for k, _ in arrays]
    contiguous = positions == list(range(positions[0], positions[-1] + 1)) if positions else True
    rest = [
        (x_dep.axes[k] if x_dep is not None else None) for k in range(x.ndim) if k not in positions
    ]
    lead = positions[0] if contiguous and positions else 0
    axes = [*rest[:lead], *index.axes, *rest[lead:]]
    if len(axes) != out.ndim:
        raise _Unreadable("an advanced index of unexpected shape")
    return _Dep(tuple(axes), index.merged, index.why)


#: Core operations that act along one axis shared with another input (a solve or a
#: product): an output axis named only by one input's core signature runs along it.
_LINEAR_CORE = {"SolveTriangular", "Solve", "CholeskySolve", "Dot", "MatMul", "Dot22"}


def _core(node, deps, signature: str, linear: bool, batch_ndim: int) -> _Dep:
    """A core (linear-algebra) operation: batch axes broadcast, core axes by their letters."""
    from pytensor.tensor.utils import _parse_gufunc_signature

    inputs_sig, outputs_sig = _parse_gufunc_signature(signature)
    (out_sig,) = outputs_sig
    out = node.outputs[0]
    batch = []
    for var, dep in zip(node.inputs, deps, strict=True):
        if dep is None:
            batch.append(None)
            continue
        nb = var.ndim - len(inputs_sig[node.inputs.index(var)])
        batch.append(_Dep(dep.axes[:nb], dep.merged, dep.why))
    result = _combine(batch, batch_ndim, "a batched operation")
    core = [None] * len(out_sig)
    merged = []
    for i, (var, dep) in enumerate(zip(node.inputs, deps, strict=True)):
        if dep is None:
            continue
        sig = inputs_sig[i]
        nb = var.ndim - len(sig)
        others = {letter for j, s in enumerate(inputs_sig) if j != i for letter in s}
        for letter, a in zip(sig, dep.axes[nb:], strict=True):
            keep = linear and letter in out_sig and letter not in others and sig.count(letter) == 1
            if keep and a is not None:
                j = out_sig.index(letter)
                if core[j] not in (None, a):
                    merged += [core[j], a]
                core[j] = a
            else:
                merged.append(a)
    result = _Dep((*result.axes, *core), result.merged, result.why)
    if out.ndim != len(result.axes):
        raise _Unreadable(f"{_opname(node)} of unexpected shape")
    return result.merge(merged, f"values mixed by {_opname(node)}")


def _opname(node) -> str:
    op = node.op
    core = getattr(op, "core_op", None)
    if core is not None:
        return type(core).__name__
    scalar = getattr(op, "scalar_op", None)
    if scalar is not None:
        return type(scalar).__name__
    return type(op).__name__


def _reduce_axes(op, ndim: int) -> list[int]:
    axis = getattr(op, "axis", None)
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, int | np.integer):
        axis = [axis]
    return [int(a) % ndim for a in axis]


def _apply(node, deps) -> list[_Dep | None]:
    """The dependence of ``node``'s outputs on the values, from its inputs'."""
    from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise

    op = node.op
    name = type(op).__name__
    outs = node.outputs
    if name in ("Shape", "Shape_i", "MakeSlice"):
        return [None] * len(outs)
    if name in ("CheckAndRaise", "Assert", "CheckParameterValue", "SpecifyShape"):
        return [deps[0]] + [None] * (len(outs) - 1)
    if name in ("ScalarFromTensor", "TensorFromScalar", "ViewOp", "OutputGuard", "DeepCopyOp"):
        return [deps[0]]
    if isinstance(op, Elemwise):
        return [_combine(deps, out.ndim, f"values mixed by {_opname(node)}") for out in outs]
    if isinstance(op, DimShuffle):
        (dep,) = deps
        order = op.new_order
        axes = tuple(None if i == "x" else dep.axes[i] for i in order)
        kept = {i for i in order if i != "x"}
        dropped = [dep.axes[i] for i in range(len(dep.axes)) if i not in kept]
        return [_Dep(axes, dep.merged, dep.why).merge(dropped, "a dropped axis")]
    if isinstance(op, CAReduce):
        (dep,) = deps
        reduced = _reduce_axes(op, len(dep.axes))
        axes = tuple(a for k, a in enumerate(dep.axes) if k not in reduced)
        what = f"a {_opname(node).lower()} over the values"
        return [_Dep(axes, dep.merged, dep.why).merge([dep.axes[k] for k in reduced], what)]
    if name == "Alloc":
        dep = deps[0]
        if dep is None:  # only the shape reads the values
            return [None]
        pad = outs[0].ndim - len(dep.axes)
        return [_Dep((None,) * pad + dep.axes, dep.merged, dep.why)]
    if name == "Subtensor":
        if any(d is not None for d in deps[1:]):
            raise _Unreadable("an index computed from the values")
        return [_subtensor(node, deps[0])]
    if name in ("AdvancedSubtensor", "AdvancedSubtensor1"):
        return [_advanced_subtensor(node, deps)]
    if name in ("Softmax", "LogSoftmax", "CumOp", "SortOp", "ArgSortOp"):
        (dep,) = (d for d in deps if d is not None)
        axis = getattr(op, "axis", None)
        along = range(len(dep.axes)) if axis is None else [int(axis) % len(dep.axes)]
        return [dep.merge([dep.axes[k] for k in along], f"values mixed by {name}")]
    if name in _JOINS:
        return _JOINS[name](node, deps)
    if name == "Blockwise":
        from pytensor.tensor.utils import _parse_gufunc_signature

        if len(outs) != 1:
            raise _Unreadable(f"{_opname(node)} with several outputs")
        batch_ndim = outs[0].ndim - len(_parse_gufunc_signature(op.signature)[1][0])
        linear = type(op.core_op).__name__ in _LINEAR_CORE
        return [_core(node, deps, op.signature, linear, batch_ndim)]
    if name in ("Dot", "Dot22", "MatMul") and all(v.ndim == 2 for v in node.inputs):
        return [_core(node, deps, "(m,n),(n,k)->(m,k)", True, 0)]
    from pytensor.compile.builders import OpFromGraph

    if isinstance(op, OpFromGraph):  # and PyTensor 3's logsumexp, softmax, ...
        return _inner(op, node, deps)
    raise _Unreadable(f"{_opname(node)} on the values")


def _join(node, deps) -> list[_Dep]:
    """Tensors joined along an axis: the axes they are joined along are merged."""
    axis, tensors = _join_axis(node)
    if axis is None:
        raise _Unreadable("a join along a computed axis")
    ndim = node.outputs[0].ndim
    axis = int(axis) % ndim
    parts = [d for v, d in zip(node.inputs, deps, strict=True) if v in tensors and d]
    joined = [d.axes[axis] for d in parts]
    combined = _combine(parts, ndim, "a join")
    axes = tuple(None if k == axis else a for k, a in enumerate(combined.axes))
    return [_Dep(axes, combined.merged, combined.why).merge(joined, "values joined")]


def _split(node, deps) -> list[_Dep]:
    """A tensor split along an axis: that axis is merged in every piece."""
    dep = deps[0]
    axis = _const(node.inputs[1])
    if axis is None or any(d is not None for d in deps[1:]):
        raise _Unreadable("a split along a computed axis")
    axis = int(axis) % len(dep.axes)
    axes = tuple(None if k == axis else a for k, a in enumerate(dep.axes))
    piece = _Dep(axes, dep.merged, dep.why).merge([dep.axes[axis]], "values split")
    return [piece] * len(node.outputs)


def _make_vector(node, deps) -> list[_Dep]:
    """Scalars stacked: the vector's one axis is no value's."""
    return [_combine(deps, 1, "stacked scalars")]


_JOINS = {"MakeVector": _make_vector, "Join": _join, "Split": _split}


def _join_axis(node):
    """``(axis, joined tensors)`` of a Join: a property (PyTensor 3) or its first input."""
    axis = getattr(node.op, "axis", None)
    if axis is not None:
        return axis, node.inputs
    c = _const(node.inputs[0])
    return (None if c is None else int(c)), node.inputs[1:]


def _inner(op, node, deps) -> list[_Dep | None]:
    """Follow the values through an operation's own graph."""
    try:
        inner_inputs, inner_outputs = op.inner_inputs, op.inner_outputs
    except Exception as err:  # pragma: no cover - an inner graph built lazily and failing
        raise _Unreadable(f"{_opname(node)} on the values") from err
    start = {v: d for v, d in zip(inner_inputs, deps, strict=True) if d is not None}
    found = _propagate(start, inner_outputs)
    return [found.get(o) for o in inner_outputs]


def _propagate(start: dict, outputs) -> dict:
    """The :class:`_Dep` of every variable between ``start`` and ``outputs``."""
    deps = dict(start)
    for node in graph_toposort(outputs):
        ins = [deps.get(v) for v in node.inputs]
        if all(d is None for d in ins):
            continue
        for out, dep in zip(node.outputs, _apply(node, ins), strict=True):
            if dep is not None:
                deps[out] = dep
    return deps


# ---------------------------------------------------------------------------- terms
def holds_values(node, value, data) -> bool:
    """``node`` is ``value`` or a constant equal to its data (PyMC merges equal constants)."""
    if node is value:
        return True
    c = _const(node)
    if c is None or data is None or c.size < 2 or c.shape != data.shape:
        return False
    return c.dtype == data.dtype and bool(np.array_equal(c, data))


def _value_reads(graph, value, data) -> bool:
    return any(holds_values(v, value, data) for v in graph_ancestors([graph]))


def likelihood_terms(model, rv, logps: dict | None = None) -> dict[str, object]:
    """``{term name: log-density graph}`` of every term reading ``rv``'s observed values.

    ``rv``'s own elementwise log-density, and those of other observed variables and
    Potentials that read the same values (a lag taken through a Deterministic), in value
    space. Each is built on its own (``logps`` keeps them by name): PyMC would merge equal
    constants across several variables' graphs, mixing one's data with another's.
    """
    logps = {} if logps is None else logps
    value, data = observed_node(model, rv)
    terms = {rv.name: _own_logp(model, rv, logps)}
    for other in model.observed_RVs:
        if other is rv:
            continue
        other_value, other_data = observed_node(model, other)
        if other_value is value or (
            data is not None and other_data is not None and np.array_equal(data, other_data)
        ):
            continue  # observing equal values is not reading ours
        graph = _own_logp(model, other, logps)
        if _value_reads(graph, value, data):
            terms[other.name] = graph
    if model.potentials:
        if "edp_potentials" not in logps:
            logps["edp_potentials"] = model.replace_rvs_by_values(model.potentials)
        for pot, graph in zip(model.potentials, logps["edp_potentials"], strict=True):
            if _value_reads(graph, value, data):
                terms[pot.name] = graph
    return terms


def _own_logp(model, rv, logps: dict):
    if rv.name not in logps:
        (logps[rv.name],) = model.logp(vars=[rv], sum=False)
    return logps[rv.name]


def observed_node(model, rv):
    """``(value node, data)`` of observed ``rv``; data None when it is not plain data."""
    from pymc_edp.model.compat import observed_data

    data = observed_data(model, rv.name)
    return model.rvs_to_values[rv], (None if data is None else np.asarray(data))


def values_as_input(graphs: list, value, data, name: str):
    """``graphs`` with ``value`` (and constant copies of it) as one new symbolic input."""
    import pytensor.tensor as pt
    from pytensor.graph.replace import clone_replace

    y = pt.tensor(name=f"{name}_values", dtype=value.dtype, shape=value.type.shape)
    nodes = {v for v in graph_ancestors(graphs) if holds_values(v, value, data)}
    replaced = clone_replace(list(graphs), replace=dict.fromkeys(nodes, y), rebuild_strict=False)
    return y, replaced


def _lag(c: np.ndarray, d: np.ndarray, most: int = 5) -> int:
    """The shift (1 to ``most``, either way) at which ``c`` runs along ``d``, or 0.

    At least three values in a row equal and not all the same: the data copied with a lag,
    not values shared by chance.
    """
    for k in (*range(1, most + 1), *range(-1, -most - 1, -1)):
        a = c[k:] if k > 0 else c[: c.size + k]
        b = d[: a.size] if k > 0 else d[-k : -k + a.size]
        n = min(a.size, b.size)
        if n >= 3 and np.ptp(b[:n]) > 0 and np.array_equal(a[:n], b[:n]):
            return k
    return 0


def _copies_read(graphs, value, data, exclude) -> list[str]:
    """Arrays the log-density reads besides ``value`` that hold its records' values.

    The data behind a computed ``observed=`` (``yy[1:]`` of a ``pm.Data``) read again
    elsewhere (``yy[:-1]``), or a float constant holding the data shifted by a few places
    (``observed=y[1:]`` beside ``mu=rho * y[:-1]``): a record then enters terms that the
    observed values do not show.
    """
    from pytensor.compile.sharedvalue import SharedVariable

    _, replaced = values_as_input(graphs, value, data, "edp")
    seen = graph_ancestors(replaced)
    out = []
    if value.owner is not None:
        shown = set(seen)
        for v in graph_ancestors([value]):
            array = v.get_value(borrow=True) if isinstance(v, SharedVariable) else _const(v)
            if v.owner is None and np.size(array) > 1 and v in shown:
                out.append(f"{v.name or type(v).__name__} (the data its values are taken from)")
    if data is not None and np.asarray(data).dtype.kind == "f":
        for v in seen:
            c = _const(v)
            if c is None or c.dtype.kind != "f" or any(v is e for e in exclude):
                continue
            lag = _lag(np.ravel(c), np.ravel(data))
            if lag:
                out.append(f"a constant array holding its values shifted by {lag}")
    return out


def read_structure(model, rv, records: str = "auto", logps: dict | None = None) -> Structure:
    """How the log-likelihood of observed ``rv`` is laid over its records, from the graph.

    Parameters
    ----------
    model : pymc.Model
    rv : TensorVariable
        An observed variable of ``model``.
    records : {"auto", "rows", "elements"}, default "auto"
        What a record is when the values have several axes. ``"auto"``: a factorised
        multivariate observation's rows, or its elements when it has a single row (a
        series); a coupled likelihood's rows when it has one term per row (a filter's term
        per time step), else its elements. ``"rows"``: the entries of the first axis;
        ``"elements"``: every value.
    logps : dict, optional
        Log-density graphs by variable name, built once for several calls.

    Returns
    -------
    Structure

    Examples
    --------
    >>> from pymc_edp.model.structure import read_structure
    >>> with pm.Model() as m:
    ...     mu = pm.Normal("mu")
    ...     y = pm.Normal("y", mu, observed=[0.1, 0.4, -0.2])
    ...     z = pm.AR("z", [0.5], sigma=1.0, init_dist=pm.Normal.dist(), observed=[0, 0.3, 0.1])
    >>> read_structure(m, m["y"]).factorised, read_structure(m, m["z"]).factorised
    (True, False)
    >>> read_structure(m, m["z"]).reason
    'one log-density term for all its values'
    """
    if records not in RECORDS:
        raise ValueError(f"records must be one of {RECORDS}, got {records!r}")
    name = rv.name
    value, data = observed_node(model, rv)
    shape = tuple(np.shape(data)) if data is not None else tuple(value.type.shape)
    if any(s is None for s in shape):
        raise ValueError(f"the shape of the observed values of {name!r} is not known")
    ndim = len(shape)
    constrained = _CONSTRAINED.get(type(getattr(rv.owner, "op", None)).__name__, "")
    terms = likelihood_terms(model, rv, logps)
    exclude = [model.rvs_to_values[o] for o in model.observed_RVs if o is not rv]
    copies = _copies_read(list(terms.values()), value, data, exclude)
    if copies:
        raise ValueError(
            f"the log-density of {name!r} reads its records' values again besides its "
            f"observed values, through {copies[0]}: removing a record would also change "
            "terms the audit cannot find. Write the series as one observed variable over all "
            "its values (pm.AR, pm.GaussianRandomWalk, or a pm.CustomDist whose logp takes "
            "the whole series), so that each record is one of its values."
        )
    others = tuple(t for t in terms if t != name)
    own = terms[name]
    factorised, k, reason = _own_structure(own, value, data, name, shape)
    if others:
        factorised = False
        what = "the log-density of " + ", ".join(repr(t) for t in others)
        reason = f"its values are also read by {what} (through a Deterministic or a copy)"
    if ndim == 0:
        return Structure(name, factorised, 0, shape, reason, others, constrained)
    record_ndim = _record_ndim(records, factorised, k, ndim, shape, own)
    if record_ndim == ndim and k < ndim and factorised:
        factorised = False  # each row's values are coupled with one another
        if records == "auto":
            reason = (
                "a single multivariate observation: its values are the records (a series), "
                "coupled by the log-density of the row"
            )
        else:
            reason = "one log-density term per row: its values are the records, coupled within it"
    return Structure(name, factorised, record_ndim, shape, reason, others, constrained)


def _term_per_row(own, shape) -> bool:
    """The log-density has one term per row: its shape is the values' leading axes'."""
    return own.ndim >= 1 and len(shape) > own.ndim and own.type.shape == tuple(shape[: own.ndim])


def _own_structure(own, value, data, name, shape) -> tuple[bool, int, str]:
    """``(factorised, term axes, reason)`` of a variable's own elementwise log-density."""
    ndim = len(shape)
    one_row = _term_per_row(own, shape)
    single = all(d == 1 for d in own.type.shape) and np.prod(shape) > 1 and not one_row
    if own.ndim == 0 or single:
        return False, 0, "one log-density term for all its values"
    try:
        y, (graph,) = values_as_input([own], value, data, name)
        dep = _propagate({y: _Dep(tuple(range(ndim)))}, [graph]).get(graph)
    except _Unreadable as err:
        return False, 0, f"its log-density's structure cannot be read ({err})"
    if dep is None:
        return False, 0, "its log-density does not read its values"
    k = graph.ndim
    aligned = dep.axes == tuple(range(k))
    inside = all(a >= k for a in dep.merged)
    if aligned and inside:
        kind = "each term reading its own value" if k == ndim else "each term reading one row"
        return True, k, f"one log-density term per record, {kind}"
    why = dep.why or "terms not in the order of the values"
    return False, 0, f"its log-density terms read other records' values ({why})"


def _record_ndim(records, factorised, k, ndim, shape, own) -> int:
    if records == "elements":
        return ndim
    if records == "rows":
        return min(1, ndim)
    if factorised:
        rows = int(np.prod(shape[:k], dtype=np.int64))
        return ndim if rows == 1 and k < ndim else k
    if _term_per_row(own, shape):
        rows = int(np.prod(shape[: own.ndim], dtype=np.int64))
        if rows > 1:
            return own.ndim
    return ndim


# ---------------------------------------------------------------------------- degree
#: A degree above every polynomial one: the log-density is not a polynomial in the values.
_NOT_POLY = math.inf


def _const_exponent(var) -> float | None:
    """The constant value of an exponent (through broadcasting), or None."""
    while var.owner is not None and type(var.owner.op).__name__ in ("DimShuffle", "Alloc"):
        var = var.owner.inputs[0]
    c = _const(var)
    if c is None or np.size(c) == 0 or not np.all(c == c.flat[0]):
        return None
    return float(c.flat[0])


def _degree(node, degs) -> float:
    """Polynomial degree in the values of ``node``'s output, from its inputs'."""
    from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise

    op = node.op
    name = type(op).__name__
    if name in ("Shape", "Shape_i", "MakeSlice"):
        return 0
    first = degs[0] if degs else 0
    passed = ("CheckAndRaise", "Assert", "CheckParameterValue", "SpecifyShape", "Alloc")
    passed += ("ScalarFromTensor", "TensorFromScalar", "ViewOp", "DimShuffle")
    if name in passed or isinstance(op, DimShuffle):
        return first
    if isinstance(op, Elemwise):
        return _elemwise_degree(op.scalar_op, node, degs)
    if isinstance(op, CAReduce):
        return first if type(op.scalar_op).__name__ == "Add" else _poly_or_not(degs)
    if name in ("Subtensor", "AdvancedSubtensor", "AdvancedSubtensor1", "Split"):
        return first if all(d == 0 for d in degs[1:]) else _NOT_POLY
    if name in ("IncSubtensor", "AdvancedIncSubtensor", "AdvancedIncSubtensor1"):
        return max(degs[:2]) if all(d == 0 for d in degs[2:]) else _NOT_POLY
    if name in ("Join", "MakeVector"):
        return max(degs)
    if name == "Reshape":
        return first if degs[1] == 0 else _NOT_POLY
    core = type(getattr(op, "core_op", op)).__name__
    if core in ("Dot", "Dot22", "MatMul"):
        return degs[0] + degs[1]
    if core in ("SolveTriangular", "Solve", "CholeskySolve"):
        return degs[1] if degs[0] == 0 else _NOT_POLY
    return _poly_or_not(degs)


def _poly_or_not(degs) -> float:
    return 0 if all(d == 0 for d in degs) else _NOT_POLY


def _elemwise_degree(scalar_op, node, degs) -> float:
    name = type(scalar_op).__name__
    if name in ("Add", "Sub"):
        return max(degs)
    if name in ("Neg", "Identity", "Cast", "Second"):
        return degs[-1] if name == "Second" else degs[0]
    if name == "Mul":
        return sum(degs)
    if name == "TrueDiv":
        return degs[0] if degs[1] == 0 else _NOT_POLY
    if name == "Sqr":
        return 2 * degs[0]
    if name == "Pow":
        power = _const_exponent(node.inputs[1])
        if degs[1] == 0 and power is not None and power in (0.0, 1.0, 2.0, 3.0, 4.0):
            return degs[0] * power
        return _poly_or_not(degs)
    if name == "Switch":
        return max(degs[1:]) if degs[0] == 0 else _NOT_POLY
    return _poly_or_not(degs)


def quadratic_in_values(graph, values) -> bool:
    """Whether ``graph`` is a polynomial of degree at most 2 in ``values``, from its ops.

    Sums, products, scalings, indexing and linear solves by matrices that do not depend on
    ``values`` keep a polynomial; anything else (a log, a scan, a bound check) does not.

    Examples
    --------
    >>> import pytensor.tensor as pt
    >>> from pymc_edp.model.structure import quadratic_in_values
    >>> y, s = pt.vector("y"), pt.scalar("s")
    >>> quadratic_in_values(-0.5 * pt.sum((y[1:] - 0.5 * y[:-1]) ** 2) / s**2, y)
    True
    >>> quadratic_in_values(-pt.sum(pt.abs(y[1:] - y[:-1])), y)
    False
    """
    degs = {values: 1}
    for node in graph_toposort([graph]):
        ins = [degs.get(v, 0) for v in node.inputs]
        if all(d == 0 for d in ins):
            continue
        d = _degree(node, ins)
        for out in node.outputs:
            degs[out] = d
    return degs.get(graph, 0) <= 2

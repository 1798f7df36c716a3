"""The neighbour-model transform: one compiled model whose data say which neighbour it is.

:func:`neighbour_model` clones the user's model and adds, per observed variable, ``pm.Data``
``edp_dw_<name>`` (weight change per record: -1 removes it), ``edp_alt_<name>``
(replacement values) and ``edp_v_<name>`` (1 where replaced), and one ``pm.Potential``::

    sum(dw * logp(y)) + sum(v * logp(y'))

so the refits differ only by data and compile once [1]_. A coupled likelihood's record is
left unobserved instead (:func:`neighbour_model`); a user's ``build_model(data) ->
pm.Model`` builds each neighbour's model from its data.

References
----------
.. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (sec. 4: the refit estimator).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from pymc_edp.core.loglik import COUPLED, RECORD_SIZE, NonFactorisedError
from pymc_edp.model.compat import graph_ancestors, initial_values, without_initial_values
from pymc_edp.model.structure import holds_values, likelihood_terms, observed_node, read_structure

__all__ = [
    "NeighbourData",
    "NeighbourDataMaker",
    "coupled_blocks",
    "neighbour_changes",
    "neighbour_model",
]

DW, ALT, SWITCH, POTENTIAL = "edp_dw_{}", "edp_alt_{}", "edp_v_{}", "edp_reweight"
#: a coupled likelihood's neighbour: its unobserved records (free), where they are, which are on
MISSING, WHERE, ON = "edp_missing_{}", "edp_idx_{}", "edp_on_{}"


def _observed_rvs(model, names=None):
    obs = list(model.observed_RVs)
    if names is not None:
        wanted = set(names)
        unknown = wanted - {rv.name for rv in obs}
        if unknown:
            raise KeyError(f"{sorted(unknown)} are not observed variables of the model")
        obs = [rv for rv in obs if rv.name in wanted]
    return obs


def coupled_blocks(model, ll, neighbours, observed=None) -> dict[str, int]:
    """``{name: values}``: coupled observed variables, and the most values a neighbour changes.

    Coupled: the log-likelihood variable says so (:data:`~pymc_edp.core.loglik.COUPLED`),
    as the audit read it from the graph.
    """
    names = set(ll.names if observed is None else observed)
    out = {}
    for v, name in enumerate(ll.names):
        attrs = ll.datasets[name].attrs
        if name not in names or not attrs.get(COUPLED):
            continue
        size = int(attrs.get(RECORD_SIZE, 1))
        out[name] = max(1, neighbours.largest_block(ll.offsets, v)) * size
    return out


def neighbour_model(
    model, observed=None, coupled: dict[str, int] | None = None, replace: bool = True
):
    """Clone ``model`` so that one compiled graph represents every neighbour dataset.

    A factorised likelihood's record is switched off by a weight: its term is the only one
    reading it (proven from the graph), so that is leaving it out. A coupled likelihood's
    record is unobserved instead: its value is a free offset ``edp_missing_<name>`` from the
    observed one, which the sampler integrates out (flat over the reals, or uniform over a
    wide range of integers for discrete values); ``edp_idx_<name>`` and ``edp_on_<name>``
    say which values. This is exact for any likelihood, and shares no assumption with the
    conditionals that reweighting uses.

    Parameters
    ----------
    model : pymc.Model
    observed : list of str, optional
        Observed variables whose records can be removed or replaced; default all.
    coupled : dict of str to int, optional
        Coupled variables and the most values a neighbour leaves unobserved
        (:func:`coupled_blocks`); default: those the graph shows coupled, one value each.
    replace : bool, default True
        Whether neighbours may replace a factorised record's values (``edp_alt_*`` and
        ``edp_v_*``, a second log-likelihood at the replacement values). ``False`` builds a
        model that only removes records: its log density costs what the model's does.

    Returns
    -------
    pymc.Model
        With zero ``edp_dw_*``/``edp_v_*`` it has the full-data posterior.

    Examples
    --------
    >>> from pymc_edp.refit import neighbour_model
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    ...     y = pm.Normal("y", mu, 1.0, observed=[0.1, -0.3, 0.8])
    >>> nb = neighbour_model(model)
    >>> sorted(d.name for d in nb.data_vars), [p.name for p in nb.potentials]
    (['edp_alt_y', 'edp_dw_y', 'edp_v_y'], ['edp_reweight'])
    >>> nb["edp_dw_y"].get_value()  # set to -1 for the record a refit removes
    array([0., 0., 0.])
    """
    import pymc as pm
    import pytensor.tensor as pt
    from pymc.model.fgraph import clone_model
    from pytensor.graph.replace import clone_replace

    # PyMC cannot clone a model with initval=; clone without, then give them back so that
    # refits start where the user's model starts
    clone = clone_model(without_initial_values(model))
    for name, value in initial_values(model).items():
        clone.set_initval(clone[name], value)
    point = clone.initial_point()
    rvs = _observed_rvs(clone, observed)
    if coupled is None:
        coupled = {rv.name: 1 for rv in rvs if read_structure(clone, rv).coupled}
    terms = []
    with clone:
        for rv in rvs:
            value, data = observed_node(clone, rv)
            if data is None:
                raise TypeError(
                    f"the observed values of {rv.name!r} are not data (a constant or pm.Data) "
                    "but depend on other variables of the model; pass build_model=, a function "
                    "that builds the model from each neighbour's data."
                )
            # the model's own elementwise logp, in value space (pm.logp(rv, value) would
            # leave cloned random variables behind for e.g. pm.Censored)
            (logp,) = clone.logp(vars=[rv], sum=False)
            if rv.name in coupled:
                reading = list(likelihood_terms(clone, rv).values())
                terms.append(_unobserved_term(rv.name, reading, value, data, coupled[rv.name]))
                continue
            if logp.type.ndim == 0:
                raise NonFactorisedError(
                    f"the log-likelihood of {rv.name!r} is a single term for a single value: "
                    "there is no record to switch off."
                )
            shape = np.shape(
                clone.compile_fn(logp, inputs=clone.value_vars, on_unused_input="ignore")(point)
            )
            dw = pm.Data(DW.format(rv.name), np.zeros(shape))
            if not replace:  # the weighted term is the model's own: merged, computed once
                terms.append(pt.sum(dw * logp))
                continue
            alt = pm.Data(ALT.format(rv.name), data.copy())
            v = pm.Data(SWITCH.format(rv.name), np.zeros(shape))
            # pm.Data may hold the data in another dtype (int32 vs the value's int64)
            alt_value = pt.specify_shape(alt.astype(value.dtype), value.type.shape)
            (alt_logp,) = clone_replace([logp], replace={value: alt_value})
            terms.append(pt.sum(dw * logp) + pt.sum(v * alt_logp))
        pm.Potential(POTENTIAL, pt.add(*terms) if len(terms) > 1 else terms[0])
    return clone


def _unobserved_term(name: str, reading: list, value, data: np.ndarray, block: int):
    """Potential turning the log-density terms ``reading`` the values into the neighbour's.

    ``block`` values are left unobserved (the data plus a free offset, from 0) or replaced;
    an offset that no neighbour uses is apart from everything.
    """
    import pymc as pm
    import pytensor.tensor as pt
    from pytensor.graph.replace import clone_replace

    data = np.asarray(data)
    where = pm.Data(WHERE.format(name), np.zeros(block, dtype="int64"))
    on = pm.Data(ON.format(name), np.zeros(block))
    alt = pm.Data(ALT.format(name), data.copy())
    zeros = np.zeros(block, dtype=int if data.dtype.kind in "biu" else float)
    if data.dtype.kind == "f":
        offset = pm.Flat(MISSING.format(name), shape=(block,), initval=zeros)
        rest = None
    else:
        reach = 5 * int(np.ptp(data) + 1)
        offset = pm.DiscreteUniform(
            MISSING.format(name), -reach, reach, shape=(block,), initval=zeros
        )
        rest = 0.0  # uniform on its range: proper as it is
    # the potential reads the free value itself (an RV left in it keeps its RNG in the graph)
    offset = pm.modelcontext(None).rvs_to_values[offset]
    flat = alt.astype(value.dtype).ravel()
    filled = pt.inc_subtensor(flat[where], (on * offset).astype(value.dtype))
    filled = pt.specify_shape(filled.reshape(value.shape), value.type.shape)
    nodes = {v for v in graph_ancestors(reading) if holds_values(v, value, data)}
    moved = clone_replace(reading, replace=dict.fromkeys(nodes, filled), rebuild_strict=False)
    change = pt.add(*[pt.sum(a) - pt.sum(b) for a, b in zip(moved, reading, strict=True)])
    if rest is None:  # centred off the start: nutpie refuses a zero gradient there
        rest = -0.5 * pt.sum((1.0 - on) * (offset - 1.0) ** 2)
    return change + rest


@dataclass(frozen=True)
class NeighbourData(Mapping):
    """The data of one neighbour, handed to a user's ``build_model``.

    A mapping from observed variable to the neighbour's observed values; ``label`` and
    ``index`` name the neighbour, ``keep`` masks each variable's records (False: removed).

    Examples
    --------
    >>> from pymc_edp.refit import NeighbourData
    >>> data = NeighbourData(label=2, index=2, observed={"y": np.array([0.1, -0.3])},
    ...                      keep={"y": np.array([True, True, False])})
    >>> list(data), data["y"], len(data)
    (['y'], array([ 0.1, -0.3]), 1)
    """

    label: object
    index: int
    observed: dict
    keep: dict

    def __getitem__(self, key):
        return self.observed[key]

    def __iter__(self):
        return iter(self.observed)

    def __len__(self):
        return len(self.observed)


def neighbour_changes(ll, nbs, k: int, candidate: dict | None) -> dict:
    """``{name: (local_indices, replacement_values or None)}``: what neighbour ``k`` changes.

    A few numbers, expanded to data only when its refit runs (:class:`NeighbourDataMaker`).
    """
    rows = nbs.rows_of(k)
    var = np.searchsorted(ll.offsets, rows, side="right") - 1
    changes = {}
    for v, name in enumerate(ll.names):
        n_v = ll.offsets[v + 1] - ll.offsets[v]
        local = rows[var == v] - ll.offsets[v]
        values = None
        if candidate is not None:
            values = np.asarray(candidate[name]).reshape(n_v, -1)[local]
        changes[name] = (local, values)
    return changes


@dataclass(frozen=True)
class NeighbourDataMaker:
    """Expands a neighbour's changes into its ``pm.Data`` values or :class:`NeighbourData`."""

    observed_y: dict
    record_shapes: dict
    builder: bool = False
    coupled: dict = field(default_factory=dict)
    #: Whether the neighbour model takes replacement values (:func:`neighbour_model`).
    replace: bool = True

    def __call__(self, index: int, label, changes: dict):
        """The data of neighbour ``index`` from its :func:`neighbour_changes`."""
        if self.builder:
            return self._builder(index, label, changes)
        data = {}
        for name, (local, values) in changes.items():
            if name in self.coupled:
                data.update(self._unobserved(name, local, values))
                continue
            shape = self.record_shapes[name]
            n_v = int(np.prod(shape))
            dw = np.zeros(n_v)
            dw[local] = -1.0
            alt = np.asarray(self.observed_y[name]).copy()
            switch = np.zeros(n_v)
            if values is not None:
                alt.reshape(n_v, -1)[local] = values
                switch[local] = 1.0
            data[DW.format(name)] = dw.reshape(shape)
            if self.replace:
                data[ALT.format(name)] = alt
                data[SWITCH.format(name)] = switch.reshape(shape)
            elif values is not None:
                raise ValueError("this neighbour model only removes records")
        return data

    def _unobserved(self, name: str, local: np.ndarray, values) -> dict:
        """Data of a coupled variable: the records left unobserved, or the values replaced."""
        block = self.coupled[name]
        alt = np.asarray(self.observed_y[name]).copy()
        n_records = int(np.prod(self.record_shapes[name], dtype=np.int64))
        size = alt.size // max(1, n_records)  # values per record
        elements = (np.asarray(local)[:, None] * size + np.arange(size)).ravel()
        where = np.full(block, elements[0] if elements.size else 0, dtype="int64")
        on = np.zeros(block)
        if values is not None:
            alt.reshape(-1)[elements] = np.ravel(values)
        elif elements.size:
            if elements.size > block:
                raise ValueError(f"{elements.size} values of {name!r} in a block of {block}")
            where[: elements.size] = elements
            on[: elements.size] = 1.0
        return {WHERE.format(name): where, ON.format(name): on, ALT.format(name): alt}

    def _builder(self, index: int, label, changes: dict) -> NeighbourData:
        observed, keep = {}, {}
        for name, (local, values) in changes.items():
            n_v = int(np.prod(self.record_shapes[name]))
            y = np.asarray(self.observed_y[name])
            mask = np.ones(n_v, dtype=bool)
            if values is None:
                mask[local] = False
                # records along the first axis (rows of a multivariate observation included)
                # are dropped; records laid over several axes are passed whole, with `keep`
                observed[name] = y[mask] if y.shape[:1] == (n_v,) else y
            else:
                alt = y.copy()
                alt.reshape(n_v, -1)[local] = values
                observed[name] = alt
            keep[name] = mask
        return NeighbourData(label, index, observed, keep)

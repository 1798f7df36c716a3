"""Read the fit once (the only stage that sees the DataTree or InferenceData): :class:`Inputs`."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import xarray as xr

from pymc_edp.auditing.settings import Settings
from pymc_edp.base import binning
from pymc_edp.base.common import MIN_DRAWS_PER_BIN
from pymc_edp.core.loglik import (
    COUPLED,
    RECORD_SIZE,
    LogLikelihood,
    NonFactorisedError,
    posterior_matrix,
    relative_efficiency,
)
from pymc_edp.core.neighbours import Neighbours, Relation
from pymc_edp.core.replace import check_support
from pymc_edp.core.select import LeftOut, drop_data_copies, select_var_names
from pymc_edp.model.convergence import FitConvergence, fit_convergence
from pymc_edp.model.fit import Fit
from pymc_edp.model.moment_match import MatchInputs
from pymc_edp.model.potentials import Potentials, potentials_as_observed
from pymc_edp.model.pymc import (
    check_log_likelihood_layout,
    check_log_likelihood_matches_model,
    check_model_matches_data,
    check_not_scalar,
    elementwise_loglik,
    ensure_log_likelihood,
    fit_for_model,
    imputed_positions,
    integer_data,
    observed_arrays,
    observed_values,
    potential_records,
    reads_data,
    replacement_log_likelihood,
)
from pymc_edp.model.stream import (
    StreamingUnavailableError,
    model_log_likelihood,
    stream_supported,
)
from pymc_edp.model.structure import Structure, read_structure

__all__ = ["Inputs", "read_inputs"]

_log = logging.getLogger("pymc_edp")

#: Largest replacement log-likelihood (bytes, all candidates) held in memory.
REPLACEMENTS_IN_MEMORY = 2**30


@dataclass(frozen=True)
class Inputs:
    """The fit as the audit reads it, once."""

    model: object
    posterior: xr.Dataset
    names: list[str]  # audited posterior variables
    draws: np.ndarray  # (n_parameters, S): their elements, data copies and constants left out
    par_labels: list[str]  # label of each row of draws
    var_of: list[str]  # variable of each row of draws
    ll: LogLikelihood  # without a factorised likelihood, only the records' layout
    factorised: bool
    can_refit: bool  # a model or a builder is there to refit neighbours with
    reff: float  # relative MCMC efficiency
    messages: tuple[str, ...]
    neighbours: Neighbours
    observed_y: dict  # observed values of the audited (with a model: every) observed variable
    relation: Relation  # the neighbour relation, its candidates bound to the data
    bins: binning.Bins  # cut from draws
    match: MatchInputs  # what moment matching reads: all draws, and the rows draws holds
    left_out: tuple[LeftOut, ...] = ()  # variables and constant elements not binned, and why
    convergence: FitConvergence | None = None  # of the fit, on the audited variables
    # coupled variables whose neighbours remove blocks of records: their log-likelihood holds
    # each block's joint conditional on its first record (0 on the others)
    blocks: tuple[str, ...] = ()
    # per observed variable audited: what a record is, and how its neighbours were obtained
    records: tuple[str, ...] = ()

    @property
    def coupled(self) -> tuple[str, ...]:
        """Observed variables whose records are coupled (conditionals, or refits only)."""
        return tuple(n for n in self.ll.names if self.ll.datasets[n].attrs.get(COUPLED))

    @property
    def n_samples(self) -> int:
        """Posterior draws (all chains)."""
        return int(self.draws.shape[1])

    @property
    def n_chains(self) -> int:
        """Posterior chains."""
        return int(self.posterior.sizes.get("chain", 1))


def read_fit(idata, model, log_likelihood: str = "auto") -> Fit:
    """What ``pm.sample`` returned, read once into a :class:`~pymc_edp.model.fit.Fit`.

    Nothing below the front doors takes ``idata``. ``log_likelihood``: where the pointwise
    log-likelihood comes from (:data:`~pymc_edp.model.fit.LOG_LIKELIHOOD_SOURCES`).
    """
    return fit_for_model(Fit.read(idata, log_likelihood), model)


def read_inputs(
    fit: Fit,
    model,
    settings: Settings,
    *,
    var_names: str | Sequence[str] | None = None,
    filter_vars: str | None = None,
) -> Inputs:
    """Posterior draws to bin, the pointwise log-likelihood and the neighbours, all checked."""
    posterior = fit.group("posterior")
    observed_data = fit.observed_data
    pots = _potentials(model, settings)  # those of one term per record: observed variables
    model = pots.model
    if model is not None:
        check_model_matches_data(model, observed_data, fit.constant_data)
    weighted = potential_records(model, posterior) if model is not None else {}
    read = _posterior_draws(fit, model, posterior, var_names, filter_vars, pots.unproven)
    draws, messages = read.draws, read.messages
    _check_draws_per_bin(draws.shape[1], settings.bins)
    ll, factorised, notes, structures, routes = _log_likelihood(
        fit, model, settings, observed_data, pots.audited
    )
    _check_records(ll)
    ll = _imputed_row_labels(ll, model, posterior, observed_data)
    if model is not None:
        messages.extend(notes)
    messages.extend(_potential_messages(weighted, ll))
    if ll.n_samples != draws.shape[1]:
        raise ValueError(
            f"the log_likelihood group has {ll.n_samples} draws, the posterior "
            f"{draws.shape[1]}: they must come from one sampling run"
        )
    observed_y = _observed_y(fit, model, ll)
    if factorised:
        check_log_likelihood_layout(ll.datasets, ll.names, posterior, observed_data)
        from_group = fit.has("log_likelihood") and fit.log_likelihood_source != "model"
        if model is not None and from_group:
            check_log_likelihood_matches_model(
                ll.datasets[list(ll.names)],
                posterior,
                model,
                {  # a coupled variable's terms were replaced by conditionals from the model
                    n: observed_y[n]
                    for n in ll.names
                    if n in observed_y and not ll.datasets[n].attrs.get(COUPLED)
                },
            )
    neighbours = settings.neighbour.neighbours(ll)
    blocks = ()  # coupled variables (conditionals stored) of which a neighbour removes several
    if factorised:
        blocks = tuple(
            name
            for v, name in enumerate(ll.names)
            if ll.datasets[name].attrs.get(COUPLED) and neighbours.largest_block(ll.offsets, v) > 1
        )
    if blocks:
        # per-record conditionals do not add up to a block's: each block's own instead
        try:
            ll = _with_block_conditionals(ll, neighbours, blocks, model, posterior, settings)
        except NonFactorisedError as err:
            how = "replaced" if settings.neighbour.replaces else "unobserved"
            factorised, blocks, routes = False, (), {}
            messages.append(f"{err}; every neighbour is refitted with its records {how}")
    records = notes  # without the model: what was assumed
    if model is not None:
        records = _potential_records(structures, routes, settings.neighbour.replaces, pots)
    relation = settings.neighbour
    if relation.replaces:
        for name in ll.names:  # the error of what cannot be found
            if name not in observed_y:
                observed_values(fit, model, name)
        relation = _with_candidates(fit, model, ll, factorised, relation, observed_y)
    return Inputs(
        model=model,
        posterior=posterior,
        names=read.names,
        draws=draws,
        par_labels=read.par_labels,
        var_of=read.var_of,
        ll=ll,
        factorised=factorised,
        can_refit=model is not None or settings.refit.build_model is not None,
        reff=relative_efficiency(posterior),
        messages=tuple(messages),
        neighbours=neighbours,
        observed_y=observed_y,
        relation=relation,
        bins=binning.quantile_bins(draws, settings.bins),
        match=MatchInputs(
            posterior,
            read.match_draws,
            observed_y,
            fit.unconstrained_posterior,
            read.match_rows,
        ),
        left_out=read.left_out,
        blocks=blocks,
        records=tuple(records),
        convergence=fit_convergence(posterior, read.names, fit.sample_stats),
    )


class _Draws(NamedTuple):
    draws: np.ndarray
    par_labels: list[str]
    var_of: list[str]
    names: list[str]
    messages: list[str]
    match_draws: np.ndarray
    match_rows: np.ndarray | None
    left_out: tuple[LeftOut, ...]


def _posterior_draws(fit, model, posterior, var_names, filter_vars, unproven=()) -> _Draws:
    """The audited draws without data copies and constant elements, and what was left out.

    ``unproven``: the Potentials reading data whose records are no neighbour (said here).
    """
    names = select_var_names(posterior, var_names, filter_vars)
    all_draws, par_labels, var_of = posterior_matrix(posterior, names)
    keep, messages, left_out = drop_data_copies(
        all_draws,
        var_of,
        explicit=var_names is not None,
        observed=observed_arrays(fit, model),
        labels=par_labels,
        reads_data=reads_data(model, names) if model is not None else None,
    )
    messages.extend(p.advice() for p in unproven)
    left_out = tuple(left_out)
    if keep.all():  # nothing dropped: one matrix
        return _Draws(all_draws, par_labels, var_of, names, messages, all_draws, None, left_out)
    all_var_of = np.asarray(var_of)
    names = [n for n in names if keep[all_var_of == n].any()]
    in_names = np.isin(all_var_of, names)
    return _Draws(
        draws=all_draws[keep],
        par_labels=[lab for lab, k in zip(par_labels, keep, strict=True) if k],
        var_of=all_var_of[keep].tolist(),
        names=names,
        messages=messages,
        match_draws=all_draws[in_names],
        match_rows=None if keep[in_names].all() else np.flatnonzero(keep[in_names]),
        left_out=left_out,
    )


def _check_records(ll: LogLikelihood) -> None:
    """The audited observed variables have records (one without, beside others, is left alone)."""
    if ll.n_rows == 0:
        raise ValueError(
            f"the observed variable(s) {list(ll.names)} have zero records: check that the data "
            "reached the model, or audit others (edp.Remove(observed=[...]))"
        )


def _potentials(model, settings: Settings) -> Potentials:
    """The model the audit reads: its Potentials of one term per record as observed variables."""
    if model is None:
        return Potentials(None, {})
    pots = potentials_as_observed(model)
    _check_potentials(pots, settings)
    return pots


def _check_potentials(pots: Potentials, settings: Settings) -> None:
    """Refuse, before any work, what the records of a Potential cannot give."""
    chosen = settings.neighbour.observed
    if pots.unproven and not pots.model.observed_RVs:
        raise ValueError(
            "the model has no observed variable, and no Potential with one element per record "
            f"to audit as one: {pots.unproven[0].advice()}"
        )
    if pots.unproven and chosen is None:
        raise ValueError(
            f"{pots.unproven[0].advice()}. To audit the observed variables' records only, "
            "name them: edp.Remove(observed=[...])"
        )
    audited = [n for n in pots.audited if chosen is None or n in chosen]
    if not audited:
        return
    if settings.neighbour.replaces:
        p = pots.found[audited[0]]
        raise ValueError(
            f"neighbour='replace' cannot replace a record of the Potential {p.name!r}: a "
            f"record is a row of several arrays ({', '.join(p.arrays)}), with no one value "
            "to replace. Use neighbour='remove', or leave its records out of the neighbours "
            "(edp.Replace(..., observed=[...]) naming the observed variables)."
        )
    if settings.neighbour.records == "elements":
        raise ValueError(
            f"records='elements' would split each record of the Potential {audited[0]!r} "
            "(one element, reading one row of its data) into its values: use records='auto' "
            "or 'rows', or leave it out (edp.Remove(observed=[...]))"
        )


def _potential_records(structures: dict, routes: dict, replace: bool, pots: Potentials):
    """:func:`_record_lines`, each audited Potential's line in place of its variable's."""
    records = _record_lines(structures, routes, replace)
    names = [name for name in pots.audited if name in structures]
    if not names:
        return records
    own = tuple(f"{name!r}:" for name in names)
    return [r for r in records if not r.startswith(own)] + [
        pots.found[name].describe() for name in names
    ]


def _potential_messages(weighted: dict, ll: LogLikelihood) -> list[str]:
    """Warnings about Potentials holding part of records' likelihood (``potential_records``)."""
    messages = []
    labels = Neighbours.records(ll).labels
    for potential, per_var in weighted.items():
        for name, mask in per_var.items():
            if name not in ll.names:
                continue
            v = ll.names.index(name)
            n_v = int(ll.offsets[v + 1] - ll.offsets[v])
            if mask is None:
                which = f"every record of {name!r}"
            else:
                rows = np.flatnonzero(mask.reshape(n_v, -1).any(axis=1)) if mask.size else []
                if not len(rows):
                    continue  # read, but no record's value changes it (weights all 1)
                shown = ", ".join(str(x) for x in labels[ll.offsets[v] + rows[:10]])
                more = f" and {len(rows) - 10} more" if len(rows) > 10 else ""
                what = "record" if len(rows) == 1 else "records"
                which = f"{what} {shown}{more} of {name!r}"
            messages.append(
                f"the model's Potential {potential!r} holds part of the likelihood of {which}, "
                "that a neighbour does not remove or replace, so their epsilon is mis-measured: "
                "write each record's whole likelihood as one term of an observed variable "
                "(pm.CustomDist) and drop the Potential (docs/troubleshooting.md)"
            )
    return messages


def _check_draws_per_bin(n_samples: int, bins: int) -> None:
    if n_samples < MIN_DRAWS_PER_BIN * bins:
        max_bins = n_samples // MIN_DRAWS_PER_BIN
        advice = f"Use bins <= {max_bins} or draw" if max_bins >= 2 else "Draw"
        raise ValueError(
            f"too few draws: {n_samples} for bins={bins} leave under {MIN_DRAWS_PER_BIN} per "
            f"bin. {advice} at least {MIN_DRAWS_PER_BIN * bins} samples."
        )


def _log_likelihood(fit, model, settings: Settings, observed_data, potentials=()):
    """``(ll, factorised, notes, structures, routes)``: the pointwise log-likelihood.

    Refits only (``factorised`` False): the records' layout. ``structures``: what a record
    is per observed variable (from the graph); ``routes``: how each coupled variable's
    conditionals were computed. ``potentials``: the user's Potentials among the observed
    variables, which a stored ``log_likelihood`` group lacks.
    """
    observed = settings.neighbour.observed
    observed = None if observed is None else list(observed)
    source = fit.log_likelihood_source
    posterior = fit.group("posterior")
    structures = _structures(model, observed, settings.neighbour.records)
    routes: dict[str, str] = {}
    if not any(st.coupled for st in structures.values()):  # a coupled one is not streamed
        streamed = _streamed_log_likelihood(fit, model, observed, source)
        if streamed is not None:
            return streamed, True, [], structures, routes
    notes: list[str] = []
    try:
        ll_ds = ensure_log_likelihood(fit, model, progressbar=False, also=potentials)
        if model is None:
            notes = _assumed_factorised(ll_ds, observed)
        else:
            ll_ds, routes = _coupled_conditionals(
                posterior, model, ll_ds, observed, observed_data, structures, settings
            )
        return LogLikelihood.from_dataset(ll_ds, observed), True, notes, structures, routes
    except (NonFactorisedError, ValueError) as err:
        coupled = isinstance(err, NonFactorisedError)
        if coupled:
            check_not_scalar(observed_data, err)
        builder = settings.refit.build_model is not None
        # no exact reweighting route: refits with the record unobserved, or by the builder
        automatic = model is not None and coupled
        if not (builder or automatic) or not (coupled or "no 'log_likelihood' group" in str(err)):
            raise
        if automatic and not builder:
            notes.append(
                str(err) if "refitted" in str(err) else f"{err}; every neighbour is refitted"
            )
        if not settings.method.refits:
            raise ValueError(
                f"method={settings.method.name!r} needs each record's log-likelihood or "
                f"conditional, and {str(err).rstrip('.')}. Or use method='refit' (or 'auto', "
                "which then refits every neighbour)"
            ) from err
        if observed_data is None:
            raise ValueError("refitting by build_model needs the observed_data group") from err
    layout = LogLikelihood.from_observed(
        observed_data,
        observed,
        posterior.sizes["chain"],
        posterior.sizes["draw"],
        structures=structures,
    )
    return layout, False, notes, structures, {}


def _record_lines(structures: dict, routes: dict, replace: bool) -> list[str]:
    """One sentence per observed variable whose records are not simply its values."""
    how = "replaced" if replace else "unobserved"
    out = []
    for name, st in structures.items():
        if st.plain:
            continue
        if not st.coupled:
            out.append(st.describe())
        else:
            out.append(
                routes.get(name)
                or f"{st.describe()}; every neighbour refitted with its record {how}"
            )
    return out


def _structures(model, observed, records: str) -> dict[str, Structure]:
    """What a record is for every audited observed variable, read from the model's graph."""
    if model is None:
        return {}
    names = [rv.name for rv in model.observed_RVs]
    if observed is not None:
        names = [n for n in names if n in observed]
    logps: dict = {}
    out = {name: read_structure(model, model[name], records, logps) for name in names}
    for st in out.values():
        st.check_changeable()
    return out


def _assumed_factorised(ll_ds: xr.Dataset, observed) -> list[str]:
    """Without the model, each term of the log_likelihood group is taken as one record's."""
    names = list(ll_ds.data_vars) if observed is None else list(observed)
    many = [n for n in names if n in ll_ds and ll_ds[n].ndim > 2]
    if not many:
        return []
    return [
        f"without the model, each term of the log_likelihood group of {many} is taken as one "
        "record's own likelihood, which only the model's graph can prove (a Kalman filter's "
        "term per time step is not): pass model= to read what a record is from the graph"
    ]


def _imputed_row_labels(ll: LogLikelihood, model, posterior, observed_data) -> LogLikelihood:
    """``ll`` with an imputed variable's records labelled by their rows in its data.

    PyMC numbers them among the observed values: record 24 may be row 27 of ``y``.
    """
    datasets = ll.datasets
    for name in ll.names:
        dims = ll.record_dims(name)
        if len(dims) != 1:
            continue
        observed = None
        if observed_data is not None and name in observed_data:
            observed = np.asarray(observed_data[name].values)
        found = imputed_positions(model, posterior, observed, name)
        if found is None or found[1].size != datasets[name].sizes[dims[0]]:
            continue
        labels = _data_rows(found[0], found[1], model, posterior)
        if labels is not None:
            datasets = datasets.assign_coords({dims[0]: labels})
    if datasets is ll.datasets:
        return ll
    return LogLikelihood(ll.names, ll.arrays, ll.offsets, datasets)


def _data_rows(joined: str, positions: np.ndarray, model, posterior) -> np.ndarray | None:
    """Labels of the flat ``positions`` of ``joined``: coordinates, indices or ``"i, j"``."""
    if joined in posterior:
        da = posterior[joined]
        dims = [d for d in da.dims if d not in ("chain", "draw")]
        shape = [da.sizes[d] for d in dims]
        coords = [
            np.asarray(da[d].values) if d in da.coords else np.arange(da.sizes[d]) for d in dims
        ]
    elif model is not None and None not in model[joined].type.shape:
        shape = list(model[joined].type.shape)
        dims = model.named_vars_to_dims.get(joined) or [None] * len(shape)
        coords = []
        for d, size in zip(dims, shape, strict=True):
            values = model.coords.get(d) if d is not None else None
            ok = values is not None and len(values) == size
            coords.append(np.asarray(values) if ok else np.arange(size))
    else:
        return None
    if not shape or positions.max(initial=0) >= np.prod(shape):
        return None
    index = np.unravel_index(positions, shape)
    if len(shape) == 1:
        return coords[0][index[0]]
    return np.array(
        [
            ", ".join(str(c[i[k]]) for c, i in zip(coords, index, strict=True))
            for k in range(positions.size)
        ]
    )


def _with_block_conditionals(ll, neighbours, names, model, posterior, settings) -> LogLikelihood:
    """``ll`` with each block's ``log p(y_b | y_-b, theta)`` on its first row, 0 on the others."""
    if settings.neighbour.replaces:
        raise NonFactorisedError(
            "a group of a coupled likelihood's records replaced together is not reweighted"
        )
    arrays = list(ll.arrays)
    for name in names:
        v = ll.names.index(name)
        lo, hi = ll.offsets[v], ll.offsets[v + 1]
        blocks = []
        for k in range(len(neighbours)):
            rows = neighbours.rows_of(k)
            rows = rows[(rows >= lo) & (rows < hi)] - lo
            if rows.size:
                blocks.append(rows)
        taken = np.concatenate(blocks)
        if np.unique(taken).size != taken.size:
            raise NonFactorisedError(f"the blocks of {name!r} overlap", name=name)
        size = int(ll.datasets[name].attrs.get(RECORD_SIZE, 1))
        elements = [(b[:, None] * size + np.arange(size)).ravel() for b in blocks]
        fn = elementwise_loglik(model, name, settings.neighbour.records)
        values = fn.blocks(posterior, elements)
        column = np.zeros((ll.n_samples, int(hi - lo)))
        column[:, [b[0] for b in blocks]] = values
        arrays[v] = column
    return LogLikelihood(ll.names, tuple(arrays), ll.offsets, ll.datasets)


def _coupled_conditionals(
    posterior, model, ll_ds, observed, observed_data, structures, settings: Settings
) -> tuple[xr.Dataset, dict[str, str]]:
    """``ll_ds`` with each coupled variable's records by their leave-one-out conditionals.

    Also returns how each was computed, by name; raises :class:`NonFactorisedError` where
    no reweighting route is exact (:mod:`pymc_edp.model.coupled`).
    """
    coupled, routes = {}, {}
    for name, st in structures.items():
        if not st.coupled:
            continue
        y = _observed_array(observed_data, model, name)
        fn = elementwise_loglik(model, name, settings.neighbour.records)
        cond = fn.conditionals(posterior)
        n_rec = st.record_ndim
        dims = list(y.dims[:n_rec])
        shape = (posterior.sizes["chain"], posterior.sizes["draw"], *st.value_shape[:n_rec])
        coupled[name] = xr.DataArray(
            cond.at_data.reshape(shape),
            dims=("chain", "draw", *dims),
            coords={d: y[d].values for d in dims if d in y.coords},
            attrs={COUPLED: 1, RECORD_SIZE: st.record_size, "edp_route": cond.route},
        )
        routes[name] = cond.note
        _log.info("%s", cond.note)
    if coupled:
        # the coupled terms' dims (PyMC's, e.g. a CAR's single term) go with them
        rest = ll_ds.drop_vars([n for n in coupled if n in ll_ds])
        unused = [d for d in rest.dims if not any(d in rest[v].dims for v in rest.data_vars)]
        ll_ds = rest.drop_dims(unused).assign(coupled)
    return ll_ds, routes


def _observed_array(observed_data, model, name: str) -> xr.DataArray:
    """The observed values of ``name`` with their dims: ``observed_data``, else the model's."""
    if observed_data is not None and name in observed_data:
        return observed_data[name]
    values = observed_values(None, model, name)
    return xr.DataArray(values, dims=[f"{name}_dim_{i}" for i in range(np.ndim(values))])


#: Why the audit computes a log_likelihood group whole (INFO): not an error.
_WHOLE_GROUP = (
    "computing the log_likelihood group whole, not streamed in chunks of records (as exact, "
    "more memory; not an error): %s"
)


def _streamed_log_likelihood(fit, model, observed, source) -> LogLikelihood | None:
    """The log-likelihood computed from the model chunk by chunk, when asked or best."""
    if source == "group":  # the fit has the group (Fit checks)
        return None
    if source == "auto" and (fit.has("log_likelihood") or model is None):
        return None
    if model is None:
        raise ValueError("log_likelihood='model' needs the model: pass model=")
    names = observed or [rv.name for rv in model.observed_RVs]
    reasons = {k: v for k, v in stream_supported(model, names).items() if v is not None}
    if reasons:
        if source == "model":
            detail = "; ".join(f"{k}: {v}" for k, v in reasons.items())
            raise ValueError(f"log_likelihood='model' cannot stream ({detail}): use 'auto'")
        _log.info(_WHOLE_GROUP, reasons)
        return None
    try:
        return model_log_likelihood(model, fit, names)
    except StreamingUnavailableError as err:
        if source == "model":
            raise
        _log.info(_WHOLE_GROUP, err.reason)
        return None


def _observed_y(fit, model, ll: LogLikelihood) -> dict:
    """Observed values of every observed variable that can be found (audited or modelled)."""
    names = list(ll.names)
    if model is not None:
        names += [rv.name for rv in model.observed_RVs if rv.name not in names]
    out = {}
    for name in names:
        try:
            out[name] = observed_values(fit, model, name)
        except ValueError:
            continue
    return out


def _with_candidates(fit, model, ll: LogLikelihood, factorised, relation, observed_y):
    """``relation`` bound to its candidate values and the log-likelihood arrays at them."""
    cands = {}
    for name in ll.names:
        y = observed_y[name]
        cands[name] = relation.candidate_values(name, y, integer_data(model, name, y))
    if not factorised:
        if any(c.shape[0] != 1 for c in cands.values()):
            raise ValueError("without a factorised likelihood give one replacement per record")
        return relation.with_candidates(cands, [])
    per_var = []
    for v, name in enumerate(ll.names):
        streamed = _streamed_replacements(fit, model, ll, v, cands[name])
        if streamed is not None:
            per_var.append(streamed)
            continue
        alt = replacement_log_likelihood(fit, model, name, cands[name])
        check_support(alt, cands[name], name)
        n_v = ll.arrays[v].shape[1]
        if alt.shape[-1] != n_v:
            raise ValueError(
                f"the model's log-likelihood of {name!r} has {alt.shape[-1]} terms per "
                f"draw but the log_likelihood group has {n_v}"
            )
        per_var.append(alt)
    n_cand = max(len(a) for a in per_var)
    sets = [[a[min(c, len(a) - 1)] for a in per_var] for c in range(n_cand)]
    return relation.with_candidates(cands, sets)


def _streamed_replacements(fit, model, ll: LogLikelihood, v: int, values):
    """Per candidate, the replacement log-likelihood computed from the model chunk by chunk.

    Only when the log-likelihood is lazy or the values exceed
    :data:`REPLACEMENTS_IN_MEMORY` (the data decide, never the chunk options), else None.
    """
    name = ll.names[v]
    array = ll.arrays[v]
    size = values.shape[0] * ll.n_samples * array.shape[1] * 8
    if not (ll.lazy or size > REPLACEMENTS_IN_MEMORY) or model is None:
        return None
    if not hasattr(array, "with_observed"):
        if stream_supported(model, [name])[name] is not None:
            return None
        array = model_log_likelihood(model, fit, [name]).arrays[0]
    return [array.with_observed(c) for c in values]

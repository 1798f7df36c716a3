"""From a ``log_likelihood`` group to Pareto-smoothed log-weights of each neighbour posterior.

For conditionally independent records a neighbour posterior reweights the full-data one
(the PSIS-LOO identity): removing record ``i`` divides by ``p(y_i | theta)``, replacing it
by ``y'`` multiplies by ``p(y' | theta) / p(y_i | theta)``, removing an individual
divides by the product over its rows. Every observed variable's records are laid end to
end as rows; a neighbour is a set of rows. Log-weights are made a chunk of neighbours at a
time, never as a second ``n x S`` array.

References
----------
.. [1] Vehtari, A., Gelman, A. and Gabry, J. "Practical Bayesian model evaluation using
   leave-one-out cross-validation and WAIC." Statistics and Computing 27, 2017.
.. [2] Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. "Pareto smoothed
   importance sampling." Journal of Machine Learning Research 25(72), 2024.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from pymc_edp.base.common import NEIGHBOUR_DIM, PARAMETER_DIM, SAMPLE_DIM
from pymc_edp.base.limits import LOG_RATIO_RESOLUTION
from pymc_edp.base.mcse import ess_mean
from pymc_edp.base.psis import PSIS_TAIL_RULE, psislw
from pymc_edp.core.neighbours import Neighbours
from pymc_edp.core.select import recovered_names

__all__ = [
    "COUPLED",
    "RECORD_SIZE",
    "LogLikelihood",
    "NonFactorisedError",
    "by_variable",
    "element_labels",
    "elements_of",
    "flat_view",
    "is_lazy",
    "log_ratio_range",
    "log_ratios",
    "neighbour_rows",
    "posterior_matrix",
    "relative_efficiency",
    "smoothed_log_weights",
]

SAMPLE_DIMS = ("chain", "draw")
#: Attributes of a log-likelihood variable whose records are coupled: it holds each record's
#: leave-one-out conditional (or, refits only, zeros), and each record's number of values.
COUPLED, RECORD_SIZE = "edp_coupled", "edp_record_size"


def element_labels(da: xr.DataArray, dims: Sequence[str] | None = None) -> list[str]:
    """ArviZ-style labels ``name[a, b]`` for every element of ``da`` over ``dims`` (its own)."""
    dims = da.dims if dims is None else dims
    if not dims:
        return [str(da.name)]
    values = [np.asarray(da[d].values) for d in dims]
    grids = np.meshgrid(*values, indexing="ij")
    flat = [g.ravel() for g in grids]
    return [f"{da.name}[{', '.join(str(v[k]) for v in flat)}]" for k in range(flat[0].size)]


class NonFactorisedError(ValueError):
    """The likelihood has not one term per record (of observed variable ``name``)."""

    def __init__(self, message: str, name: str | None = None):
        super().__init__(message)
        self.name = name


def posterior_matrix(posterior: xr.Dataset, names: Sequence[str]):
    """``(draws, labels, var_of)``: posterior variables as ``(n_parameters, S)``, chain-major."""
    rows, labels, var_of = [], [], []
    for name in names:
        da = posterior[name]
        extra = [d for d in da.dims if d not in SAMPLE_DIMS]
        da = da.transpose(*extra, *SAMPLE_DIMS)
        values = np.asarray(da.values, dtype=float)
        values = values.reshape(-1, values.shape[-2] * values.shape[-1])
        rows.append(values)
        labels.extend(element_labels(da, extra))
        var_of.extend([name] * values.shape[0])
    return np.concatenate(rows, axis=0), labels, var_of


#: Where a per-variable table marks its elements that were audited (the others were left out).
AUDITED = "audited"
#: Dims of a per-variable table that are not the variable's own.
_NOT_ELEMENT_DIMS = (NEIGHBOUR_DIM, SAMPLE_DIM)


def _fill(values: np.ndarray):
    """What a left-out element holds: NaN, False, "" or -1, by dtype."""
    kind = np.asarray(values).dtype.kind
    return {"f": np.nan, "b": False, "U": "", "O": "", "S": ""}.get(kind, -1)


def own_dims(da: xr.DataArray, name: str) -> xr.DataArray:
    """``da`` with its dims named as the per-variable tables have them.

    A dim named as the tables' own (``neighbour``, ``sample``) becomes ``<name>_<dim>``.
    """
    return da.rename({d: f"{name}_{d}" for d in da.dims if d in _NOT_ELEMENT_DIMS})


def elements_of(posterior: xr.Dataset, names: Sequence[str]) -> dict[str, xr.DataArray]:
    """One draw of each variable, its dims as :func:`by_variable` takes them."""
    return {n: own_dims(posterior[n].isel(chain=0, draw=0, drop=True), n) for n in names}


def by_variable(
    columns: Mapping[str, tuple],
    elements: Mapping[str, xr.DataArray],
    rows=None,
    coords: Mapping | None = None,
) -> xr.DataTree:
    """Per-parameter columns as one Dataset per variable, over its own dims and coords.

    Parameters
    ----------
    columns : mapping of str to (dims, values) or (dims, values, attrs)
        ``values``' last axis runs over the audited elements, ``dims`` names the others.
    elements : mapping of str to xarray.DataArray
        Per variable, one draw of it (its dims and coords). Laid end to end (as
        :func:`posterior_matrix`), its elements' positions ``rows`` are the audited ones
        (None: all). Left-out elements hold NaN, False, "" or -1, and ``audited`` False.
    coords : mapping, optional
        Coordinates of ``columns``' other dims.

    Examples
    --------
    Two variables' epsilons, ``theta``'s last element left out:

    >>> elements = {"mu": xr.DataArray(0.0),
    ...             "theta": xr.DataArray([0.0] * 3, dims="arm", coords={"arm": list("abc")})}
    >>> tree = by_variable({"epsilon": ((), [0.5, 0.2, 0.3])}, elements, rows=[0, 1, 2])
    >>> tree["theta"]["epsilon"].values.tolist(), tree["theta"]["audited"].values.tolist()
    ([0.2, 0.3, nan], [True, True, False])
    >>> flat_view(tree.children)["epsilon"].to_series().to_dict()
    {'mu': 0.5, 'theta[a]': 0.2, 'theta[b]': 0.3}
    """
    sizes = [elements[n].size for n in elements]
    rows = np.arange(sum(sizes)) if rows is None else np.asarray(rows)
    tree, start = {}, 0
    for (name, element), size in zip(elements.items(), sizes, strict=True):
        mine = (rows >= start) & (rows < start + size)
        at = rows[mine] - start
        audited = np.zeros(size, dtype=bool)
        audited[at] = True
        ds = {AUDITED: (element.dims, audited.reshape(element.shape))}
        for key, (dims, values, *attrs) in columns.items():
            values = np.asarray(values)
            full = np.full((*values.shape[:-1], size), _fill(values), dtype=values.dtype)
            full[..., at] = values[..., mine]
            shape = (*values.shape[:-1], *element.shape)
            ds[key] = ((*dims, *element.dims), full.reshape(shape), *attrs)
        own = {d: element[d] for d in element.dims if d in element.coords}
        tree[name] = xr.Dataset(ds, coords={**own, **(coords or {})})
        start += size
    return xr.DataTree.from_dict(tree)


def flat_view(tables: Mapping[str, xr.Dataset]) -> xr.Dataset:
    """Per-variable tables as one over ``parameter``: ArviZ-style labels, only audited elements.

    ``tables`` maps each variable to its Dataset (a node of :func:`by_variable`'s tree);
    ``var_name`` says whose element each row is.
    """
    parts = []
    for name, ds in tables.items():
        ds = ds.to_dataset() if isinstance(ds, xr.DataTree) else ds
        own = list(ds[AUDITED].dims)
        labels = element_labels(ds[AUDITED].rename(name))
        flat = ds.drop_vars(own, errors="ignore")
        flat = flat.stack({PARAMETER_DIM: own}) if own else flat.expand_dims(PARAMETER_DIM)
        flat = flat.drop_vars([c for c in flat.coords if c not in _NOT_ELEMENT_DIMS])
        flat = flat.assign_coords({PARAMETER_DIM: labels})
        flat = flat.assign(var_name=(PARAMETER_DIM, np.full(len(labels), name)))
        parts.append(flat.isel({PARAMETER_DIM: np.flatnonzero(flat[AUDITED].values)}))
    if not parts:  # no variable: an empty table
        return xr.Dataset(coords={PARAMETER_DIM: np.array([], dtype=str)})
    out = xr.concat(parts, PARAMETER_DIM, coords="minimal", join="outer")
    return out.drop_vars(AUDITED).transpose(PARAMETER_DIM, ...)


@dataclass(frozen=True)
class LogLikelihood:
    """The pointwise log-likelihood of every observed variable, laid end to end as rows.

    ``arrays`` holds an ``(n_samples, n_rows_v)`` view per variable in ``names``,
    ``offsets`` each variable's first global row (``len(names) + 1`` long), ``datasets`` the
    source group (for coordinates).
    """

    names: tuple[str, ...]
    arrays: tuple[np.ndarray, ...]
    offsets: np.ndarray
    datasets: xr.Dataset

    @classmethod
    def from_dataset(cls, ds: xr.Dataset, names: Sequence[str] | None = None) -> LogLikelihood:
        """Build from a ``log_likelihood`` group, of variables ``names`` (default all)."""
        if names is None:
            names = list(ds.data_vars)
        else:
            unknown = [n for n in names if n not in ds.data_vars]
            if unknown:
                raise KeyError(
                    f"observed variable(s) {unknown} not in the log_likelihood group, which "
                    f"has {list(ds.data_vars)}"
                )
        if not names:
            raise ValueError("the log_likelihood group has no variables")
        arrays = []
        for name in names:
            da = ds[name]
            missing = [d for d in SAMPLE_DIMS if d not in da.dims]
            if missing:
                raise ValueError(
                    f"log_likelihood variable {name!r} lacks the sample dimension(s) {missing}"
                )
            rec_dims = [d for d in da.dims if d not in SAMPLE_DIMS]
            if not rec_dims:
                raise NonFactorisedError(
                    f"the log-likelihood of {name!r} has a single term per draw: its likelihood "
                    "does not factorise over records (e.g. an MvNormal, GP or AR over all "
                    "records), so a record's weight needs its leave-one-out conditional "
                    "p(y_i | y_-i, theta), which only the model gives: pass model= to the "
                    "audit (or use method='refit' with build_model=...)",
                    name=name,
                )
            da = da.transpose(*SAMPLE_DIMS, *rec_dims)
            arrays.append(_columns(da))
        sizes = [a.shape[1] for a in arrays]
        n_samples = {a.shape[0] for a in arrays}
        if len(n_samples) != 1:
            raise ValueError("log_likelihood variables have different numbers of draws")
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return cls(tuple(names), tuple(arrays), offsets, ds)

    @classmethod
    def from_observed(
        cls,
        observed: xr.Dataset,
        names: Sequence[str] | None,
        n_chains: int,
        n_draws: int,
        structures: Mapping | None = None,
    ) -> LogLikelihood:
        """Record layout from ``observed_data``, with zero placeholders (refits only).

        A record is an entry of each variable's first dimension, or as its ``structures``
        say; coupled ones are marked (:data:`COUPLED`).
        """
        names = list(observed.data_vars) if names is None else list(names)
        unknown = [n for n in names if n not in observed.data_vars]
        if unknown:
            raise KeyError(f"observed variable(s) {unknown} not in the observed_data group")
        structures = structures or {}
        data_vars, arrays = {}, []
        for name in names:
            da = observed[name]
            if da.ndim == 0:
                raise ValueError(f"observed variable {name!r} is a scalar: it has no records")
            st = structures.get(name)
            n_rec = 1 if st is None else max(1, st.record_ndim)
            dims = list(da.dims[:n_rec])
            shape = tuple(da.sizes[d] for d in dims)
            n = int(np.prod(shape))
            zeros = np.broadcast_to(0.0, (n_chains, n_draws, *shape))
            attrs = {}
            if st is not None and st.coupled:
                attrs = {COUPLED: 1, RECORD_SIZE: int(da.size // max(1, n))}
            data_vars[name] = xr.DataArray(
                zeros,
                dims=(*SAMPLE_DIMS, *dims),
                coords={d: da[d].values for d in dims if d in da.coords},
                attrs=attrs,
            )
            arrays.append(np.broadcast_to(0.0, (n_chains * n_draws, n)))
        offsets = np.concatenate([[0], np.cumsum([a.shape[1] for a in arrays])]).astype(np.int64)
        return cls(tuple(names), tuple(arrays), offsets, xr.Dataset(data_vars))

    @classmethod
    def at_draws(cls, like: LogLikelihood, arrays: Sequence[np.ndarray]) -> LogLikelihood:
        """The same records as ``like``, with values ``(S', n_rows_v)`` at other draws."""
        arrays = tuple(np.asarray(a, dtype=np.float64) for a in arrays)
        sizes = [a.shape[1] for a in arrays]
        if sizes != list(np.diff(like.offsets)):
            raise ValueError(
                f"arrays have {sizes} rows per variable, expected {list(np.diff(like.offsets))}"
            )
        return cls(like.names, arrays, like.offsets, like.datasets)

    @property
    def n_samples(self) -> int:
        """Number of posterior draws (chains x draws)."""
        return self.arrays[0].shape[0]

    @property
    def n_rows(self) -> int:
        """Total number of records over all observed variables."""
        return int(self.offsets[-1])

    def record_dims(self, name: str) -> list[str]:
        """Record dimensions of observed variable ``name``."""
        return [d for d in self.datasets[name].dims if d not in SAMPLE_DIMS]

    def row_labels(self) -> list[str]:
        """ArviZ-style label of every row, e.g. ``y[3]``."""
        labels: list[str] = []
        for name in self.names:
            labels.extend(element_labels(self.datasets[name], self.record_dims(name)))
        return labels

    def gather(self, rows: np.ndarray, arrays: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """Rows ``rows`` (global indices) as a C-contiguous ``(len(rows), n_samples)`` array."""
        arrays = self.arrays if arrays is None else arrays
        rows = np.asarray(rows, dtype=np.int64)
        var = np.searchsorted(self.offsets, rows, side="right") - 1
        if rows.size and var[0] == var[-1] and np.all(np.diff(rows) == 1):
            v = var[0]
            lo = rows[0] - self.offsets[v]
            # always a float64 copy: callers overwrite the result in place
            block = _read(arrays[v], slice(lo, lo + rows.size))
            return np.array(block.T, dtype=np.float64, order="C")
        out = np.empty((rows.size, self.n_samples))
        for v in np.unique(var):
            sel = var == v
            out[sel] = _read(arrays[v], rows[sel] - self.offsets[v]).T
        return out

    def __getstate__(self):
        # a worker needs the values and the records' layout: one draw of the source group
        # travels (for labels and dims), not its n x S values
        state = dict(self.__dict__)
        state["datasets"] = self.datasets.isel(chain=[0], draw=[0])
        return state

    @property
    def lazy(self) -> bool:
        """True when the values are read or computed chunk by chunk, never held whole."""
        return any(is_lazy(a) for a in self.arrays)


def _columns(da: xr.DataArray):
    """``(chain * draw, n_rows)`` view of one log-likelihood variable (dask stays lazy)."""
    if is_lazy(da.data):
        data = da.data
        return data.reshape(data.shape[0] * data.shape[1], -1)
    values = np.asarray(da.values)
    if values.dtype.kind != "f":
        values = values.astype(np.float64)
    return values.reshape(values.shape[0] * values.shape[1], -1)


def is_lazy(array) -> bool:
    """True for arrays whose values are computed when read (dask arrays, column providers)."""
    return not isinstance(array, np.ndarray) and hasattr(array, "shape")


def relative_efficiency(posterior: xr.Dataset) -> float:
    """Relative MCMC efficiency ``r_eff = mean ESS / S``, as the stack's PSIS-LOO computes it."""
    n_chains = posterior.sizes.get("chain", 1)
    if n_chains == 1:
        return 1.0
    n_samples = posterior.sizes["chain"] * posterior.sizes["draw"]
    recovered = set(recovered_names(posterior))
    rows = np.vstack(
        [
            np.asarray(posterior[v].transpose("chain", "draw", ...), dtype=float)
            .reshape(n_samples, -1)
            .T
            for v in posterior.data_vars
            if v not in recovered  # not the fit's own variables
        ]
    )
    values = ess_mean(rows[np.isfinite(rows).all(axis=1)], n_chains)  # as ess(method="mean")
    values = values[np.isfinite(values)]
    if values.size == 0:
        return 1.0
    return float(values.mean() / n_samples)


def _read(array, columns) -> np.ndarray:
    """Columns ``columns`` (a slice or index array) of one ``(S, n_rows_v)`` array, in memory."""
    if isinstance(array, np.ndarray):
        return array[:, columns]
    if hasattr(array, "compute"):  # dask: reads only the stored chunks the columns touch
        if not isinstance(columns, slice):
            columns = np.asarray(columns)
        return np.asarray(array[:, columns].compute())
    return np.asarray(array[:, columns])


def _check_finite(ll_rows: np.ndarray, rows: np.ndarray, labels: list[str] | None, what: str):
    bad = ~np.isfinite(ll_rows)
    if not bad.any():
        return
    r, s = np.argwhere(bad)[0]
    kind = "NaN" if np.isnan(ll_rows[r, s]) else "infinite"
    which = labels[rows[r]] if labels is not None else f"row {rows[r]}"
    raise ValueError(
        f"{what} has {int(bad.sum())} {kind if bad.sum() == 1 else 'non-finite'} value(s), "
        f"first at record {which}, draw {s} ({kind}). The posterior draws must have a finite "
        "likelihood for every record: check the model for records outside the support of "
        "the likelihood, missing values in the data, or recompute the log_likelihood group."
    )


def _check_replacement_support(alt: np.ndarray, rows: np.ndarray, labels: list[str]) -> None:
    """Refuse a replacement value where the likelihood is zero (or undefined) at every draw."""
    never = ~np.isfinite(alt).any(axis=1)
    if never.any():
        r = int(np.flatnonzero(never)[0])
        raise ValueError(
            f"the replacement value for record {labels[rows[r]]} is outside the support of "
            "its likelihood (log p(y' | theta) is -inf or NaN at every posterior draw): give "
            "replacement values the data could take"
        )


def smoothed_log_weights(
    log_ratio: np.ndarray, reff: float, spread: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Pareto-smoothed, normalised log-weights and k-hat of log ratios, in place.

    Parameters
    ----------
    log_ratio : ndarray, shape (k, S)
        From :func:`log_ratios`; C-contiguous float64, overwritten.
    reff : float
        Relative MCMC efficiency for the PSIS tail length.
    spread : ndarray, shape (k,), optional
        ``max - min`` of each row. Rows constant up to
        :data:`~pymc_edp.base.limits.LOG_RATIO_RESOLUTION` are not smoothed (a Pareto tail
        fitted to rounding noise gives k-hat ``inf`` or NaN weights): their weights are the
        normalised ratios and their k-hat ``-inf``.

    Returns
    -------
    log_weights : ndarray, shape (k, S)
    khat : ndarray, shape (k,)
    """
    if spread is None:
        spread = np.ptp(log_ratio, axis=1)
    flat = np.flatnonzero(np.asarray(spread) <= LOG_RATIO_RESOLUTION)
    raw = log_ratio[flat]  # a copy: psislw overwrites log_ratio
    smoothed, khat = psislw(log_ratio, reff, out=log_ratio, tail_rule=PSIS_TAIL_RULE)
    if flat.size:
        smoothed[flat] = raw - logsumexp(raw, axis=1, keepdims=True)
        khat[flat] = -np.inf
    return smoothed, khat


def log_ratio_range(
    ll: LogLikelihood,
    neighbours: Neighbours,
    start: int,
    stop: int,
    replacement: Sequence[np.ndarray] | None = None,
) -> np.ndarray:
    """``(stop - start,)`` ``max_s - min_s`` of :func:`log_ratios`, cheaply.

    Single consecutive records are read in the stored ``(S, k)`` layout, without a
    transposed copy (same bits); other neighbours go through :func:`log_ratios`.
    """
    lo, hi = neighbours.indptr[start], neighbours.indptr[stop]
    rows = neighbours.rows[lo:hi]
    var = np.searchsorted(ll.offsets, rows[[0, -1]], side="right") - 1 if rows.size else None
    simple = (
        rows.size
        and hi - lo == stop - start
        and var[0] == var[1]
        and rows[-1] - rows[0] == rows.size - 1
    )
    if not simple:
        return np.ptp(log_ratios(ll, neighbours, start, stop, replacement), axis=1)
    v = int(var[0])
    cols = slice(int(rows[0] - ll.offsets[v]), int(rows[-1] - ll.offsets[v]) + 1)
    array = ll.arrays[v]
    other = None if replacement is None else replacement[v]
    if hasattr(array, "range_of") and (other is None or hasattr(other, "range_of")):
        # computed from the model: reduced as computed, never stored (S, k)
        out = array.range_of(cols, other)
    else:
        block = _read(array, cols)
        if other is not None:
            block = np.subtract(_read(other, cols), block, dtype=np.float64)
        top = block.max(axis=0).astype(np.float64)
        bottom = block.min(axis=0).astype(np.float64)
        out = top - bottom
    if not np.all(np.isfinite(out)):  # NaN or infinite values: the full check explains
        log_ratios(ll, neighbours, start, stop, replacement)
    return out


def neighbour_rows(ll: LogLikelihood, neighbours: Neighbours, start: int, stop: int):
    """The rows of neighbours ``start:stop`` at the data, ``(rows, S)`` float64, checked finite."""
    rows = neighbours.rows[neighbours.indptr[start] : neighbours.indptr[stop]]
    base = ll.gather(rows)
    if not np.all(np.isfinite(base)):
        _check_finite(base, rows, ll.row_labels(), "the log_likelihood group")
    return base


def log_ratios(
    ll: LogLikelihood,
    neighbours: Neighbours,
    start: int,
    stop: int,
    replacement: Sequence[np.ndarray] | None = None,
    base: np.ndarray | None = None,
) -> np.ndarray:
    """``(stop - start, S)`` log density ratios ``log p(theta | D') - log p(theta | D)``.

    Up to a constant, at ``ll``'s draws: minus the neighbour's rows summed (removal), or the
    log-likelihood at the ``replacement`` values (per variable, ``(S, n_rows_v)``) minus that
    at the data. ``base``: :func:`neighbour_rows`, read once for several candidates (not
    modified). The result is C-contiguous and the caller's.
    """
    lo, hi = neighbours.indptr[start], neighbours.indptr[stop]
    rows = neighbours.rows[lo:hi]
    if base is None or replacement is None:
        base = neighbour_rows(ll, neighbours, start, stop)
    if replacement is None:
        lr = np.negative(base, out=base)
    else:
        alt = ll.gather(rows, replacement)
        if not np.all(np.isfinite(alt)):
            _check_replacement_support(alt, rows, ll.row_labels())
            _check_finite(
                alt, rows, ll.row_labels(), "the log-likelihood at the replacement values"
            )
        lr = np.subtract(alt, base, out=alt)
    if hi - lo != stop - start:
        lr = np.add.reduceat(lr, neighbours.indptr[start:stop] - lo, axis=0)
    return lr

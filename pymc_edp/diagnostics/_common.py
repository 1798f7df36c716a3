"""What every diagnostic reads from an audit: weights, draws and bins, computed once.

The diagnostics read the attributes of :class:`AuditData` (not the result class, which sits
above them) and keep what they compute in the result's own cache (:func:`cache_of`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
import xarray as xr

from pymc_edp.base import binning
from pymc_edp.base.common import NEIGHBOUR_DIM, PARAMETER_DIM, WEIGHT_INDEX
from pymc_edp.base.mcse import normal_quantile
from pymc_edp.base.validate import check_probability
from pymc_edp.core.loglik import AUDITED, flat_view

#: (parameter, bin) pairs per neighbour whose intervals enter the interval of the maximum.
DEFAULT_CANDIDATES = 5
INTERVAL_DIM = "interval"
#: The rerun that keeps every neighbour's weights (a pruned audit keeps no more).
KEEP_ALL_WEIGHTS = "edp.audit(..., chunks={'store_weights': True, 'prune': False})"


@runtime_checkable
class AuditData(Protocol):
    """The attributes of an audit that the diagnostics read, never change.

    An :class:`pymc_edp.EDPResult` has them all, and documents them.
    """

    @property
    def pointwise(self) -> xr.Dataset: ...
    @property
    def parameters(self) -> xr.DataTree: ...
    @property
    def log_weights(self) -> xr.DataArray | None: ...
    @property
    def draws(self) -> xr.Dataset | None: ...
    @property
    def bins(self) -> int: ...
    @property
    def smoothing(self) -> float: ...
    @property
    def count_smoothing(self) -> float: ...
    @property
    def n_chains(self) -> int: ...
    @property
    def epsilon(self) -> float: ...
    @property
    def worst_neighbour(self) -> Any: ...


def _methods(result: AuditData) -> np.ndarray:
    """``pointwise["method"]`` as strings ("" for every neighbour of an audit without it)."""
    pw = result.pointwise
    if "method" not in pw:
        return np.full(pw.sizes[NEIGHBOUR_DIM], "")
    return np.asarray(pw["method"].values).astype(str)


def was_pruned(result: AuditData) -> bool:
    """Whether the audit pruned neighbours (``pointwise["method"]`` is ``"pruned"`` somewhere)."""
    return bool(np.any(_methods(result) == "pruned"))


def keep_weights_advice(result: AuditData) -> str:
    """How to rerun the audit so that it keeps the weights: a pruned one also needs no pruning."""
    if was_pruned(result):
        return (
            f"rerun {KEEP_ALL_WEIGHTS}: this audit pruned neighbours (pointwise['method'] == "
            "'pruned'), and pruning drops their weights, so store_weights=True is refused "
            "unless prune=False"
        )
    return "rerun edp.audit(..., chunks={'store_weights': True}) (the default)"


def no_weights_error(result: AuditData) -> ValueError:
    """The error of a diagnostic that needs weights the result does not carry."""
    return ValueError(
        "this diagnostic needs the importance weights of the audit, which were not kept: "
        f"{keep_weights_advice(result)}. Results read back with EDPResult.from_netcdf need "
        "to_netcdf(..., include_weights=True)."
    )


def kept_weights(result: AuditData) -> tuple[np.ndarray, np.ndarray]:
    """The smoothed log-weights the audit kept, ``(rows, sample)``, and their positions.

    Small audits keep every neighbour's; large ones (streamed, pruned) those of the
    neighbours that can set epsilon (:data:`pymc_edp.auditing.TOP_WEIGHTS`).
    """
    lw = result.log_weights
    if lw is None:
        raise no_weights_error(result)
    if WEIGHT_INDEX in lw.coords:
        rows = np.asarray(lw[WEIGHT_INDEX].values, dtype=np.int64)
    else:
        rows = np.arange(lw.sizes[NEIGHBOUR_DIM])
    return np.asarray(lw.transpose(NEIGHBOUR_DIM, ...).values, dtype=float), rows


def weights_of(result: AuditData) -> np.ndarray:
    """Every neighbour's smoothed log-weights ``(neighbour, sample)``, or a clear error."""
    lw, rows = kept_weights(result)
    n = result.pointwise.sizes[NEIGHBOUR_DIM]
    if rows.size != n or not np.array_equal(rows, np.arange(n)):
        raise ValueError(
            f"this diagnostic needs every neighbour's importance weights, but this audit kept "
            f"those of {rows.size} of {n} neighbours (the ones that can set epsilon; a large "
            f"audit keeps no more). Rerun {KEEP_ALL_WEIGHTS} to keep them all."
        )
    return lw


def listing(values: Any, limit: int = 10) -> str:
    """The first ``limit`` of ``values`` (and how many there are), for an error message."""
    values = [str(v) for v in np.asarray(values).ravel()]
    head = ", ".join(values[:limit])
    return head if len(values) <= limit else f"{head}, ... ({len(values)} in all)"


def neighbour_position(result: AuditData, neighbour: Any = None) -> tuple[int, Any]:
    """Position in ``pointwise`` of ``neighbour`` (default the worst), and its label."""
    if neighbour is None:
        neighbour = result.worst_neighbour
    labels = result.pointwise[NEIGHBOUR_DIM].values
    hits = np.flatnonzero(labels == neighbour)
    if hits.size == 0:
        raise KeyError(
            f"no neighbour {neighbour!r} in this result; pass one of its neighbours "
            f"(res.pointwise['neighbour']): {listing(labels)}"
        )
    return int(hits[0]), neighbour


def neighbour_weights(result: AuditData, neighbour: Any = None) -> tuple[np.ndarray, int, Any]:
    """One neighbour's kept log-weights ``(1, sample)``, its position and its label."""
    i, neighbour = neighbour_position(result, neighbour)
    lw, rows = kept_weights(result)
    at = np.flatnonzero(rows == i)
    if at.size == 0:
        raise ValueError(
            f"the weights of neighbour {neighbour!r} were not kept (a large audit keeps those "
            "of the neighbours that can set epsilon): use one of those (res.most_exposed()), "
            f"or rerun {KEEP_ALL_WEIGHTS}"
        )
    return lw[at], i, neighbour


def flat_parameters(result: AuditData) -> xr.Dataset:
    """``result.parameters`` as one table over ``parameter``: the audited elements' rows."""
    return cached(result, "flat_parameters", lambda: flat_view(result.parameters.children))


def draws_of(result: AuditData) -> np.ndarray:
    """The full-data draws ``(parameter, sample)`` the bins were cut from (read-only, cached)."""
    if result.draws is None:
        raise ValueError(
            "this diagnostic needs the full-data draws the bins were cut from "
            "(result.draws), which this result does not carry"
        )
    return cached(result, "draws", lambda: _flat_draws(result))


def _flat_draws(result: AuditData) -> np.ndarray:
    audited = {n: node[AUDITED] for n, node in result.parameters.children.items()}
    tables = {n: xr.Dataset({"draws": result.draws[n], AUDITED: a}) for n, a in audited.items()}
    flat = flat_view(tables)["draws"].transpose(PARAMETER_DIM, ...)
    out = np.array(flat.values, dtype=float)
    out.setflags(write=False)
    return out


def cache_of(result: AuditData) -> dict:
    """The result's ``_cache`` field; a fresh dict (recompute) for an object without one."""
    cache = getattr(result, "_cache", None)
    return {} if cache is None else cache


def cached(result: AuditData, key, compute):
    """``compute()``, kept under ``key`` in the result's cache and computed once."""
    cache = cache_of(result)
    if key not in cache:
        cache[key] = compute()
    return cache[key]


def n_bins_of(result: AuditData, bins: int | None) -> int:
    """The number of bins asked for: ``bins``, or the audit's own."""
    return result.bins if bins is None else int(bins)


def bins_of(result: AuditData, n_bins: int) -> binning.Bins:
    """``n_bins`` equal-probability bins of the full-data draws (computed once per result)."""
    n_bins = int(n_bins)
    return cached(
        result, ("bins", n_bins), lambda: binning.quantile_bins(draws_of(result), n_bins)
    )


def order_of(result: AuditData) -> np.ndarray:
    """``argsort`` of every parameter's full-data draws (computed once per result)."""
    return cached(result, "order", lambda: np.argsort(draws_of(result), axis=1, kind="stable"))


def neighbour_maximum(da: xr.DataArray, dim: str = NEIGHBOUR_DIM) -> np.ndarray:
    """``da``'s maximum over every dimension but ``dim``, as floats."""
    extra = [d for d in da.dims if d != dim]
    return np.asarray((da.max(dim=extra) if extra else da).values, dtype=float)


def neighbour_coords(result: AuditData) -> dict:
    return {NEIGHBOUR_DIM: result.pointwise[NEIGHBOUR_DIM].values}


def refitted(result: AuditData) -> np.ndarray:
    """True for the neighbours whose epsilon came from their own draws (refit or moment match)."""
    return np.isin(_methods(result), ["refit", "moment_match"])


def scalar(value):
    return value.item() if hasattr(value, "item") else value


def z_value(prob: float) -> float:
    """The standard normal quantile of a central interval of probability ``prob``."""
    return float(normal_quantile(check_probability(prob)))

"""Per-neighbour estimates as they pass from stage to stage, and their Monte-Carlo errors."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import xarray as xr

from pymc_edp.base.common import NEIGHBOUR_DIM, PARAMETER_DIM
from pymc_edp.base.mcse import leading_pairs, max_interval
from pymc_edp.core.reweight import top_rows
from pymc_edp.diagnostics._common import z_value
from pymc_edp.diagnostics.uncertainty import STORED_PROB, own_intervals

__all__ = ["TOP_WEIGHTS", "Errors", "Estimates", "intervals", "method_used", "pair_errors"]

#: Neighbours whose weights a large audit keeps, and whose Monte-Carlo interval every audit
#: stores: those with the largest epsilons, which set the headline and its interval (every
#: neighbour's, by ``res.interval()``, costs several times the audit at 10,000 records).
TOP_WEIGHTS = 32


@dataclass
class Estimates:
    """Per-neighbour results: reweighting's, then moment matching's and refits' rows.

    ``table`` holds them over ``neighbour`` and ``parameter``, with their labels as
    coordinates (see :meth:`empty`), so the result's tables are renamings of it.
    ``est[name]`` is a variable's array. Estimates are written in place, and only by the
    stage that made them: a stage that changes what it was given works on its own
    :meth:`copy`, so every stage's input stays as it was.
    """

    table: xr.Dataset
    log_weights: np.ndarray | None  # every neighbour's, when kept
    kept: dict  # otherwise {neighbour: log-weights} of those that can set epsilon
    pruned: np.ndarray  # neighbours skipped because their bound is below epsilon

    @classmethod
    def empty(cls, neighbours, parameters, n_samples: int, keep_weights: bool):
        """Nothing estimated yet (epsilon -inf, k-hat NaN), every method ``"psis"``.

        ``neighbours`` and ``parameters`` are the labels of the rows and columns (or their
        numbers: labelled ``0, 1, ...``). ``eps_unsmoothed`` says when smoothing binds,
        ``bin_draws`` are the effective draws in the decisive bin, ``limit``
        :mod:`pymc_edp.base.limits` codes; ``khat_mm`` is after moment matching,
        ``refit_mcse`` the error of a refit's or moment match's own estimate, ``bound``
        bounds ``eps`` (NaN: not attempted / computed).
        """
        labels = _labels(neighbours)
        par_labels = np.asarray(_labels(parameters), dtype=str)
        n_neighbours, n_parameters = labels.size, par_labels.size
        both, nb = (NEIGHBOUR_DIM, PARAMETER_DIM), NEIGHBOUR_DIM
        shape, nan = (n_neighbours, n_parameters), np.full(n_neighbours, np.nan)
        table = xr.Dataset(
            {
                "eps": (both, np.full(shape, -np.inf)),
                "argbin": (both, np.zeros(shape, dtype=np.int64)),
                "eps_unsmoothed": (both, np.full(shape, -np.inf)),
                "bin_draws": (both, np.full(shape, np.nan)),
                "limit": (both, np.zeros(shape, dtype=np.int8)),
                "khat": (nb, nan),
                "khat_mm": (nb, nan.copy()),
                "worst_candidate": (nb, np.zeros(n_neighbours, dtype=np.int64)),
                "refit_mcse": (nb, nan.copy()),
                "bound": (nb, nan.copy()),
                "method": (nb, np.full(n_neighbours, "psis", dtype=object)),
                "status": (nb, np.full(n_neighbours, "", dtype=object)),
            },
            coords={NEIGHBOUR_DIM: labels, PARAMETER_DIM: par_labels},
        )
        log_weights = np.empty((n_neighbours, n_samples)) if keep_weights else None
        return cls(table, log_weights, {}, np.array([], dtype=np.int64))

    @property
    def labels(self) -> np.ndarray:
        """The neighbours' labels (what netCDF can store)."""
        return self.table[NEIGHBOUR_DIM].values

    @property
    def par_labels(self) -> np.ndarray:
        """The parameters' labels."""
        return self.table[PARAMETER_DIM].values

    def __getitem__(self, name: str) -> np.ndarray:
        return self.table.variables[name].values

    def copy(self, **changes) -> Estimates:
        """A copy whose table can be changed; ``changes`` replace fields (weights shared)."""
        copies = dict(table=self.table.copy(deep=True), kept=dict(self.kept))
        return dataclasses.replace(self, **{**copies, "pruned": self.pruned.copy(), **changes})

    def set_row(self, k: int, value, se: float, method: str) -> None:
        """Neighbour ``k``'s estimate from its own draws (a moment match or a refit)."""
        for name in ("eps", "argbin", "eps_unsmoothed", "bin_draws", "limit"):
            self[name][k] = getattr(value, name)
        self["refit_mcse"][k], self["method"][k] = se, method

    def take_row(self, k: int, other: Estimates, keep=("status",)) -> None:
        """Neighbour ``k``'s row from ``other`` (but ``keep``'s variables)."""
        for name in self.table.data_vars:
            if name not in keep:
                self[name][k] = other[name][k]

    def epsilon(self) -> np.ndarray:
        """Each neighbour's epsilon (its largest over parameters; -inf without one)."""
        return np.nan_to_num(self["eps"], nan=-np.inf).max(axis=1)

    def khat_now(self) -> np.ndarray:
        """The k-hat of the weights each estimate rests on: after moment matching if tried."""
        khat_mm = self["khat_mm"]
        return np.where(np.isnan(khat_mm), self["khat"], khat_mm)

    def weights(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The kept log-weights ``(rows, S)`` and their neighbour indices, or None."""
        if self.log_weights is not None:
            return self.log_weights, np.arange(self.log_weights.shape[0])
        if not self.kept:
            return None
        rows = np.array(sorted(self.kept), dtype=np.int64)
        return np.stack([self.kept[int(i)] for i in rows]), rows

    def trim_kept(self) -> None:
        """Keep the weights of the :data:`TOP_WEIGHTS` largest estimates (and some at a limit)."""
        keys = np.array(sorted(self.kept), dtype=np.int64)
        eps = np.nan_to_num(self["eps"][keys].max(axis=1), nan=-np.inf)
        rows = top_rows(eps, self["limit"][keys].any(axis=1), TOP_WEIGHTS)
        kept = {int(k): self.kept[int(k)] for k in keys[rows]}
        self.kept.clear()
        self.kept.update(kept)


def _labels(value) -> np.ndarray:
    """Labels from a count (``0, 1, ...``) or labels, as netCDF can store them."""
    if isinstance(value, int | np.integer):
        return np.arange(int(value))
    labels = np.asarray(value)
    return labels if labels.dtype.kind in "biufUM" else labels.astype(str)


def method_used(method: np.ndarray) -> str:
    """What happened, not what was asked: every neighbour refitted, none, or some."""
    refitted = method == "refit"
    if refitted.all():
        return "refit"
    if refitted.any():
        return "auto"
    if (method == "moment_match").any():
        return "moment_match"
    return "psis"


@dataclass(frozen=True)
class Errors:
    """Monte-Carlo errors of the reweighted estimates that can set epsilon (90% level)."""

    se: np.ndarray  # (neighbour,) of the leading pair; NaN where not computed
    lower: np.ndarray
    upper: np.ndarray


def pair_errors(est: Estimates, bins, order, smoothing: float, n_chains: int) -> Errors:
    """Errors of the :data:`TOP_WEIGHTS` largest reweighting estimates (and those at a limit).

    The delta-method error of each one's leading (parameter, bin) pairs, and the 90%
    interval of their maximum (:func:`pymc_edp.base.mcse.max_interval`).
    """
    n = est["eps"].shape[0]
    out = Errors(np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan))
    kept = est.weights()
    if kept is None:
        return out
    lw, rows = kept
    reweighted = est["method"][rows] == "psis"
    eps = np.nan_to_num(est["eps"][rows].max(axis=1), nan=-np.inf)
    eps = np.where(reweighted, eps, -np.inf)
    pick = top_rows(eps, reweighted & est["limit"][rows].any(axis=1), TOP_WEIGHTS)
    pick = pick[reweighted[pick] & np.isfinite(eps[pick])]
    if not pick.size:
        return out
    pairs = leading_pairs(lw[pick], bins, order=order, smoothing=smoothing, n_chains=n_chains)
    lo, hi = max_interval(pairs["log_ratio"], pairs["se"], STORED_PROB, signed=True)
    idx = rows[pick]
    out.se[idx], out.lower[idx], out.upper[idx] = pairs["se"][:, 0], lo, hi
    return out


def intervals(est: Estimates, errors: Errors) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-neighbour 90% interval and standard error of the final estimates.

    Reweighted neighbours keep their pair intervals; moment-matched and refitted ones take
    their own (:func:`pymc_edp.diagnostics.uncertainty.own_intervals`).
    """
    lower, upper, se = errors.lower.copy(), errors.upper.copy(), errors.se.copy()
    own = np.isin(est["method"], ["refit", "moment_match"])
    se[own] = est["refit_mcse"][own]
    limited = est["limit"].any(axis=1)
    own_intervals(est.epsilon(), se, lower, upper, own, limited, z_value(STORED_PROB))
    return lower, upper, se

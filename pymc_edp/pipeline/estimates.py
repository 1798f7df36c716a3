"""Per-neighbour estimates as they pass from stage to stage, and their Monte-Carlo errors."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from pymc_edp.base.mcse import leading_pairs, max_interval
from pymc_edp.model.reweight import top_rows

__all__ = ["TOP_WEIGHTS", "Errors", "Estimates", "intervals", "method_used", "pair_errors"]

#: Neighbours whose weights a large audit keeps, and whose Monte-Carlo interval every audit
#: computes and stores: those with the largest epsilons, which set the headline and its
#: interval (``res.interval()`` on a result with every weight computes every neighbour's;
#: at 10,000 records that costs several times the audit itself).
TOP_WEIGHTS = 32
#: The standard normal quantile of the stored (90%) intervals.
_Z90 = 1.6448536269514722

#: Arrays a stage may change (copied by :meth:`Estimates.copy`); the log-weights are not.
_ROW_ARRAYS = (
    "eps",
    "argbin",
    "khat",
    "eps_unsmoothed",
    "bin_draws",
    "limit",
    "worst_cand",
    "refit_mcse",
    "khat_mm",
    "bound",
    "method",
    "status",
)


@dataclass(frozen=True)
class Estimates:
    """Per-neighbour results: reweighting's, then moment matching's and refits' rows.

    A stage never changes the estimates it is given: it works on a :meth:`copy` and returns
    the new ones.
    """

    eps: np.ndarray  # (neighbour, parameter)
    argbin: np.ndarray
    khat: np.ndarray
    eps_unsmoothed: np.ndarray  # (neighbour, parameter): to say when smoothing binds
    bin_draws: np.ndarray  # (neighbour, parameter): effective draws in the decisive bin
    limit: np.ndarray  # (neighbour, parameter) int8: pymc_edp.base.limits codes
    worst_cand: np.ndarray
    log_weights: np.ndarray | None  # every neighbour's, when kept
    kept: dict  # otherwise {neighbour: log-weights} of those that can set epsilon
    refit_mcse: np.ndarray  # standard error of a refit's / moment match's estimate (or NaN)
    khat_mm: np.ndarray  # k-hat after moment matching (NaN: not attempted)
    bound: np.ndarray  # max - min of the log ratios: eps <= bound (NaN: not computed)
    pruned: np.ndarray  # neighbours skipped because their bound is below epsilon
    method: np.ndarray  # (neighbour,) object: the path each estimate took
    status: np.ndarray  # (neighbour,) object: each refit's status ("" without one)

    @classmethod
    def empty(cls, n_neighbours: int, n_parameters: int, n_samples: int, keep_weights: bool):
        """Nothing estimated yet (epsilon -inf, k-hat NaN), every method ``"psis"``."""
        shape = (n_neighbours, n_parameters)
        return cls(
            eps=np.full(shape, -np.inf),
            argbin=np.zeros(shape, dtype=np.int64),
            khat=np.full(n_neighbours, np.nan),
            eps_unsmoothed=np.full(shape, -np.inf),
            bin_draws=np.full(shape, np.nan),
            limit=np.zeros(shape, dtype=np.int8),
            worst_cand=np.zeros(n_neighbours, dtype=np.int64),
            log_weights=np.empty((n_neighbours, n_samples)) if keep_weights else None,
            kept={},
            refit_mcse=np.full(n_neighbours, np.nan),
            khat_mm=np.full(n_neighbours, np.nan),
            bound=np.full(n_neighbours, np.nan),
            pruned=np.array([], dtype=np.int64),
            method=np.full(n_neighbours, "psis", dtype=object),
            status=np.full(n_neighbours, "", dtype=object),
        )

    def copy(self, **changes) -> Estimates:
        """A copy whose per-neighbour arrays can be changed; ``changes`` replace fields."""
        arrays = {name: getattr(self, name).copy() for name in _ROW_ARRAYS}
        arrays["kept"] = dict(self.kept)
        arrays["pruned"] = self.pruned.copy()
        return dataclasses.replace(self, **{**arrays, **changes})

    def set_row(self, k: int, value, se: float, method: str) -> None:
        """Neighbour ``k``'s estimate from its own draws (a moment match or a refit).

        Only on estimates a stage owns (made by :meth:`copy`).
        """
        self.eps[k], self.argbin[k], self.refit_mcse[k] = value.eps, value.argbin, se
        self.eps_unsmoothed[k], self.bin_draws[k] = value.eps_unsmoothed, value.bin_draws
        self.limit[k] = value.limit
        self.method[k] = method

    def epsilon(self) -> np.ndarray:
        """Each neighbour's epsilon (its largest over parameters; -inf without one)."""
        return np.nan_to_num(self.eps, nan=-np.inf).max(axis=1)

    def khat_now(self) -> np.ndarray:
        """The k-hat of the weights each estimate rests on: after moment matching if tried."""
        return np.where(np.isnan(self.khat_mm), self.khat, self.khat_mm)

    def weights(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The kept log-weights ``(rows, S)`` and their neighbour indices, or None."""
        if self.log_weights is not None:
            return self.log_weights, np.arange(self.log_weights.shape[0])
        if not self.kept:
            return None
        rows = np.array(sorted(self.kept), dtype=np.int64)
        return np.stack([self.kept[int(i)] for i in rows]), rows

    def trim_kept(self) -> None:
        """Keep the weights of the :data:`TOP_WEIGHTS` largest estimates (and some at a limit).

        Only on estimates a stage owns.
        """
        keys = np.array(sorted(self.kept), dtype=np.int64)
        eps = np.nan_to_num(self.eps[keys].max(axis=1), nan=-np.inf)
        rows = top_rows(eps, self.limit[keys].any(axis=1), TOP_WEIGHTS)
        kept = {int(k): self.kept[int(k)] for k in keys[rows]}
        self.kept.clear()
        self.kept.update(kept)


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
    """Errors of the reweighted neighbours whose weights are kept and that can set epsilon.

    The :data:`TOP_WEIGHTS` largest reweighting estimates (and those at a limit): the
    delta-method error of each one's leading (parameter, bin) pairs, and the 90% interval of
    their maximum (:func:`pymc_edp.base.mcse.max_interval`).
    """
    n = est.eps.shape[0]
    out = Errors(np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan))
    kept = est.weights()
    if kept is None:
        return out
    lw, rows = kept
    reweighted = est.method[rows] == "psis"
    eps = np.nan_to_num(est.eps[rows].max(axis=1), nan=-np.inf)
    eps = np.where(reweighted, eps, -np.inf)
    pick = top_rows(eps, reweighted & est.limit[rows].any(axis=1), TOP_WEIGHTS)
    pick = pick[reweighted[pick] & np.isfinite(eps[pick])]
    if not pick.size:
        return out
    pairs = leading_pairs(lw[pick], bins, order=order, smoothing=smoothing, n_chains=n_chains)
    lo, hi = max_interval(pairs["log_ratio"], pairs["se"], 0.9, signed=True)
    idx = rows[pick]
    out.se[idx], out.lower[idx], out.upper[idx] = pairs["se"][:, 0], lo, hi
    return out


def intervals(est: Estimates, errors: Errors) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-neighbour 90% interval and standard error of the final estimates.

    Reweighted neighbours keep their pair intervals; moment-matched and refitted ones take
    ``estimate +- z se`` of their own error; an estimate at a limit is open above.
    """
    eps = est.epsilon()
    lower, upper, se = errors.lower.copy(), errors.upper.copy(), errors.se.copy()
    own = np.isin(est.method, ["refit", "moment_match"])
    se[own] = est.refit_mcse[own]
    with np.errstate(invalid="ignore"):
        lower[own] = np.maximum(eps[own] - _Z90 * se[own], 0.0)
        upper[own] = eps[own] + _Z90 * se[own]
    no_se = own & np.isnan(se)
    lower[no_se], upper[no_se] = np.nan, np.nan
    limited = est.limit.any(axis=1)
    upper[limited] = np.inf
    return lower, upper, se

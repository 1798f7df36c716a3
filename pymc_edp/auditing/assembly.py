"""Put the audit's result together: tables, intervals, warnings, the :class:`EDPResult`."""

from __future__ import annotations

import dataclasses
import logging
import warnings

import numpy as np
import xarray as xr

from pymc_edp import diagnostics
from pymc_edp.auditing.estimates import Estimates, intervals, method_used
from pymc_edp.auditing.inputs import Inputs
from pymc_edp.auditing.settings import Settings
from pymc_edp.auditing.verification import Verification, Verified
from pymc_edp.base import limits
from pymc_edp.base.common import NEIGHBOUR_DIM, PARAMETER_DIM, SAMPLE_DIM, WEIGHT_INDEX, EDPWarning
from pymc_edp.base.mcse import interval_of_max
from pymc_edp.base.psis import khat_threshold
from pymc_edp.core.loglik import by_variable, elements_of, own_dims
from pymc_edp.core.reweight import prune_margin
from pymc_edp.refit.options import VERIFICATION_MEANINGS
from pymc_edp.results.edp import EDPResult

__all__ = ["LIMIT_DOC", "assemble"]

_log = logging.getLogger("pymc_edp")

LIMIT_DOC = "resolution limit of the estimate (non-zero: a lower bound)"


def assemble(
    inp: Inputs, settings: Settings, verified: Verified, messages: list[str]
) -> EDPResult:
    """The :class:`EDPResult`, its warnings issued (for the caller of ``audit``) and kept."""
    est = verified.estimates.copy()
    if not inp.factorised:  # no weights: a neighbour without a successful refit has nothing
        unevaluated = est["method"] != "refit"
        est["method"][unevaluated] = "not evaluated"
        est["limit"][unevaluated] = limits.NOT_EVALUATED
    filled = np.where(np.isnan(est["eps"]), -np.inf, est["eps"])  # -inf: no estimate
    # neighbours with neither weights nor a successful refit have no estimate
    est["eps"][np.isneginf(est["eps"])] = np.nan
    smoothing = settings.smoothing.weighted
    messages = [*messages, *_limit_messages(est, inp.neighbours.labels, inp.par_labels, smoothing)]
    lower, upper, se = intervals(est, verified.errors)
    labels = est.labels
    pointwise = _pointwise(est, filled, inp, settings.neighbour.replaces).assign(
        epsilon_mcse=(NEIGHBOUR_DIM, se),
        epsilon_lower=(NEIGHBOUR_DIM, lower),
        epsilon_upper=(NEIGHBOUR_DIM, upper),
        **_verification_vars(verified.verification),
    )
    parameters = _parameters(est, filled, inp)
    threshold = khat_threshold(inp.n_samples)
    first, last = _reliability_messages(est, inp, settings, labels, threshold)
    # the fit's own convergence first: every other number inherits it
    fit_warning = inp.convergence.message() if inp.convergence else ""
    fit = [fit_warning] if fit_warning else []
    messages = [*fit, *first, *messages, *last]
    for msg in messages:
        warnings.warn(msg, EDPWarning, stacklevel=3)
        _log.debug(msg)
    interval = None
    if (~np.isnan(upper)).any() and np.isfinite(filled).any():
        interval = interval_of_max(filled.max(axis=1), se, lower, upper, 0.9)
    result = EDPResult(
        epsilon=float(filled.max()) if np.isfinite(filled).any() else float("nan"),
        pointwise=pointwise,
        parameters=parameters,
        bins=settings.bins,
        neighbour=settings.neighbour.label,
        method=method_used(est["method"]),
        smoothing=float(smoothing),
        n_samples=inp.n_samples,
        reff=float(inp.reff),
        khat_threshold=float(threshold),
        warnings=tuple(messages),
        n_chains=inp.n_chains,
        log_weights=_log_weights(est, labels),
        draws=_draws(inp),
        refits=verified.refits,
        mc_interval90=interval,
        random_seed=settings.seed,
        count_smoothing=float(settings.smoothing.count),
        verification=verified.verification.status,
        verification_note=verified.verification.note,
        left_out=inp.left_out,
        records=inp.records,
        convergence=inp.convergence,
    )
    return _with_noise_floor(result)


def _draws(inp: Inputs) -> xr.Dataset:
    """The audited variables' full-data draws over their own dims and ``sample``."""
    post = xr.Dataset({n: own_dims(inp.posterior[n], n) for n in inp.names})
    post = post.stack({SAMPLE_DIM: ("chain", "draw")})
    return post.drop_vars(["chain", "draw", SAMPLE_DIM]).transpose(..., SAMPLE_DIM)


def _log_weights(est: Estimates, labels: np.ndarray) -> xr.DataArray | None:
    kept = est.weights()
    if kept is None:
        return None
    lw, rows = kept
    coords = {NEIGHBOUR_DIM: labels[rows]}
    if rows.size != labels.size:  # only the neighbours that can set epsilon
        coords[WEIGHT_INDEX] = (NEIGHBOUR_DIM, rows)
    return xr.DataArray(lw, dims=(NEIGHBOUR_DIM, SAMPLE_DIM), coords=coords, name="log_weights")


def _limit_messages(est: Estimates, labels, par_labels, smoothing: float) -> list[str]:
    """One warning per kind of resolution limit met: which neighbours, why, and the remedy."""
    out = []
    eps = np.nan_to_num(est["eps"], nan=-np.inf)
    for code in (limits.EMPTY_BIN, limits.SMOOTHING, limits.FEW_DRAWS):
        hit = est["limit"] == code
        if not hit.any():
            continue
        rows = np.flatnonzero(hit.any(axis=1))
        score = np.where(hit[rows], eps[rows], -np.inf)
        worst = rows[np.argmax(score.max(axis=1))]
        p = int(np.argmax(np.where(hit[worst], eps[worst], -np.inf)))
        example = f"{labels[worst]}: {eps[worst, p]:.3f} for {par_labels[p]}"
        if code == limits.SMOOTHING:
            example += f", {est['eps_unsmoothed'][worst, p]:.3f} without smoothing={smoothing:g}"
        out.append(
            f"epsilon is a lower bound: {rows.size} neighbour(s) are at a resolution limit, "
            f"{limits.REASONS[code]} (worst: {example}); their intervals are open above. "
            f"Remedy: {limits.REMEDIES[code]}."
        )
    return out


def _with_noise_floor(result: EDPResult) -> EDPResult:
    """Attach Abowd's EMI, the noise floor of refit-and-count (for reference, not a verdict)."""
    try:  # the result always has its draws
        floor = float(diagnostics.emi(result)["emi"])
    except ValueError:  # too few draws per chain for two halves
        floor = None
    return dataclasses.replace(result, noise_floor=floor)


def _pointwise(est: Estimates, filled, inp: Inputs, replace: bool) -> xr.Dataset:
    """The per-neighbour table ``res.pointwise``: the estimates' table, renamed and reduced."""
    t, nbs = est.table, inp.neighbours
    # each neighbour's row at its worst parameter
    worst = xr.DataArray(np.argmax(filled, axis=1), dims=NEIGHBOUR_DIM)
    at_worst = t[["eps", "bin_draws", "argbin"]].isel({PARAMETER_DIM: worst})
    at_worst = at_worst.drop_vars(PARAMETER_DIM)
    flags = limits.flag_attrs(LIMIT_DOC)
    pointwise = xr.Dataset(
        {
            "epsilon": at_worst["eps"],
            "lower_bound": t["limit"].any(PARAMETER_DIM),
            "limit": (NEIGHBOUR_DIM, limits.worst_code(est["limit"], est["eps"]), flags),
            "bin_draws": at_worst["bin_draws"],
            "pareto_k": t["khat"],
            "pareto_k_moment_match": t["khat_mm"],
            "worst_parameter": (NEIGHBOUR_DIM, est.par_labels[worst.values]),
            "worst_bin": at_worst["argbin"],
            "n_rows": (NEIGHBOUR_DIM, nbs.n_rows),
            "observed": (NEIGHBOUR_DIM, np.asarray(nbs.observed, dtype=str)),
            "method": t["method"].astype(str),
            "status": t["status"].astype(str),
            "refit_mcse": t["refit_mcse"],
            "epsilon_bound": t["bound"],
        }
    )
    if replace:
        pointwise["worst_replacement"] = t["worst_candidate"]
    return pointwise


def _parameters(est: Estimates, filled, inp: Inputs) -> xr.DataTree:
    """The per-parameter tables ``res.parameters``: one per variable, over its own dims."""
    worst_nb = np.argmax(filled, axis=0)
    cols = np.arange(est["eps"].shape[1])
    eps = est["eps"][worst_nb, cols]
    # pruning keeps the overall maximum exact; a parameter's own maximum is exact only where
    # it is at least every pruned neighbour's bound
    pruned_bound = float(np.max(est["bound"][est.pruned], initial=-np.inf))
    flags = limits.flag_attrs(LIMIT_DOC)
    columns = {
        "epsilon": ((), eps),
        "exact": ((), ~(prune_margin(np.full_like(eps, pruned_bound)) > eps)),
        "lower_bound": ((), est["limit"].any(axis=0)),
        "limit": ((), limits.worst_code(est["limit"].T, est["eps"].T), flags),
        "worst_neighbour": ((), est.labels[worst_nb]),
        "worst_bin": ((), est["argbin"][worst_nb, cols]),
        "n_bins": ((), inp.bins.n_bins),
        "epsilon_neighbour": ((NEIGHBOUR_DIM,), est["eps"]),
        "limit_neighbour": ((NEIGHBOUR_DIM,), est["limit"], flags),
    }
    elements = elements_of(inp.posterior, inp.names)
    return by_variable(columns, elements, inp.match.rows, {NEIGHBOUR_DIM: est.labels})


def _verification_vars(check: Verification) -> dict:
    """The per-neighbour record of the verification, for ``res.pointwise``."""
    doc = "whether a refit confirmed this neighbour's estimate"
    return {
        "verification": (NEIGHBOUR_DIM, check.code, limits.flag_attrs(doc, VERIFICATION_MEANINGS)),
        "verify_checked": (NEIGHBOUR_DIM, check.checked),
        "verify_refit": (NEIGHBOUR_DIM, check.refit),
        "verify_z": (NEIGHBOUR_DIM, check.z),
    }


def _reliability_messages(est: Estimates, inp: Inputs, settings: Settings, labels, threshold):
    """Warnings about neighbours kept to bad weights (first) and about merged bins (last)."""
    first, last = [], []
    # the k-hat of the weights each estimate rests on: after moment matching where tried
    khat = est.khat_now()
    bad = (khat > threshold) & np.isin(est["method"], ["psis", "moment_match"])
    if bad.any():
        order = np.flatnonzero(bad)[np.argsort(-khat[bad])][:5]
        worst = ", ".join(f"{labels[i]} ({khat[i]:.2f})" for i in order)
        advice = "refit them (method='auto' or 'refit') or draw more samples"
        if settings.method.refits_unreliable and not inp.can_refit:
            advice = "pass model= so that method='auto' refits them"
        first.append(
            f"Pareto k-hat above {threshold:.2f} for {int(bad.sum())} of {khat.size} "
            f"neighbours kept to reweighting (worst: {worst}): their epsilon is unreliable; "
            f"{advice}."
        )
    n_bins = inp.bins.n_bins
    if np.any(n_bins < settings.bins):
        merged = [inp.par_labels[p] for p in np.flatnonzero(n_bins < settings.bins)]
        shown = ", ".join(merged[:5]) + ("..." if len(merged) > 5 else "")
        last.append(f"tied draws merged bins of {shown}: see parameters['n_bins']")
    return first, last

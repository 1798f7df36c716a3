"""What a release audit cannot vouch for, said in words, and its Monte-Carlo facts."""

from __future__ import annotations

import numpy as np

from pymc_edp.base import accounting as acc
from pymc_edp.base.common import MIN_DRAWS_PER_BIN
from pymc_edp.base.psis import khat_threshold
from pymc_edp.release.atoms import log_mean_bias

__all__ = ["UNVERIFIED", "bias_note", "collect", "details", "likelihood_parents"]

#: What a release audit says of its own confirmation: it has none.
UNVERIFIED = (
    "unverified: the neighbours' posteriors are the full-data draws reweighted, not refitted; "
    "a good k-hat is evidence, not proof (edp.audit(..., method='refit') refits them)"
)


def likelihood_parents(model) -> set[str] | None:
    """Free variables the observed variables' distributions depend on (None without a model)."""
    if model is None:
        return None
    free = set(model.free_RVs)
    out, seen = set(), set()
    stack = [i for rv in model.observed_RVs if rv.owner for i in rv.owner.inputs]
    while stack:  # up the graph, stopping at free variables
        var = stack.pop()
        if id(var) in seen:
            continue
        seen.add(id(var))
        if var in free:
            out.add(var.name)
        elif var.owner is not None:
            stack.extend(var.owner.inputs)
    return out


def _bias(kind, inp, refined) -> float:
    """First-order bias of the worst pair's loss from the logs of Monte-Carlo means."""
    best = int(np.argmax(refined.upper))
    pair = refined.pairs[best]
    if kind.name == "draws":
        r = np.exp(pair.log_ratio - pair.log_ratio.max())
        return float(abs(log_mean_bias(r, reff=inp.reff)))
    if kind.name == "statistic":
        return 0.0
    dens = np.exp(kind.log_dens - kind.log_dens.max(axis=1, keepdims=True))
    full = log_mean_bias(dens, reff=inp.reff)
    nb = log_mean_bias(dens, np.broadcast_to(pair.weights, dens.shape), reff=inp.reff)
    return float(np.nanmedian(np.abs(full - nb)))


def details(kind, inp, spec, opts, refined) -> dict:
    """Settings and Monte-Carlo facts of the audit, for ``res.details``."""
    best = int(np.argmax(refined.upper))
    out = {
        "draws": int(inp.n_samples),
        "chains": int(inp.n_chains),
        "log_mean_bias": _bias(kind, inp, refined),
        "discretisation": float(refined.upper[best] - refined.lower[best]),
        "contributing": float(refined.contributing[best]),
        "accuracy": float(opts.accuracy),
        "bootstrap": int(opts.n_bootstrap),
        "verification": UNVERIFIED,
    }
    if kind.name != "draws":
        out.update(observed=spec.observed, size=int(kind.data.size))
    if kind.name == "synthetic":
        out.update(listed=bool(kind.listed), outputs=int(kind.log_dens.shape[0]))
        out["mixture_draws"] = _mixture_ess(kind)
    if kind.name == "statistic":
        out.update(
            bins=int(kind.n_bins), statistic=getattr(spec.statistic, "__name__", "statistic")
        )
    return out


def _mixture_ess(kind) -> float:
    """Median over outputs of the effective draws the mixture density rests on."""
    ld = kind.log_dens
    w = np.exp(ld - ld.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    return float(np.median(1.0 / (w**2).sum(axis=1)))


def collect(inp, spec, opts, screen, refined, details: dict, var_names=None) -> list[str]:
    """The notes of a release audit (each also a warning); ``details`` from :func:`details`."""
    notes = []
    best = int(np.argmax(refined.upper))
    head = float(refined.upper[best])
    if acc.resolution_limited(refined.contributing[best]):
        notes.append(
            f"epsilon {head:.4g} at delta {spec.delta:g} rests on "
            f"{refined.contributing[best]:.1f} effective draws or outputs (fewer than "
            f"{MIN_DRAWS_PER_BIN}): the draws cannot resolve a delta this small, so it is a "
            "lower bound. Draw more (pm.sample(draws=...)) or report a larger delta."
        )
    thr = khat_threshold(inp.n_samples)
    kh = float(np.max(screen.khat[refined.neighbour, refined.candidate]))
    if kh > thr:
        notes.append(
            f"Pareto k-hat of a neighbour that can set epsilon is {kh:.2f} > {thr:.2f}: its "
            "posterior is poorly represented by the full-data draws, and the tail of its "
            "loss (and the headline) may be too low. Check it with edp.audit(..., "
            "method='refit'), or tune the prior."
        )
    if refined.capped:
        notes.append(
            f"{refined.capped} more neighbour pairs could be the worst on the coarse grid but "
            f"were not composed finely (options top={opts.top}); their coarse upper bounds "
            f"reach {float(np.max(screen.upper)):.4g}. Raise top= for the exact worst."
        )
    parents = likelihood_parents(inp.model) if spec.release == "draws" else None
    if parents is not None and var_names is not None:
        published = set(inp.names)
        missing = sorted(parents - published)
        if missing:
            notes.append(
                f"the likelihood depends on {missing}, which are not published: the loss "
                "of the whole draw is used, an upper bound for the published variables "
                "(post-processing)"
            )
    note = bias_note(details["log_mean_bias"], head, opts.accuracy)
    if note:
        notes.append(note)
    return notes


def bias_note(bias: float, epsilon: float, accuracy: float) -> str:
    """The note on the log-mean bias of the worst pair's loss, or "" when it does not matter.

    It matters above 5% of epsilon and above the grid's ``accuracy`` (a smaller bias is
    below what the composed epsilon resolves anyway). A share of epsilon is given only when
    epsilon exceeds the bias: near epsilon 0 (a delta near 1, a record with little effect)
    a percentage says nothing, and the bias is compared with epsilon in absolute terms.

    Examples
    --------
    >>> from pymc_edp.release.notes import bias_note
    >>> "20% of epsilon" in bias_note(0.2, 1.0, 1e-3)
    True
    >>> "so epsilon is not resolved" in bias_note(0.02, 1e-6, 1e-3)
    True
    >>> bias_note(2.5e-4, 0.0, 1e-3)
    ''
    """
    if not (bias > 0.05 * epsilon and bias > accuracy):
        return ""
    head = f"the log of a Monte-Carlo mean is biased: about {bias:.3g} in the worst pair's loss"
    if epsilon > bias:
        share = f"(first order), {100 * bias / epsilon:.0f}% of epsilon"
    else:
        share = (
            f"(first order), at least epsilon itself ({epsilon:.3g}), so epsilon is not resolved"
        )
    return f"{head} {share}; draw more posterior samples"

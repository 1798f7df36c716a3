"""What a release audit cannot vouch for, in words, and its Monte-Carlo facts."""

from __future__ import annotations

import numpy as np

from pymc_edp.base import accounting as acc
from pymc_edp.base.common import MIN_DRAWS_PER_BIN
from pymc_edp.base.psis import khat_threshold

__all__ = ["UNVERIFIED", "bias_note", "collect", "details"]

#: What a release audit says of its own confirmation: it has none.
UNVERIFIED = (
    "unverified: the neighbours' posteriors are the full-data draws reweighted, not refitted; "
    "a good k-hat is evidence, not proof (edp.audit(..., method='refit') refits them)"
)


def details(kind, inp, spec, opts, refined) -> dict:
    """Settings and Monte-Carlo facts of the audit, for ``res.details``."""
    best = int(np.argmax(refined.upper))
    return {
        "draws": int(inp.n_samples),
        "chains": int(inp.n_chains),
        "log_mean_bias": kind.bias(refined.pairs[best], inp.reff),
        "discretisation": float(refined.upper[best] - refined.lower[best]),
        "contributing": float(refined.contributing[best]),
        "accuracy": float(opts.accuracy),
        "bootstrap": int(opts.n_bootstrap),
        "verification": UNVERIFIED,
        **kind.details(spec),
    }


def collect(kind, inp, spec, opts, screen, refined, details: dict) -> list[str]:
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
    notes += kind.notes(inp, spec, opts)
    note = bias_note(details["log_mean_bias"], head, opts.accuracy)
    if note:
        notes.append(note)
    return notes


def bias_note(bias: float, epsilon: float, accuracy: float) -> str:
    """The note on the worst pair's log-mean bias, or "" under 5% of epsilon or ``accuracy``."""
    if not (bias > 0.05 * epsilon and bias > accuracy):
        return ""
    if epsilon > bias:
        share = f"{100 * bias / epsilon:.0f}% of epsilon"
    else:
        share = f"at least epsilon itself ({epsilon:.3g}), so epsilon is not resolved"
    return (
        f"the log of a Monte-Carlo mean is biased: about {bias:.3g} in the worst pair's loss "
        f"(first order), {share}; draw more posterior samples"
    )

"""Moment-match the neighbours whose weights cannot be trusted (Paananen et al. 2021).

See :func:`pymc_edp.model.moment_match.moment_match_neighbours`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymc_edp.auditing.estimates import Estimates
from pymc_edp.auditing.inputs import Inputs
from pymc_edp.auditing.settings import Settings
from pymc_edp.model.moment_match import moment_match_neighbours
from pymc_edp.model.transform import neighbour_changes
from pymc_edp.refit.run import RefitProblem

__all__ = ["Matched", "match_moments"]


@dataclass(frozen=True)
class Matched:
    """The estimates after moment matching, and what it had to say."""

    estimates: Estimates
    messages: tuple[str, ...] = ()


def match_moments(
    inp: Inputs, settings: Settings, problem: RefitProblem, est: Estimates
) -> Matched:
    """Moment-match the neighbours above the k-hat threshold, when the audit asks for it.

    A neighbour takes the moment-matched estimate when its k-hat (``khat_mm``) fell.
    """
    opts = settings.method.moment_match
    if not (opts is not None and inp.model is not None and inp.factorised):
        return Matched(est)
    bad = np.flatnonzero(est["khat"] > opts.threshold(inp.n_samples))
    if not bad.size:
        return Matched(est)
    if inp.blocks:  # the model gives per-record conditionals, not those of blocks
        said = f"moment matching does not apply to the blocks of records of {list(inp.blocks)}"
        return Matched(est, (said,))
    ll, nbs = problem.ll, problem.neighbours
    try:
        outcomes = moment_match_neighbours(
            problem.model,
            inp.match,
            bad,
            lambda k: neighbour_changes(ll, nbs, k, problem.candidate(k)),
            names=inp.names,
            bins=problem.bins,
            smoothing=problem.smoothing,
            reff=inp.reff,
            options=opts,
        )
    except (ValueError, TypeError, NotImplementedError) as err:
        said = (
            f"moment matching was not possible for this model ({err}); the {bad.size} "
            "neighbour(s) keep their reweighting estimate"
        )
        return Matched(est, (said,))
    out = est.copy()
    for k, res in outcomes.items():
        out["khat_mm"][k] = res.khat_after
        if res.khat_after < res.khat_before:
            out.set_row(k, res, res.mcse, "moment_match")
    return Matched(out)

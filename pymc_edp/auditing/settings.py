"""The audit's parameters, checked and resolved once: what every stage reads."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from pymc_edp.auditing.methods import Method
from pymc_edp.base.common import COUNT_SMOOTHING
from pymc_edp.base.validate import check_real
from pymc_edp.core.neighbours import Relation
from pymc_edp.core.reweight import ChunkOptions
from pymc_edp.refit.options import RefitOptions
from pymc_edp.refit.warm import warm_tune

__all__ = ["Settings", "Smoothing"]


@dataclass(frozen=True)
class Smoothing:
    """Additive smoothing of weighted and of count estimates (see ``audit(smoothing=)``)."""

    weighted: float
    count: float

    @classmethod
    def of(cls, smoothing: float | None) -> Smoothing:
        """None: weighted estimates unsmoothed, counts by ``COUNT_SMOOTHING``; else both."""
        if smoothing is None:
            return cls(0.0, COUNT_SMOOTHING)
        value = check_real(smoothing, "smoothing", minimum=0)
        return cls(value, value)


@dataclass(frozen=True)
class Settings:
    """Everything the stages need to know of the audit's parameters, checked."""

    bins: int
    method: Method
    neighbour: Relation  # as asked, before its candidates are bound to the data
    smoothing: Smoothing
    refit: RefitOptions
    chunks: ChunkOptions
    seed: int  # the seed used (drawn afresh when none was given)
    seed_given: bool = True  # a fresh seed does not stop a rerun resuming
    progressbar: bool = True
    #: When the audit started (:func:`time.monotonic`): its time budget counts from here.
    started: float = field(default_factory=time.monotonic, compare=False)
    #: The fit's sampling time (s) and its sampler steps (chains x (draws + tune)), if known.
    fit_cost: tuple[float, int] | None = None

    def sized_for(self, posterior) -> Settings:
        """These settings with the refits' unset sizes and the fit's cost from ``posterior``."""
        refit = self.refit.for_fit(posterior)
        fit_cost = self.fit_cost
        seconds = getattr(posterior, "attrs", {}).get("sampling_time")
        if posterior is not None and isinstance(seconds, float | int) and seconds > 0:
            fit = RefitOptions().for_fit(posterior)
            fit_cost = (float(seconds), fit.chains * (fit.draws + fit.tune))
        return dataclasses.replace(self, refit=refit, fit_cost=fit_cost)

    def refit_seconds(self, warm: bool = False) -> float | None:
        """A refit's expected time: the fit's, scaled by its sampler steps (None: unknown).

        ``warm``: the refit tunes for :func:`~pymc_edp.refit.warm.warm_tune` steps.
        """
        if self.fit_cost is None or self.refit.draws is None:
            return None
        seconds, steps = self.fit_cost
        r = self.refit
        tune = warm_tune(r.tune) if warm else r.tune
        return seconds * r.chains * (r.draws + tune) / steps

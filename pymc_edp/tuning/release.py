"""A release target of :func:`pymc_edp.tune_prior`: :func:`pymc_edp.audit_release`'s headline."""

from __future__ import annotations

import dataclasses
import math

from pymc_edp.base.mcse import normal_quantile
from pymc_edp.base.validate import check_int
from pymc_edp.core.neighbours import Relation
from pymc_edp.model.compat import get_group
from pymc_edp.release.auditing import audit_release, check_release
from pymc_edp.release.options import ReleaseOptions
from pymc_edp.release.synthetic import observed_name

__all__: list[str] = []

#: Most bootstrap replicates of a search trial's release audit (the confirmation: all).
TRIAL_BOOTSTRAP = 50


def release_mcse(res) -> float:
    """Monte-Carlo error of a release headline: its interval's half width over its z (or 0)."""
    lo, hi = res.interval
    z = float(normal_quantile(res.prob))
    mcse = (hi - lo) / 2.0 / z
    return float(mcse) if math.isfinite(mcse) and mcse >= 0 else 0.0


class ReleaseAuditor:
    """How :func:`pymc_edp.tune_prior` audits for a release target.

    ``kwargs``: :func:`pymc_edp.audit_release`'s, checked before any sampling. The interface
    is that of :class:`pymc_edp.tuning.prior._Audits`.
    """

    def __init__(self, kwargs: dict, model=None):
        names = ("release", "k", "delta", "observed", "n_synthetic", "statistic")
        spec = check_release(*(kwargs[name] for name in names))
        Relation.coerce(kwargs["neighbour"])
        self.bins = check_int(kwargs["bins"], "bins", 2)
        options = ReleaseOptions.coerce(kwargs["options"])
        # a synthetic release draws one observed variable; draws publish the posterior's
        if model is not None and spec.release.synthetic:
            observed_name(model, spec.observed)
        self.kwargs = {**kwargs, "options": options}
        self.delta = spec.delta
        self.label = (
            f"audit_release: {spec.release.publishes}, k = {spec.k} at delta {spec.delta:g}"
        )
        self.search_label = f"{self.label}, at most {TRIAL_BOOTSTRAP} bootstrap replicates"
        self.search_advice = ""

    def trial_kwargs(self) -> dict:
        """The keywords with at most :data:`TRIAL_BOOTSTRAP` bootstrap replicates."""
        opts = self.kwargs["options"]
        n_bootstrap = min(opts.n_bootstrap, TRIAL_BOOTSTRAP)
        return {**self.kwargs, "options": dataclasses.replace(opts, n_bootstrap=n_bootstrap)}

    def trial(self, idata, model, seed: int):
        """A search trial's release audit (at most :data:`TRIAL_BOOTSTRAP` replicates)."""
        kwargs = self.trial_kwargs()
        return audit_release(idata, model, random_seed=seed, progressbar=False, **kwargs)

    def confirm(self, idata, model, seed: int, progressbar: bool):
        """The confirmation's release audit, with the target's own options."""
        kw = self.kwargs
        return audit_release(idata, model, random_seed=seed, progressbar=progressbar, **kw)

    @staticmethod
    def estimate(res) -> tuple[float, float]:
        """The headline (epsilon at ``delta`` for ``k`` releases) and its MC error."""
        return float(res.headline), release_mcse(res)

    def confirmation_notes(self, res) -> list[str]:
        """A confirmed headline that is a lower bound cannot vouch for the target."""
        if not res.lower_bound:
            return []
        return [
            f"the confirmed release epsilon {res.headline:.4g} is a lower bound: it rests on "
            f"fewer than 10 effective draws or outputs, too few to resolve delta "
            f"{self.delta:g}, so the tuned prior may not meet the target; draw more "
            "samples (refit=RefitOptions(draws=...)) or take a larger delta"
        ]

    @staticmethod
    def utility_names(res, idata) -> list[str]:
        """Every posterior variable (a release publishes from all of them)."""
        del res
        return list(get_group(idata, "posterior").data_vars)

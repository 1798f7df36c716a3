"""A release target of :func:`pymc_edp.tune_prior`: what is published, at what (epsilon, delta).

With ``release=ReleaseTarget(...)``, :func:`~pymc_edp.tune_prior` tunes the prior so that
``k`` releases from the posterior (posterior draws, or synthetic datasets from its posterior
predictive) meet the target epsilon at the target's ``delta`` for the worst neighbour, as
:func:`pymc_edp.audit_release` measures it, instead of the B-EDP epsilon of
:func:`pymc_edp.audit`.

References
----------
.. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (sec. 2; Table 1).
.. [2] Dimitrakakis, C., Nelson, B., Zhang, Z., Mitrokotsa, A. and Rubinstein, B. I. P.
   "Differential privacy for Bayesian inference through posterior sampling." JMLR 18(11),
   2017.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping

from scipy import stats

from pymc_edp.base.validate import as_options
from pymc_edp.model.compat import get_group
from pymc_edp.model.neighbours import NeighbourOptions
from pymc_edp.release.auditing import audit_release, check_release
from pymc_edp.release.options import ReleaseOptions
from pymc_edp.release.synthetic import observed_name

__all__ = ["ReleaseTarget"]

#: Most bootstrap replicates of a search trial's release audit (the confirmation: all).
TRIAL_BOOTSTRAP = 50


@dataclasses.dataclass(frozen=True)
class ReleaseTarget:
    """What :func:`pymc_edp.tune_prior` tunes for: ``k`` releases at the target epsilon.

    Every field is the :func:`pymc_edp.audit_release` parameter of the same name, with the
    same meaning, checked here (before any sampling) as ``audit_release`` would check it;
    ``random_seed`` and ``progressbar`` are left to whoever runs the audit. The default,
    ``release="synthetic"``, audits ``k`` synthetic copies of the observed data drawn from the
    posterior predictive.

    Parameters
    ----------
    release : {"draws", "synthetic"}, default "synthetic"
    k : int, default 1
        Independent releases: ``k`` posterior draws or ``m = k`` synthetic copies.
    delta : float, default 1e-5
        The delta at which the target epsilon is met, in ``[0, 1)``.
    observed : str, optional
    size : int, optional
    statistic : callable, optional
    neighbour : {"remove", "replace"}, NeighbourOptions or dict, default "remove"
    options : ReleaseOptions or dict, optional
        How the release audits estimate (the confirmation's; the search's trials use at most
        :data:`TRIAL_BOOTSTRAP` bootstrap replicates).

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017.

    Examples
    --------
    >>> target = edp.ReleaseTarget(k=5, delta=1e-6)
    >>> sorted(target.kwargs())[:3]
    ['delta', 'k', 'neighbour']
    >>> edp.ReleaseTarget.coerce({"release": "draws", "k": 3}).k
    3
    >>> edp.ReleaseTarget(release="draws", k=0)
    Traceback (most recent call last):
        ...
    ValueError: k must be an integer >= 1, got 0
    """

    release: str = "synthetic"
    k: int = 1
    delta: float = 1e-5
    observed: str | None = None
    size: int | None = None
    statistic: Callable | None = None
    neighbour: str | NeighbourOptions | Mapping = "remove"
    options: ReleaseOptions | Mapping | None = None

    def __post_init__(self):
        check_release(self.release, self.k, self.delta, self.observed, self.size, self.statistic)
        NeighbourOptions.coerce(self.neighbour)
        ReleaseOptions.coerce(self.options)

    @classmethod
    def coerce(cls, value: ReleaseTarget | Mapping | None) -> ReleaseTarget | None:
        """``value`` as a target: None stays None (no release target), a dict gives fields."""
        return None if value is None else as_options(cls, value, "release")

    def kwargs(self) -> dict:
        """The fields as keyword arguments of :func:`pymc_edp.audit_release`."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def check_model(self, model) -> None:
        """Check what needs the model (a synthetic release's observed variable), if any."""
        if model is not None and self.release == "synthetic":
            observed_name(model, self.observed)

    def trial_kwargs(self) -> dict:
        """:meth:`kwargs` with at most :data:`TRIAL_BOOTSTRAP` bootstrap replicates."""
        opts = ReleaseOptions.coerce(self.options)
        opts = dataclasses.replace(opts, bootstrap=min(opts.bootstrap, TRIAL_BOOTSTRAP))
        return {**self.kwargs(), "options": opts}

    @property
    def label(self) -> str:
        """A short description, e.g. ``"audit_release: 5 draws at delta 1e-06"``."""
        what = "draws" if self.release == "draws" else "synthetic datasets"
        return f"audit_release: {self.k} {what} at delta {self.delta:g}"


def release_mcse(res) -> float:
    """Monte-Carlo error of a release headline: its interval's half width over its z.

    ``(hi - lo) / 2 / Phi^-1((1 + prob) / 2)``; 0 if the interval is not finite.
    """
    lo, hi = res.interval
    z = float(stats.norm.ppf((1.0 + res.prob) / 2.0))
    mcse = (hi - lo) / 2.0 / z
    return float(mcse) if math.isfinite(mcse) and mcse >= 0 else 0.0


class ReleaseAuditor:
    """How :func:`pymc_edp.tune_prior` audits for a release target (trials and confirmation).

    The same interface as the B-EDP auditor of :mod:`pymc_edp.tuning.prior`: ``trial``,
    ``confirm``, ``epsilon``, ``mcse``, ``search_note``, ``confirmation_notes``,
    ``utility_names``, ``label`` and ``bins``.
    """

    def __init__(self, target: ReleaseTarget):
        self.target = target
        self.label = target.label
        self.bins = int(ReleaseOptions.coerce(target.options).bins)

    def trial(self, idata, model, seed: int):
        """A search trial's release audit (at most :data:`TRIAL_BOOTSTRAP` replicates)."""
        kwargs = self.target.trial_kwargs()
        return audit_release(idata, model, random_seed=seed, progressbar=False, **kwargs)

    def confirm(self, idata, model, seed: int, progressbar: bool):
        """The confirmation's release audit, with the target's own options."""
        kwargs = self.target.kwargs()
        return audit_release(idata, model, random_seed=seed, progressbar=progressbar, **kwargs)

    @staticmethod
    def epsilon(res) -> float:
        """The headline: epsilon at the target's delta for ``k`` releases."""
        return float(res.headline)

    @staticmethod
    def mcse(res) -> float:
        """:func:`release_mcse`."""
        return release_mcse(res)

    def search_note(self, note: str, count: int, n_trials: int, where: str) -> str:
        """A warning of the search's trials, with where it came."""
        return (
            f"during the search ({self.label}, at most {TRIAL_BOOTSTRAP} bootstrap replicates) "
            f"at {count} of {n_trials} trial values ({where}): {note}"
        )

    def confirmation_notes(self, res) -> list[str]:
        """A confirmed headline that is a lower bound cannot vouch for the target."""
        if not res.lower_bound:
            return []
        return [
            f"the confirmed release epsilon {res.headline:.4g} is a lower bound: it rests on "
            f"fewer than 10 effective draws or outputs, too few to resolve delta "
            f"{self.target.delta:g}, so the tuned prior may not meet the target; draw more "
            "samples (refit=RefitOptions(draws=...)) or take a larger delta"
        ]

    @staticmethod
    def utility_names(res, idata) -> list[str]:
        """Every posterior variable (a release publishes from all of them)."""
        del res
        return list(get_group(idata, "posterior").data_vars)

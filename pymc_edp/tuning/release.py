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
import logging
import math
import warnings
from collections.abc import Callable, Mapping

import numpy as np
from scipy import stats

from pymc_edp.base.common import EDPWarning
from pymc_edp.base.validate import as_options, check_choice, check_int, check_real
from pymc_edp.model.neighbours import NeighbourOptions
from pymc_edp.release.auditing import audit_release
from pymc_edp.release.options import ReleaseOptions
from pymc_edp.release.synthetic import observed_name
from pymc_edp.tuning.search import Trial

__all__ = ["ReleaseTarget"]

_log = logging.getLogger("pymc_edp")

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
    >>> import pymc_edp as edp
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
        check_choice(self.release, "release", ("draws", "synthetic"))
        check_int(self.k, "k", 1)
        delta = check_real(self.delta, "delta", minimum=0)
        if delta >= 1:
            raise ValueError(f"delta must be in [0, 1), got {self.delta!r}")
        if self.release == "draws":
            given = [
                name
                for name in ("observed", "size", "statistic")
                if getattr(self, name) is not None
            ]
            if given:
                raise ValueError(
                    f"{', '.join(given)} describe synthetic data: pass release='synthetic' "
                    "(a draws release publishes posterior draws; choose them with "
                    "options={'var_names': ...})"
                )
        if self.observed is not None and not isinstance(self.observed, str):
            raise TypeError(f"observed must be a variable name, got {self.observed!r}")
        check_int(self.size, "size", 1, allow_none=True)
        if self.statistic is not None and not callable(self.statistic):
            raise TypeError(
                f"statistic must be a function of a synthetic dataset, got {self.statistic!r}"
            )
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


def max_khat(res) -> float:
    """The largest Pareto k-hat of the audited neighbours (NaN if none is finite)."""
    k = np.asarray(res.pointwise["pareto_k"].values, dtype=float)
    return float(np.nanmax(k)) if np.isfinite(k).any() else float("nan")


class ReleaseTrials:
    """The search's evaluations: sample at a value (common seed), audit the release."""

    def __init__(self, sampler, seed: int, target: ReleaseTarget):
        self.sampler, self.seed, self.kwargs = sampler, seed, target.trial_kwargs()
        self.search_notes: dict[str, list[float]] = {}

    def __call__(self, x: float, stage: str) -> Trial:
        value = math.exp(x)
        idata, mod = self.sampler(value, self.seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = audit_release(
                idata, mod, random_seed=self.seed, progressbar=False, **self.kwargs
            )
        for w in caught:
            if issubclass(w.category, EDPWarning):
                self.search_notes.setdefault(str(w.message), []).append(value)
        mcse = release_mcse(res)
        _log.info(
            "tune_prior: value %.6g -> release epsilon %.4f +- %.4f", value, res.headline, mcse
        )
        # only the untuned posterior is kept (the utility reference); the rest are dropped
        keep = stage == "initial"
        return Trial(x, res.headline, mcse, max_khat(res), stage, idata if keep else None)

    def notes(self, n_trials: int, method: str) -> dict[str, None]:
        """The search's warnings, each once, with the trial values it came at."""
        out: dict[str, None] = {}
        for note, values in self.search_notes.items():
            where = ", ".join(f"{v:.4g}" for v in values[:5]) + ("..." if len(values) > 5 else "")
            out[
                f"during the search ({method}, at most {TRIAL_BOOTSTRAP} bootstrap replicates) "
                f"at {len(values)} of {n_trials} trial values ({where}): {note}"
            ] = None
        return out


def confirm_release(idata, model, target: ReleaseTarget, seed: int, progressbar: bool, into):
    """The confirmation: the release audited at the answer; its result and Monte-Carlo error.

    Its EDP warnings go into ``into`` (prefixed), others are re-raised; a headline that is a
    lower bound is said so there too.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = audit_release(
            idata, model, random_seed=seed, progressbar=progressbar, **target.kwargs()
        )
    for w in caught:
        if issubclass(w.category, EDPWarning):
            into[f"confirmation: {w.message}"] = None
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if res.lower_bound:
        into[
            f"the confirmed release epsilon {res.headline:.4g} is a lower bound: it rests on "
            f"fewer than 10 effective draws or outputs, too few to resolve delta "
            f"{target.delta:g}, so the tuned prior may not meet the target; draw more samples "
            "(refit=RefitOptions(draws=...)) or take a larger delta"
        ] = None
    return res, release_mcse(res)

"""Whether the audited fit itself has converged, by PyMC's own checks and in its words.

Every epsilon inherits the Monte-Carlo error and bias of unconverged draws.
:func:`fit_convergence` judges the audited variables as ``pm.sample`` does
(``pymc.stats.convergence``): R-hat above :data:`RHAT_THRESHOLD`, bulk ESS below
:data:`ESS_PER_CHAIN` per chain (neither with one chain or under :data:`MIN_DRAWS` draws per
chain), any divergence. A fit ``pm.sample`` checked is not warned about again; one from a
sampler that does not (nutpie, or unrecorded) gets PyMC's messages as the audit's warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import xarray as xr

from pymc_edp.model.compat import ess, rhat

__all__ = [
    "CHECKED_BY",
    "ESS_PER_CHAIN",
    "MIN_DRAWS",
    "RHAT_THRESHOLD",
    "FitConvergence",
    "checked_by",
    "fit_convergence",
]

#: Largest rank-normalised split R-hat of a converged fit (PyMC's, Vehtari et al. 2021).
RHAT_THRESHOLD = 1.01
#: Smallest bulk ESS per chain of a converged fit (PyMC's rule).
ESS_PER_CHAIN = 100
#: Fewer draws per chain than this are too few for PyMC to check R-hat and ESS.
MIN_DRAWS = 100
#: Samplers (the posterior's ``inference_library``) whose PyMC entry points run PyMC's
#: convergence checks (by default), each with the posterior attribute marking the entry point:
#: ``pm.sample`` and ``pm.sample_smc`` ("pymc"), ``pm.sample`` with ``nuts_sampler="numpyro"``
#: or ``"blackjax"`` (``tuning_steps``; numpyro's own sampling records none). Not nutpie.
CHECKED_BY: dict[str, str | None] = {
    "pymc": None,
    "numpyro": "tuning_steps",
    "blackjax": "tuning_steps",
}

_SEE = "See https://arxiv.org/abs/1903.08008 for details"


@dataclass(frozen=True)
class FitConvergence:
    """Convergence diagnostics of the audited posterior variables.

    Attributes
    ----------
    n_chains : int
    max_rhat : float or None
        Largest R-hat over the audited elements; None with one chain or none defined.
    rhat_var : str or None
        Its variable.
    min_ess_bulk, min_ess_tail : float or None
        Smallest bulk and tail ESS (the tail ESS is kept, not judged: PyMC does not).
    ess_bulk_var, ess_tail_var : str or None
        Their variables.
    n_divergent : int or None
        Divergent transitions; None when the fit does not record them.
    n_draws : int or None
        Draws per chain (None: not recorded, an older result).
    sampler : str or None
        The posterior's ``inference_library`` (None: not recorded).
    checked : bool
        The sampler ran PyMC's convergence checks when sampling (:data:`CHECKED_BY`).

    Examples
    --------
    >>> from pymc_edp.model.convergence import FitConvergence
    >>> fit = FitConvergence(n_chains=2, max_rhat=1.12, rhat_var="h", n_divergent=3,
    ...                      min_ess_bulk=45.0, ess_bulk_var="h", min_ess_tail=300.0,
    ...                      ess_tail_var="h", sampler="nutpie")
    >>> fit.converged
    False
    >>> for problem in fit.problems:
    ...     print(problem)
    max R-hat 1.12 for 'h' (above 1.01)
    3 divergences after tuning
    min bulk ESS 45 for 'h' (under 200: 100 per chain)
    >>> print(fit.pymc_messages[1])
    There were 3 divergences after tuning. Increase `target_accept` or reparameterize.
    >>> FitConvergence(n_chains=4, max_rhat=1.001, min_ess_bulk=2000.0).message()
    ''
    """

    n_chains: int
    max_rhat: float | None = None
    rhat_var: str | None = None
    min_ess_bulk: float | None = None
    ess_bulk_var: str | None = None
    min_ess_tail: float | None = None
    ess_tail_var: str | None = None
    n_divergent: int | None = None
    n_draws: int | None = None
    sampler: str | None = None
    checked: bool = False

    @property
    def min_ess(self) -> float:
        """The smallest bulk ESS a converged fit has: 100 per chain."""
        return float(ESS_PER_CHAIN * max(self.n_chains, 1))

    @property
    def mixing_checked(self) -> bool:
        """Whether PyMC checks R-hat and ESS here: two chains or more, 100 draws or more."""
        return self.n_chains > 1 and (self.n_draws is None or self.n_draws >= MIN_DRAWS)

    def _failed(self) -> tuple[bool, bool, bool]:
        """Which of PyMC's checks fail: R-hat, divergences, bulk ESS."""
        mixing = self.mixing_checked
        bad_rhat = mixing and self.max_rhat is not None and self.max_rhat > RHAT_THRESHOLD
        bad_ess = mixing and self.min_ess_bulk is not None and self.min_ess_bulk < self.min_ess
        return bad_rhat, bool(self.n_divergent), bad_ess

    @property
    def problems(self) -> tuple[str, ...]:
        """What PyMC's checks find, one short phrase each (empty: none)."""
        bad_rhat, divergent, bad_ess = self._failed()
        out = []
        if bad_rhat:
            # two decimals, or three where two would round to the threshold itself
            digits = 2 if round(self.max_rhat, 2) > RHAT_THRESHOLD else 3
            out.append(
                f"max R-hat {self.max_rhat:.{digits}f} for {self.rhat_var!r} "
                f"(above {RHAT_THRESHOLD:g})"
            )
        if divergent:
            out.append(f"{self.n_divergent} divergence{_s(self.n_divergent)} after tuning")
        if bad_ess:
            out.append(
                f"min bulk ESS {self.min_ess_bulk:.0f} for {self.ess_bulk_var!r} (under "
                f"{self.min_ess:.0f}: {ESS_PER_CHAIN} per chain)"
            )
        return tuple(out)

    @property
    def pymc_messages(self) -> tuple[str, ...]:
        """PyMC's own messages for what its checks find, with the audited variable's values."""
        bad_rhat, divergent, bad_ess = self._failed()
        out = []
        if bad_rhat:
            out.append(
                f"The rhat statistic is larger than {RHAT_THRESHOLD:g} for some parameters "
                f"(max {self.max_rhat:.3f} for {self.rhat_var!r}). This indicates problems "
                f"during sampling. {_SEE}."
            )
        if divergent:
            verb, word = (
                ("was", "divergence") if self.n_divergent == 1 else ("were", "divergences")
            )
            out.append(
                f"There {verb} {self.n_divergent} {word} after tuning. Increase "
                "`target_accept` or reparameterize."
            )
        if bad_ess:
            out.append(
                f"The effective sample size per chain is smaller than {ESS_PER_CHAIN} for some "
                f"parameters (min bulk ESS {self.min_ess_bulk:.0f} for {self.ess_bulk_var!r} "
                f"over {self.n_chains} chains). A higher number is needed for reliable rhat "
                f"and ess computation. {_SEE}."
            )
        return tuple(out)

    @property
    def converged(self) -> bool:
        """None of PyMC's checks fails."""
        return not self.problems

    def message(self) -> str:
        """The audit's warning: PyMC's messages, unless the sampler said them ("" otherwise)."""
        if self.checked or self.converged:
            return ""
        who = (
            f"sampled by {self.sampler}, which does not run them"
            if self.sampler
            else "the fit does not record its sampler"
        )
        return (
            f"Convergence checks as pm.sample runs them, on the audited variables ({who}): "
            f"{' '.join(self.pymc_messages)} Every epsilon inherits the draws' Monte-Carlo "
            "error and bias."
        )

    def note(self) -> str:
        """What every view shows under epsilon: the warning, or what PyMC already reported."""
        if self.converged:
            return ""
        if not self.checked:
            return self.message()
        return f"Convergence, as PyMC reported when sampling: {'; '.join(self.problems)}."

    def to_dict(self) -> dict:
        """The fields, JSON-safe (for a netCDF attribute)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, fields: Mapping | None) -> FitConvergence | None:
        """Rebuild what :meth:`to_dict` wrote (None stays None)."""
        if fields is None:
            return None
        return cls(**dict(fields))


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def checked_by(attrs: Mapping) -> tuple[str | None, bool]:
    """The sampler a posterior's ``attrs`` record, and whether it ran PyMC's checks.

    Examples
    --------
    >>> from pymc_edp.model.convergence import checked_by
    >>> checked_by({"inference_library": "pymc", "tuning_steps": 1000})
    ('pymc', True)
    >>> checked_by({"inference_library": "nutpie", "tuning_steps": 1000})
    ('nutpie', False)
    >>> checked_by({"inference_library": "numpyro"})  # not through pm.sample
    ('numpyro', False)
    >>> checked_by({})
    (None, False)
    """
    sampler = attrs.get("inference_library")
    if sampler is None:
        return None, False
    sampler = str(sampler)
    if sampler not in CHECKED_BY:
        return sampler, False
    mark = CHECKED_BY[sampler]
    return sampler, mark is None or mark in attrs


def _extreme(stats: xr.Dataset, largest: bool) -> tuple[float | None, str | None]:
    """The largest (or smallest) finite value over every variable of ``stats``, and its name."""
    best, name = None, None
    for var in stats.data_vars:
        values = np.asarray(stats[var].values, dtype=float).ravel()
        values = values[np.isfinite(values)]
        if not values.size:
            continue  # e.g. a constant element
        value = float(values.max() if largest else values.min())
        if best is None or (value > best if largest else value < best):
            best, name = value, str(var)
    return best, name


def fit_convergence(
    posterior: xr.Dataset, names: Sequence[str], sample_stats: xr.Dataset | None = None
) -> FitConvergence:
    """R-hat, bulk and tail ESS of the variables ``names``, and the fit's divergences.

    The sampler and whether it ran PyMC's checks are read by :func:`checked_by`.

    Examples
    --------
    >>> from pymc_edp.model.convergence import fit_convergence
    >>> draws = np.random.default_rng(0).normal(size=(2, 500))
    >>> draws[1] += 3.0  # the second chain elsewhere
    >>> fit = fit_convergence(xr.Dataset({"h": (("chain", "draw"), draws)}), ["h"])
    >>> fit.converged, fit.rhat_var, fit.max_rhat > 1.5
    (False, 'h', True)
    """
    data = posterior[list(names)]
    n_chains = int(data.sizes.get("chain", 1))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # constant elements give NaN (and numerical warnings): they are skipped
        warnings.simplefilter("ignore", RuntimeWarning)
        max_rhat, rhat_var = _extreme(rhat(data), largest=True) if n_chains > 1 else (None, None)
        bulk, bulk_var = _extreme(ess(data, method="bulk"), largest=False)
        tail, tail_var = _extreme(ess(data, method="tail"), largest=False)
    n_divergent = None
    if sample_stats is not None and "diverging" in sample_stats:
        n_divergent = int(np.count_nonzero(np.asarray(sample_stats["diverging"].values)))
    sampler, checked = checked_by(posterior.attrs)
    return FitConvergence(
        n_chains=n_chains,
        max_rhat=max_rhat,
        rhat_var=rhat_var,
        min_ess_bulk=bulk,
        ess_bulk_var=bulk_var,
        min_ess_tail=tail,
        ess_tail_var=tail_var,
        n_divergent=n_divergent,
        n_draws=int(data.sizes["draw"]) if "draw" in data.sizes else None,
        sampler=sampler,
        checked=checked,
    )

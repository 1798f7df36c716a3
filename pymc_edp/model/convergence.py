"""Whether the audited fit itself has converged: R-hat, bulk and tail ESS, divergences.

Every epsilon inherits the Monte-Carlo error and bias of unconverged draws.
:func:`fit_convergence` reads the diagnostics of the audited variables with the stack's
estimators, by ArviZ's and Stan's rules: R-hat above :data:`RHAT_THRESHOLD`, bulk or tail
ESS below :data:`ESS_PER_CHAIN` per chain, any divergence (one chain: no R-hat).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import xarray as xr

from pymc_edp.model.compat import ess, rhat

__all__ = ["ESS_PER_CHAIN", "RHAT_THRESHOLD", "FitConvergence", "fit_convergence"]

#: Largest rank-normalised split R-hat of a converged fit (Vehtari et al. 2021).
RHAT_THRESHOLD = 1.01
#: Smallest bulk and tail ESS per chain of a converged fit (ArviZ's and Stan's rule).
ESS_PER_CHAIN = 100


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
        Smallest bulk and tail ESS.
    ess_bulk_var, ess_tail_var : str or None
        Their variables.
    n_divergent : int or None
        Divergent transitions; None when the fit does not record them.

    Examples
    --------
    >>> from pymc_edp.model.convergence import FitConvergence
    >>> fit = FitConvergence(n_chains=2, max_rhat=1.12, rhat_var="h", n_divergent=3,
    ...                      min_ess_bulk=45.0, ess_bulk_var="h", min_ess_tail=300.0,
    ...                      ess_tail_var="h")
    >>> fit.converged
    False
    >>> for problem in fit.problems:
    ...     print(problem)
    max R-hat 1.12 for 'h'
    3 divergent transitions
    min bulk ESS 45 for 'h' (under 200: 100 per chain)
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

    @property
    def min_ess(self) -> float:
        """The smallest bulk or tail ESS a converged fit has: 100 per chain."""
        return float(ESS_PER_CHAIN * max(self.n_chains, 1))

    @property
    def problems(self) -> tuple[str, ...]:
        """What is wrong with the fit, one phrase per diagnostic ("" for none)."""
        out = []
        if self.max_rhat is not None and self.max_rhat > RHAT_THRESHOLD:
            # two decimals, or three where two would round to the threshold itself
            digits = 2 if round(self.max_rhat, 2) > RHAT_THRESHOLD else 3
            out.append(f"max R-hat {self.max_rhat:.{digits}f} for {self.rhat_var!r}")
        if self.n_divergent:
            out.append(f"{self.n_divergent} divergent transitions")
        for kind, value, var in (
            ("bulk", self.min_ess_bulk, self.ess_bulk_var),
            ("tail", self.min_ess_tail, self.ess_tail_var),
        ):
            if value is not None and value < self.min_ess:
                out.append(
                    f"min {kind} ESS {value:.0f} for {var!r} (under {self.min_ess:.0f}: "
                    f"{ESS_PER_CHAIN} per chain)"
                )
        return tuple(out)

    @property
    def converged(self) -> bool:
        """No diagnostic says otherwise."""
        return not self.problems

    def message(self) -> str:
        """The sentence every view shows for a fit that has not converged ("" otherwise)."""
        problems = self.problems
        if not problems:
            return ""
        return (
            f"The fit has not converged ({'; '.join(problems)}): every epsilon here "
            "inherits its Monte-Carlo error and bias; refit the model (more tuning, "
            "reparameterise) before trusting these numbers."
        )

    def to_dict(self) -> dict:
        """The fields, JSON-safe (for a netCDF attribute)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, fields: Mapping | None) -> FitConvergence | None:
        """Rebuild what :meth:`to_dict` wrote (None stays None)."""
        if fields is None:
            return None
        return cls(**dict(fields))


def _extreme(stats: xr.Dataset, largest: bool) -> tuple[float | None, str | None]:
    """The largest (or smallest) finite value over every variable of ``stats``, and its name."""
    best, name = None, None
    for var in stats.data_vars:
        values = np.asarray(stats[var].values, dtype=float).ravel()
        values = values[np.isfinite(values)]
        if not values.size:
            continue  # e.g. a constant element: no R-hat, no ESS
        value = float(values.max() if largest else values.min())
        if best is None or (value > best if largest else value < best):
            best, name = value, str(var)
    return best, name


def fit_convergence(
    posterior: xr.Dataset, names: Sequence[str], sample_stats: xr.Dataset | None = None
) -> FitConvergence:
    """R-hat, bulk and tail ESS of the variables ``names``, and the fit's divergences.

    ``sample_stats``' ``diverging`` is counted when there is one.

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
    return FitConvergence(
        n_chains=n_chains,
        max_rhat=max_rhat,
        rhat_var=rhat_var,
        min_ess_bulk=bulk,
        ess_bulk_var=bulk_var,
        min_ess_tail=tail,
        ess_tail_var=tail_var,
        n_divergent=n_divergent,
    )

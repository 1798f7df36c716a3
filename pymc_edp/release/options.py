"""How :func:`pymc_edp.audit_release` estimates: sampled outputs, listing, grid, bootstrap."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pymc_edp.base.validate import as_options, check_int, check_probability, check_real

__all__ = ["ReleaseOptions"]


@dataclass(frozen=True)
class ReleaseOptions:
    """How a release audit estimates its privacy loss distributions.

    Parameters
    ----------
    n_outputs : int, default 1000
        Synthetic datasets sampled from each mechanism when they cannot all be listed.
    max_listed : int, default 4096
        Sum exactly over every possible synthetic dataset when there are at most this many.
    support : sequence, optional
        The values one record can take, for listing; default read from the likelihood
        (Bernoulli, Binomial, Categorical).
    accuracy : float, default 1e-3
        Bound on what discretising the losses adds to a composed epsilon (the grid is
        ``accuracy / k``, coarser only when the composed grid would exceed 2**22 points).
    n_bootstrap : int, default 200
        Bootstrap replicates (blocks of draws, sampled outputs) of the Monte-Carlo interval.
    prob : float, default 0.9
        Probability of that interval.
    top : int, default 8
        Most neighbour pairs composed on the fine grid and bootstrapped: those whose
        coarse upper bound reaches the largest coarse lower bound, worst first.

    Examples
    --------
    >>> edp.ReleaseOptions(n_outputs=500).n_bootstrap
    200
    >>> edp.ReleaseOptions.coerce({"top": 3}).top
    3
    """

    n_outputs: int = 1000
    max_listed: int = 4096
    support: Sequence | None = None
    accuracy: float = 1e-3
    n_bootstrap: int = 200
    prob: float = 0.9
    top: int = 8

    def __post_init__(self):
        check_int(self.n_outputs, "n_outputs", 10)
        check_int(self.max_listed, "max_listed", 0)
        check_real(self.accuracy, "accuracy", positive=True)
        check_int(self.n_bootstrap, "n_bootstrap", 0)
        check_probability(self.prob, "prob")
        check_int(self.top, "top", 1)

    @classmethod
    def coerce(cls, value: ReleaseOptions | Mapping | None) -> ReleaseOptions:
        """``value`` as options (None: the defaults; a dict: the fields)."""
        return as_options(cls, value, "options")

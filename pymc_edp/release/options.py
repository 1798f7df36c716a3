"""How :func:`pymc_edp.audit_release` estimates: outputs, bins, grid, bootstrap."""

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
    var_names : str or list of str, optional
        For ``release="draws"``: the posterior variables published, as in ArviZ (default
        all). The loss is that of the whole draw of the free variables, which is exact when
        the likelihood depends only on the published ones and an upper bound otherwise (a
        function of a draw is no less private than the draw).
    outputs : int, default 1000
        Synthetic datasets sampled from each mechanism when they cannot all be listed.
    enumerate : int, default 4096
        List every possible synthetic dataset (and sum over them exactly) when the records
        take finitely many values and there are at most this many datasets.
    support : sequence, optional
        The values one record can take, for listing; default read from the likelihood
        (Bernoulli, Binomial, Categorical).
    bins : int, default 20
        Equal-probability bins of a published statistic (``statistic=``), cut from its
        full-data distribution; a statistic with at most ``bins`` distinct values keeps them.
    accuracy : float, default 1e-3
        Bound on what discretising the losses adds to a composed epsilon (the grid is
        ``accuracy / k``, coarser only when the composed grid would exceed 2**22 points).
    bootstrap : int, default 200
        Bootstrap replicates (over blocks of draws within chains, and over sampled outputs)
        of the Monte-Carlo interval.
    prob : float, default 0.9
        Probability of that interval.
    top : int, default 8
        Most neighbour pairs composed on the fine grid and bootstrapped: those whose
        coarse upper bound reaches the largest coarse lower bound, worst first.

    Examples
    --------
    >>> edp.ReleaseOptions(outputs=500).bootstrap
    200
    >>> edp.ReleaseOptions.coerce({"bins": 10}).bins
    10
    """

    var_names: str | Sequence[str] | None = None
    outputs: int = 1000
    enumerate: int = 4096
    support: Sequence | None = None
    bins: int = 20
    accuracy: float = 1e-3
    bootstrap: int = 200
    prob: float = 0.9
    top: int = 8

    def __post_init__(self):
        check_int(self.outputs, "outputs", 10)
        check_int(self.enumerate, "enumerate", 0)
        check_int(self.bins, "bins", 2)
        check_real(self.accuracy, "accuracy", positive=True)
        check_int(self.bootstrap, "bootstrap", 0)
        check_probability(self.prob, "prob")
        check_int(self.top, "top", 1)

    @classmethod
    def coerce(cls, value: ReleaseOptions | Mapping | None) -> ReleaseOptions:
        """``value`` as options: None gives the defaults, a dict its fields."""
        return as_options(cls, value, "options")

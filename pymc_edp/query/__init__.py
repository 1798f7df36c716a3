"""Query-level empirical differential privacy over many databases.

Burchard, Daoud & Dotterrer (2020) audit not a posterior but any statistic released
repeatedly over databases that share individual identities (yearly usage totals, daily
transaction sums, a model trained on random splits). The privacy is estimated from the
randomness across databases; when it falls short, a minimal noise kernel is computed.

Front door: :func:`query_edp` (Algorithms 1 and 2) and :func:`noise_kernel` (section 6);
the steps are public too.

References
----------
.. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020). Empirical Differential Privacy.
   arXiv:2011.05418.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import pandas as pd
import xarray as xr

from pymc_edp.base.query_kernels import (
    bottleneck_distance,
    hausdorff_distance,
    hockey_stick_delta_grid,
)
from pymc_edp.query.density import DensityModel, select_density
from pymc_edp.query.independence import IndependenceWarning, independence_check
from pymc_edp.query.noise import NoiseKernel, check_noise, noise_kernel
from pymc_edp.query.profile import DEFAULT_EPSILONS, ProfileOptions, epsilon_at, privacy_profile
from pymc_edp.query.queries import MeanQuery, SumQuery, mean_query, sum_query
from pymc_edp.query.samples import Databases, query_samples

__all__ = [
    "DEFAULT_EPSILONS",
    "DensityModel",
    "IndependenceWarning",
    "MeanQuery",
    "NoiseKernel",
    "ProfileOptions",
    "SumQuery",
    "bottleneck_distance",
    "check_noise",
    "epsilon_at",
    "hausdorff_distance",
    "hockey_stick_delta_grid",
    "independence_check",
    "mean_query",
    "noise_kernel",
    "privacy_profile",
    "query_edp",
    "query_samples",
    "select_density",
    "sum_query",
]


def query_edp(
    databases: Databases,
    query: Callable[..., Any],
    *,
    id_col: str,
    database_col: str | None = None,
    individuals: Sequence[Hashable] | None = None,
    n_draws: int = 1,
    side_info: Callable[[pd.DataFrame], Any] | None = None,
    profile: Mapping[str, Any] | None = None,
    random_seed: int | None = None,
    executor: Any = None,
    progressbar: bool = True,
) -> xr.Dataset:
    """Empirical ``(eps, delta)``-DP of a query released over many databases.

    :func:`query_samples` (Algorithm 1 of [1]) then :func:`privacy_profile` (Algorithm 2).

    Parameters
    ----------
    databases, query, id_col, database_col, individuals, n_draws, side_info, executor
        As in :func:`query_samples`.
    profile : dict, optional
        Keyword arguments of :func:`privacy_profile` (``epsilons``, ``density``,
        ``targets``, ``side_info_buckets``, ``options``, ...).
    random_seed : int, optional
        Seeds randomised queries and Monte Carlo integration.
    progressbar : bool, default True

    Returns
    -------
    xarray.Dataset
        As :func:`privacy_profile`.

    Examples
    --------
    >>> res = query_edp(dbs, sum_query("x"), id_col="id", progressbar=False)
    >>> d = res["delta"].sel(epsilon=[0.0, 1.0], method="nearest").to_numpy()
    >>> bool(d[0] > d[1])
    True
    """
    profile = dict(profile or {})
    for key in ("random_seed", "progressbar"):
        if key in profile:
            raise TypeError(f"pass {key} to query_edp itself, not in profile")
    samples = query_samples(
        databases,
        query,
        id_col=id_col,
        database_col=database_col,
        individuals=individuals,
        n_draws=n_draws,
        side_info=side_info,
        random_seed=random_seed,
        executor=executor,
        progressbar=progressbar,
    )
    return privacy_profile(samples, random_seed=random_seed, progressbar=progressbar, **profile)

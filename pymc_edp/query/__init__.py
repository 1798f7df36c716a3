"""Query-level empirical differential privacy over many databases.

Burchard, Daoud & Dotterrer (2020) audit not a posterior but any statistic released
repeatedly over databases that share individual identities (yearly usage totals, daily
transaction sums, a model trained on random splits). The privacy is estimated from the
randomness across databases; when it falls short, a minimal noise kernel is computed.

Front door: :func:`query_edp` (Algorithms 1 and 2 in one call) and :func:`noise_kernel`
(section 6). The steps are public too: :func:`query_samples` (the expensive query
evaluations), :func:`privacy_profile` (densities and ``delta``), :func:`select_density`,
:func:`independence_check`, :func:`check_noise`, and the NumPy kernel
:func:`hockey_stick_delta_grid` (the hockey-stick divergence between two densities on a grid;
from weighted draws it is :func:`pymc_edp.base.hockey.hockey_stick_delta`).

References
----------
.. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020). Empirical Differential Privacy.
   arXiv:2011.05418.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
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

    Runs the query on every database with and without every individual (Algorithm 1 of
    [1]), estimates the two densities of the results by a variable-bandwidth KDE chosen by
    held-out log-likelihood (sec. 5), and integrates ``delta_i(eps)`` (Algorithm 2), giving
    ``delta(eps) = max_i delta_i`` (Theorem 1) and the total risk ``delta*(eps) = 1 -
    prod_i (1 - delta_i)`` (Definition 3).

    Parameters
    ----------
    databases : mapping of DataFrames, sequence of DataFrames, or DataFrame
        The databases (with ``database_col`` for a single DataFrame).
    query : callable
        ``query(df)`` -> number or vector; randomised if it accepts ``rng=``; vectorised if it
        has ``leave_one_out(df, id_col)`` (e.g. :func:`sum_query`, :func:`mean_query`).
    id_col : str
        Individual identifier column.
    database_col : str, optional
        Database column of a single DataFrame.
    individuals : sequence, optional
        Individuals to audit (default: all). Each must occur in some database, with the
        ids' type (``[3, 7]``, not ``["3", "7"]``, for integer ids).
    n_draws : int, default 1
        Evaluations per database of a randomised query (an integer >= 1).
    side_info : callable, optional
        Adversary knowledge ``g(df)`` (sec. 4); with ``profile={"side_info_buckets": ...}``
        the profile is conditioned on its buckets.
    profile : dict, optional
        Keyword arguments of :func:`privacy_profile`: ``epsilons`` (default
        :data:`DEFAULT_EPSILONS`), ``density`` (default ``"variable-kde"``), ``targets``
        (``delta`` levels whose ``eps`` is reported, default (0.01, 0.001)),
        ``side_info_buckets``, ``options`` (a :class:`ProfileOptions`: kernels, folds,
        ``top``, ``n_grid``, ...), ``check_independence``, ``keep_samples``.
    random_seed : int, optional
        Seeds randomised queries and Monte Carlo integration.
    executor : None, int, concurrent.futures.Executor or dask.distributed.Client
        Where the query evaluations run (see :func:`pymc_edp.base.parallel.map_tasks`).
    progressbar : bool, default True

    Returns
    -------
    xarray.Dataset
        ``delta`` and ``delta_star`` over ``epsilon``, pointwise ``delta_i`` over
        (``individual``, ``epsilon``), the most exposed individuals, the eps at the target
        deltas, densities for plotting, the query samples and the diagnostics; see
        :func:`privacy_profile`. Round-trips through ``to_netcdf``/``open_dataset``.

    Examples
    --------
    >>> import pymc_edp.query as edpq
    >>> rng = np.random.default_rng(0)
    >>> dbs = [pd.DataFrame({"id": range(20), "x": rng.gamma(2.0, size=20)})
    ...        for _ in range(200)]
    >>> res = edpq.query_edp(dbs, edpq.sum_query("x"), id_col="id", progressbar=False)
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


# Keep numpy imported for doctest namespaces.
_ = np

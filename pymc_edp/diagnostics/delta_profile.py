"""The bin-free (eps, delta) profile and total risk from the importance weights."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from pymc_edp.base import hockey
from pymc_edp.base.common import NEIGHBOUR_DIM, chunk_slices
from pymc_edp.diagnostics._common import AuditData, refitted, weights_of
from pymc_edp.diagnostics.curve import continuous_limit


def delta_profile(
    result: AuditData,
    epsilons: Sequence[float] | np.ndarray,
    *,
    targets: Sequence[float] | None = None,
) -> xr.Dataset:
    """The bin-free (eps, delta) profile and total risk from the importance weights.

    For neighbour i, ``delta_i(eps) = max(E[(r_i - e^eps)_+], E[(1 - e^eps r_i)_+])`` with
    ``r_i = S w_i`` the density ratio of the neighbour to the full-data posterior and the
    expectation over the full-data draws (the hockey-stick divergence in both directions).
    ``delta(eps) = max_i delta_i(eps)`` and the total risk
    ``delta*(eps) = 1 - prod_i (1 - delta_i(eps))``. No bins and no kernel density estimate.

    Parameters
    ----------
    epsilons : array_like
        Non-negative epsilons.
    targets : sequence of float, optional
        Deltas for which the smallest epsilon with ``delta(eps) <= target`` (and with
        ``delta*(eps) <= target``) is found by bisection.

    Returns
    -------
    xarray.Dataset
        ``delta_i`` (``neighbour``, ``epsilon``), ``delta`` and ``delta_star``
        (``epsilon``), ``worst_neighbour`` (``epsilon``); with ``targets``,
        ``epsilon_delta`` and ``epsilon_delta_star`` over ``target``. Attribute
        ``refit_neighbours``: refitted neighbours enter through their importance weights
        (use :func:`pymc_edp.base.hockey.hockey_stick_delta` with pooled weights for a refit).

    References
    ----------
    .. [1] Burchard, P., Daoud, A. and Dotterrer, D. "Empirical Differential Privacy."
       arXiv:2011.05418, 2020 (Theorem 1, Definition 3).

    Examples
    --------
    >>> prof = edp.diagnostics.delta_profile(res, [0.0, 0.5, 1.0], targets=[0.01])
    >>> prof["delta"].round(3).values.tolist()
    [0.252, 0.135, 0.063]
    >>> bool((prof["delta_star"] >= prof["delta"]).all())
    True
    >>> round(float(prof["epsilon_delta"][0]), 2)
    1.87
    """
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    lw = weights_of(result)
    n, n_samples = lw.shape
    delta_i = np.empty((n, eps.size))
    for sl in chunk_slices(n, n_samples, factor=4):
        delta_i[sl] = hockey.hockey_stick_delta(lw[sl], eps)
    labels = result.pointwise[NEIGHBOUR_DIM].values
    data = {
        "delta_i": ((NEIGHBOUR_DIM, "epsilon"), delta_i),
        "delta": ("epsilon", delta_i.max(axis=0)),
        "delta_star": ("epsilon", hockey.total_risk(delta_i)),
        "worst_neighbour": ("epsilon", labels[np.argmax(delta_i, axis=0)]),
    }
    coords = {NEIGHBOUR_DIM: labels, "epsilon": eps}
    if targets is not None:
        tg = np.atleast_1d(np.asarray(targets, dtype=float))
        if not np.all((tg >= 0) & (tg < 1)):
            raise ValueError(f"targets must be deltas in [0, 1), got {targets!r}")
        top = float(continuous_limit(result)["sup_log_ratio"].max()) + 1e-9
        prepared = [
            (sl, hockey.hockey_stick_prepare(lw[sl]))
            for sl in chunk_slices(n, n_samples, factor=4)
        ]
        data["epsilon_delta"] = ("target", _invert(prepared, n, tg, top, star=False))
        data["epsilon_delta_star"] = ("target", _invert(prepared, n, tg, top, star=True))
        coords["target"] = tg
    return xr.Dataset(data, coords=coords, attrs={"refit_neighbours": int(refitted(result).sum())})


def _invert(prepared: list, n: int, targets: np.ndarray, top: float, star: bool) -> np.ndarray:
    """Smallest eps with delta(eps) (or delta*) <= target, by bisection on [0, top]."""

    def f(e: np.ndarray) -> np.ndarray:
        d = np.empty((n, e.size))
        for sl, prep in prepared:
            d[sl] = hockey.hockey_stick_from_prepared(prep, e)
        return hockey.total_risk(d) if star else d.max(axis=0)

    return hockey.smallest_epsilon(
        f, targets, 0.0, top, rtol=0.0, atol=1e-7 * max(top, 1.0), max_iter=60
    )

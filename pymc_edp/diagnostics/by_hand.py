"""Checking an audit's number by hand: epsilon of a user's own refit, in the audit's bins.

The refit's draws must be compared with the full-data probabilities of the audit's bins *as
the audit computed them*: the share of full-data draws in each, not exactly ``1 / B`` (tied
draws, merged tied cut points, ``S`` not a multiple of ``B``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from pymc_edp.base import binning
from pymc_edp.base.common import PARAMETER_DIM
from pymc_edp.core.loglik import posterior_matrix
from pymc_edp.diagnostics._common import AuditData, bins_of, flat_parameters, neighbour_position
from pymc_edp.model.compat import get_group

__all__ = ["refit_epsilon"]


def _refit_draws(result: AuditData, refit_posterior) -> np.ndarray:
    """The refit's draws ``(parameter, sample)`` in the order of the audit's parameters."""
    if not isinstance(refit_posterior, xr.Dataset):
        refit_posterior = get_group(refit_posterior, "posterior")
    var_of = [str(v) for v in flat_parameters(result)["var_name"].values]
    names = list(dict.fromkeys(var_of))
    missing = [n for n in names if n not in refit_posterior.data_vars]
    if missing:
        raise KeyError(
            f"the refit's posterior has no variable {missing}: refit the same model (with "
            "the neighbour's data) so that its posterior has every audited variable "
            f"({names})"
        )
    draws, labels, _ = posterior_matrix(refit_posterior, names)
    row = {label: i for i, label in enumerate(labels)}
    wanted = [str(p) for p in flat_parameters(result)[PARAMETER_DIM].values]
    absent = [p for p in wanted if p not in row]
    if absent:
        raise KeyError(
            f"the refit's posterior has no element {absent[:5]} of the audited parameters: "
            "its variables must have the same shape and coordinates as the full-data fit's"
        )
    return draws[[row[p] for p in wanted]]


def refit_epsilon(result: AuditData, refit_posterior, neighbour: Any = None) -> xr.Dataset:
    """Epsilon of a user's own refit of one neighbour, counted in the audit's own bins.

    Charest & Han's refit-and-count estimator against the bins' full-data probabilities as
    the audit computed them (see the module's notes); few refit draws bias it upward. A bin
    the refit misses is smoothed with ``count_smoothing`` and makes the value a lower bound.

    Parameters
    ----------
    result : AuditData
        An audit that carries its full-data draws.
    refit_posterior : xarray.DataTree, arviz.InferenceData, xarray.Dataset or dict
        The refit's posterior (or its ``posterior`` group) with the audited variables; a
        dict maps scalar variables' names to ``(chain, draw)`` arrays.
    neighbour : optional
        The neighbour refitted: the audit's estimate for it goes in the attributes.

    Returns
    -------
    xarray.Dataset
        Over ``parameter``: ``epsilon`` and ``worst_bin``; over (``parameter``, ``bin``):
        ``full_probability`` (as the audit computed it) and ``refit_probability`` (the share
        of refit draws), NaN past a parameter's effective number of bins; over
        (``parameter``, ``edge``): ``edges``, the interior cut points (a draw equal to one goes
        to the upper bin). Attributes: ``epsilon`` (the maximum), ``bins``,
        ``n_refit_draws``, ``count_smoothing``, ``lower_bound`` and, with ``neighbour``,
        ``neighbour`` and ``audit_epsilon``.

    Examples
    --------
    The full-data fit itself stands in for a refit here (``tests/diagnostics/test_by_hand.py``
    checks a real one against the exact epsilon):

    >>> check = edp.diagnostics.refit_epsilon(res, idata, "Choate")
    >>> check["full_probability"].sizes["bin"], round(check.attrs["epsilon"], 6)
    (10, 0.0)
    >>> check.attrs["neighbour"], check.attrs["lower_bound"]
    ('Choate', False)
    """
    if isinstance(refit_posterior, dict):
        refit_posterior = xr.Dataset(
            {
                k: (("chain", "draw"), np.asarray(v, dtype=float))
                for k, v in refit_posterior.items()
            }
        )
    refit = _refit_draws(result, refit_posterior)
    b = bins_of(result, result.bins)
    est = binning.refit_estimate(refit, b, smoothing=result.count_smoothing)
    idx = binning.assign_bins(refit, b)
    n_par, width = b.counts.shape
    full = np.full((n_par, width), np.nan)
    share = np.full((n_par, width), np.nan)
    for p in range(n_par):
        nb = int(b.n_bins[p])
        full[p, :nb] = b.counts[p, :nb] / b.n_samples
        share[p, :nb] = np.bincount(idx[p], minlength=nb)[:nb] / refit.shape[1]
    labels = flat_parameters(result)[PARAMETER_DIM].values
    attrs = {
        "epsilon": float(np.max(est.eps)),
        "bins": int(result.bins),
        "n_refit_draws": int(refit.shape[1]),
        "count_smoothing": float(result.count_smoothing),
        "lower_bound": bool(np.any(share == 0.0)),
    }
    if neighbour is not None:
        i, _ = neighbour_position(result, neighbour)
        attrs["neighbour"] = neighbour
        attrs["audit_epsilon"] = float(result.pointwise["epsilon"].values[i])
    return xr.Dataset(
        {
            "epsilon": (PARAMETER_DIM, np.asarray(est.eps, dtype=float)),
            "worst_bin": (PARAMETER_DIM, np.asarray(est.argbin, dtype=np.int64)),
            "full_probability": ((PARAMETER_DIM, "bin"), full),
            "refit_probability": ((PARAMETER_DIM, "bin"), share),
            "edges": ((PARAMETER_DIM, "edge"), b.edges),
        },
        coords={
            PARAMETER_DIM: labels,
            "bin": np.arange(width),
            "edge": np.arange(b.edges.shape[1]),
        },
        attrs=attrs,
    )

"""One neighbour's bin log ratios ``log P_i(b) - log P(b)``: where its epsilon is set."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from pymc_edp.base import binning
from pymc_edp.base.common import PARAMETER_DIM
from pymc_edp.diagnostics._common import (
    AuditData,
    bins_of,
    flat_parameters,
    n_bins_of,
    neighbour_weights,
)

__all__ = ["bin_log_ratios"]


def bin_log_ratios(
    result: AuditData, neighbour: Any = None, *, bins: int | None = None
) -> xr.DataArray:
    """Bin log ratios ``log P_i(b) - log P(b)`` of one neighbour, over (parameter, bin).

    Parameters
    ----------
    result : AuditData
        An audit that kept this neighbour's weights.
    neighbour : optional
        Default the one attaining epsilon.

    Returns
    -------
    xarray.DataArray
        Over (``parameter``, ``bin``); NaN past a parameter's effective number of bins.

    Examples
    --------
    >>> lr = edp.diagnostics.bin_log_ratios(res, "Choate")
    >>> lr.dims, lr.sizes["bin"]
    (('parameter', 'bin'), 10)
    >>> bool(abs(lr).max() <= res.epsilon)
    True
    >>> edp.diagnostics.bin_log_ratios(res, bins=5).sizes["bin"]
    5
    """
    n_bins = n_bins_of(result, bins)
    lw, _, neighbour = neighbour_weights(result, neighbour)
    b = bins_of(result, n_bins)
    ratios = binning.bin_log_ratios(lw, b, result.smoothing)[0]
    return xr.DataArray(
        ratios,
        dims=(PARAMETER_DIM, "bin"),
        coords={
            PARAMETER_DIM: flat_parameters(result)[PARAMETER_DIM].values,
            "bin": np.arange(ratios.shape[1]),
        },
        name="log_ratio",
        attrs={"neighbour": neighbour, "bins": n_bins, "smoothing": result.smoothing},
    )

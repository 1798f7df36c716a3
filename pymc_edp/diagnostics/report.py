"""One neighbour's bin log ratios, and a plain-language report of the audit."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from pymc_edp.base import binning
from pymc_edp.base.common import (
    NEIGHBOUR_DIM,
    PARAMETER_DIM,
)
from pymc_edp.diagnostics._common import (
    bins_of,
    refitted,
    weights_of,
)
from pymc_edp.diagnostics.curve import continuous_limit
from pymc_edp.diagnostics.imprecision import emi, empty_bins
from pymc_edp.diagnostics.uncertainty import epsilon_interval, epsilon_mcse

if TYPE_CHECKING:
    from pymc_edp.result import EDPResult


def bin_log_ratios(result: EDPResult, neighbour=None, *, bins: int | None = None) -> xr.DataArray:
    """Bin log ratios ``log P_i(b) - log P(b)`` of one neighbour, over (parameter, bin).

    Parameters
    ----------
    result : EDPResult
    neighbour : optional
        Coordinate value of the neighbour; default the one attaining epsilon.
    bins : int, optional
        Number of bins; default the audit's.

    Returns
    -------
    xarray.DataArray
        Over (``parameter``, ``bin``); NaN past a parameter's effective number of bins.

    Examples
    --------
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    >>> lr = edp.diagnostics.bin_log_ratios(res, "Choate")
    >>> lr.dims, lr.sizes["bin"]
    (('parameter', 'bin'), 10)
    >>> bool(abs(lr).max() <= res.epsilon)
    True
    >>> edp.diagnostics.bin_log_ratios(res, bins=5).sizes["bin"]
    5
    """
    n_bins = result.bins if bins is None else int(bins)
    labels = result.pointwise[NEIGHBOUR_DIM].values
    if neighbour is None:
        neighbour = result.worst_neighbour
    hits = np.flatnonzero(labels == neighbour)
    if hits.size == 0:
        raise KeyError(f"no neighbour {neighbour!r}; neighbours are e.g. {list(labels[:5])}")
    lw = weights_of(result)[hits[:1]]
    b = bins_of(result, n_bins)
    ratios = binning.bin_log_ratios(lw, b, result.smoothing)[0]
    return xr.DataArray(
        ratios,
        dims=(PARAMETER_DIM, "bin"),
        coords={
            PARAMETER_DIM: result.parameters[PARAMETER_DIM].values,
            "bin": np.arange(ratios.shape[1]),
        },
        name="log_ratio",
        attrs={"neighbour": neighbour, "bins": n_bins, "smoothing": result.smoothing},
    )


def diagnose(result: EDPResult, prob: float = 0.9) -> str:
    """A plain-language report of how far to trust the audit's epsilon.

    Parameters
    ----------
    result : EDPResult
    prob : float, default 0.9

    Returns
    -------
    str

    Examples
    --------
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
    >>> report = edp.diagnostics.diagnose(res, prob=0.9)
    >>> print(report.splitlines()[0])
    epsilon = 0.75... (B = 10, smoothing = 0.01)
    >>> "90% interval" in report
    True
    """
    iv = epsilon_interval(result, prob)
    se = epsilon_mcse(result)
    em = emi(result, warn=False)
    eb = empty_bins(result)
    lim = continuous_limit(result)
    lo, hi = (float(v) for v in iv["epsilon"].values)
    lines = [
        f"epsilon = {result.epsilon:.3f} (B = {result.bins}, smoothing = {result.smoothing:g})",
        f"  Monte-Carlo s.e. {float(se['epsilon']):.3g}, {100 * prob:.0f}% interval "
        f"[{lo:.3f}, {hi:.3f}] (effective sample size of the worst bin's estimate: "
        f"{float(se['ess_i'].values[np.nanargmax(se['estimate_i'].values)]):.0f} of "
        f"{result.n_samples} draws)",
        f"  EMI (Abowd's noise floor of counting {em.attrs['n_draws']} independent draws): "
        f"{float(em['emi']):.3g}",
        f"  bins with no weight: {int(eb['n_empty'].sum())}; with under one draw's weight: "
        f"{int(eb['n_under_one_draw'].sum())}",
        f"  B -> inf reference (largest |log density ratio| over the draws): "
        f"{float(lim['epsilon_inf']):.3f}",
    ]
    if em.attrs["message"]:
        lines.append("  WARNING: " + em.attrs["message"])
    if lim.attrs["note"]:
        lines.append("  Note: " + lim.attrs["note"])
    if refitted(result).any():
        lines.append(
            "  Note: refitted neighbours' errors describe their reweighting estimate (their "
            "importance weights are what the result keeps)."
        )
    return "\n".join(lines)

"""Helpers the benchmarks share: the stack's versions, its own PSIS, and setting a group.

They are references and set-up code for the benchmarks only, not part of ``pymc_edp``. The
benchmarks run as scripts, so this folder is on ``sys.path`` and ``from stack import ...``
finds this module.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import numpy as np
import xarray as xr

from pymc_edp.model.compat import ARVIZ_1, has_group, import_arviz


def stack_versions() -> dict[str, str]:
    """Installed versions of the PyMC stack (``"-"`` where not installed), for the logs."""
    out = {}
    for pkg in ("pymc", "pytensor", "arviz", "xarray", "numpy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "-"
    return out


def stack_psislw(log_weights: np.ndarray, reff: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The stack's own PSIS of rows of log weights (sample axis last), normalised.

    ``arviz.psislw`` on ArviZ 0.23; arviz_stats' ``psislw`` accessor on ArviZ 1.x (which
    takes log-likelihood values, the negated log weights).
    """
    lw = np.asarray(log_weights, dtype=float)
    if ARVIZ_1:
        import arviz_stats  # noqa: F401 - registers the ``azstats`` accessor

        dims = [f"dim_{i}" for i in range(lw.ndim - 1)] + ["__sample__"]
        smoothed, khat = xr.DataArray(-lw, dims=dims).azstats.psislw(r_eff=reff, dim="__sample__")
        return np.asarray(smoothed), np.asarray(khat)
    smoothed, khat = import_arviz().psislw(lw.copy(), reff=reff)
    return np.asarray(smoothed), np.asarray(khat)


def set_group(data, name: str, dataset: xr.Dataset) -> None:
    """Put ``dataset`` into ``data`` as group ``name`` (replacing it if present), in place."""
    if isinstance(data, xr.DataTree):
        data[name] = xr.DataTree(dataset)
    elif has_group(data, name):
        setattr(data, name, dataset)
    else:
        data.add_groups({name: dataset})

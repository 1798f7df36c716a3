"""The fit as the audit reads it, once: the groups of what ``pm.sample`` returned, typed.

:meth:`Fit.read` checks the container (PyMC 6's ``xarray.DataTree`` or PyMC 5's
``arviz.InferenceData``) and takes its groups as xarray Datasets; nothing below the front
doors sees the container itself. A fit opened lazily as a whole is loaded, all but its
log-likelihood, which is streamed chunk by chunk.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import xarray as xr

from pymc_edp.model.compat import check_container, get_group, group_names, load_in_memory

__all__ = ["GROUPS", "Fit"]

#: The groups an audit reads.
GROUPS = (
    "posterior",
    "observed_data",
    "constant_data",
    "log_likelihood",
    "sample_stats",
    "unconstrained_posterior",
)


@dataclass(frozen=True)
class Fit:
    """A fitted posterior's groups: what the audit reads of the container, once.

    Attributes
    ----------
    posterior : xarray.Dataset, optional
        The draws (``chain``, ``draw``); its attributes hold ``sampling_time`` and
        ``tuning_steps`` where the sampler recorded them.
    observed_data, constant_data : xarray.Dataset, optional
        The data the model was fitted to.
    log_likelihood : xarray.Dataset, optional
        The pointwise log-likelihood (possibly lazy); without it, its source is the model.
    sample_stats : xarray.Dataset, optional
        Divergences, tree depth, energy.
    unconstrained_posterior : xarray.Dataset, optional
        The draws on the sampler's scale, where kept.

    Examples
    --------
    >>> from pymc_edp.model.fit import Fit
    >>> fit = Fit.read(idata)
    >>> fit.has("posterior"), fit.has("unconstrained_posterior")
    (True, False)
    >>> sorted(fit.group("posterior").data_vars)
    ['mu', 'tau', 'theta']
    """

    posterior: xr.Dataset | None = None
    observed_data: xr.Dataset | None = None
    constant_data: xr.Dataset | None = None
    log_likelihood: xr.Dataset | None = None
    sample_stats: xr.Dataset | None = None
    unconstrained_posterior: xr.Dataset | None = None

    @classmethod
    def read(cls, idata, what: str = "idata") -> Fit:
        """The groups of ``idata``, checked; lazy groups but the log-likelihood loaded."""
        check_container(idata, what)
        data = load_in_memory(idata)
        names = set(group_names(data))
        return cls(**{g: get_group(data, g) for g in GROUPS if g in names})

    @classmethod
    def of(cls, data) -> Fit:
        """``data`` as a fit: a fit, a container (read), or a posterior Dataset."""
        if isinstance(data, cls):
            return data
        if isinstance(data, xr.Dataset):
            return cls(posterior=data)
        return cls.read(data)

    def has(self, name: str) -> bool:
        """Whether the fit has group ``name``."""
        return getattr(self, name, None) is not None

    def group(self, name: str) -> xr.Dataset:
        """Group ``name``; a ``ValueError`` saying so when the fit has none."""
        ds = getattr(self, name, None)
        if ds is None:
            raise ValueError(f"the posterior container has no {name!r} group")
        return ds

    def get(self, name: str) -> xr.Dataset | None:
        """Group ``name``, or None."""
        return getattr(self, name, None)

    def replace(self, **groups: xr.Dataset | None) -> Fit:
        """A copy with ``groups`` replaced."""
        return dataclasses.replace(self, **groups)

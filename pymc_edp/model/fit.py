"""The fit as the audit reads it, once: the groups of what ``pm.sample`` returned, typed.

:meth:`Fit.read` checks the container (``xarray.DataTree`` or ``arviz.InferenceData``) and
takes its groups as Datasets; nothing below the front doors sees the container. A lazy fit is
loaded, all but its log-likelihood, which is streamed chunk by chunk.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import xarray as xr

from pymc_edp.base.validate import check_choice
from pymc_edp.model.compat import check_container, get_group, group_names, load_in_memory

__all__ = ["GROUPS", "LOG_LIKELIHOOD_SOURCES", "Fit"]

#: Where the pointwise log-likelihood comes from (``audit(log_likelihood=)``): the fit's
#: group where there is one, else the model (``"auto"``); the group; the model, a chunk of
#: records at a time.
LOG_LIKELIHOOD_SOURCES = ("auto", "group", "model")

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
    log_likelihood_source : {"auto", "group", "model"}, default "auto"
        Where the pointwise log-likelihood comes from (:data:`LOG_LIKELIHOOD_SOURCES`).

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
    log_likelihood_source: str = "auto"

    def __post_init__(self):
        check_choice(self.log_likelihood_source, "log_likelihood", LOG_LIKELIHOOD_SOURCES)
        if self.log_likelihood_source == "group" and self.log_likelihood is None:
            raise ValueError(
                "log_likelihood='group' but there is no 'log_likelihood' group: run "
                "pm.compute_log_likelihood, or pass model= with log_likelihood='auto'"
            )

    @classmethod
    def read(cls, idata, log_likelihood: str = "auto", what: str = "idata") -> Fit:
        """The groups of ``idata``, checked; ``log_likelihood``: its source."""
        check_choice(log_likelihood, "log_likelihood", LOG_LIKELIHOOD_SOURCES)
        check_container(idata, what)
        data = load_in_memory(idata)
        names = set(group_names(data))
        groups = {g: get_group(data, g) for g in GROUPS if g in names}
        return cls(**groups, log_likelihood_source=log_likelihood)

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

    def replace(self, **groups: xr.Dataset | None) -> Fit:
        """A copy with ``groups`` replaced."""
        return dataclasses.replace(self, **groups)

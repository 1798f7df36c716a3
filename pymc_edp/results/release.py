"""The result of :func:`~pymc_edp.audit_release`: the (epsilon, delta) of what is published."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields

import numpy as np
import xarray as xr

from pymc_edp.base.accounting import compose_pair, epsilon_curve, grid_interval
from pymc_edp.base.pld import exact_delta
from pymc_edp.base.validate import check_delta, check_int, check_real
from pymc_edp.plots.release import plot_release, release_html
from pymc_edp.report.release import release_text
from pymc_edp.results.edp import EDPResult

__all__ = ["ReleaseResult"]

_PARTS = ("pointwise", "curves", "refined", "comparison")


@dataclass(frozen=True)
class ReleaseResult:
    """The privacy of ``k`` releases drawn from a posterior, per record and for the worst.

    Attributes
    ----------
    release, publishes : str
        The release kind's name (``"draws"``, ``"synthetic"``, ...) and what it publishes.
    k : int
    target_delta : float
    headline : float
        ``epsilon(target_delta)`` of ``k`` releases for the worst neighbour pair.
    interval : (float, float)
        Its Monte-Carlo interval, of probability ``prob``.
    prob : float
    lower_bound : bool
        The headline rests on fewer than 10 effective draws or outputs.
    worst_neighbour, neighbour : str
        The label of the neighbour that sets the headline; the neighbour relation.
    pointwise : xarray.Dataset
        Per neighbour (its worst candidate): ``epsilon`` (fine-grid where ``refined``, else
        the coarse upper bound), ``epsilon_1`` (one release), ``pareto_k``, ``candidate``.
    curves : xarray.Dataset
        ``epsilon_1`` and ``epsilon_k`` per neighbour over a grid of ``delta``.
    refined : xarray.Dataset
        The pairs composed on the fine grid (dim ``pair``): epsilon bounds, effective draws
        and the loss atoms :meth:`epsilon` and :meth:`delta` compose.
    comparison : xarray.Dataset
        ``epsilon`` of the refined pairs per ``level``: the kinds the release post-processes,
        then its own.
    notes : tuple of str
    details : dict
        Settings and Monte-Carlo facts (``log_mean_bias``, ``discretisation``, ...).
    random_seed : int

    Examples
    --------
    >>> res = edp.audit_release(idata, k=2, delta=0.3, progressbar=False,
    ...                         options={"n_bootstrap": 10}, random_seed=0)
    >>> res.epsilon() == res.headline and res.epsilon(0.3, k=1) < res.headline
    True
    """

    release: str
    k: int
    target_delta: float
    headline: float
    interval: tuple[float, float]
    prob: float
    lower_bound: bool
    worst_neighbour: str
    neighbour: str
    pointwise: xr.Dataset
    curves: xr.Dataset
    refined: xr.Dataset
    comparison: xr.Dataset
    notes: tuple[str, ...] = ()
    details: dict = field(default_factory=dict)
    random_seed: int | None = None
    publishes: str = ""

    def _composed(self, k: int):
        cache = self.__dict__.setdefault("_cache", {})
        if k not in cache:
            out, intervals = [], self.refined["interval"].values
            for (loss, prob), interval in zip(self._atoms(), intervals, strict=True):
                # the audit's grid per release (its accuracy / k), widened as the audit
                # widens it where k releases would need more grid points than it composes
                h = grid_interval(loss, prob, k, points=1, accuracy=float(interval) * self.k)
                out.append(compose_pair(loss, prob, k, h, lower=False).upper)
            cache[k] = out
        return cache[k]

    def _releases(self, k) -> int:
        """``k`` checked: releases composed, an integer >= 1 (default the audit's)."""
        if k is None:
            return self.k
        return check_int(k, "k (the number of releases composed)", 1)

    def epsilon(self, delta: float | None = None, *, k: int | None = None) -> float:
        """Epsilon of ``k`` releases (default the audit's) at ``delta`` for the worst pair.

        Composed afresh on the audit's grid, coarser only where ``k`` releases need more
        points (the bound loosens, never drops).

        Parameters
        ----------
        delta : float in [0, 1), optional
            Default :attr:`target_delta` (``None`` and the audit's ``k`` give :attr:`headline`).
        k : int >= 1, optional
        """
        k = self._releases(k)
        if delta is None and k == self.k:
            return float(self.headline)
        d = self.target_delta if delta is None else check_delta(delta)
        if k == 1:  # one release: the atoms exactly, no grid
            return float(max(epsilon_curve(lo, pr, np.array([d]))[0] for lo, pr in self._atoms()))
        return float(max(max(a.epsilon(d), b.epsilon(d)) for a, b in self._composed(k)))

    def _atoms(self):
        return zip(self.refined["loss"].values, self.refined["prob"].values, strict=True)

    def delta(self, epsilon: float, *, k: int | None = None) -> float:
        """Delta of ``k`` releases (default the audit's) at ``epsilon`` for the worst pair.

        Parameters
        ----------
        epsilon : float >= 0
            ``inf`` gives the probability of an infinite loss (an output one dataset can
            give and its neighbour cannot).
        k : int >= 1, optional
        """
        k = self._releases(k)
        e = check_real(epsilon, "epsilon", minimum=0, allow_inf=True)
        if k == 1:
            deltas = [exact_delta(lo[o], pr[o], e) for lo, pr in self._atoms() for o in range(2)]
            return float(max(deltas))
        return float(max(max(a.delta(e), b.delta(e)) for a, b in self._composed(k)))

    @property
    def n_neighbours(self) -> int:
        """Neighbours audited."""
        return int(self.pointwise.sizes["neighbour"])

    def __repr__(self) -> str:
        return release_text(self)

    def _repr_html_(self) -> str:
        return release_html(self)

    def plot(self, **kwargs):
        """:func:`pymc_edp.plots.release.plot_release` of the result."""
        parameters = kwargs.get("parameters")
        if parameters is not None and not isinstance(parameters, EDPResult):
            raise TypeError(
                "parameters= takes the EDPResult of edp.audit(idata) on the posterior the "
                f"release was audited from, got {type(parameters).__name__} {parameters!r:.60}"
            )
        return plot_release(self, **kwargs)

    def to_dataset(self) -> xr.Dataset:
        """Everything as one dataset (parts prefixed, scalars in attributes)."""
        data = {}
        for part in _PARTS:
            ds = getattr(self, part)
            for name, da in ds.data_vars.items():
                data[f"{part}__{name}"] = da
        out = xr.Dataset(data)
        scalars = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _PARTS}
        out.attrs["pymc_edp_release"] = json.dumps(scalars, default=_jsonable)
        return out

    @classmethod
    def from_dataset(cls, ds: xr.Dataset) -> ReleaseResult:
        """The result :meth:`to_dataset` wrote."""
        s = json.loads(ds.attrs["pymc_edp_release"])
        parts = {}
        for part in _PARTS:
            names = [v for v in ds.data_vars if v.startswith(f"{part}__")]
            sub = ds[names].rename({v: v.split("__", 1)[1] for v in names})
            used = {d for v in sub.data_vars.values() for d in v.dims}
            parts[part] = sub.drop_vars([c for c in sub.coords if set(sub[c].dims) - used])
        s["interval"], s["notes"] = tuple(s["interval"]), tuple(s["notes"])
        return cls(**s, **parts)

    def to_netcdf(self, path, **kwargs) -> None:
        """Write :meth:`to_dataset` to a netCDF file (:meth:`from_netcdf` reads it back)."""
        self.to_dataset().to_netcdf(path, **kwargs)

    @classmethod
    def from_netcdf(cls, path) -> ReleaseResult:
        """Read a result written by :meth:`to_netcdf`."""
        with xr.open_dataset(path) as ds:
            return cls.from_dataset(ds.load())


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)

"""The result of an EDP audit: a frozen dataclass of xarray objects."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

from pymc_edp import diagnostics, plots, report
from pymc_edp.base.common import NEIGHBOUR_DIM, PARAMETER_DIM, SAMPLE_DIM, WEIGHT_INDEX
from pymc_edp.base.validate import check_int
from pymc_edp.core.loglik import by_variable, element_labels
from pymc_edp.core.select import LeftOut, left_out_from_json, left_out_to_json
from pymc_edp.diagnostics._common import flat_parameters
from pymc_edp.diagnostics.uncertainty import STORED_PROB
from pymc_edp.model.compat import get_group, group_names
from pymc_edp.model.convergence import FitConvergence
from pymc_edp.plots.html import edp_result_html

__all__ = ["AUDIT_GROUP", "EDPResult"]
#: Default name of the audit's group in a DataTree (:meth:`EDPResult.to_datatree`).
AUDIT_GROUP = "edp_audit"


def _or_none(cast, value):
    return None if value is None else cast(value)


#: Dimension of stored ``log_weights`` kept for some neighbours only (their own rows).
KEPT_WEIGHTS_DIM = "weights_neighbour"


def _kept_weights_to_store(lw: xr.DataArray) -> xr.DataArray:
    """``log_weights`` kept for some neighbours only, on a dimension of their own."""
    if WEIGHT_INDEX not in lw.coords:
        return lw
    return lw.rename({NEIGHBOUR_DIM: KEPT_WEIGHTS_DIM})


def _kept_weights_read(lw: xr.DataArray) -> xr.DataArray:
    """``log_weights`` as stored, or aligned to every neighbour (rows without an index dropped)."""
    if KEPT_WEIGHTS_DIM in lw.dims:
        return lw.rename({KEPT_WEIGHTS_DIM: NEIGHBOUR_DIM})
    if WEIGHT_INDEX in lw.coords:
        index = np.asarray(lw[WEIGHT_INDEX].values, dtype=float)
        lw = lw.isel({NEIGHBOUR_DIM: np.flatnonzero(~np.isnan(index))})
        lw = lw.assign_coords({WEIGHT_INDEX: lw[WEIGHT_INDEX].astype(np.int64)})
    return lw


#: Prefixes of the per-variable tables' and draws' names, and of the variables' dims, in
#: :meth:`EDPResult.to_dataset` (apart from the per-neighbour table's: a posterior dim may be
#: named ``neighbour``); ``by_var_`` and ``parameter_`` in format 1 (flat tables).
_PAR, _DRAWS = "parameters.", "draws."
#: Format of :meth:`EDPResult.to_dataset`: 2 keeps each variable's dims (1: flat tables).
_FORMAT = 2


def _encoded(da: xr.DataArray) -> xr.DataArray:
    """A per-variable array with its own dims named as in the saved Dataset."""
    return da.rename({d: _PAR + d for d in da.dims if d not in (NEIGHBOUR_DIM, SAMPLE_DIM)})


def _decoded(ds: xr.Dataset, prefix: str) -> dict[str, xr.DataArray]:
    """The arrays ``prefix + name`` of a saved Dataset, with their own dims' names back."""
    out = {}
    for v in [v for v in ds.data_vars if v.startswith(prefix)]:
        da = ds[v]
        da = da.drop_vars([c for c in da.coords if not set(da[c].dims) <= set(da.dims)])
        da = da.rename({d: d[len(_PAR) :] for d in da.dims if d.startswith(_PAR)})
        out[v[len(prefix) :]] = da.astype(str) if da.dtype.kind in "OS" else da
    return out


def _legacy(ds: xr.Dataset, pointwise: xr.Dataset) -> tuple[xr.DataTree, xr.Dataset | None]:
    """The per-variable tables and draws of a format-1 Dataset (flat ``parameter`` tables)."""
    flat = ds[[v for v in ds.data_vars if v.startswith("parameter_")]]
    flat = flat.rename({v: v[len("parameter_") :] for v in flat.data_vars})
    by_var = ds[[v for v in ds.data_vars if v.startswith("by_var_")]]
    by_var = by_var.rename({n: n[len("by_var_") :] for n in [*by_var.variables, *by_var.dims]})
    elements = {n: by_var[n].drop_vars(NEIGHBOUR_DIM, errors="ignore") for n in by_var}
    if not elements:  # saved before the variables' dims were kept: over the flat labels
        var_of = flat["var_name"].values.astype(str)
        for n in dict.fromkeys(var_of):
            mine = flat[PARAMETER_DIM].values[var_of == n].astype(str)
            one = mine.tolist() == [n]
            elements[n] = xr.DataArray(0.0) if one else xr.DataArray(mine, dims=PARAMETER_DIM)
            elements[n] = elements[n].assign_coords(None if one else {PARAMETER_DIM: mine})
    labels = [
        lab
        for n, da in elements.items()
        for lab in (
            da.values.tolist() if PARAMETER_DIM in da.dims else element_labels(da.rename(n))
        )
    ]
    rows = pd.Index(labels).get_indexer(flat[PARAMETER_DIM].values.astype(str))
    cols = {
        v: ((), da.values.astype(str) if da.dtype.kind in "OS" else da.values, dict(da.attrs))
        for v, da in flat.data_vars.items()
        if v != "var_name"
    }
    for v in ("epsilon", "limit"):
        if f"pointwise_{v}_parameter" in ds:
            da = ds[f"pointwise_{v}_parameter"].transpose(NEIGHBOUR_DIM, PARAMETER_DIM)
            cols[f"{v}_neighbour"] = ((NEIGHBOUR_DIM,), da.values, dict(da.attrs))
    coords = {NEIGHBOUR_DIM: pointwise[NEIGHBOUR_DIM].values}
    tree = by_variable(cols, elements, rows, coords)
    draws = None
    if "draws" in ds:
        values = ds["draws"].transpose(SAMPLE_DIM, PARAMETER_DIM).values
        nodes = by_variable({"draws": ((SAMPLE_DIM,), values)}, elements, rows)
        draws = xr.Dataset({n: nodes[n]["draws"] for n in elements}).transpose(..., SAMPLE_DIM)
    return tree, draws


@dataclass(frozen=True)
class EDPResult:
    """Empirical differential privacy of a posterior, with its diagnostics.

    Attributes
    ----------
    epsilon : float
        B-EDP epsilon: the maximum over parameters, their elements and neighbours.
    pointwise : xarray.Dataset
        Per ``neighbour``: ``epsilon``, ``pareto_k``, ``worst_parameter``, ``worst_bin``,
        ``n_rows``, ``observed``, ``method``, a refit's ``status`` and ``refit_mcse``,
        ``lower_bound``, ``limit`` (CF flags of :mod:`pymc_edp.base.limits`), ``bin_draws``,
        ``epsilon_mcse``, ``epsilon_lower`` and ``epsilon_upper`` (90% interval where a
        neighbour can set epsilon), ``verification`` (CF flags) with ``verify_*``,
        ``worst_replacement``.
    parameters : xarray.DataTree
        One node per audited variable, over its own dims and coords: ``epsilon``,
        ``lower_bound``, ``limit``, ``worst_neighbour``, ``worst_bin``, ``n_bins`` (after
        merging tied edges), ``exact`` (False where pruning makes it a bound), ``audited``
        (False: left out, see ``left_out``), and per ``neighbour`` ``epsilon_neighbour``
        and ``limit_neighbour``. :meth:`summary` is its flat view, one row per element.
    bins, neighbour, method : int, str, str
        The requested ``B``, ``"remove"`` or ``"replace"``, how neighbours were obtained.
    smoothing, count_smoothing : float
        Additive smoothing (in draws) of weighted and of count estimates (Charest & Han's
        ``alpha``).
    n_samples, n_chains, reff : int, int, float
        Posterior draws (``sample`` is chain-major), chains, relative MCMC efficiency.
    khat_threshold : float
        ``min(1 - 1 / log10(S), 0.7)``.
    warnings : tuple of str
    log_weights : xarray.DataArray, optional
        Smoothed normalised log-weights ``(neighbour, sample)``.
    draws : xarray.Dataset, optional
        The audited variables' full-data draws, over their own dims and ``sample``.
    refits : pymc_edp.refit.Refits, optional
    mc_interval90 : (float, float), optional
        90% Monte-Carlo interval of epsilon (upper end ``inf`` for a lower bound).
    noise_floor : float, optional
        Abowd's EMI, the noise floor of refit-and-count.
    random_seed : int, optional
        Passing it back repeats the run.
    verification, verification_note : str
        ``"confirmed"``, ``"corrected"``, ``"incomplete"`` (a lower bound), ``"refit"`` or
        ``"unverified"``; the note says what was done or why not.
    left_out : tuple of pymc_edp.core.select.LeftOut
        What was not binned, and why.
    convergence : pymc_edp.model.convergence.FitConvergence, optional
        R-hat, ESS and divergences of the fit, judged by PyMC's convergence checks; every
        epsilon inherits its error.
    records : tuple of str
        Per observed variable whose records are not simply its values, one sentence read
        from the model's graph: what a record is (a row, a value of a series) and, where
        the likelihood couples them, how each record's conditional was computed.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017.

    Examples
    --------
    What :func:`pymc_edp.audit` returns, here for ``mu`` of eight schools:

    >>> type(res).__name__
    'EDPResult'
    >>> round(res.epsilon, 3)
    0.75...
    >>> res.bins, res.neighbour, res.method, res.n_samples, res.n_chains
    (10, 'remove', 'psis', 2000, 4)
    >>> round(float(res.epsilon_by_var["mu"]), 3)
    0.75...
    >>> res.parameters["mu"]["epsilon_neighbour"].dims
    ('neighbour',)
    >>> res.pointwise["epsilon"].dims
    ('neighbour',)
    >>> print(res)  # doctest: +ELLIPSIS
    Empirical DP audit (B-EDP, B = 10, psis)
    8 neighbours (record removed), 2000 posterior draws, smoothing = none
    ...
    epsilon = 0.75...  (max over parameters and neighbours; worst neighbour: St. Paul's)
    Convergence, as PyMC reported when sampling: max R-hat 1.02 for 'mu' (above 1.01); ...
    90% Monte-Carlo interval of epsilon: [0.61..., 0.87...]
    Verification: unverified: method='psis' reweights only
    ...
    """

    epsilon: float
    pointwise: xr.Dataset
    parameters: xr.DataTree
    bins: int
    neighbour: str
    method: str
    smoothing: float
    n_samples: int
    reff: float
    khat_threshold: float
    warnings: tuple = ()
    n_chains: int = 1
    log_weights: xr.DataArray | None = field(default=None, repr=False, compare=False)
    draws: xr.Dataset | None = field(default=None, repr=False, compare=False)
    refits: object | None = field(default=None, repr=False, compare=False)
    mc_interval90: tuple | None = field(default=None, compare=False)
    noise_floor: float | None = field(default=None, compare=False)
    random_seed: int | None = field(default=None, compare=False)
    count_smoothing: float = 0.01
    verification: str = "unverified"
    verification_note: str = ""
    left_out: tuple[LeftOut, ...] = ()
    convergence: FitConvergence | None = field(default=None, compare=False)
    records: tuple[str, ...] = ()
    # What the diagnostics computed from this result: never saved, compared nor copied.
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def epsilon_by_var(self) -> xr.Dataset:
        """Each audited variable's epsilon over its own dims (NaN where left out).

        Examples
        --------
        >>> res.epsilon_by_var["mu"].dims
        ()
        """
        return xr.Dataset({n: node["epsilon"] for n, node in self.parameters.children.items()})

    @property
    def n_neighbours(self) -> int:
        """Number of neighbour datasets audited.

        Examples
        --------
        >>> res.n_neighbours
        8
        """
        return self.pointwise.sizes[NEIGHBOUR_DIM]

    @property
    def lower_bound(self) -> bool:
        """Whether epsilon is a lower bound: some neighbour's estimate is at a resolution limit.

        Examples
        --------
        >>> res.lower_bound
        False
        """
        pw = self.pointwise
        return "lower_bound" in pw and bool(np.any(pw["lower_bound"].values))

    @property
    def worst_neighbour(self):
        """Coordinate value of the neighbour that attains ``epsilon``.

        Examples
        --------
        >>> str(res.worst_neighbour)
        "St. Paul's"
        """
        eps = self.pointwise["epsilon"]
        filled = np.nan_to_num(eps.values, nan=-np.inf)  # NaN: pruned or without estimate
        return eps[NEIGHBOUR_DIM].values[int(np.argmax(filled))]

    def summary(self) -> pd.DataFrame:
        """One row per scalar parameter element, indexed by its ArviZ-style label.

        Examples
        --------
        >>> df = res.summary()
        >>> list(df.columns)
        ['var_name', 'epsilon', 'lower_bound', 'worst_neighbour', 'worst_bin', 'n_bins']
        >>> df.index.tolist()
        ['mu']
        >>> round(float(df.loc["mu", "epsilon"]), 3)
        0.75...
        """
        ds = flat_parameters(self)
        columns = ["var_name", "epsilon", "lower_bound", "worst_neighbour", "worst_bin", "n_bins"]
        df = ds[columns].to_dataframe()[columns]
        df.index = df.index.astype(str)
        return df

    def most_exposed(self, k: int = 5) -> pd.DataFrame:
        """The ``k`` neighbours with the largest epsilon, with their k-hat.

        Parameters
        ----------
        k : int, default 5
            Neighbours without an estimate come last.

        Examples
        --------
        >>> top = res.most_exposed(3)
        >>> top.index.tolist()
        ["St. Paul's", 'Choate', 'Hotchkiss']
        >>> list(top.columns)
        ['epsilon', 'pareto_k', 'worst_parameter']
        """
        pw = self.pointwise
        k = check_int(k, "k", 0)
        eps = np.nan_to_num(np.asarray(pw["epsilon"].values, dtype=float), nan=-np.inf)
        order = np.argsort(-eps, kind="stable")[:k]
        cols = {
            "epsilon": pw["epsilon"].values[order],
            "pareto_k": pw["pareto_k"].values[order],
            "worst_parameter": pw["worst_parameter"].values[order].astype(str),
        }
        if "worst_replacement" in pw:
            cols["worst_replacement"] = pw["worst_replacement"].values[order]
        return pd.DataFrame(
            cols, index=pd.Index(pw[NEIGHBOUR_DIM].values[order], name=NEIGHBOUR_DIM)
        )

    def __repr__(self) -> str:
        """The printout; see :func:`pymc_edp.report.edp_result_text`."""
        return report.edp_result_text(self)

    def _repr_html_(self) -> str:
        """Rich HTML view in Jupyter; see :func:`pymc_edp.plots.html.edp_result_html`."""
        return edp_result_html(self)

    # ------------------------------------------------------------ round trip
    #: The fields :meth:`to_dataset` stores as they are (the others as JSON).
    _ATTRS = tuple(
        "epsilon bins neighbour method smoothing n_samples reff khat_threshold n_chains "
        "count_smoothing verification verification_note".split()
    )

    def to_dataset(self, *, include_weights: bool = False) -> xr.Dataset:
        """The result in one :class:`xarray.Dataset` (netCDF-safe).

        Every field but ``refits`` (and, unless ``include_weights``, ``log_weights`` and
        ``draws``): the tables as variables, the scalars as attributes (JSON where None or a
        tuple), so that :meth:`from_dataset` gives them back with their types.

        Parameters
        ----------
        include_weights : bool, default False
            Also store ``log_weights`` and ``draws`` (``n x S`` floats).

        Examples
        --------
        >>> ds = res.to_dataset()
        >>> ds.attrs["bins"], ds.attrs["neighbour"]
        (10, 'remove')
        >>> "pointwise_epsilon" in ds, "parameters.mu.epsilon" in ds
        (True, True)
        >>> "log_weights" in ds, "log_weights" in res.to_dataset(include_weights=True)
        (False, True)
        """
        pointwise = self.pointwise if include_weights else self._pointwise_with_intervals()
        pw = pointwise.rename({v: f"pointwise_{v}" for v in pointwise.data_vars})
        tables = {
            f"{_PAR}{name}.{v}": _encoded(node[v])
            for name, node in self.parameters.children.items()
            for v in node.data_vars
        }
        if include_weights and self.draws is not None:
            tables.update({_DRAWS + n: _encoded(self.draws[n]) for n in self.draws.data_vars})
        ds = xr.merge([pw, xr.Dataset(tables)], combine_attrs="drop")
        for src in (pw, tables):  # merging drops the variables' own attributes (CF flags)
            for v in src:
                ds[v].attrs = dict(src[v].attrs)
        if include_weights and self.log_weights is not None:
            ds["log_weights"] = _kept_weights_to_store(self.log_weights)
        ds.attrs = {k: getattr(self, k) for k in self._ATTRS}
        ds.attrs["warnings"] = json.dumps(list(self.warnings))
        ds.attrs["mc_interval90"] = json.dumps(
            None if self.mc_interval90 is None else [float(v) for v in self.mc_interval90]
        )
        ds.attrs["noise_floor"] = json.dumps(_or_none(float, self.noise_floor))
        # JSON keeps None apart from a seed, and seeds above netCDF's 32-bit integers
        ds.attrs["random_seed"] = json.dumps(_or_none(int, self.random_seed))
        ds.attrs["left_out"] = left_out_to_json(self.left_out)
        ds.attrs["records"] = json.dumps(list(self.records))
        ds.attrs["convergence"] = json.dumps(
            None if self.convergence is None else self.convergence.to_dict()
        )
        ds.attrs["pymc_edp_result"] = _FORMAT
        return ds

    def _pointwise_with_intervals(self) -> xr.Dataset:
        """``pointwise`` with every weighted neighbour's 90% interval and MCSE (as read back)."""
        pw = self.pointwise
        if self.log_weights is None or "epsilon_upper" not in pw:
            return pw
        missing = np.isnan(pw["epsilon_upper"].values) & ~np.isnan(pw["epsilon"].values)
        if not missing.any():
            return pw
        iv = self.interval(STORED_PROB)["epsilon_i"]
        se = self.mcse()["epsilon_i"]
        out = pw.copy()
        for name, values in (
            ("epsilon_lower", iv.sel(interval="lower").values),
            ("epsilon_upper", iv.sel(interval="upper").values),
            ("epsilon_mcse", se.values),
        ):
            column = np.array(pw[name].values, dtype=float)
            fill = missing & ~np.isnan(np.asarray(values, dtype=float))
            column[fill] = np.asarray(values, dtype=float)[fill]
            out[name] = (pw[name].dims, column, pw[name].attrs)
        return out

    @classmethod
    def from_dataset(cls, ds: xr.Dataset) -> EDPResult:
        """Rebuild a result written by :meth:`to_dataset`.

        Examples
        --------
        >>> back = edp.EDPResult.from_dataset(res.to_dataset())
        >>> back.epsilon == res.epsilon
        True
        >>> back.summary().equals(res.summary())
        True
        """
        if "pymc_edp_result" not in ds.attrs:
            raise ValueError("this Dataset was not written by EDPResult.to_dataset")
        pw_vars = [v for v in ds.data_vars if v.startswith("pointwise_")]
        pointwise = ds[pw_vars].rename({v: v[len("pointwise_") :] for v in pw_vars})
        pointwise = pointwise.drop_dims([d for d in pointwise.dims if d != NEIGHBOUR_DIM])
        pointwise.attrs = {}
        for v in ("worst_parameter", "observed", "method", "status"):
            if v in pointwise:
                pointwise[v] = pointwise[v].astype(str)
        if "lower_bound" in pointwise:  # netCDF has no booleans: written as integers
            pointwise["lower_bound"] = pointwise["lower_bound"].astype(bool)
        a = ds.attrs
        if int(a["pymc_edp_result"]) < 2:
            parameters, draws = _legacy(ds, pointwise)
        else:
            nodes = {}
            for key, da in _decoded(ds, _PAR).items():
                name, v = key.rsplit(".", 1)
                nodes.setdefault(name, {})[v] = da
            parameters = xr.DataTree.from_dict({n: xr.Dataset(v) for n, v in nodes.items()})
            draws = _decoded(ds, _DRAWS)
            draws = xr.Dataset(draws) if draws else None
        return cls(
            epsilon=float(a["epsilon"]),
            pointwise=pointwise,
            parameters=parameters,
            bins=int(a["bins"]),
            neighbour=str(a["neighbour"]),
            method=str(a["method"]),
            smoothing=float(a["smoothing"]),
            n_samples=int(a["n_samples"]),
            reff=float(a["reff"]),
            khat_threshold=float(a["khat_threshold"]),
            warnings=tuple(json.loads(a["warnings"])),
            n_chains=int(a.get("n_chains", 1)),
            log_weights=_kept_weights_read(ds["log_weights"]) if "log_weights" in ds else None,
            draws=draws,
            mc_interval90=_or_none(tuple, json.loads(a.get("mc_interval90", "null"))),
            noise_floor=_or_none(float, json.loads(a.get("noise_floor", "null"))),
            random_seed=_or_none(int, json.loads(a.get("random_seed", "null"))),
            count_smoothing=float(a.get("count_smoothing", 0.01)),
            verification=str(a.get("verification", "unverified")),
            verification_note=str(a.get("verification_note", "")),
            left_out=left_out_from_json(a.get("left_out", "[]")),
            records=tuple(json.loads(a.get("records", "[]"))),
            convergence=FitConvergence.from_dict(json.loads(a.get("convergence", "null"))),
        )

    def to_datatree(
        self, idata=None, *, group: str = AUDIT_GROUP, include_weights: bool = False
    ) -> xr.DataTree:
        """The result as a group of an :class:`xarray.DataTree`, beside the posterior.

        Parameters
        ----------
        idata : xarray.DataTree or arviz.InferenceData, optional
            The audited posterior: its groups are copied into the returned tree (the input
            is not modified). Without it the tree holds only the audit.
        group : str, default "edp_audit"
            Name of the audit's group.
        include_weights : bool, default False
            Also store ``log_weights`` and ``draws``.

        Returns
        -------
        xarray.DataTree
            :meth:`from_datatree` reads it back.

        Examples
        --------
        >>> tree = res.to_datatree(idata)
        >>> sorted(tree.children)
        ['constant_data', 'edp_audit', 'log_likelihood', 'observed_data', 'posterior']
        >>> edp.EDPResult.from_datatree(tree).epsilon == res.epsilon
        True
        """
        groups = {}
        if idata is not None:
            groups = {name: get_group(idata, name) for name in group_names(idata)}
        if group in groups:
            raise ValueError(f"idata already has a group named {group!r}; pass group=")
        groups[group] = self.to_dataset(include_weights=include_weights)
        return xr.DataTree.from_dict(groups)

    @classmethod
    def from_datatree(cls, tree, *, group: str = AUDIT_GROUP) -> EDPResult:
        """Read the result stored in group ``group`` by :meth:`to_datatree`.

        Parameters
        ----------
        tree : xarray.DataTree or arviz.InferenceData
            E.g. opened with ``xarray.open_datatree(path)`` (netCDF) or
            ``xarray.open_datatree(path, engine="zarr")``.

        Examples
        --------
        >>> edp.EDPResult.from_datatree(res.to_datatree()).summary().equals(res.summary())
        True
        """
        try:
            ds = get_group(tree, group)
        except KeyError:
            raise KeyError(
                f"no audit group {group!r} in this tree (groups: {group_names(tree)}); it is "
                "written by EDPResult.to_datatree"
            ) from None
        return cls.from_dataset(ds.load())

    def to_netcdf(self, path, *, include_weights: bool = False, **kwargs) -> None:
        """Write :meth:`to_dataset` to a netCDF file; :meth:`from_netcdf` reads it back.

        Without ``log_weights`` and ``draws`` the diagnostics that recompute from the weights
        (``res.curve()``, most plots) are unavailable; ``refits`` are saved by
        ``RefitOptions(checkpoint=...)``.

        Parameters
        ----------
        path : str or path-like
            The file; its folder must exist.
        include_weights : bool, default False
            Also write ``log_weights`` and ``draws``.
        **kwargs
            Passed to :meth:`xarray.Dataset.to_netcdf`.

        Raises
        ------
        FileNotFoundError
            If the folder of ``path`` does not exist.

        Examples
        --------
        >>> res.to_netcdf("audit.nc")
        >>> back = edp.EDPResult.from_netcdf("audit.nc")
        >>> back.epsilon == res.epsilon, back.log_weights is None  # include_weights keeps them
        (True, True)
        """
        if isinstance(path, (str, os.PathLike)):
            folder = os.path.dirname(os.path.abspath(os.fspath(path)))
            if not os.path.isdir(folder):
                raise FileNotFoundError(
                    f"cannot write {os.fspath(path)!r}: its folder {folder!r} does not exist "
                    "(or is not a folder); create it first, e.g. "
                    f"os.makedirs({folder!r}, exist_ok=True)"
                )
        self.to_dataset(include_weights=include_weights).to_netcdf(path, **kwargs)

    @classmethod
    def from_netcdf(cls, path) -> EDPResult:
        """Read a result written by :meth:`to_netcdf`.

        Examples
        --------
        >>> res.to_netcdf("audit.nc", include_weights=True)
        >>> back = edp.EDPResult.from_netcdf("audit.nc")
        >>> back.summary().equals(res.summary()), back.log_weights.dims
        (True, ('neighbour', 'sample'))
        """
        with xr.open_dataset(path) as ds:
            return cls.from_dataset(ds.load())

    # ------------------------------------------- diagnostics, report and plots
    def mcse(self) -> xr.Dataset:
        """Monte-Carlo standard error of epsilon; see :func:`pymc_edp.diagnostics.epsilon_mcse`.

        Examples
        --------
        >>> round(float(res.mcse()["epsilon"]), 2)
        0.07
        """
        return diagnostics.epsilon_mcse(self)

    def interval(self, prob: float = 0.9) -> xr.Dataset:
        """Monte-Carlo interval of epsilon; see :func:`pymc_edp.diagnostics.epsilon_interval`.

        Examples
        --------
        >>> lower, upper = res.interval(0.9)["epsilon"].values
        >>> bool(lower < res.epsilon < upper)
        True
        """
        return diagnostics.epsilon_interval(self, prob)

    def emi(self) -> xr.Dataset:
        """Abowd's empirical measure of imprecision; see :func:`pymc_edp.diagnostics.emi`.

        Examples
        --------
        >>> round(float(res.emi()["emi"]), 2)
        0.27
        """
        return diagnostics.emi(self)

    def empty_bins(self) -> xr.Dataset:
        """Bins receiving (almost) no weight; see :func:`pymc_edp.diagnostics.empty_bins`.

        Examples
        --------
        >>> eb = res.empty_bins()
        >>> int(eb["n_empty"].sum()), int(eb["n_under_one_draw"].sum())
        (0, 0)
        """
        return diagnostics.empty_bins(self)

    def smoothing_sensitivity(
        self, smoothing: tuple[float, ...] = (0.0, 0.001, 0.01, 0.1, 1.0)
    ) -> xr.DataArray:
        """Epsilon per smoothing constant; see :func:`pymc_edp.diagnostics.smoothing_sensitivity`.

        Examples
        --------
        >>> eps = res.smoothing_sensitivity((0.01, 0.1, 1.0))
        >>> eps.round(3).values.tolist()
        [0.75..., 0.75..., 0.751]
        """
        return diagnostics.smoothing_sensitivity(self, smoothing)

    def continuous_limit(self) -> xr.Dataset:
        """The ``B -> inf`` reference; see :func:`pymc_edp.diagnostics.continuous_limit`.

        Examples
        --------
        >>> bool(res.continuous_limit()["epsilon_inf"] >= res.epsilon)
        True
        """
        return diagnostics.continuous_limit(self)

    def curve(
        self, bins: tuple[int, ...] = (5, 10, 20, 50, 100, 250), prob: float | None = 0.9
    ) -> xr.DataArray:
        """Epsilon over the number of bins B; see :func:`pymc_edp.diagnostics.epsilon_curve`.

        Examples
        --------
        >>> res.curve(bins=(5, 10, 20)).round(3).values.tolist()
        [0.562, 0.75..., 0.875]
        """
        return diagnostics.epsilon_curve(self, bins, prob=prob)

    def delta_profile(self, epsilons, targets=None) -> xr.Dataset:
        """Bin-free (eps, delta) profile; see :func:`pymc_edp.diagnostics.delta_profile`.

        Examples
        --------
        >>> prof = res.delta_profile([0.0, 0.5, 1.0], targets=[0.01])
        >>> prof["delta"].round(3).values.tolist(), round(float(prof["epsilon_delta"][0]), 2)
        ([0.252, 0.135, 0.063], 1.87)
        """
        return diagnostics.delta_profile(self, epsilons, targets=targets)

    def bin_log_ratios(self, neighbour=None) -> xr.DataArray:
        """One neighbour's bin log ratios; see :func:`pymc_edp.diagnostics.bin_log_ratios`.

        Examples
        --------
        >>> lr = res.bin_log_ratios()
        >>> lr.dims, lr.sizes["bin"], str(lr.attrs["neighbour"])
        (('parameter', 'bin'), 10, "St. Paul's")
        """
        return diagnostics.bin_log_ratios(self, neighbour)

    def refit_epsilon(self, refit_posterior, neighbour=None) -> xr.Dataset:
        """Epsilon of your refit of a neighbour; see :func:`pymc_edp.diagnostics.refit_epsilon`.

        Examples
        --------
        >>> same = {"mu": res.draws["mu"].values.reshape(4, -1)}  # the full-data draws themselves
        >>> check = res.refit_epsilon(same, "Choate")
        >>> round(check.attrs["epsilon"], 6), check["edges"].sizes["edge"]
        (0.0, 9)
        """
        return diagnostics.refit_epsilon(self, refit_posterior, neighbour)

    def diagnose(self, prob: float = 0.9) -> str:
        """Plain-language report of how far to trust epsilon; see :func:`pymc_edp.report.diagnose`.

        Examples
        --------
        >>> print(res.diagnose().splitlines()[0])
        epsilon = 0.75... (B = 10, smoothing = none)
        """
        return report.diagnose(self, prob)

    def plot(self, **kwargs):
        """The overview figure, ``(2, 2)`` axes; see :func:`pymc_edp.plots.plot_overview`.

        Examples
        --------
        >>> axes = res.plot()
        >>> axes.shape, axes[0, 1].get_title()
        ((2, 2), 'B-EDP ε against the number of bins')
        >>> plt.close(axes[0, 0].figure)
        """
        return plots.plot_overview(self, **kwargs)

    def plot_curve(self, **kwargs):
        """Epsilon against B with error bars; see :func:`pymc_edp.plots.plot_epsilon_curve`.

        Examples
        --------
        >>> ax = res.plot_curve(bins=(5, 10, 20))
        >>> ax.get_title()
        'B-EDP ε against the number of bins'
        >>> plt.close(ax.figure)
        """
        return plots.plot_epsilon_curve(self, **kwargs)

    def plot_intervals(self, **kwargs):
        """Per-record epsilon with intervals; see :func:`pymc_edp.plots.plot_epsilon_intervals`.

        Examples
        --------
        >>> ax = res.plot_intervals()
        >>> ax.get_title()
        'Per-record ε with 90% Monte-Carlo intervals (B = 10)'
        >>> plt.close(ax.figure)
        """
        return plots.plot_epsilon_intervals(self, **kwargs)

    def plot_bin_log_ratios(self, neighbour=None, **kwargs):
        """Bin log-ratio heatmap; see :func:`pymc_edp.plots.plot_bin_log_ratios`.

        Examples
        --------
        >>> ax = res.plot_bin_log_ratios()
        >>> ax.get_title()
        "Bin log ratios of neighbour St. Paul's (max |·| = 0.75..., B = 10)"
        >>> plt.close(ax.figure)
        """
        return plots.plot_bin_log_ratios(self, neighbour, **kwargs)

    def plot_neighbour_posterior(self, neighbour=None, parameter=None, **kwargs):
        """Full vs neighbour posterior; see :func:`pymc_edp.plots.plot_neighbour_posterior`.

        Examples
        --------
        >>> ax = res.plot_neighbour_posterior("Choate")
        >>> ax.get_xlabel()
        'mu'
        >>> plt.close(ax.figure)
        """
        return plots.plot_neighbour_posterior(self, neighbour, parameter, **kwargs)

    def plot_delta_profile(self, epsilons=None, **kwargs):
        """(eps, delta) and delta* curves; see :func:`pymc_edp.plots.plot_delta_profile`.

        Examples
        --------
        >>> ax = res.plot_delta_profile()
        >>> ax.get_title(), ax.get_yscale()
        ('Bin-free (ε, δ) profile', 'log')
        >>> plt.close(ax.figure)
        """
        return plots.plot_delta_profile(self, epsilons, **kwargs)

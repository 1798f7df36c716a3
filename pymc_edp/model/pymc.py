"""PyMC glue: everything that needs a ``pm.Model`` lives here."""

from __future__ import annotations

import logging

import numpy as np
import xarray as xr

from pymc_edp.model.compat import compute_log_likelihood, get_group, has_group

__all__ = [
    "check_model",
    "check_model_matches_data",
    "ensure_log_likelihood",
    "model_observed",
    "observed_arrays",
    "observed_values",
    "replacement_log_likelihood",
    "resolve_model",
]

_log = logging.getLogger("pymc_edp")

_NO_LOGLIK = (
    "the posterior has no 'log_likelihood' group and no model was given to compute it. "
    "Either run pm.compute_log_likelihood(idata, model=model) after sampling, or pass "
    "model= to pymc_edp.audit."
)


def ensure_log_likelihood(idata, model=None, *, progressbar: bool = False) -> xr.Dataset:
    """Return the ``log_likelihood`` group, computing it from ``model`` when missing.

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
    model : pymc.Model, optional
    progressbar : bool, default False

    Returns
    -------
    xarray.Dataset
    """
    if has_group(idata, "log_likelihood"):
        return get_group(idata, "log_likelihood")
    if model is None:
        raise ValueError(_NO_LOGLIK)
    _check_posterior_has_free_rvs(idata, model)
    return compute_log_likelihood(idata, model, progressbar=progressbar)


def _check_posterior_has_free_rvs(idata, model) -> None:
    if not has_group(idata, "posterior"):
        raise ValueError("the posterior container has no 'posterior' group")
    posterior = get_group(idata, "posterior")
    missing = [rv.name for rv in model.free_RVs if rv.name not in posterior]
    if missing:
        raise ValueError(
            f"the posterior lacks the model's free variable(s) {missing}; the log-likelihood "
            "cannot be evaluated. Was idata sampled from this model (without var_names=)?"
        )


def observed_values(idata, model, name: str) -> np.ndarray:
    """The observed data of variable ``name``, from ``observed_data`` or else the model."""
    if idata is not None and has_group(idata, "observed_data"):
        observed = get_group(idata, "observed_data")
        if name in observed:
            return np.asarray(observed[name].values)
    if model is not None and name in model.named_vars:
        rv = model[name]
        value = model.rvs_to_values.get(rv)
        if value is not None:
            data = getattr(value, "data", None)
            if data is None and hasattr(value, "get_value"):
                data = value.get_value()
            if data is not None:
                return np.asarray(data)
    raise ValueError(
        f"cannot find the observed values of {name!r}: the posterior has no observed_data "
        "for it and no model holding it was given"
    )


def resolve_model(model=None):
    """Return ``model``, or else the model of the enclosing ``with`` block, or else None.

    As PyMC's own functions do with ``model=None`` (:func:`pymc.modelcontext`), but without
    an error outside a model context: there the caller's behaviour without a model applies.

    Parameters
    ----------
    model : pymc.Model, optional
        The model passed explicitly; returned unchanged when given.

    Returns
    -------
    pymc.Model or None
        ``model``; when it is None, the innermost model of the enclosing ``with`` block
        (logged at DEBUG level), or None outside any model context.

    Examples
    --------
    >>> import pymc as pm
    >>> from pymc_edp.model.pymc import resolve_model
    >>> resolve_model() is None
    True
    >>> with pm.Model() as model:
    ...     resolve_model() is model
    True
    >>> other = pm.Model()
    >>> with model:
    ...     resolve_model(other) is other  # an explicit model wins
    True
    """
    if model is not None:
        return model
    import pymc as pm

    try:
        model = pm.modelcontext(None)
    except TypeError:  # "No model on context stack."
        return None
    _log.debug("model=None: using the model of the enclosing `with` block (%r)", model.name)
    return model


def check_model(model, what: str = "model") -> None:
    """Raise a ``TypeError`` unless ``model`` is None or a :class:`pymc.Model`."""
    if model is None:
        return
    import pymc as pm

    if not isinstance(model, pm.Model):
        raise TypeError(f"{what} must be a pymc.Model, got {type(model).__name__} {model!r:.60}")


def model_observed(model) -> dict[str, np.ndarray]:
    """Observed values held by ``model``, by observed variable name."""
    out = {}
    for rv in model.observed_RVs:
        try:
            out[rv.name] = observed_values(None, model, rv.name)
        except ValueError:
            continue
    return out


def observed_arrays(idata, model) -> dict[str, np.ndarray]:
    """Observed data by name: the ``observed_data`` group, else the model's."""
    if has_group(idata, "observed_data"):
        ds = get_group(idata, "observed_data")
        return {str(k): np.asarray(ds[k].values) for k in ds.data_vars}
    return model_observed(model) if model is not None else {}


def check_model_matches_data(model, observed_data: xr.Dataset) -> None:
    """Refuse a model whose observed data are not the draws' ``observed_data``."""
    for name, values in model_observed(model).items():
        if name not in observed_data:
            continue
        stored = np.asarray(observed_data[name].values)
        values = np.asarray(values)
        same = stored.shape == values.shape
        if same and stored.dtype.kind in "biuf" and values.dtype.kind in "biuf":
            same = bool(np.array_equal(stored.astype(float), values.astype(float), equal_nan=True))
        elif same:
            same = bool(np.array_equal(stored, values))
        if not same:
            detail = (
                f"shape {values.shape} vs {stored.shape}"
                if stored.shape != values.shape
                else f"{int(np.sum(stored != values))} differing value(s)"
            )
            raise ValueError(
                f"the model's observed data for {name!r} are not the observed_data the "
                f"posterior was sampled with ({detail}): the log-likelihood would be computed "
                "from the wrong data. Pass the model that produced these draws (or restore its "
                "data with pm.set_data)."
            )


class ElementwiseLogLik:
    """Compiled elementwise log-likelihood of one observed variable at any data and draws.

    The logp graph of ``name`` (untransformed parameters) is compiled once with the observed
    value as an input, vectorised over a leading draw axis (``vectorize_graph``) so one call
    evaluates every draw; models whose graph cannot be vectorised fall back to a loop.

    Parameters
    ----------
    model : pymc.Model
    name : str
        Observed variable.
    """

    def __init__(self, model, name: str):
        import pytensor.tensor as pt
        from pymc.model.transform.conditioning import remove_value_transforms
        from pymc.pytensorf import compile as pm_compile
        from pytensor.graph.replace import clone_replace, vectorize_graph

        umodel = remove_value_transforms(model)
        if name not in umodel.named_vars or umodel[name] not in umodel.observed_RVs:
            raise KeyError(f"{name!r} is not an observed variable of the model")
        rv = umodel[name]
        value = umodel.rvs_to_values[rv]
        (logp,) = umodel.logp(vars=[rv], sum=False)
        y_new = pt.tensor(name=f"{name}_value", dtype=value.dtype, shape=(None,) * value.ndim)
        (logp,) = clone_replace([logp], replace={value: y_new})
        self.free = [v.name for v in umodel.free_RVs]
        values = [umodel.rvs_to_values[v] for v in umodel.free_RVs]
        self.dtypes = [v.dtype for v in values]
        self.value_dtype = value.dtype
        self._loop = pm_compile([*values, y_new], logp, on_unused_input="ignore")
        try:
            batched = [
                pt.tensor(name=f"{v.name}_draws", dtype=v.dtype, shape=(None,) * (v.ndim + 1))
                for v in values
            ]
            out = vectorize_graph(logp, dict(zip(values, batched, strict=True)))
            self._vec = pm_compile([*batched, y_new], out, on_unused_input="ignore")
        except Exception:  # pragma: no cover - depends on the model's ops
            self._vec = None

    def __call__(self, posterior: xr.Dataset, y: np.ndarray) -> np.ndarray:
        """Log-likelihood terms at data ``y`` for every draw of ``posterior``.

        Parameters
        ----------
        posterior : xarray.Dataset
            With dims ``(chain, draw, ...)`` holding every free variable.
        y : ndarray
            Observed values (the variable's shape).

        Returns
        -------
        ndarray, shape (n_samples, n_terms)
        """
        missing = [v for v in self.free if v not in posterior]
        if missing:
            raise ValueError(f"the posterior lacks the model's free variable(s) {missing}")
        draws = []
        for v, dt in zip(self.free, self.dtypes, strict=True):
            da = posterior[v]
            extra = [d for d in da.dims if d not in ("chain", "draw")]
            arr = np.asarray(da.transpose("chain", "draw", *extra).values, dtype=dt)
            draws.append(arr.reshape(-1, *arr.shape[2:]))
        y = np.asarray(y, dtype=self.value_dtype)
        n_samples = draws[0].shape[0] if draws else 1
        if self._vec is not None:
            try:
                res = np.asarray(self._vec(*draws, y))
                if res.shape[0] == n_samples:
                    return res.reshape(n_samples, -1)
            except Exception:  # pragma: no cover - fall back to the loop
                self._vec = None
        first = np.asarray(self._loop(*(d[0] for d in draws), y)).ravel()
        out = np.empty((n_samples, first.size))
        out[0] = first
        for s in range(1, n_samples):
            out[s] = np.asarray(self._loop(*(d[s] for d in draws), y)).ravel()
        return out


def replacement_log_likelihood(idata, model, name: str, values: np.ndarray) -> np.ndarray:
    """Elementwise log-likelihood of observed variable ``name`` at alternative data values.

    For a factorised likelihood the term of record ``i`` depends only on its own value, so
    one evaluation gives ``p(y'_i | theta)`` for every record at once.

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        Must hold the posterior of every free variable of ``model``.
    model : pymc.Model
    name : str
        Observed variable.
    values : ndarray, shape (n_candidates, *observed_shape)
        Replacement data sets; candidate ``c`` replaces every record by ``values[c]``.

    Returns
    -------
    ndarray, shape (n_candidates, n_samples, n_records)
    """
    if model is None:
        raise ValueError(
            "neighbour='replace' needs p(y' | theta) at the replacement values, so it needs "
            "the model: pass model= to pymc_edp.audit"
        )
    _check_posterior_has_free_rvs(idata, model)
    fn = ElementwiseLogLik(model, name)
    posterior = get_group(idata, "posterior")
    return np.stack([fn(posterior, v) for v in np.asarray(values)])


def check_not_scalar(observed_data, err: Exception) -> None:
    """A single-term log-likelihood of a scalar observation is no coupled likelihood."""
    name = getattr(err, "name", None)
    if observed_data is None or name is None or name not in observed_data:
        return
    if observed_data[name].size <= 1:
        raise ValueError(
            f"observed variable {name!r} is a single scalar value: it has no record "
            "dimension, so there is no record to remove or replace. Give the data as an "
            "array with a record dimension (e.g. observed=[value])."
        ) from err


def check_log_likelihood_layout(ll_ds, names, posterior, observed_data) -> None:
    """The pointwise log-likelihood must match the posterior's draws and the data's records."""
    for name in names:
        da = ll_ds[name]
        for dim in ("chain", "draw"):
            if da.sizes[dim] != posterior.sizes.get(dim, -1):
                raise ValueError(
                    f"the log_likelihood of {name!r} has {dim}={da.sizes[dim]} but the "
                    f"posterior has {dim}={posterior.sizes.get(dim)}: they are not from the "
                    "same sampling run (recompute it with pm.compute_log_likelihood)"
                )
        if observed_data is not None and name in observed_data:
            rec = tuple(da.sizes[d] for d in da.dims if d not in ("chain", "draw"))
            obs = tuple(observed_data[name].shape)
            # a multivariate observation has one term per row: the leading dims must agree
            if len(rec) > len(obs) or rec != obs[: len(rec)]:
                raise ValueError(
                    f"the log_likelihood of {name!r} has records of shape {rec} but "
                    f"observed_data[{name!r}] has shape {obs}: every record needs exactly one "
                    "log-likelihood term (recompute it with pm.compute_log_likelihood)"
                )

"""PyMC glue: everything that needs a ``pm.Model`` lives here."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import xarray as xr

from pymc_edp.core.loglik import NonFactorisedError
from pymc_edp.model.cache import per_model, share_data
from pymc_edp.model.compat import (
    compute_log_likelihood,
    graph_ancestors,
    observed_data,
    step_methods,
    without_initial_values,
)
from pymc_edp.model.coupled import CoupledLikelihood
from pymc_edp.model.fit import Fit
from pymc_edp.model.recover import lacking_message, with_free_variables
from pymc_edp.model.structure import read_structure

__all__ = [
    "assigned_steps",
    "check_log_likelihood_matches_model",
    "check_model",
    "check_model_matches_data",
    "elementwise_loglik",
    "ensure_log_likelihood",
    "fit_for_model",
    "fitted_by_bambi",
    "imputed_positions",
    "integer_data",
    "model_data",
    "model_observed",
    "observed_arrays",
    "observed_values",
    "potential_records",
    "potentials_with_data",
    "reads_data",
    "replacement_log_likelihood",
    "resolve_model",
    "same_values",
    "sampled_without_nuts",
]

_log = logging.getLogger("pymc_edp")

_NO_LOGLIK = (
    "the posterior has no 'log_likelihood' group and no model was given to compute it. "
    "Either run pm.compute_log_likelihood(idata, model=model) after sampling, or pass "
    "model= to pymc_edp.audit."
)


def ensure_log_likelihood(
    data, model=None, *, progressbar: bool = False, also: Sequence[str] = ()
) -> xr.Dataset:
    """The ``log_likelihood`` group of ``data`` (as :meth:`Fit.of`), computed when missing.

    ``also``: observed variables it may lack (Potentials audited as observed variables,
    :mod:`pymc_edp.model.potentials`), computed and added.
    """
    fit = Fit.of(data)
    if fit.has("log_likelihood"):
        group = fit.log_likelihood
        missing = [name for name in also if name not in group]
        if not missing or model is None:
            return group
        posterior = _posterior_with_free_rvs(fit, model)
        extra = compute_log_likelihood(
            posterior, model, var_names=missing, progressbar=progressbar
        )
        return group.assign({name: extra[name] for name in missing})
    if model is None:
        raise ValueError(_NO_LOGLIK)
    return compute_log_likelihood(
        _posterior_with_free_rvs(fit, model), model, progressbar=progressbar
    )


def _posterior_with_free_rvs(fit: Fit, model) -> xr.Dataset:
    """The fit's posterior, checked to hold the model's free variables."""
    if not fit.has("posterior"):
        raise ValueError("the posterior container has no 'posterior' group")
    posterior = fit.posterior
    missing = [rv.name for rv in model.free_RVs if rv.name not in posterior]
    if missing:
        raise ValueError(
            lacking_message(posterior, missing, "the log-likelihood cannot be evaluated")
        )
    return posterior


def observed_values(data, model, name: str) -> np.ndarray:
    """The observed data of ``name``: ``data``'s ``observed_data`` (if any), else the model's."""
    fit = None if data is None else Fit.of(data)
    if fit is not None and fit.has("observed_data"):
        observed = fit.observed_data
        if name in observed:
            return np.asarray(observed[name].values)
    data = observed_data(model, name)
    if data is not None:
        return data
    raise ValueError(
        f"cannot find the observed values of {name!r}: the posterior has no observed_data "
        "for it and no model holding it was given"
    )


#: PyMC's names for the two parts of an observed variable with missing values
_OBSERVED_PART, _UNOBSERVED_PART = "_observed", "_unobserved"


def imputed_positions(model, posterior, observed, name: str):
    """``(joined, positions)`` of the observed part ``name`` of an imputed variable, or None.

    PyMC splits ``y`` with missing values into ``y_observed``, ``y_unobserved`` and the
    deterministic ``y`` joining them; ``positions`` are the flat (C-order) positions of
    ``name``'s records in ``joined``: from the model's mask, else from the posterior's
    columns of ``joined`` constant and equal to ``observed``.
    """
    if not name.endswith(_OBSERVED_PART):
        return None
    joined = name[: -len(_OBSERVED_PART)]
    positions = _mask_positions(model, name, joined) if model is not None else None
    if positions is None and posterior is not None and observed is not None:
        positions = _constant_positions(posterior, joined, np.asarray(observed))
    return None if positions is None else (joined, positions)


def _mask_positions(model, name: str, joined: str):
    """Positions of ``name``'s values in ``joined``, from the index placing them."""
    from pytensor.graph.basic import Constant
    from pytensor.tensor.subtensor import AdvancedIncSubtensor

    names = model.named_vars
    if name not in names or joined not in names or joined + _UNOBSERVED_PART not in names:
        return None
    rv = names[name]
    for var in graph_ancestors([names[joined]]):
        node = var.owner
        if node is None or not isinstance(node.op, AdvancedIncSubtensor):
            continue
        if len(node.inputs) != 3 or node.inputs[1] is not rv:
            continue
        index = node.inputs[2]
        if not isinstance(index, Constant):
            return None
        index = np.asarray(index.data)
        if index.dtype == bool:
            positions = np.flatnonzero(index.ravel())
        elif index.ndim == 1 and index.dtype.kind in "iu":
            positions = index.astype(np.int64)
        else:
            return None
        size = int(np.size(observed_data(model, name)))
        return positions if positions.size == size else None
    return None


def _constant_positions(posterior, joined: str, observed: np.ndarray):
    """Columns of ``joined`` equal at every draw to the observed values, in order."""
    if joined not in posterior or joined + _UNOBSERVED_PART not in posterior:
        return None
    from pymc_edp.model.stream import _sample_array

    values = _sample_array(posterior[joined])
    values = values.reshape(values.shape[0], -1)
    constant = np.all(values == values[:1], axis=0)
    positions = np.flatnonzero(constant)
    if positions.size != observed.size or not np.array_equal(
        values[0, positions], observed.ravel()
    ):
        return None
    return positions


def resolve_model(model=None):
    """``model``, else the model of the enclosing ``with`` block, else None (no error).

    Examples
    --------
    >>> from pymc_edp.model.pymc import resolve_model
    >>> resolve_model() is None
    True
    >>> with pm.Model() as model:
    ...     resolve_model() is model
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
        inner = getattr(getattr(model, "backend", None), "model", None)
        hint = ""
        if isinstance(inner, pm.Model):  # a bambi model: the PyMC model it built
            hint = f"; pass the PyMC model it built, {what}.backend.model"
        raise TypeError(
            f"{what} must be a pymc.Model, got {type(model).__name__} {model!r:.60}{hint}"
        )


def assigned_steps(model) -> dict[str, type]:
    """``{free variable: step method class}`` as ``pm.sample`` assigns them.

    By competence, among PyMC's and those libraries add (pymc-bart's PGBART).

    Examples
    --------
    >>> from pymc_edp.model.pymc import assigned_steps
    >>> with pm.Model() as model:
    ...     k = pm.Poisson("k", 3.0)
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    >>> {name: cls.__name__ for name, cls in assigned_steps(model).items()}
    {'k': 'Metropolis', 'mu': 'NUTS'}
    """
    from pymc.vartypes import discrete_types

    methods = step_methods()
    out = {}
    for value in model.value_vars:
        rv = model.values_to_rvs[value]
        has_grad = value.dtype not in discrete_types
        out[rv.name] = max(methods, key=lambda m: m._competence(rv, has_grad))
    return out


def sampled_without_nuts(model) -> dict[str, str]:
    """``{free variable: step method}`` for those ``pm.sample`` gives no NUTS.

    As :func:`assigned_steps`: discrete variables, and those a library's step method claims
    (pymc-bart's PGBART, a ``BART`` variable). Their draws do not follow the model density's
    gradient; nutpie cannot sample them.

    Examples
    --------
    >>> from pymc_edp.model.pymc import sampled_without_nuts
    >>> with pm.Model() as model:
    ...     k = pm.Poisson("k", 3.0)
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    >>> sampled_without_nuts(model)
    {'k': 'Metropolis'}
    """
    from pymc.step_methods import NUTS

    return {k: v.__name__ for k, v in assigned_steps(model).items() if v is not NUTS}


def model_observed(model) -> dict[str, np.ndarray]:
    """Observed values held by ``model``, by observed variable name."""
    return _known_observed(None, model, [rv.name for rv in model.observed_RVs])


def _known_observed(data, model, names) -> dict[str, np.ndarray]:
    """:func:`observed_values` of those ``names`` it finds."""
    out = {}
    for name in names:
        try:
            out[name] = observed_values(data, model, name)
        except ValueError:
            continue
    return out


def observed_arrays(data, model) -> dict[str, np.ndarray]:
    """Observed data by name: the fit's ``observed_data`` group, else the model's."""
    fit = Fit.of(data)
    if fit.has("observed_data"):
        ds = fit.observed_data
        return {str(k): np.asarray(ds[k].values) for k in ds.data_vars}
    return model_observed(model) if model is not None else {}


def integer_data(model, name: str, observed) -> bool:
    """Whether observed ``name`` can only take integers: integer data or a discrete likelihood."""
    if np.asarray(observed).dtype.kind in "biu":
        return True
    var = model.named_vars.get(name) if model is not None else None
    return var is not None and np.dtype(var.dtype).kind in "biu"


def model_data(model) -> dict[str, np.ndarray]:
    """The values of the model's ``pm.Data`` containers (covariates, indices), by name."""
    out = {}
    for var in getattr(model, "data_vars", ()):
        if hasattr(var, "get_value") and var.name:
            out[var.name] = np.asarray(var.get_value())
    return out


def same_values(a, b) -> tuple[bool, str]:
    """``(same, detail)``: whether two arrays hold the same data, at the coarser dtype's precision.

    Exactly for float64 and integers, to a few units in the last place of float32 or float16.

    Examples
    --------
    >>> from pymc_edp.model.pymc import same_values
    >>> x = np.random.default_rng(0).normal(size=30)
    >>> same_values(x, x.astype(np.float32))
    (True, '')
    >>> same_values(x, x + 1e-3)
    (False, '30 differing value(s), up to 0.001')
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        # ArviZ 0.23 stores a scalar pm.Data as shape (1,): only singleton dims may differ
        if np.squeeze(a).shape != np.squeeze(b).shape:
            return False, f"shape {a.shape} vs {b.shape}"
        a, b = np.squeeze(a), np.squeeze(b)
    if a.dtype.kind in "biuf" and b.dtype.kind in "biuf":
        fa, fb = a.astype(float), b.astype(float)
        tol = max(
            (np.finfo(x.dtype).eps for x in (a, b) if x.dtype.kind == "f"),
            default=0.0,
        )
        rtol = 4 * tol if tol > np.finfo(np.float64).eps else 0.0
        close = np.isclose(fa, fb, rtol=rtol, atol=0.0, equal_nan=True) | (fa == fb)
        if close.all():
            return True, ""
        diff = np.abs(fa - fb)[~close]
        return False, f"{int((~close).sum())} differing value(s), up to {np.nanmax(diff):.3g}"
    same = bool(np.array_equal(a, b))
    return same, "" if same else f"{int(np.sum(a != b))} differing value(s)"


def check_model_matches_data(
    model, observed_data: xr.Dataset | None, constant_data: xr.Dataset | None = None
) -> None:
    """Refuse a model whose data are not those the draws were sampled with.

    Its observed values against ``observed_data``, its ``pm.Data`` against ``constant_data``.
    """
    checks = []
    if observed_data is not None:
        checks += [
            (name, values, observed_data[name], "observed data", "observed_data")
            for name, values in model_observed(model).items()
            if name in observed_data
        ]
    if constant_data is not None:
        checks += [
            (name, values, constant_data[name], "data", "constant_data")
            for name, values in model_data(model).items()
            if name in constant_data
        ]
    for name, values, stored, what, group in checks:
        same, detail = same_values(values, np.asarray(stored.values))
        if not same:
            raise ValueError(
                f"the model's {what} {name!r} are not the {group} the posterior was sampled "
                f"with ({detail}): its log-likelihood and refits would use other data than "
                "the draws. Pass the model that produced these draws, or restore its data "
                f"(pm.set_data({{{name!r}: ...}}))."
            )


class ElementwiseLogLik:
    """Compiled elementwise log-likelihood of observed variable ``name`` at any data and draws.

    Vectorised over draws (or looped). A likelihood coupling its records
    (:func:`~pymc_edp.model.structure.read_structure`) gives each record's leave-one-out
    conditional instead (:class:`~pymc_edp.model.coupled.CoupledLikelihood`).
    """

    def __init__(self, model, name: str, records: str = "auto"):
        import pytensor.tensor as pt
        from pymc.model.transform.conditioning import remove_value_transforms
        from pymc.pytensorf import compile as pm_compile
        from pytensor.graph.replace import clone_replace, vectorize_graph

        # the clone reads the model's pm.Data (pm.set_data after compiling included)
        umodel = share_data(model, remove_value_transforms(without_initial_values(model)))
        if name not in umodel.named_vars or umodel[name] not in umodel.observed_RVs:
            raise KeyError(f"{name!r} is not an observed variable of the model")
        rv = umodel[name]
        self._name = name
        value = umodel.rvs_to_values[rv]
        self.structure = read_structure(umodel, rv, records)
        self.coupled = self.structure.coupled
        self.free = [v.name for v in umodel.free_RVs]
        values = [umodel.rvs_to_values[v] for v in umodel.free_RVs]
        self.dtypes = [v.dtype for v in values]
        self.value_dtype = value.dtype
        self._vec = self._loop = None
        if self.coupled:
            self._conditionals = CoupledLikelihood(model, name, self.structure)
            return
        (logp,) = umodel.logp(vars=[rv], sum=False)
        y_new = pt.tensor(name=f"{name}_value", dtype=value.dtype, shape=(None,) * value.ndim)
        (logp,) = clone_replace([logp], replace={value: y_new})
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

    @property
    def route(self) -> str | None:
        """How a coupled likelihood's conditionals are computed (None when factorised)."""
        return self._conditionals.route if self.coupled else None

    def conditionals(self, posterior: xr.Dataset, ats=()):
        """A coupled likelihood's :class:`~pymc_edp.model.coupled.Conditionals`."""
        if not self.coupled:
            raise NonFactorisedError(f"{self._name!r} is factorised", name=self._name)
        return self._conditionals.conditionals(posterior, ats)

    def blocks(self, posterior: xr.Dataset, blocks) -> np.ndarray:
        """``(n_samples, len(blocks))`` ``log p(y_b | y_-b, theta)``, ``blocks`` of flat indices.

        :class:`NonFactorisedError` where there are none (factorised, or not Gaussian).
        """
        if not self.coupled:
            raise NonFactorisedError(
                f"block conditionals of {self._name!r} are not available: its likelihood is "
                "factorised",
                name=self._name,
            )
        return self._conditionals.blocks(posterior, blocks)

    def _draws(self, posterior: xr.Dataset) -> list[np.ndarray]:
        from pymc_edp.model.stream import _posterior_draws

        return _posterior_draws(posterior, self.free, self.dtypes)

    def __call__(self, posterior: xr.Dataset, y: np.ndarray) -> np.ndarray:
        """``(n_samples, n_terms)`` log-likelihood terms at data ``y``, each posterior draw.

        For a coupled likelihood, ``log p(y_r | data_-r, theta)`` of every record ``r``.
        """
        y = np.asarray(y, dtype=self.value_dtype)
        if self.coupled:
            data = self._conditionals.data
            at_data = y.shape == data.shape and np.array_equal(y, data)
            return self._conditionals(posterior, None if at_data else y)
        draws = self._draws(posterior)
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


def potentials_with_data(model) -> list[str]:
    """Names of the model's ``pm.Potential`` terms that depend on data arrays.

    Records entering the posterior only through a Potential are no neighbour of an audit; a
    Potential on a constant of more than one element or a ``pm.Data`` is taken to hold some.

    Examples
    --------
    >>> from pymc_edp.model.pymc import potentials_with_data
    >>> with pm.Model() as m:
    ...     mu = pm.Normal("mu")
    ...     _ = pm.Potential("penalty", -(mu**2))
    ...     _ = pm.Potential("extra", pm.logp(pm.Normal.dist(mu, 1), np.array([0.3, 1.2])).sum())
    >>> potentials_with_data(m)
    ['extra']
    """
    from pytensor.graph.basic import Constant

    data = {id(v) for v in getattr(model, "data_vars", ())}
    out = []
    for pot in model.potentials:
        for node in graph_ancestors([pot]):
            is_array = isinstance(node, Constant) and np.size(node.data) > 1
            if is_array or id(node) in data:
                out.append(pot.name)
                break
    return out


#: Posterior draws at which a Potential's dependence on each record is looked for.
POTENTIAL_DRAWS = 3


def potential_records(model, posterior=None) -> dict[str, dict[str, np.ndarray | None]]:
    """``{potential: {observed variable: records}}`` for Potentials that read observed data.

    A record is held where the Potential's gradient in it is not zero at some posterior draws
    (:data:`POTENTIAL_DRAWS`); ``records`` is a C-order boolean mask, or None for every
    record (no ``posterior``, or no gradient).

    Examples
    --------
    >>> from pymc_edp.model.pymc import potential_records
    >>> y, w = np.array([0.3, 1.2, -0.5]), np.array([1.0, 3.0, 1.0])
    >>> with pm.Model() as m:
    ...     mu = pm.Normal("mu")
    ...     obs = pm.Normal("y", mu, observed=y)
    ...     _ = pm.Potential("weights", ((w - 1) * pm.logp(obs, y)).sum())
    >>> potential_records(m)
    {'weights': {'y': None}}
    """
    out: dict[str, dict[str, np.ndarray | None]] = {}
    for pot in model.potentials:
        (graph,) = model.replace_rvs_by_values([pot])
        names = list(_data_read(model, graph))
        if names:
            out[pot.name] = {name: _records_in(model, pot.name, name, posterior) for name in names}
    return out


def _data_read(model, graph) -> dict[str, list]:
    """The observed variables whose data ``graph`` reads, and the nodes that hold it."""
    from pytensor.graph.basic import Constant

    observed = {rv.name: model.rvs_to_values[rv] for rv in model.observed_RVs}
    data = model_observed(model)
    reads: dict[str, list] = {}
    for node in graph_ancestors([graph]):
        for name, value in observed.items():
            same = node is value
            if not same and isinstance(node, Constant) and name in data:
                c, y = np.asarray(node.data), np.asarray(data[name])
                same = c.size > 1 and c.shape == y.shape and np.array_equal(c, y)
            if same:
                reads.setdefault(name, []).append(node)
    return reads


def _records_in(model, potential: str, name: str, posterior) -> np.ndarray | None:
    """Mask of ``name``'s entries where ``potential``'s gradient is ever not 0, or None."""
    if posterior is None:
        return None
    try:
        import pytensor.tensor as pt
        from pymc.model.transform.conditioning import remove_value_transforms
        from pymc.pytensorf import compile as pm_compile
        from pytensor.graph.replace import clone_replace

        from pymc_edp.model.stream import _posterior_draws

        umodel = remove_value_transforms(without_initial_values(model))
        (graph,) = umodel.replace_rvs_by_values([umodel[potential]])
        nodes = _data_read(umodel, graph)[name]
        first = nodes[0]
        if not first.dtype.startswith("float"):
            return None
        y = pt.tensor(dtype=first.dtype, shape=first.type.shape, name=f"{name}_data")
        (graph,) = clone_replace([graph], replace=dict.fromkeys(nodes, y), rebuild_strict=False)
        ancestors = set(graph_ancestors([graph]))
        free = [rv for rv in umodel.free_RVs if umodel.rvs_to_values[rv] in ancestors]
        inputs = [umodel.rvs_to_values[rv] for rv in free]
        fn = pm_compile([*inputs, y], pt.grad(graph.sum(), y), on_unused_input="ignore")
        value = observed_data(model, name)
        n_samples = posterior.sizes["chain"] * posterior.sizes["draw"]
        picks = np.unique(np.linspace(0, n_samples - 1, POTENTIAL_DRAWS).astype(int))
        draws = _posterior_draws(posterior, [rv.name for rv in free], [rv.dtype for rv in free])
        mask = np.zeros(np.shape(value), dtype=bool)
        for s in picks:
            mask |= np.asarray(fn(*(d[s] for d in draws), value)) != 0
        return mask
    except Exception:  # not differentiable (integer data), draws missing: all records
        return None


def reads_data(model, names) -> dict[str, bool]:
    """Per unobserved model variable in ``names``, whether the model computes it from data.

    Data: observed values, a ``pm.Data``, a constant array equal to one, or a float array of
    observed values; not a distribution's index arrays and scalars (a cutpoint fixed at 0).

    Examples
    --------
    >>> import pytensor.tensor as pt
    >>> from pymc_edp.model.pymc import reads_data
    >>> y = np.array([0.0, 1.5, 2.0])
    >>> with pm.Model() as m:
    ...     d = pm.HalfNormal("d", shape=2)
    ...     _ = pm.Deterministic("cut", pt.concatenate([pt.as_tensor([0.0]), pt.cumsum(d)]))
    ...     _ = pm.Deterministic("copy", pt.as_tensor(y) + 0 * d[0])
    ...     _ = pm.Normal("y", d[0], observed=y)
    >>> reads_data(m, ["cut", "copy", "d", "y", "other"])
    {'cut': False, 'copy': True, 'd': False}
    """
    from pytensor.graph.basic import Constant

    arrays = [
        np.asarray(a) for a in (*model_observed(model).values(), *model_data(model).values())
    ]
    numeric = [a.astype(float).ravel() for a in arrays if a.dtype.kind in "biuf"]
    values = np.concatenate(numeric) if numeric else np.empty(0)
    nodes = {id(v) for v in getattr(model, "data_vars", ())}
    nodes |= {id(model.rvs_to_values[rv]) for rv in model.observed_RVs}

    def is_data(node) -> bool:
        if id(node) in nodes:
            return True
        if not isinstance(node, Constant):
            return False
        c = np.asarray(node.data)
        if c.size < 2 or c.dtype.kind not in "biuf":
            return False
        if any(c.shape == a.shape and np.array_equal(c, a) for a in arrays):
            return True
        return c.dtype.kind == "f" and bool(np.isin(c, values).all())

    observed = set(model.observed_RVs)
    out = {}
    for name in names:
        var = model.named_vars.get(name)
        if var is None or var in observed:
            continue
        (graph,) = model.replace_rvs_by_values([var])
        out[name] = any(is_data(node) for node in graph_ancestors([graph]))
    return out


def elementwise_loglik(model, name: str, records: str = "auto") -> ElementwiseLogLik:
    """The :class:`ElementwiseLogLik` of ``name``, compiled once per model (``per_model``)."""
    key = ("ElementwiseLogLik", name, records)
    return per_model(model, key, lambda: ElementwiseLogLik(model, name, records))


#: Draws of a stored log-likelihood compared with the model's (first, middle, last).
CHECKED_DRAWS = 3

#: Why bambi's posterior may not be its PyMC model's.
BAMBI_CENTRED = (
    "bambi builds its PyMC model on centred common predictors (center_predictors=True, its "
    "default) and reports the intercept of the uncentred ones: the posterior's intercept is "
    "then not the model's, and the model's log-likelihood, refits and moment matching at these "
    "draws would be wrong"
)
#: What a bambi user does about it.
BAMBI_REMEDY = (
    "Build the bambi model with center_predictors=False and fit it again, or audit without "
    "the model (model=None, method='psis'), on bambi's own log-likelihood "
    "(model.compute_log_likelihood(idata))"
)


def fitted_by_bambi(posterior: xr.Dataset) -> bool:
    """Whether bambi returned ``posterior`` (it marks its groups ``modeling_interface``).

    Examples
    --------
    >>> from pymc_edp.model.pymc import fitted_by_bambi
    >>> fitted_by_bambi(xr.Dataset(attrs={"modeling_interface": "bambi"}))
    True
    """
    return posterior.attrs.get("modeling_interface") == "bambi"


def fit_for_model(data, model) -> Fit:
    """The fit with what evaluating ``model`` at its draws needs, checked.

    Free variables the posterior lacks are recovered from its deterministics
    (:func:`pymc_edp.model.recover.with_free_variables`). A bambi posterior's stored
    log-likelihood is first checked against the model's (bambi reports an uncentred
    intercept of a model sampled with centred predictors).

    Examples
    --------
    >>> from pymc_edp.model.fit import Fit
    >>> from pymc_edp.model.pymc import fit_for_model
    >>> fit = Fit.read(idata)
    >>> fit_for_model(fit, None) is fit
    True
    """
    fit = Fit.of(data)
    if model is None:
        return fit
    fit, _ = with_free_variables(fit, model)
    if not fit.has("posterior"):
        return fit
    posterior = fit.posterior
    if not fitted_by_bambi(posterior):
        return fit
    if not fit.has("log_likelihood"):
        raise ValueError(
            "this posterior comes from bambi and has no log_likelihood group, against which "
            f"the audit checks that its draws are the PyMC model's ({BAMBI_CENTRED}). Run "
            "bambi's model.compute_log_likelihood(idata) before auditing."
        )
    ll = fit.log_likelihood
    observed = _known_observed(fit, model, list(ll.data_vars))
    check_log_likelihood_matches_model(ll, posterior, model, observed)
    return fit


def check_log_likelihood_matches_model(
    log_likelihood: xr.Dataset, posterior: xr.Dataset, model, observed: dict
) -> None:
    """Refuse a stored log-likelihood that is not the model's at these posterior draws.

    :data:`CHECKED_DRAWS` draws of every observed variable the model can evaluate are
    recomputed and compared (float32 storage allowed for).
    """
    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
    picks = sorted({(0, 0), (n_chain // 2, n_draw // 2), (n_chain - 1, n_draw - 1)})
    chains = xr.DataArray([c for c, _ in picks], dims="draw")
    draws = xr.DataArray([d for _, d in picks], dims="draw")
    sub = posterior.isel(chain=chains, draw=draws).drop_vars(["chain", "draw"], errors="ignore")
    sub = sub.expand_dims("chain")
    for name in log_likelihood.data_vars:
        if name not in observed or name not in model.named_vars:
            continue
        try:
            fn = elementwise_loglik(model, name)
            computed = fn(sub, observed[name])
        except (KeyError, ValueError):
            continue  # e.g. a posterior without every free variable
        da = log_likelihood[name]
        rec = [d for d in da.dims if d not in ("chain", "draw")]
        stored = np.asarray(
            da.isel(chain=chains, draw=draws).transpose("draw", *rec).values, dtype=float
        ).reshape(len(picks), -1)
        if stored.shape != computed.shape:
            continue
        tol = 1e-6 if da.dtype == np.float64 else 1e-4
        close = np.isclose(stored, computed, rtol=tol, atol=tol, equal_nan=True)
        if close.all():
            continue
        k, j = np.argwhere(~close)[0]
        c, d = picks[k]
        if fitted_by_bambi(posterior):
            raise ValueError(
                f"the model's log-likelihood at the posterior's draws is not the "
                f"log_likelihood group's (chain {c}, draw {d}, {name!r} term {j}: "
                f"{computed[k, j]:.6g} against {stored[k, j]:.6g}). {BAMBI_CENTRED}. "
                f"{BAMBI_REMEDY}."
            )
        raise ValueError(
            f"the log_likelihood group does not belong to these posterior draws: at chain "
            f"{c}, draw {d} its value for {name!r} (term {j}) is {stored[k, j]:.6g}, but the "
            f"model's log-likelihood at that draw is {computed[k, j]:.6g}. It must come from "
            "the same sampling run, in the same order (shuffled draws or swapped chains give "
            "a wrong epsilon). Recompute it with pm.compute_log_likelihood(idata, model=model), "
            "or audit with log_likelihood='model' to compute it from the "
            "model."
        )


def replacement_log_likelihood(data, model, name: str, values: np.ndarray) -> np.ndarray:
    """``(n_candidates, n_samples, n_records)`` log-likelihood of ``name`` at other data values.

    Candidate ``c`` replaces every record by ``values[c]``.
    """
    if model is None:
        raise ValueError(
            "neighbour='replace' needs p(y' | theta) at the replacement values, so it needs "
            "the model: pass model= to pymc_edp.audit"
        )
    posterior = _posterior_with_free_rvs(Fit.of(data), model)
    fn = elementwise_loglik(model, name)
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
            # a multivariate observation has one term per row
            if len(rec) > len(obs) or rec != obs[: len(rec)]:
                raise ValueError(
                    f"the log_likelihood of {name!r} has records of shape {rec} but "
                    f"observed_data[{name!r}] has shape {obs}: every record needs exactly one "
                    "log-likelihood term (recompute it with pm.compute_log_likelihood)"
                )

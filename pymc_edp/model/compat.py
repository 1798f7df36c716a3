"""Every difference between the two supported PyMC stacks, in one place.

PyMC 5 / PyTensor 2 / ArviZ 0.23 (``InferenceData``) and PyMC 6 / PyTensor 3 / ArviZ 1.x
(``xarray.DataTree``, ``arviz_stats``): nothing outside this module branches on a version
but :data:`pymc_edp.base.psis.PSIS_TAIL_RULE`, for the PyMC-free layers. Containers may be
``InferenceData``, ``xarray.DataTree`` or anything with their group interface.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from pymc_edp.base.common import installed_major

__all__ = [
    "ARVIZ_1",
    "check_container",
    "compute_log_likelihood",
    "ess",
    "from_dict",
    "get_group",
    "graph_ancestors",
    "graph_toposort",
    "group_names",
    "has_group",
    "import_arviz",
    "initial_values",
    "make_container",
    "observed_data",
    "rhat",
    "stack_loo",
    "step_methods",
    "without_initial_values",
]

ARVIZ_TRAP_HELP = (
    "`import arviz` failed ({err}). This is the known clash between ArviZ 0.23, which "
    "imports the `arviz-plots` package when it is installed (bambi pulls it in, for "
    "example), and matplotlib >= 3.11, where arviz-plots' start-up code fails. Fix it with "
    "ONE of:\n"
    '    pip install "matplotlib<3.11"      # keeps arviz-plots; the fix for bambi users\n'
    "    pip uninstall arviz-plots          # only if nothing you use needs it (bambi does)\n"
    "    or move to Python >= 3.12, where pip gives PyMC 6 / ArviZ 1.x without the clash.\n"
    "See the troubleshooting section of the pymc_edp README."
)


#: ArviZ 1.x (``arviz_base`` / ``arviz_stats``, DataTree) rather than 0.23 (InferenceData).
ARVIZ_1 = installed_major("arviz") >= 1


def import_arviz():
    """The ``arviz`` module; the arviz-plots/matplotlib clash as an actionable error."""
    try:
        import arviz
    except AttributeError as err:  # pragma: no cover - depends on the installed stack
        if "matplotlib" in str(err) or "style" in str(err):
            raise ImportError(ARVIZ_TRAP_HELP.format(err=err)) from err
        raise
    return arviz


# ------------------------------------------------------------------------- containers
def group_names(data) -> list[str]:
    """Names of the groups of an ``InferenceData`` or ``DataTree``.

    Examples
    --------
    >>> from pymc_edp.model.compat import group_names
    >>> "posterior" in group_names(idata)
    True
    """
    if isinstance(data, xr.DataTree):
        return list(data.children)
    groups = getattr(data, "groups", None)
    if callable(groups):
        return [str(g).lstrip("/") for g in groups()]
    raise TypeError(
        f"expected an xarray.DataTree (PyMC 6 / ArviZ 1.x) or an arviz.InferenceData "
        f"(PyMC 5 / ArviZ 0.23), got {type(data).__name__}"
    )


def check_container(data, what: str = "idata") -> None:
    """Raise a ``TypeError`` unless ``data`` is a DataTree or InferenceData with a posterior."""
    try:
        names = group_names(data)
    except TypeError as err:
        raise TypeError(f"{what}: {err}") from None
    if "posterior" not in names:
        raise ValueError(
            f"{what} has no 'posterior' group (it has {names}); pass the object returned by "
            "pm.sample"
        )
    dims = tuple(get_group(data, "posterior").dims)
    missing = [d for d in ("chain", "draw") if d not in dims]
    if missing:
        raise ValueError(
            f"{what}'s posterior has dims {dims}, without {missing}: the draws must be laid out "
            "as pm.sample lays them out, (chain, draw, ...). Build it with "
            "from_dict(..., sample_dims=['chain', 'draw']) (one chain: a chain dim of size 1), "
            "or unstack a 'sample' dim: posterior.unstack('sample')"
        )


def has_group(data, name: str) -> bool:
    """Whether ``data`` has the group ``name``."""
    return name in group_names(data)


def get_group(data, name: str) -> xr.Dataset:
    """Group ``name`` of ``data`` as a Dataset; a ``KeyError`` lists the groups there are."""
    if not has_group(data, name):
        raise KeyError(f"no {name!r} group; the groups are {group_names(data)}")
    group = data[name]
    if isinstance(group, xr.DataTree):
        return group.to_dataset()
    return group


def _is_chunked(dataset: xr.Dataset) -> bool:
    return any(v.chunks is not None for v in dataset.variables.values())


def load_in_memory(data, *, keep_lazy: tuple[str, ...] = ("log_likelihood",)):
    """``data`` with every dask-backed group loaded, except those in ``keep_lazy``.

    A shallow copy when anything is loaded; ``data`` is not changed.
    """
    names = group_names(data)
    lazy = [g for g in names if g not in keep_lazy and _is_chunked(get_group(data, g))]
    if not lazy:
        return data
    if isinstance(data, xr.DataTree):
        out = data.copy(deep=False)
        for g in lazy:
            out[g] = xr.DataTree(get_group(data, g).compute())
        return out
    az = import_arviz()
    groups = {g: get_group(data, g) for g in names}
    groups.update({g: groups[g].compute() for g in lazy})
    return az.InferenceData(**groups)


def make_container(groups: Mapping[str, xr.Dataset]):
    """The stack's container (``DataTree`` or ``InferenceData``) holding ``groups``."""
    if ARVIZ_1:
        return xr.DataTree.from_dict(dict(groups))
    az = import_arviz()
    return az.InferenceData(**groups)


def from_dict(groups: Mapping[str, Mapping], *, coords=None, dims=None):
    """The stack's container from ``{group: {variable: array}}``, by ArviZ's conventions.

    Examples
    --------
    >>> from pymc_edp.model.compat import from_dict, get_group
    >>> data = from_dict({"posterior": {"mu": np.zeros((2, 5))}})
    >>> dict(get_group(data, "posterior").sizes)
    {'chain': 2, 'draw': 5}
    """
    if ARVIZ_1:
        from arviz_base import from_dict as _from_dict

        return _from_dict(dict(groups), coords=coords, dims=dims)
    az = import_arviz()
    return az.from_dict(**dict(groups), coords=coords, dims=dims)


# ----------------------------------------------------------------------- statistics
def _stats(name: str):
    """``arviz_stats.<name>`` (ArviZ 1.x) or ``arviz.<name>`` (0.23)."""
    if ARVIZ_1:
        import arviz_stats

        return getattr(arviz_stats, name)
    return getattr(import_arviz(), name)


def ess(dataset: xr.Dataset, method: str = "mean") -> xr.Dataset:
    """The stack's effective sample size of every variable of a ``(chain, draw)`` Dataset."""
    return _stats("ess")(dataset, method=method)


def rhat(dataset: xr.Dataset, method: str = "rank") -> xr.Dataset:
    """The stack's R-hat (rank-normalised split by default) of a ``(chain, draw)`` Dataset."""
    return _stats("rhat")(dataset, method=method)


def stack_loo(data, var_name: str | None = None):
    """The stack's own pointwise PSIS-LOO: ``arviz_stats.loo`` (1.x) or ``az.loo`` (0.23)."""
    return _stats("loo")(data, pointwise=True, var_name=var_name)


# --------------------------------------------------------------------------- PyMC
def compute_log_likelihood(
    data, model, *, var_names=None, progressbar: bool = False
) -> xr.Dataset:
    """Pointwise log-likelihood of ``model`` at the draws of ``data``, as a Dataset.

    ``data``: a posterior Dataset or a container holding one (not modified).
    """
    import pymc as pm

    posterior = data if isinstance(data, xr.Dataset) else get_group(data, "posterior")
    out = pm.compute_log_likelihood(
        make_container({"posterior": posterior}),
        var_names=None if var_names is None else list(var_names),
        model=without_initial_values(model),
        extend_inferencedata=False,
        progressbar=progressbar,
    )
    if isinstance(out, xr.Dataset):
        return out
    return get_group(out, "log_likelihood")


def graph_ancestors(outputs):
    """The variables a PyTensor graph depends on, on either PyTensor.

    Examples
    --------
    >>> import pytensor.tensor as pt
    >>> from pymc_edp.model.compat import graph_ancestors
    >>> x = pt.scalar("x")
    >>> "x" in [v.name for v in graph_ancestors([2 * x])]
    True
    """
    try:
        from pytensor.graph.traversal import ancestors
    except ImportError:  # PyTensor 2
        from pytensor.graph.basic import ancestors
    return ancestors(outputs)


def graph_toposort(outputs) -> list:
    """The apply nodes computing ``outputs``, each after those it reads, on either PyTensor."""
    try:
        from pytensor.graph.traversal import io_toposort
    except ImportError:  # pragma: no cover - PyTensor before the traversal module
        from pytensor.graph.basic import io_toposort
    roots = [v for v in graph_ancestors(outputs) if v.owner is None]
    return io_toposort(roots, outputs)


def observed_data(model, name: str):
    """The numeric values ``model`` holds for observed variable ``name``, or None.

    A graph over constants and shared variables (``observed=pm.Data(...)`` cast to the
    likelihood's dtype) is evaluated; None when it depends on anything else.

    Examples
    --------
    >>> from pymc_edp.model.compat import observed_data
    >>> with pm.Model() as model:
    ...     y_obs = pm.Data("y_obs", np.array([0, 1, 1]))
    ...     y = pm.Bernoulli("y", pm.Beta("p", 1.0, 1.0), observed=y_obs)
    >>> observed_data(model, "y")
    array([0, 1, 1])
    """
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    var = model.named_vars.get(name) if model is not None else None
    value = model.rvs_to_values.get(var) if var is not None else None
    if value is None:
        return None
    if isinstance(value, Constant):
        return np.asarray(value.data)
    if isinstance(value, SharedVariable):
        return np.array(value.get_value())
    roots = [v for v in graph_ancestors([value]) if v.owner is None]
    if not roots or any(not isinstance(v, Constant | SharedVariable) for v in roots):
        return None
    from pytensor import function

    return np.asarray(function([], value, mode="FAST_COMPILE")())


def step_methods() -> list:
    """The step method classes ``pm.sample`` chooses from, with those libraries add.

    PyMC 5 chooses from ``pymc.STEP_METHODS`` (pymc-bart 0.11 rebinds it with its PGBART),
    PyMC 6 from ``pymc.step_methods.STEP_METHODS`` (pymc-bart 0.13 appends to it).

    Examples
    --------
    >>> from pymc_edp.model.compat import step_methods
    >>> "NUTS" in [m.__name__ for m in step_methods()]
    True
    """
    import pymc as pm
    from pymc import step_methods as pm_steps

    # read from the module's namespace: PyMC 6 warns on pymc.STEP_METHODS
    return list(vars(pm).get("STEP_METHODS") or pm_steps.STEP_METHODS)


def initial_values(model) -> dict:
    """The ``initval=`` of the model's free variables by name, but graphs of other variables."""
    from pytensor.graph.basic import Variable

    return {
        rv.name: value
        for rv, value in model.rvs_to_initial_values.items()
        if value is not None and not isinstance(value, Variable)
    }


def without_initial_values(model):
    """A shallow view of ``model`` without its ``initval=`` values, for PyMC's model rewrites.

    ``clone_model`` and ``remove_value_transforms`` refuse them; :func:`initial_values` puts
    them back on a clone.

    Examples
    --------
    >>> from pymc.model.fgraph import clone_model
    >>> from pymc_edp.model.compat import without_initial_values
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0, initval=0.5)
    >>> clone = clone_model(without_initial_values(model))
    >>> float(model.rvs_to_initial_values[model["mu"]]), clone.rvs_to_initial_values[clone["mu"]]
    (0.5, None)
    """
    if all(v is None for v in model.rvs_to_initial_values.values()):
        return model
    view = object.__new__(type(model))
    view.__dict__.update(model.__dict__)
    view.rvs_to_initial_values = dict.fromkeys(model.rvs_to_initial_values)
    return view

"""Refits that start where the fit ended, on a neighbour model compiled once per model.

A neighbour posterior is close to the full-data one, so :func:`warm_start` collects
full-data draws in the sampler's unconstrained space and their mean and variance: engines
start every chain at one of them and tune less; PyMC's NUTS also starts its mass-matrix
adaptation there. :func:`cached_neighbour_model` keeps a model's neighbour model (and its
compiled sampler) while the model lives, so a second audit (``tune_prior`` runs many)
compiles nothing.
"""

from __future__ import annotations

import logging
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import xarray as xr

from pymc_edp.model.cache import current_data, per_model

_log = logging.getLogger("pymc_edp")

__all__ = ["WarmStart", "cached_neighbour_model", "current_data", "warm_start", "warm_tune"]


def _forget(prefix: str) -> None:
    """Drop the compiled samplers of a model that is gone (their tokens start ``prefix``)."""
    from pymc_edp.refit.engines import _COMPILED

    for key in [k for k in _COMPILED if k.startswith(prefix)]:
        _COMPILED.pop(key, None)


def cached_neighbour_model(
    model,
    observed,
    coupled: dict[str, int] | None,
    build: Callable | None = None,
    replace: bool = True,
):
    """``(neighbour model, token)`` of ``model``, built once per model by ``build``.

    The token names the neighbour model's compiled samplers in the engines' per-process
    cache. Kept by :func:`~pymc_edp.model.cache.per_model` (rebuilt when the model's
    structure changes, dropped with it). It holds data of its own (each refit sets its
    neighbour's): it is given the model's current ``pm.Data`` values here, and every refit
    sets them again first (:func:`current_data`, the engines' ``base_data``). ``replace``:
    whether neighbours replace records (``build(..., replace=False)`` otherwise).
    """
    from functools import partial

    from pymc_edp.model.transform import neighbour_model

    build = neighbour_model if build is None else build
    if not replace:
        build = partial(build, replace=False)

    def built():
        token = f"nb-{uuid.uuid4().hex}"
        try:
            weakref.finalize(model, _forget, token)
        except TypeError:  # pragma: no cover - a model that cannot be weakly referenced
            pass
        return build(model, observed, coupled), token

    key = ("neighbour model", tuple(observed), tuple(sorted((coupled or {}).items())), replace)
    nb_model, token = per_model(model, key, built)
    for name, value in current_data(model, nb_model).items():
        var = nb_model[name]
        if hasattr(var, "set_value"):  # a pm.Data copy (a builder may have replaced it)
            var.set_value(value)
    return nb_model, token


@dataclass(frozen=True)
class WarmStart:
    """Where refits start, and what adaptation they start from.

    Attributes
    ----------
    points : tuple of dict
        Full-data draws of the free variables (constrained, by name), spread over chains.
    slices : dict of str to slice
        Where each value variable is in a row of :attr:`flat`.
    flat : ndarray, shape (n_points, n_dim)
        The same draws in the sampler's unconstrained space (nutpie's layout).
    mean, var : ndarray, shape (n_dim,)
        Mean and variance of the full-data draws there: the fit's diagonal mass matrix.
    tune : int
        Tuning steps of a warm refit.
    """

    points: tuple
    slices: dict
    flat: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    tune: int


def warm_tune(tune: int) -> int:
    """Tuning steps of a warm refit: a quarter of ``tune``, at least 100, at most ``tune``.

    Examples
    --------
    >>> from pymc_edp.refit.warm import warm_tune
    >>> warm_tune(1000), warm_tune(300), warm_tune(50)
    (250, 100, 50)
    """
    return int(min(tune, max(100, tune // 4)))


def warm_start(
    nb_model,
    posterior: xr.Dataset,
    *,
    tune: int,
    n_points: int = 20,
    n_moments: int = 200,
) -> WarmStart | None:
    """The :class:`WarmStart` of refits of ``nb_model``, or None (the refits start cold).

    ``n_points`` draws are kept as starts, ``n_moments`` give the mass matrix; free
    variables the fit did not sample start at their initial values. None when the posterior
    lacks a free variable or cannot be mapped (logged at DEBUG level).
    """
    import pytensor
    from pymc.initial_point import make_initial_point_fn

    free = list(nb_model.free_RVs)
    given = [rv for rv in free if rv.name in posterior]
    if not given or any(
        rv.name not in posterior and not rv.name.startswith("edp_missing_") for rv in free
    ):
        return None
    n_chain = int(posterior.sizes.get("chain", 1))
    n_draw = int(posterior.sizes.get("draw", 1))
    # starts, then the draws of the mass matrix: chains in turn, draws spread over each
    chain_of, draw_of, counts = [], [], []
    for n in (n_points, n_moments):
        per_chain = -(-n // n_chain)
        at = np.linspace(0, n_draw - 1, min(per_chain, n_draw)).round().astype(int)
        for i in range(min(n, at.size * n_chain)):
            chain_of.append(i % n_chain)
            draw_of.append(int(at[i // n_chain]))
        counts.append(len(chain_of))
    n_starts = counts[0]
    shared = {}
    try:
        for rv in given:
            first = {d: 0 for d in ("chain", "draw") if d in posterior[rv.name].dims}
            value = np.asarray(posterior[rv.name].isel(first).values)
            shared[rv.name] = pytensor.shared(value.astype(rv.dtype), name=f"warm_{rv.name}")
        fn = make_initial_point_fn(
            model=nb_model,
            overrides={rv: shared[rv.name] for rv in given},
            jitter_rvs=set(),
            return_transformed=True,
        )
        value_names = [nb_model.rvs_to_values[rv].name for rv in free]
        sizes, rows, points = [], [], []
        for c, d in zip(chain_of, draw_of, strict=True):
            at = {"draw": int(d), **({"chain": int(c)} if "chain" in posterior.dims else {})}
            point = {}
            for rv in given:
                value = np.asarray(posterior[rv.name].isel(at).values).astype(rv.dtype)
                shared[rv.name].set_value(value)
                point[rv.name] = value
            out = fn(0)
            sizes = [int(np.size(out[name])) for name in value_names]
            rows.append(np.concatenate([np.ravel(out[name]) for name in value_names]))
            points.append(point)
        flat = np.asarray(rows, dtype=np.float64)
    except Exception as err:  # a model whose draws cannot be mapped starts cold
        _log.debug("refits start cold: the fit's draws could not be mapped (%s)", err)
        return None
    if not np.isfinite(flat).all():
        _log.debug("refits start cold: non-finite full-data draws in the sampler's space")
        return None
    moments = flat[n_starts:]
    var = moments.var(axis=0)
    ends = np.cumsum(sizes)
    slices = {
        n: slice(int(e - z), int(e)) for n, z, e in zip(value_names, sizes, ends, strict=True)
    }
    return WarmStart(
        points=tuple(points[:n_starts]),
        slices=slices,
        flat=flat[:n_starts],
        mean=moments.mean(axis=0),
        var=np.where(var > 0, var, 1.0),
        tune=warm_tune(tune),
    )

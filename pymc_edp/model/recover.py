"""Free variables a posterior leaves out, recovered from the deterministics it keeps.

bambi keeps a group-specific term (``1|firm``) in the posterior but not the offset it is
built from (``1|firm = 1|firm_offset * 1|firm_sigma``); a fit sampled with ``var_names=``
may leave out free variables in the same way. Evaluating the model (its log-likelihood,
moment matching, the warm starts of refits, the check of a stored log-likelihood) needs every
free variable. Given the free variables the posterior holds, the kept deterministics are
often an affine function of the missing ones, ``d = A u + b``; when ``A`` has full column
rank, ``u`` is unique and is recovered draw by draw. The result is checked at every draw:
the deterministics recomputed from it equal the stored ones, and the map is affine along a
random direction. Anything else is not recovered, and the reason is kept
(:func:`lacking_message`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from pymc_edp.core.select import RECOVERED
from pymc_edp.model.cache import per_model
from pymc_edp.model.compat import graph_ancestors
from pymc_edp.model.fit import Fit

_log = logging.getLogger("pymc_edp")

__all__ = [
    "Recovery",
    "lacking_message",
    "recover_free_variables",
    "with_free_variables",
]

#: Attribute of a posterior whose missing free variables could not be recovered: why.
_UNRECOVERED = "pymc_edp_unrecovered"
#: Most unknowns solved draw by draw by a dense least-squares solve (coupled unknowns).
MAX_DENSE_UNKNOWNS = 200
#: Largest probe (unknowns + 1) x deterministic elements evaluated to find the structure.
MAX_PROBE = 20_000_000


@dataclass(frozen=True)
class Recovery:
    """What :func:`recover_free_variables` found.

    Attributes
    ----------
    posterior : xarray.Dataset
        The posterior with the recovered variables (marked by the attribute
        :data:`~pymc_edp.core.select.RECOVERED`).
    recovered : dict of str to tuple of str
        Each recovered free variable and the deterministics it was solved from.
    unrecovered : dict of str to str
        Each missing free variable that was not recovered, and why.
    """

    posterior: xr.Dataset
    recovered: dict = field(default_factory=dict)
    unrecovered: dict = field(default_factory=dict)


def lacking_message(posterior: xr.Dataset, missing, needs: str) -> str:
    """Why ``needs`` cannot be done: the posterior lacks the free variables ``missing``.

    Says why they were not recovered when :func:`recover_free_variables` tried.

    Examples
    --------
    >>> from pymc_edp.model.recover import lacking_message
    >>> print(lacking_message(xr.Dataset(), ["z"], "the log-likelihood cannot be evaluated"))
    the posterior lacks the model's free variable(s) ['z']; the log-likelihood cannot be
    evaluated. Was idata sampled from this model (without var_names=)?
    """
    missing = list(missing)
    why = json.loads(posterior.attrs.get(_UNRECOVERED, "{}"))
    reasons = [f"{name}: {why[name]}" for name in missing if name in why]
    if not reasons:
        return (
            f"the posterior lacks the model's free variable(s) {missing}; {needs}. Was idata "
            "sampled from this model (without var_names=)?"
        )
    return (
        f"the posterior lacks the model's free variable(s) {missing} and they cannot be "
        f"recovered from the deterministics it holds ({'; '.join(reasons)}); {needs}. Sample "
        "without var_names= (or with the free variables in it)."
    )


def with_free_variables(data, model) -> tuple[Fit, Recovery | None]:
    """``(fit, recovery)``: the fit's posterior completed by :func:`recover_free_variables`.

    ``data``: what :meth:`~pymc_edp.model.fit.Fit.of` reads; not changed, and returned as is
    when nothing is missing or there is no model.
    """
    fit = Fit.of(data)
    if model is None or not fit.has("posterior"):
        return fit, None
    recovery = recover_free_variables(fit.posterior, model)
    if recovery.posterior is fit.posterior:
        return fit, recovery
    return fit.replace(posterior=recovery.posterior), recovery


def recover_free_variables(posterior: xr.Dataset, model) -> Recovery:
    """Recover the free variables of ``model`` that ``posterior`` lacks, where they are determined.

    Parameters
    ----------
    posterior : xarray.Dataset
        With ``chain`` and ``draw`` dimensions.
    model : pymc.Model

    Returns
    -------
    Recovery
        Its ``posterior`` is ``posterior`` itself when no free variable is missing.

    Examples
    --------
    A non-centred group effect kept without its offset (as bambi keeps ``1|g``):

    >>> from pymc_edp.model.recover import recover_free_variables
    >>> with pm.Model(coords={"g": ["a", "b"]}) as model:
    ...     sigma = pm.HalfNormal("sigma")
    ...     z = pm.Normal("z", dims="g")
    ...     u = pm.Deterministic("u", z * sigma, dims="g")
    >>> rng = np.random.default_rng(0)
    >>> s, zs = rng.uniform(0.5, 2.0, (1, 4)), rng.normal(size=(1, 4, 2))
    >>> post = xr.Dataset({"sigma": (("chain", "draw"), s),
    ...                    "u": (("chain", "draw", "g"), zs * s[..., None])})
    >>> rec = recover_free_variables(post, model)
    >>> rec.recovered, bool(np.allclose(rec.posterior["z"], zs))
    ({'z': ('u',)}, True)
    """
    free = list(model.free_RVs)
    missing = [rv for rv in free if rv.name not in posterior]
    if not missing:
        return Recovery(posterior)
    out = posterior.copy()
    try:
        solved, sources = _solve(posterior, model, free, missing)
        for rv in missing:
            out[rv.name] = _data_array(posterior, model, rv, solved[rv.name], sources)
    except _NotRecovered as err:
        why = {rv.name: str(err) for rv in missing}
        _log.debug("free variables not recovered: %s", why)
        out = posterior.copy()
        out.attrs[_UNRECOVERED] = json.dumps(why)
        return Recovery(out, {}, why)
    _log.info(
        "recovered the free variable(s) %s, which the posterior leaves out, from %s",
        [rv.name for rv in missing],
        list(sources),
    )
    return Recovery(out, {rv.name: tuple(sources) for rv in missing}, {})


class _NotRecovered(Exception):
    """The missing free variables are not determined by the deterministics kept."""


def _solve(posterior, model, free, missing) -> tuple[dict, list[str]]:
    """``({name: (S, *shape) draws}, deterministics used)`` of the missing free variables."""
    discrete = [rv.name for rv in missing if np.dtype(rv.dtype).kind in "biu"]
    if discrete:
        raise _NotRecovered(f"{discrete} are discrete")
    for dim in ("chain", "draw"):
        if dim not in posterior.dims:
            raise _NotRecovered(f"the posterior has no {dim!r} dimension")
    sources = _sources(posterior, model, missing)
    fn = per_model(
        model,
        ("recover free variables", tuple(rv.name for rv in missing), tuple(sources)),
        lambda: _Deterministics(model, free, missing, sources),
    )
    n_samples = int(posterior.sizes["chain"]) * int(posterior.sizes["draw"])
    given = [_draws(posterior[rv.name], rv.dtype) for rv in fn.given]
    target = np.concatenate(
        [_draws(posterior[name], "float64").reshape(n_samples, -1) for name in sources], axis=1
    )
    if target.shape[1] != fn.n_rows(given):
        raise _NotRecovered(f"the posterior's {sources} do not have the model's shapes")
    # double precision agrees to rounding (the same draws); single precision to its own
    dtypes = [posterior[name].dtype for name in sources] + [g.dtype for g in given]
    single = any(np.dtype(d).itemsize < 8 for d in [*dtypes, *fn.dtypes])
    u = _affine_solve(fn, given, target, ", ".join(sources), rtol=1e-3 if single else 1e-6)
    return fn.split(u), sources


def _sources(posterior, model, missing) -> list[str]:
    """The smallest posterior deterministics that together depend on every missing variable."""
    wanted = set(missing)
    depends = {}
    for det in model.deterministics:
        if det.name not in posterior:
            continue
        found = wanted & set(graph_ancestors([det]))
        if found:
            depends[det.name] = found
    sizes = {name: int(np.prod(posterior[name].shape[2:], dtype=np.int64)) for name in depends}
    chosen, covered = [], set()
    for name in sorted(depends, key=lambda n: (sizes[n], n)):
        if depends[name] - covered:
            chosen.append(name)
            covered |= depends[name]
    left = wanted - covered
    if left:
        raise _NotRecovered(
            f"no deterministic the posterior holds depends on {sorted(rv.name for rv in left)}"
        )
    return chosen


class _Deterministics:
    """The chosen deterministics as a function of the free variables, batched over draws."""

    def __init__(self, model, free, missing, sources):
        import pytensor.tensor as pt
        from pymc.pytensorf import compile as pm_compile
        from pytensor.graph.replace import clone_replace, vectorize_graph

        self.given = [rv for rv in free if rv not in missing]
        self.missing = list(missing)
        holders = {rv: rv.type() for rv in free}
        replace = {**holders, **{rv: model.rvs_to_values[rv] for rv in model.observed_RVs}}
        outs = clone_replace([model[name] for name in sources], replace=replace)
        # (a name like "1|g_draws" would be read as a dtype by pt.tensor)
        batch = {
            h: pt.tensor(dtype=h.dtype, shape=(None,) * (h.ndim + 1), name=f"edp_draws_{i}")
            for i, h in enumerate(holders.values())
        }
        outs = vectorize_graph(outs, batch)
        n = pt.as_tensor(outs[0]).shape[0]
        flat = pt.concatenate([pt.cast(o.reshape((n, -1)), "float64") for o in outs], axis=1)
        inputs = [batch[holders[rv]] for rv in [*self.given, *self.missing]]
        self._fn = pm_compile(inputs, flat, on_unused_input="ignore")
        self.shapes = _shapes(model, self.missing)
        self.sizes = [int(np.prod(s, dtype=np.int64)) for s in self.shapes]
        self.n_unknowns = int(sum(self.sizes))
        self.dtypes = [rv.dtype for rv in self.missing]

    def __call__(self, given: list[np.ndarray], u: np.ndarray) -> np.ndarray:
        """``(S, n_rows)`` deterministics at ``given`` draws and unknowns ``u`` ``(S, p)``."""
        parts = self.split(u)
        args = [*given, *(parts[rv.name] for rv in self.missing)]
        return np.asarray(self._fn(*args), dtype=np.float64)

    def n_rows(self, given: list[np.ndarray]) -> int:
        """Number of deterministic elements per draw."""
        first = [g[:1] for g in given]
        return int(self(first, np.zeros((1, self.n_unknowns))).shape[1])

    def split(self, u: np.ndarray) -> dict:
        """``{name: (S, *shape)}`` of the flat unknowns ``u`` ``(S, p)``."""
        out, at = {}, 0
        for rv, shape, size, dtype in zip(
            self.missing, self.shapes, self.sizes, self.dtypes, strict=True
        ):
            out[rv.name] = np.ascontiguousarray(
                u[:, at : at + size].reshape(u.shape[0], *shape)
            ).astype(dtype)
            at += size
        return out


def _shapes(model, missing) -> list[tuple]:
    """The shapes of the free variables ``missing`` (at the model's current data)."""
    from pymc.pytensorf import compile as pm_compile

    point = model.initial_point()
    values = list(model.value_vars)
    fn = pm_compile(values, [rv.shape for rv in missing], on_unused_input="ignore")
    return [tuple(int(d) for d in np.asarray(s)) for s in fn(*(point[v.name] for v in values))]


def _draws(da: xr.DataArray, dtype) -> np.ndarray:
    """``(S, ...)`` draws of ``da``, chains one after another."""
    rest = [d for d in da.dims if d not in ("chain", "draw")]
    arr = np.asarray(da.transpose("chain", "draw", *rest).values, dtype=dtype)
    return np.ascontiguousarray(arr.reshape(-1, *arr.shape[2:]))


def _affine_solve(
    fn: _Deterministics, given: list, target: np.ndarray, what: str, rtol: float
) -> np.ndarray:
    """The unknowns ``(S, p)`` with ``fn(given, u) = target``, ``fn`` affine in ``u``, checked."""
    n_samples, n_rows = target.shape
    p = fn.n_unknowns
    if (p + 1) * n_rows > MAX_PROBE:
        raise _NotRecovered(f"{p} unknowns in {n_rows} deterministic elements are too many")
    first = [np.repeat(g[:1], p + 1, axis=0) for g in given]
    probe = fn(first, np.vstack([np.zeros((1, p)), np.eye(p)]))
    size = np.abs(probe).max(axis=0) + np.finfo(float).tiny
    pattern = np.abs(probe[1:] - probe[0]) > 1e-12 * size  # (p, n_rows): column j's rows
    if not pattern.any(axis=1).all():
        raise _NotRecovered(f"the posterior's {what} do not depend on them")
    rows = [np.flatnonzero(pattern[j]) for j in range(p)]
    colours: list[tuple[list[int], np.ndarray]] = []
    for j in range(p):  # greedy colouring: columns sharing no element are probed at once
        for cols, used in colours:
            if not used[rows[j]].any():
                cols.append(j)
                used[rows[j]] = True
                break
        else:
            used = np.zeros(n_rows, dtype=bool)
            used[rows[j]] = True
            colours.append(([j], used))
    offset = fn(given, np.zeros((n_samples, p)))
    coef = [np.empty(0)] * p
    for cols, _ in colours:
        step = np.zeros((n_samples, p))
        step[:, cols] = 1.0
        diff = fn(given, step) - offset
        for j in cols:
            coef[j] = diff[:, rows[j]]
    residual = target - offset
    if (pattern.sum(axis=0) <= 1).all():  # each element depends on one unknown
        u = np.empty((n_samples, p))
        for j in range(p):
            norm = np.sum(coef[j] ** 2, axis=1)
            if not (norm > 0).all():
                raise _NotRecovered(f"the posterior's {what} do not determine them at every draw")
            u[:, j] = np.sum(coef[j] * residual[:, rows[j]], axis=1) / norm
    else:
        u = _dense_solve(coef, rows, residual, p, what)
    _check(fn, given, target, u, coef, rows, what, rtol)
    return u


def _dense_solve(coef, rows, residual: np.ndarray, p: int, what: str) -> np.ndarray:
    """Least squares draw by draw, refusing a rank-deficient ``A``."""
    n_samples, n_rows = residual.shape
    if p > MAX_DENSE_UNKNOWNS or n_samples * n_rows * p > MAX_PROBE:
        raise _NotRecovered(
            f"{p} unknowns that share deterministic elements are too many to solve draw by draw"
        )
    a = np.zeros((n_samples, n_rows, p))
    for j in range(p):
        a[:, rows[j], j] = coef[j]
    sv = np.linalg.svd(a, compute_uv=False)
    if not (sv[:, -1] > 1e-10 * sv[:, 0]).all() or n_rows < p:
        raise _NotRecovered(f"the posterior's {what} do not determine them (rank-deficient)")
    return np.einsum("spq,sq->sp", np.linalg.pinv(a), residual)


def _check(fn: _Deterministics, given, target, u, coef, rows, what: str, rtol: float) -> None:
    """Refuse ``u`` unless it reproduces ``target`` and the map is affine around it."""
    at = fn(given, u)
    if not np.all(np.abs(at - target) <= rtol * (np.abs(at) + np.abs(target)) + 1e-300):
        raise _NotRecovered(f"the posterior's {what} are not an affine function of them")
    rng = np.random.default_rng(20240901)
    delta = rng.standard_normal(u.shape) * (1.0 + np.abs(u))
    moved = np.zeros_like(at)
    for j, (c, r) in enumerate(zip(coef, rows, strict=True)):
        moved[:, r] += c * delta[:, [j]]
    again = fn(given, u + delta)
    scale = np.abs(again) + np.abs(at) + np.abs(moved)
    if not np.all(np.abs(again - at - moved) <= rtol * scale + 1e-300):
        raise _NotRecovered(f"the posterior's {what} are not an affine function of them")


def _data_array(posterior: xr.Dataset, model, rv, draws: np.ndarray, sources) -> xr.DataArray:
    """``draws`` ``(S, *shape)`` as a posterior variable, with the model's dims and coords."""
    n_chain, n_draw = int(posterior.sizes["chain"]), int(posterior.sizes["draw"])
    shape = draws.shape[1:]
    dims = model.named_vars_to_dims.get(rv.name) or ()
    if len(dims) != len(shape) or any(d is None for d in dims):
        dims = tuple(f"{rv.name}_dim_{i}" for i in range(len(shape)))
    coords = {}
    for dim, size in zip(dims, shape, strict=True):
        if dim in posterior.coords and posterior.sizes.get(dim) == size:
            coords[dim] = posterior.coords[dim].values
        elif (model.coords.get(dim) is not None) and len(model.coords[dim]) == size:
            coords[dim] = np.asarray(model.coords[dim])
        elif dim in posterior.dims:  # a dimension of another size: not this one
            raise _NotRecovered(f"its dimension {dim!r} does not have the posterior's size")
    if "chain" in posterior.coords and "draw" in posterior.coords:
        coords = {"chain": posterior["chain"].values, "draw": posterior["draw"].values, **coords}
    return xr.DataArray(
        draws.reshape(n_chain, n_draw, *shape),
        dims=("chain", "draw", *dims),
        coords=coords,
        attrs={RECOVERED: ", ".join(sources)},
    )

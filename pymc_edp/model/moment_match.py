"""Moment matching of neighbour posteriors for any PyMC model.

:class:`ModelDensity` compiles from the ``pm.Model``, vectorised over draws, the joint log
density in the unconstrained space, the elementwise log-likelihoods (whose log ratios are the
neighbours) and the map back to the audited parameters. :func:`moment_match_neighbours`
repairs the neighbours whose PSIS k-hat is bad and bins each as reweighting and refits do.

References
----------
.. [1] Paananen, T., Piironen, J., Bürkner, P.-C. and Vehtari, A. "Implicitly adaptive
   importance sampling." Statistics and Computing 31(2), 2021.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from pymc_edp.base.affine import moment_match, moved_log_ratio_se, one_thread, split_halves
from pymc_edp.base.binning import Bins, assign_bins, epsilon_from_log_masses, log_bin_masses
from pymc_edp.base.psis import PSIS_TAIL_RULE
from pymc_edp.base.psis import khat_threshold as default_khat_threshold
from pymc_edp.base.validate import as_options, check_int, check_real
from pymc_edp.core.loglik import posterior_matrix
from pymc_edp.model.cache import per_model
from pymc_edp.model.compat import observed_data
from pymc_edp.model.coupled import record_logp
from pymc_edp.model.fit import Fit
from pymc_edp.model.pymc import sampled_without_nuts
from pymc_edp.model.recover import lacking_message
from pymc_edp.model.stream import _sample_array

__all__ = [
    "MatchInputs",
    "ModelDensity",
    "MomentMatchOptions",
    "MomentMatchOutcome",
    "moment_match_neighbours",
]


@dataclass(frozen=True)
class MomentMatchOptions:
    """How neighbours with a bad Pareto k-hat are moment-matched [1]_.

    Parameters
    ----------
    max_iters : int, default 30
        Most accepted affine transformations per neighbour.
    split : bool, default True
        Transform half of the draws and combine both halves by multiple importance sampling
        (loo's default).
    cov : bool, default True
        Also match the covariance, not only the mean and marginal variances.
    khat_threshold : float, optional
        Stop at or below it; default :func:`pymc_edp.base.psis.khat_threshold`.

    References
    ----------
    .. [1] Paananen, T., Piironen, J., Bürkner, P.-C. and Vehtari, A. "Implicitly adaptive
       importance sampling." Statistics and Computing 31(2), 2021.

    Examples
    --------
    >>> from pymc_edp.model.moment_match import MomentMatchOptions
    >>> MomentMatchOptions.coerce({"max_iters": 10}).max_iters
    10
    """

    max_iters: int = 30
    split: bool = True
    cov: bool = True
    khat_threshold: float | None = None

    def __post_init__(self):
        check_int(self.max_iters, "max_iters", 0)
        for name in ("split", "cov"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.khat_threshold is not None:
            check_real(self.khat_threshold, "khat_threshold")

    @classmethod
    def coerce(cls, value: MomentMatchOptions | Mapping | None) -> MomentMatchOptions:
        """``value`` as options: None gives the defaults, a dict its fields."""
        return as_options(cls, value, "moment_match")

    def threshold(self, n_samples: int) -> float:
        """The k-hat threshold for ``n_samples`` draws."""
        if self.khat_threshold is None:
            return default_khat_threshold(n_samples)
        return float(self.khat_threshold)


@dataclass(frozen=True)
class MomentMatchOutcome:
    """Epsilon of one moment-matched neighbour.

    Attributes
    ----------
    eps, argbin, eps_unsmoothed, bin_draws, limit : ndarray, shape (n_parameters,)
        As :class:`pymc_edp.base.binning.EpsilonEstimate` (``bin_draws``: effective moved
        draws in the bin).
    khat_before, khat_after : float
        Pareto k-hat of plain PSIS and after moment matching.
    mcse : float
        Monte-Carlo standard error of the epsilon at its worst parameter and bin
        (:func:`pymc_edp.base.affine.moved_log_ratio_se`).
    iterations : int
        Accepted transformations.
    converged : bool
        ``khat_after <= threshold``.
    ess : float
        Effective sample size of the final weights.
    transforms : tuple of str
        The accepted transformations, in order.
    """

    eps: np.ndarray
    argbin: np.ndarray
    eps_unsmoothed: np.ndarray
    bin_draws: np.ndarray
    limit: np.ndarray
    khat_before: float
    khat_after: float
    mcse: float
    iterations: int
    converged: bool
    ess: float
    transforms: tuple[str, ...]


def _sizes(shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1


class ModelDensity:
    """A PyMC model's densities at batches of unconstrained draws, each compiled once.

    Unconstrained draws are ``(n_dims, S)`` matrices: ``model.value_vars`` in order, each
    flattened in C order. ``names`` are the audited variables of :meth:`constrained`.
    """

    def __init__(self, model, names: Sequence[str]):
        import pytensor.tensor as pt

        self._model = weakref.ref(model)  # cached per model (pymc_edp.model.cache)
        discrete = [v.name for v in getattr(model, "discrete_value_vars", [])]
        if discrete:
            raise ValueError(
                f"moment matching needs a continuous parameter space, but the model has the "
                f"discrete variable(s) {discrete}; use method='refit' for its bad neighbours"
            )
        other = sampled_without_nuts(model)
        if other:
            steps = ", ".join(f"{k} by {v}" for k, v in other.items())
            raise ValueError(
                f"moment matching moves draws along the model's joint density, which does not "
                f"describe {list(other)} (PyMC samples them with their own step method: "
                f"{steps}; a BART variable's prior is over its trees); use method='refit' "
                "for the bad neighbours"
            )
        self.names = list(names)
        unknown = [n for n in self.names if n not in model.named_vars]
        if unknown:
            raise ValueError(
                f"variable(s) {unknown} are not in the model, whose variables are "
                f"{sorted(model.named_vars)}"
            )
        point = model.initial_point()
        self.value_vars = list(model.value_vars)
        self.shapes = [tuple(point[v.name].shape) for v in self.value_vars]
        bounds = np.concatenate([[0], np.cumsum([_sizes(s) for s in self.shapes])])
        self.slices = [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
        self.n_dims = int(bounds[-1])

        self._input = pt.matrix("edp_unconstrained", dtype="float64")
        n = self._input.shape[0]
        self._batched = {
            v: self._input[:, sl].reshape((n, *shape)).astype(v.dtype)
            for v, sl, shape in zip(self.value_vars, self.slices, self.shapes, strict=True)
        }
        self.observed = [rv.name for rv in model.observed_RVs]
        self._y_dtype = {rv.name: model.rvs_to_values[rv].dtype for rv in model.observed_RVs}
        self._functions: dict = {}  # compiled when first used: an audit needs only some

    def _function(self, key: str):
        """Compiled function ``"logp"``, ``"joint"``, ``"constrained"`` or ``"loglik:<name>"``."""
        fn = self._functions.get(key)
        if fn is not None:
            return fn
        import pytensor.tensor as pt
        from pytensor.graph.replace import vectorize_graph

        model, flat = self.model, self._input
        inputs, outputs = [flat], None
        if key == "logp":
            outputs = model.logp(jacobian=True, sum=True)
        elif key == "joint":
            # the joint density and every log-likelihood (coupled: each record's leave-one-out
            # conditional) at the model's data, the terms computed once
            outputs = [model.logp(jacobian=True, sum=True)]
            outputs += [record_logp(model, rv) for rv in model.observed_RVs]
        elif key == "constrained":
            outputs = list(model.replace_rvs_by_values([model[n] for n in self.names]))
        else:
            rv = model[key.removeprefix("loglik:")]
            data = model.rvs_to_values[rv]
            y_in = pt.tensor(name=f"{rv.name}_edp_y", dtype=data.dtype, shape=(None,) * data.ndim)
            inputs, outputs = [flat, y_in], record_logp(model, rv, y_in)
        fn = self._compile(inputs, vectorize_graph(outputs, self._batched))
        self._functions[key] = fn
        return fn

    @property
    def model(self):
        """The PyMC model (held weakly: a density is kept for as long as its model lives)."""
        model = self._model()
        if model is None:  # pragma: no cover - the caller holds the model
            raise ReferenceError("the model of this ModelDensity is gone")
        return model

    @staticmethod
    def _compile(inputs, outputs):
        from pymc.pytensorf import compile as pm_compile

        return pm_compile(inputs, outputs, on_unused_input="ignore")

    # ------------------------------------------------------------------ evaluation
    def _flat(self, u: np.ndarray) -> np.ndarray:
        u = np.atleast_2d(np.asarray(u, dtype=np.float64))
        if u.shape[0] != self.n_dims:
            raise ValueError(f"expected {self.n_dims} unconstrained dimensions, got {u.shape[0]}")
        return np.ascontiguousarray(u.T)

    def log_density(self, u: np.ndarray) -> np.ndarray:
        """Joint log density (prior, likelihood, potentials, Jacobians) at ``u``, shape (S,)."""
        return np.asarray(self._function("logp")(self._flat(u)), dtype=float).reshape(-1)

    def log_density_and_likelihood(self, u: np.ndarray) -> tuple[np.ndarray, dict]:
        """:meth:`log_density` and ``{name: (S, n_records)}`` log-likelihoods, in one call."""
        flat = self._flat(u)
        lp, *lls = self._function("joint")(flat)
        n = flat.shape[0]
        return np.asarray(lp, dtype=float).reshape(-1), {
            name: np.asarray(ll).reshape(n, -1)
            for name, ll in zip(self.observed, lls, strict=True)
        }

    def model_data(self, name: str) -> np.ndarray | None:
        """The values of observed ``name`` the model holds (None if not a plain array)."""
        return observed_data(self.model, name)

    def log_likelihood(self, name: str, u: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Elementwise log-likelihood of observed ``name`` at data ``y``, shape (S, n_records)."""
        flat = self._flat(u)
        fn = self._function(f"loglik:{name}")
        out = np.asarray(fn(flat, np.asarray(y, dtype=self._y_dtype[name])))
        return out.reshape(flat.shape[0], -1)

    def constrained(self, u: np.ndarray) -> np.ndarray:
        """The audited variables at ``u``, ``(n_parameters, S)``, as ``posterior_matrix``."""
        flat = self._flat(u)
        outs = self._function("constrained")(flat)
        outs = outs if isinstance(outs, list | tuple) else [outs]
        rows = [np.asarray(o, dtype=float).reshape(flat.shape[0], -1).T for o in outs]
        return np.concatenate(rows, axis=0)

    # ------------------------------------------------------------------ draws
    def unconstrained_from(
        self, posterior: xr.Dataset, unconstrained: xr.Dataset | None = None
    ) -> np.ndarray:
        """The posterior draws in the unconstrained space, ``(n_dims, S)`` chain-major.

        From ``unconstrained`` (or the posterior, PyMC 5's ``include_transformed``) where it
        holds a value variable, else by the value variable's transform.
        """
        unc = xr.Dataset() if unconstrained is None else unconstrained
        model = self.model
        blocks: list[np.ndarray | None] = []
        to_transform = []
        for k, v in enumerate(self.value_vars):
            rv = model.values_to_rvs[v]
            if v.name in unc:
                blocks.append(_sample_matrix(unc[v.name], self.shapes[k]))
            elif v.name in posterior and v.name != rv.name:
                blocks.append(_sample_matrix(posterior[v.name], self.shapes[k]))
            elif rv.name not in posterior:
                missing = [
                    model.values_to_rvs[w].name
                    for w in self.value_vars
                    if model.values_to_rvs[w].name not in posterior and w.name not in unc
                ]
                raise ValueError(
                    lacking_message(posterior, missing, "moment matching needs every one")
                )
            elif model.rvs_to_transforms.get(rv) is None:
                blocks.append(_sample_matrix(posterior[rv.name], self.shapes[k]))
            else:
                blocks.append(None)
                to_transform.append(k)
        if to_transform:
            forward = self._forward_transforms(to_transform, posterior)
            for k, arr in zip(to_transform, forward, strict=True):
                blocks[k] = arr
        return np.concatenate(blocks, axis=0)

    def _forward_transforms(self, which: list[int], posterior: xr.Dataset) -> list[np.ndarray]:
        """The forward transforms of value variables ``which`` at the posterior draws."""
        import pytensor.tensor as pt
        from pytensor.graph.replace import clone_replace, vectorize_graph

        model = self.model
        free = list(model.free_RVs)
        missing = [rv.name for rv in free if rv.name not in posterior]
        if missing:
            raise ValueError(
                lacking_message(posterior, missing, "moment matching needs every one")
            )
        holders = {rv: rv.type() for rv in free}
        outputs = []
        for k in which:
            rv = model.values_to_rvs[self.value_vars[k]]
            transform = model.rvs_to_transforms[rv]
            out = transform.forward(holders[rv], *rv.owner.inputs)
            (out,) = clone_replace([out], replace=holders)
            outputs.append(out)
        draws, batch = {}, {}
        for rv, h in holders.items():
            arr = _sample_array(posterior[rv.name]).astype(rv.dtype)
            draws[rv] = arr
            batch[h] = pt.tensor(dtype=rv.dtype, shape=(None,) * arr.ndim)
        outs = vectorize_graph(outputs, batch)
        fn = self._compile(list(batch.values()), outs)
        res = fn(*(draws[rv] for rv in holders))
        n = next(iter(draws.values())).shape[0]
        return [np.asarray(r, dtype=float).reshape(n, -1).T for r in res]


def _sample_matrix(da: xr.DataArray, shape) -> np.ndarray:
    arr = _sample_array(da)
    if _sizes(arr.shape[1:]) != _sizes(shape):
        raise ValueError(
            f"posterior variable {da.name!r} has shape {arr.shape[1:]} per draw, the model's "
            f"value variable has {shape}"
        )
    return arr.reshape(arr.shape[0], -1).T.astype(float)


@dataclass
class _Prepared:
    """Everything shared by the neighbours of one audit."""

    density: ModelDensity
    u: np.ndarray
    log_density: np.ndarray
    observed: dict[str, np.ndarray]
    log_lik: dict[str, np.ndarray]
    draws: np.ndarray
    order: np.ndarray
    n_chains: int
    fused: bool = False
    log_lik_input: dict = field(default_factory=dict)

    def log_target(self, x: np.ndarray) -> np.ndarray:
        """The joint log density at ``x``, from the fused function where it serves."""
        if not self.fused:
            return self.density.log_density(x)
        return self.density.log_density_and_likelihood(x)[0]

    def log_lik_at_draws(self, name: str, input_: bool) -> np.ndarray:
        """Log-likelihood of ``name`` at the draws; ``input_``: from the data-input function."""
        if not (input_ and self.fused):
            return self.log_lik[name]
        if name not in self.log_lik_input:
            y = self.observed[name]
            self.log_lik_input[name] = self.density.log_likelihood(name, self.u, y)
        return self.log_lik_input[name]


@dataclass(frozen=True)
class MatchInputs:
    """What moment matching reads from a fit, read once.

    ``draws`` is ``posterior_matrix(posterior, names)``; ``observed`` every observed variable's
    values; ``unconstrained`` the ``unconstrained_posterior`` group; ``rows`` the rows of
    ``draws`` the bins were cut from (None: all).
    """

    posterior: xr.Dataset
    draws: np.ndarray
    observed: Mapping[str, np.ndarray]
    unconstrained: xr.Dataset | None = None
    rows: np.ndarray | None = None

    @classmethod
    def from_fit(cls, data, model, names: Sequence[str]) -> MatchInputs:
        """Read them from ``data`` (as :meth:`Fit.of`), else the model for observed values."""
        from pymc_edp.model.pymc import observed_values

        fit = Fit.of(data)
        posterior = fit.group("posterior")
        observed = {rv.name: observed_values(fit, model, rv.name) for rv in model.observed_RVs}
        matrix = posterior_matrix(posterior, names)[0]
        return cls(posterior, matrix, observed, fit.unconstrained_posterior)


def _prepare(model, data: MatchInputs, names: Sequence[str], density) -> _Prepared:
    """Compile (or reuse) the model's densities and evaluate them at the posterior draws."""
    if density is None or density.model is not model or density.names != list(names):
        key = ("ModelDensity", tuple(names))
        density = per_model(model, key, lambda: ModelDensity(model, names))
    u = density.unconstrained_from(data.posterior, data.unconstrained)
    missing = [name for name in density.observed if name not in data.observed]
    if missing:
        raise ValueError(
            f"cannot find the observed values of {missing}: the posterior has no "
            "observed_data for them and the model holds none"
        )
    observed = {name: np.asarray(data.observed[name]) for name in density.observed}
    # the posterior's observed data are the model's: one call gives density and log-likelihoods
    fused = all(_same_values(y, density.model_data(name)) for name, y in observed.items())
    if fused:
        lp, log_lik = density.log_density_and_likelihood(u)
    else:
        lp = density.log_density(u)
        log_lik = {name: density.log_likelihood(name, u, y) for name, y in observed.items()}
    _check_finite(lp, "the model's joint log density")
    for name, ll in log_lik.items():
        _check_finite(ll, f"the log-likelihood of {name!r}")
    draws = data.draws
    back = density.constrained(u)
    if back.shape != draws.shape or not np.allclose(back, draws, rtol=1e-6, atol=1e-8):
        raise ValueError(
            "the model maps the unconstrained draws to values that differ from the "
            "posterior's: the draws do not come from this model (or its data changed)"
        )
    return _Prepared(
        density=density,
        u=u,
        log_density=lp,
        observed=observed,
        log_lik=log_lik,
        draws=draws,
        order=np.argsort(draws, axis=1, kind="stable"),
        n_chains=int(data.posterior.sizes.get("chain", 1)),
        fused=fused,
    )


def _same_values(y: np.ndarray, data: np.ndarray | None) -> bool:
    return data is not None and np.shape(y) == np.shape(data) and np.array_equal(y, data)


def _check_finite(values: np.ndarray, what: str) -> None:
    bad = ~np.isfinite(values)
    if bad.any():
        s = int(np.argwhere(bad)[0][0])
        raise ValueError(
            f"{what} is not finite at {int(bad.sum())} value(s), first at draw {s}: moment "
            "matching needs finite densities at every posterior draw (check the model's "
            "support and the data)"
        )


def _log_ratio_fn(prep: _Prepared, changes: Mapping) -> tuple[Callable, Callable, np.ndarray]:
    """``(f, f_and_density, f(u))``: the neighbour's ``log p(.|D') - log p(.|D)`` in draws."""
    density = prep.density
    parts = []
    for name, (local, values) in changes.items():
        local = np.asarray(local, dtype=np.int64)
        if name not in prep.observed:
            raise ValueError(
                f"{name!r} is not an observed variable of the model, whose observed variables "
                f"are {list(prep.observed)}"
            )
        if local.size == 0:
            continue
        y = prep.observed[name]
        y_alt = None
        if values is not None:
            n_v = prep.log_lik[name].shape[1]
            y_alt = np.array(y, copy=True)
            y_alt.reshape(n_v, -1)[local] = np.asarray(values).reshape(local.size, -1)
        parts.append((name, local, y, y_alt))

    def log_ratio(x: np.ndarray, at_draws: bool = False, log_lik=None) -> np.ndarray:
        total = np.zeros(np.shape(x)[1])
        for name, local, y, y_alt in parts:
            # a replaced record's two terms from one function, so that an unchanged value cancels
            replaced = y_alt is not None
            if at_draws:
                base = prep.log_lik_at_draws(name, replaced)
            elif log_lik is not None and not replaced:
                base = log_lik[name]
            else:
                base = density.log_likelihood(name, x, y)
            total -= base[:, local].sum(axis=1)
            if y_alt is not None:
                total += density.log_likelihood(name, x, y_alt)[:, local].sum(axis=1)
        return total

    def both(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not prep.fused:
            return density.log_density(x), log_ratio(x)
        lp, log_lik = density.log_density_and_likelihood(x)
        return lp, log_ratio(x, log_lik=log_lik)

    lr0 = log_ratio(prep.u, at_draws=True)
    _check_finite(lr0, "the neighbour's log density ratio")
    return log_ratio, both, lr0


def moment_match_neighbours(
    model,
    idata,
    indices: Sequence[int],
    changes_of: Callable[[int], Mapping],
    *,
    names: Sequence[str],
    bins: Bins,
    smoothing: float,
    reff: float,
    options: MomentMatchOptions | Mapping | None = None,
    progressbar: bool = False,
    density: ModelDensity | None = None,
) -> dict[int, MomentMatchOutcome]:
    """Moment-match neighbours and compute their per-parameter B-EDP epsilon.

    The full-data draws are moved in the unconstrained space
    (:func:`pymc_edp.base.affine.moment_match`), mapped to the audited parameters and binned
    in the full-data bins, as reweighting and refits do.

    Parameters
    ----------
    model : pymc.Model
    idata : xarray.DataTree, arviz.InferenceData or MatchInputs
        With the posterior of every free variable (an ``unconstrained_posterior`` group is
        used when present).
    indices : sequence of int
        The neighbours to repair.
    changes_of : callable
        ``changes_of(k)``, as :func:`pymc_edp.model.transform.neighbour_changes` returns.
    names : sequence of str
        Audited posterior variables, in the order of ``bins``' parameters.
    bins : Bins
    smoothing : float
        Additive smoothing in units of draws.
    reff : float
        Relative MCMC efficiency for PSIS.
    options : MomentMatchOptions or dict, optional
    progressbar : bool, default False
        Accepted for symmetry; nothing is displayed.
    density : ModelDensity, optional
        A compiled :class:`ModelDensity` to reuse.

    Returns
    -------
    dict of int to MomentMatchOutcome

    References
    ----------
    .. [1] Paananen, T., Piironen, J., Bürkner, P.-C. and Vehtari, A. "Implicitly adaptive
       importance sampling." Statistics and Computing 31(2), 2021.
    """
    del progressbar
    options = MomentMatchOptions.coerce(options)
    indices = [int(k) for k in indices]
    if not indices:
        return {}
    if not isinstance(idata, MatchInputs):
        idata = MatchInputs.from_fit(idata, model, names)
    prep = _prepare(model, idata, names, density)
    rows = np.arange(prep.draws.shape[0]) if idata.rows is None else np.asarray(idata.rows)
    n_par, n_samples = rows.size, prep.draws.shape[1]
    if bins.index.shape != (n_par, n_samples):
        raise ValueError(
            f"bins were cut from {bins.index.shape} draws, the posterior of {list(names)} "
            f"has {(n_par, n_samples)}"
        )
    threshold = options.threshold(n_samples)
    with one_thread():
        return {
            k: _one_neighbour(prep, changes_of(k), bins, smoothing, reff, options, threshold, rows)
            for k in indices
        }


def _one_neighbour(prep, changes, bins, smoothing, reff, options, threshold, rows):
    """Moment-match one neighbour and bin its final weighted draws (the ``rows`` binned)."""
    n_samples = prep.draws.shape[1]
    take = split_halves(n_samples, prep.n_chains)
    full_mass = bins.counts / n_samples
    log_ratio, both, lr0 = _log_ratio_fn(prep, changes)
    res = moment_match(
        prep.u,
        prep.log_target,
        log_ratio,
        reff=reff,
        khat_threshold=threshold,
        max_iters=options.max_iters,
        split=options.split,
        cov=options.cov,
        tail_rule=PSIS_TAIL_RULE,
        n_chains=prep.n_chains,
        log_target_draws=prep.log_density,
        log_ratio_draws=lr0,
        log_target_and_ratio=both,
    )
    if res.iterations == 0:
        theta = prep.draws
    else:
        theta = prep.density.constrained(res.draws)
        if res.split:  # the untransformed half: the posterior's own values, bit for bit
            theta[:, ~take] = prep.draws[:, ~take]
    theta = theta[rows]
    idx = assign_bins(theta, bins)
    log_mass, ess = log_bin_masses(res.log_weights, idx, bins.n_bins)
    with np.errstate(divide="ignore"):
        log_full = np.log(full_mass)
    est = epsilon_from_log_masses(
        log_mass, log_full, bins.n_bins, n_samples, smoothing, bin_draws=ess
    )
    eps, argbin = est.eps, est.argbin
    worst = int(np.argmax(eps))
    _, se, _ = moved_log_ratio_se(
        res.log_weights,
        theta,
        bins,
        worst,
        int(argbin[worst]),
        draws=prep.draws[rows],
        order=prep.order[rows],
        n_chains=prep.n_chains,
        smoothing=smoothing,
        strata=take if res.split else None,
    )
    return MomentMatchOutcome(
        eps=eps,
        argbin=argbin.astype(np.int64),
        eps_unsmoothed=est.eps_unsmoothed,
        bin_draws=est.bin_draws,
        limit=est.limit,
        khat_before=res.khat_before,
        khat_after=res.khat_after,
        mcse=se,
        iterations=res.iterations,
        converged=bool(res.khat_after <= threshold),
        ess=res.ess,
        transforms=res.transforms,
    )

"""Tune the strength of a prior so that the posterior meets a target B-EDP epsilon.

A stronger prior (a smaller prior scale, a larger concentration) makes the posterior less
sensitive to any one record, so its empirical differential privacy (EDP) epsilon falls.
:func:`tune_prior` searches a scalar hyperparameter for the value whose posterior has a target
epsilon: fast importance-reweighted audits inside the search, then a confirmation audit with
the method the user chose, and the utility the stronger prior costs.

Choosing a prior after looking at the data leaks information about the data that no audit of
the resulting posterior accounts for (Charest & Han 2017, sec. 2), and EDP is a sensitivity
measure of one posterior on one data set, not a differential-privacy guarantee.

References
----------
.. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (sec. 2: prior tuning and
   its leakage; eq. 2: B-EDP).
.. [2] Abowd, J. M., Schneider, M. J. and Vilhuber, L. "Differential privacy applications to
   Bayesian and linear mixed model estimation." Journal of Privacy and Confidentiality 5(1),
   2013.
"""

from __future__ import annotations

import itertools
import logging
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

from pymc_edp.base import binning
from pymc_edp.model.compat import compute_log_likelihood, ess, get_group, make_container
from pymc_edp.audit import METHODS, NEIGHBOUR_RELATIONS, audit
from pymc_edp.result import NEIGHBOUR_DIM, PARAMETER_DIM, EDPResult, EDPWarning
from pymc_edp.model.loglik import posterior_matrix

__all__ = ["LEAKAGE_CAVEAT", "PriorTuningResult", "bootstrap_epsilon_mcse", "tune_prior"]

_log = logging.getLogger("pymc_edp")

TRIAL_DIM = "trial"
DIRECTIONS = ("auto", "increasing", "decreasing")

LEAKAGE_CAVEAT = (
    "The prior was tuned on the data: the chosen hyperparameter is itself a function of the "
    "data and leaks information about it that the audited epsilon does not count (Charest & "
    "Han 2017, sec. 2); a formal guarantee would have to spend privacy budget on the choice "
    "too. EDP measures how far this posterior moves on this data set when one record changes; "
    "it is not differential privacy."
)


# ----------------------------------------------------------------------------- result
@dataclass(frozen=True)
class PriorTuningResult:
    """A prior strength tuned to a target epsilon, with the evidence and the price paid.

    Attributes
    ----------
    value : float
        The tuned value of the hyperparameter.
    epsilon : float
        B-EDP epsilon at ``value`` from the confirmation audit (an independent sample and
        the method the user chose).
    mcse : float
        Monte-Carlo standard error of ``epsilon`` (:func:`bootstrap_epsilon_mcse`).
    target_epsilon : float
        The target.
    hyperparameter : str or None
        Name of the ``pm.Data`` hyperparameter; None for the builder form.
    initial_value : float
        The untuned value the utility cost is measured against.
    initial_epsilon : float
        Reweighted epsilon at ``initial_value`` (search seed).
    search_epsilon : float
        Reweighted epsilon at ``value`` during the search (common random numbers).
    bins : int
        Number of bins ``B``.
    neighbour : str
        Neighbour relation.
    method : str
        Method of the confirmation audit.
    direction : str
        ``"increasing"`` if epsilon grows with the hyperparameter (a scale),
        ``"decreasing"`` if it falls (a concentration or precision).
    monotone : bool
        False when the evaluated epsilons were not monotone in the hyperparameter beyond
        their Monte-Carlo error (then several values may meet the target).
    stopped : str
        Why the search stopped: ``"tolerance"`` (an evaluation met ``rtol``),
        ``"noise"`` (the epsilons at the ends of the bracket were within twice their
        Monte-Carlo error of each other), ``"xtol"`` or ``"maxiter"``. Unless an evaluation
        met ``rtol`` with a Monte-Carlo error below ``rtol`` too, the answer is the root of
        a weighted line through the trials near the target (stage ``"final"``).
    trials : xarray.Dataset
        Over dimension ``trial`` in evaluation order: ``value``, ``epsilon``, ``mcse``,
        ``max_pareto_k``, ``stage`` (``"initial"``, ``"bracket"``, ``"root"``, ``"final"``).
    utility : xarray.Dataset
        Over dimension ``parameter``: posterior ``mean_untuned``, ``sd_untuned``,
        ``mean_tuned``, ``sd_tuned``, ``mean_shift`` (tuned minus untuned),
        ``mean_shift_sd`` (the shift in untuned posterior standard deviations) and
        ``sd_ratio`` (tuned over untuned).
    warnings : tuple of str
        :data:`LEAKAGE_CAVEAT` first, then the diagnostics raised during the search and
        the confirmation.
    audit : EDPResult
        The confirmation audit.
    idata : arviz.InferenceData
        Posterior at ``value`` (with ``log_likelihood``) the confirmation audited.
    idata_untuned : arviz.InferenceData
        Posterior at ``initial_value``.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017, sec. 2.

    Examples
    --------
    Returned by :func:`tune_prior`, which samples the model repeatedly; built by hand here
    (``trials`` and ``utility`` cut down to one variable each):

    >>> import xarray as xr
    >>> from pymc_edp import PriorTuningResult
    >>> res = PriorTuningResult(
    ...     value=1.2, epsilon=0.31, mcse=0.01, target_epsilon=0.3, hyperparameter="sigma0",
    ...     initial_value=1.73, initial_epsilon=0.45, search_epsilon=0.3, bins=20,
    ...     neighbour="remove", method="psis", direction="increasing", monotone=True,
    ...     stopped="tolerance", trials=xr.Dataset({"value": ("trial", [1.73, 1.2])}),
    ...     utility=xr.Dataset({"mean_shift": ("parameter", [0.05])},
    ...                        coords={"parameter": ["mu"]}))
    >>> round(res.relative_error, 4)
    0.0333
    >>> res.summary().to_dict()
    {'mean_shift': {'mu': 0.05}}
    """

    value: float
    epsilon: float
    mcse: float
    target_epsilon: float
    hyperparameter: str | None
    initial_value: float
    initial_epsilon: float
    search_epsilon: float
    bins: int
    neighbour: str
    method: str
    direction: str
    monotone: bool
    stopped: str
    trials: xr.Dataset
    utility: xr.Dataset
    warnings: tuple = ()
    audit: EDPResult | None = field(default=None, repr=False, compare=False)
    idata: object | None = field(default=None, repr=False, compare=False)
    idata_untuned: object | None = field(default=None, repr=False, compare=False)

    @property
    def relative_error(self) -> float:
        """``(epsilon - target_epsilon) / target_epsilon`` of the confirmation audit."""
        return (self.epsilon - self.target_epsilon) / self.target_epsilon

    def summary(self) -> pd.DataFrame:
        """The utility cost, one row per audited scalar parameter.

        Returns
        -------
        pandas.DataFrame
        """
        df = self.utility.to_dataframe()
        df.index = df.index.astype(str)
        return df

    def __repr__(self) -> str:
        name = self.hyperparameter or "strength"
        lines = [
            f"Prior tuned to a target B-EDP (B = {self.bins}, neighbour = {self.neighbour})",
            f"{name} = {self.value:.6g}  (untuned {self.initial_value:.6g}; epsilon "
            f"{self.direction} in {name})",
            f"epsilon = {self.epsilon:.4f} +- {self.mcse:.4f} (MCSE, {self.method})  target "
            f"{self.target_epsilon:.4f}  relative error {100 * self.relative_error:+.1f}%",
            f"untuned epsilon = {self.initial_epsilon:.4f}; {self.trials.sizes[TRIAL_DIM]} "
            f"trial values, stopped on {self.stopped}"
            + ("" if self.monotone else "; epsilon NOT monotone over the evaluated values"),
            "",
            "Utility cost (posterior mean and sd, untuned -> tuned):",
            self.summary().to_string(float_format=lambda x: f"{x:.4g}"),
            "",
            "Warnings:",
        ]
        lines += [f"- {w}" for w in self.warnings]
        return "\n".join(lines)


# ------------------------------------------------------------------------------ MCSE
def _block_length(draws: np.ndarray, n_chains: int) -> int:
    """Moving-block length: ``max(S_c^(1/3), 2 tau)`` with ``tau = S / min ESS``."""
    n_par, n_samples = draws.shape
    per_chain = n_samples // n_chains
    tau = 1.0
    chains = draws.reshape(n_par, n_chains, per_chain)
    bulk = ess(xr.Dataset({"x": (("p", "chain", "draw"), chains)}), method="bulk")["x"].values
    for p in range(n_par):
        ess_p = float(bulk[p])
        if np.isfinite(ess_p) and ess_p > 0:
            tau = max(tau, n_samples / ess_p)
    return int(min(per_chain, max(math.ceil(per_chain ** (1 / 3)), math.ceil(2 * tau))))


def _block_indices(rng: np.random.Generator, n_chains: int, per_chain: int, block: int):
    """Circular moving-block bootstrap indices, resampled within each chain."""
    n_blocks = -(-per_chain // block)
    starts = rng.integers(0, per_chain, size=(n_chains, n_blocks))
    idx = (starts[..., None] + np.arange(block)) % per_chain
    idx = idx.reshape(n_chains, -1)[:, :per_chain]
    return (idx + per_chain * np.arange(n_chains)[:, None]).ravel()


def _refit_draws(result: EDPResult, label) -> tuple[np.ndarray, int] | None:
    """Draws ``(parameter, sample)`` of a refitted neighbour and its number of chains."""
    if result.refits is None:
        return None
    try:
        post = get_group(result.refits[label], "posterior")
    except KeyError:
        return None
    names = list(dict.fromkeys(result.parameters["var_name"].values.astype(str)))
    draws, labels, _ = posterior_matrix(post, names)
    if list(labels) != list(result.parameters[PARAMETER_DIM].values.astype(str)):
        return None
    return np.asarray(draws, dtype=float), int(post.sizes.get("chain", 1))


def _removal_log_ratios(result: EDPResult, idata, model, groups, observed):
    """``k -> (log r at the full draws, function of a refit posterior)`` for removal."""
    if idata is None or model is None or not result.neighbour.startswith("remove"):
        return None
    from pymc_edp.model.loglik import LogLikelihood, Neighbours

    if isinstance(observed, str):
        observed = [observed]
    ll = LogLikelihood.from_dataset(get_group(idata, "log_likelihood"), observed)
    nbs = Neighbours.records(ll) if groups is None else Neighbours.from_groups(ll, groups)
    if len(nbs) != result.n_neighbours:
        return None

    def ratios(k: int, post: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
        rows = nbs.rows[nbs.indptr[k] : nbs.indptr[k + 1]]
        ds = compute_log_likelihood(make_container({"posterior": post}), model, var_names=ll.names)
        ll_refit = LogLikelihood.from_dataset(ds, ll.names)
        return -ll.gather(rows).sum(axis=0), -ll_refit.gather(rows).sum(axis=0)

    return ratios


def bootstrap_epsilon_mcse(
    result: EDPResult,
    *,
    idata=None,
    model=None,
    groups=None,
    observed: str | Sequence[str] | None = None,
    n_bootstrap: int = 100,
    top_k: int = 32,
    random_seed=None,
) -> float:
    """Monte-Carlo standard error of an audit's epsilon by a moving-block bootstrap.

    The full-data draws (with each neighbour's smoothed log-weights) are resampled in
    blocks within each chain, so autocorrelation is respected (block length
    ``max(S_c^(1/3), 2 S / ESS)``); the bins are recut and every reweighted neighbour's
    epsilon recomputed on each replicate. A refitted neighbour's draws are resampled the same
    way. With ``idata`` and ``model`` (and removal neighbours) its pooled estimate is
    recomputed exactly as the audit made it; otherwise its estimate is moved by the change
    of the refit-only (raw) estimator, whose spread is larger than the pooled estimator's,
    so that part of the error is conservative. The standard deviation of the replicated
    maximum over neighbours is returned. Only the ``top_k`` reweighted and ``top_k``
    refitted neighbours with the largest epsilon are recomputed: the maximum is set by them.

    Parameters
    ----------
    result : EDPResult
        An audit run with ``store_weights=True``.
    idata : arviz.InferenceData, optional
        The audited posterior, with its ``log_likelihood`` group.
    model : pymc.Model, optional
        The audited model (to evaluate the log-likelihood at refit draws).
    groups, observed
        As given to the audit.
    n_bootstrap : int, default 100
    top_k : int, default 32
    random_seed : int or numpy.random.Generator, optional

    Returns
    -------
    float

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (sec. 4: the Monte-Carlo
       error of B-EDP estimates).
    .. [2] Kuensch, H. R. "The jackknife and the bootstrap for general stationary
       observations." Annals of Statistics 17(3), 1989.

    Examples
    --------
    A fake posterior of a normal mean (seeded draws, with their pointwise log-likelihood),
    audited by reweighting only:

    >>> import numpy as np, xarray as xr
    >>> from scipy import stats
    >>> import pymc_edp as edp
    >>> from pymc_edp.tuning import bootstrap_epsilon_mcse
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=20)
    >>> mu = rng.normal(y.mean(), 1 / np.sqrt(20), size=(2, 500))
    >>> ll = stats.norm.logpdf(y, loc=mu[..., None])
    >>> idata = xr.DataTree.from_dict({
    ...     "posterior": xr.Dataset({"mu": (("chain", "draw"), mu)}),
    ...     "log_likelihood": xr.Dataset({"y": (("chain", "draw", "obs"), ll)})})
    >>> res = edp.audit(idata, method="psis", bins=10, progressbar=False)
    >>> round(res.epsilon, 2), round(bootstrap_epsilon_mcse(res, n_bootstrap=50, random_seed=0), 3)
    (0.85, 0.026)
    """
    if result.log_weights is None or result.draws is None:
        raise ValueError("bootstrap_epsilon_mcse needs an audit run with store_weights=True")
    if n_bootstrap < 2:
        raise ValueError(f"n_bootstrap must be at least 2, got {n_bootstrap}")
    rng = np.random.default_rng(random_seed)
    draws = np.asarray(result.draws.values, dtype=float)
    lw = np.asarray(result.log_weights.values, dtype=float)
    eps_nb = result.pointwise["epsilon"].values
    labels = result.pointwise[NEIGHBOUR_DIM].values
    refit = result.pointwise["method"].values.astype(str) == "refit"
    order = np.argsort(-eps_nb, kind="stable")
    keep = order[~refit[order]][:top_k]
    lw = np.ascontiguousarray(lw[keep])
    n_chains = max(1, int(result.n_chains))
    per_chain = draws.shape[1] // n_chains
    block = _block_length(draws, n_chains)
    bins0 = binning.quantile_bins(draws, result.bins)

    fixed = -np.inf
    ratios = _removal_log_ratios(result, idata, model, groups, observed) if refit.any() else None
    refitted = []  # (estimate, reference, draws, chains, block, log ratios or None)
    for k in order[refit[order]]:
        got = _refit_draws(result, labels[k]) if len(refitted) < top_k else None
        if got is None:
            fixed = max(fixed, float(eps_nb[k]))
            continue
        rd, rc = got
        lr = None
        if ratios is not None:
            lr = ratios(int(k), result.refits[labels[k]]["posterior"])
            ref = float(binning.refit_epsilon(rd, bins0, result.smoothing, *lr)[0].max())
        else:
            ref = float(binning.refit_epsilon(rd, bins0, result.smoothing)[0].max())
        refitted.append((float(eps_nb[k]), ref, rd, rc, _block_length(rd, rc), lr))
    if keep.size == 0 and not refitted:
        return 0.0

    reps = np.empty(n_bootstrap)
    for b in range(n_bootstrap):
        idx = _block_indices(rng, n_chains, per_chain, block)
        bins = binning.quantile_bins(draws[:, idx], result.bins)
        rep = fixed
        if keep.size:
            e, _ = binning.epsilon_from_log_weights(lw[:, idx], bins, result.smoothing)
            rep = max(rep, float(e.max()))
        for est, ref, rd, rc, rblock, lr in refitted:
            ridx = _block_indices(rng, rc, rd.shape[1] // rc, rblock)
            if lr is None:
                e_b = float(binning.refit_epsilon(rd[:, ridx], bins, result.smoothing)[0].max())
            else:
                e_b = float(
                    binning.refit_epsilon(
                        rd[:, ridx], bins, result.smoothing, lr[0][idx], lr[1][ridx]
                    )[0].max()
                )
            rep = max(rep, est + e_b - ref)
        reps[b] = rep
    return float(np.std(reps, ddof=1))


# --------------------------------------------------------------------------- samplers
class _Sampler:
    """Samples the model at one strength value with a refit engine (compiled once).

    With a model, the engine compiles it once and each trial only swaps the ``pm.Data``
    hyperparameter; with a builder, each trial builds (and compiles) a new model.
    """

    def __init__(self, engine, *, model=None, name=None, build_model=None, draws, tune, chains):
        from pymc_edp.refit import make_engine

        self.model, self.name = model, name
        if model is not None:
            self.dtype = model[name].get_value().dtype
            self.engine = make_engine(
                engine, model=model, draws=draws, tune=tune, chains=chains, var_names=()
            )
        else:
            self.engine = make_engine(
                engine,
                build_model=lambda value: build_model(float(value)),
                draws=draws,
                tune=tune,
                chains=chains,
                var_names=(),
            )

    def model_at(self, value: float) -> None:
        """Set the hyperparameter of the user's model (data form only)."""
        import pymc as pm

        if self.model is not None:
            pm.set_data({self.name: np.asarray(value, dtype=self.dtype)}, model=self.model)

    def __call__(self, value: float, seed: int):
        import pymc as pm

        if self.model is not None:
            self.model_at(value)
            data = {self.name: np.asarray(value, dtype=self.dtype)}
        else:
            data = value
        idata, model = self.engine.sample_idata(data, int(seed))
        pm.compute_log_likelihood(idata, model=model, extend_inferencedata=True, progressbar=False)
        return idata, model


# ----------------------------------------------------------------------------- search
@dataclass
class _Trial:
    x: float
    epsilon: float
    mcse: float
    max_khat: float
    stage: str
    idata: object = None


class _Stop(Exception):
    """Raised inside the root finder when the search has converged."""


class _Search:
    """Evaluations of log epsilon against log value, cached, with the bracket logic."""

    def __init__(self, evaluate: Callable[[float, str], _Trial], target: float, rtol: float):
        self.evaluate_fn = evaluate
        self.target = target
        self.rtol = rtol
        self.trials: list[_Trial] = []
        self.stopped = ""

    def __call__(self, x: float, stage: str) -> _Trial:
        for t in self.trials:
            if t.x == x:
                return t
        t = self.evaluate_fn(x, stage)
        self.trials.append(t)
        return t

    def g(self, t: _Trial) -> float:
        return math.log(max(t.epsilon, 1e-300) / self.target)

    def met(self, t: _Trial) -> bool:
        return abs(t.epsilon - self.target) <= self.rtol * self.target

    def bracket(self) -> tuple[_Trial, _Trial] | None:
        """The narrowest pair of adjacent evaluated points whose epsilons straddle the target."""
        pts = sorted(self.trials, key=lambda t: t.x)
        best = None
        for a, b in itertools.pairwise(pts):
            if (a.epsilon - self.target) * (b.epsilon - self.target) <= 0:
                if best is None or b.x - a.x < best[1].x - best[0].x:
                    best = (a, b)
        return best

    def resolved(self, a: _Trial, b: _Trial) -> bool:
        """Whether the epsilons at ``a`` and ``b`` differ by more than twice their MC error."""
        return abs(a.epsilon - b.epsilon) > 2 * max(math.hypot(a.mcse, b.mcse), 1e-12)


def _trend(trials: list[_Trial]) -> int:
    """+1 / -1 if epsilon resolvably rises / falls from the lowest to the highest value."""
    lo = min(trials, key=lambda t: t.x)
    hi = max(trials, key=lambda t: t.x)
    if lo is hi or abs(hi.epsilon - lo.epsilon) <= 2 * max(hi.mcse, lo.mcse):
        return 0
    return 1 if hi.epsilon > lo.epsilon else -1


def _find_bracket(
    search: _Search,
    x0: float,
    direction: int,
    step: float,
    max_evaluations: int,
) -> tuple[_Trial, _Trial] | _Trial:
    """Step from ``x0`` by ``log(step)`` until epsilon crosses the target."""
    t0 = search(x0, "initial")
    if search.met(t0):
        return t0
    h = math.log(step)
    while True:
        br = search.bracket()
        if br is not None:
            return br
        if len(search.trials) >= max_evaluations:
            break
        xs = [t.x for t in search.trials]
        lo, hi = min(xs), max(xs)
        d = direction or _trend(search.trials)
        above = search.trials[0].epsilon > search.target
        if d == 0:
            # direction not yet resolvable (a plateau): widen on both sides in turn
            n_up = sum(t.x > x0 for t in search.trials)
            n_down = sum(t.x < x0 for t in search.trials)
            x_new = hi + h if n_up <= n_down else lo - h
        else:
            go_up = (d > 0) != above
            x_new = hi + h if go_up else lo - h
            # a plateau in the direction of travel means the target is out of reach: two
            # steps beyond the start on that side changed epsilon by less than its MC error
            side = sorted(
                (t for t in search.trials if (t.x >= x0 if go_up else t.x <= x0)),
                key=lambda t: t.x,
                reverse=not go_up,
            )
            if len(side) >= 3 and not search.resolved(side[-3], side[-1]):
                last = side[-1]
                where = "above" if above else "below"
                raise RuntimeError(
                    f"epsilon levels off at about {last.epsilon:.4g} (+- {last.mcse:.2g}) as "
                    f"the hyperparameter goes to {math.exp(last.x):.4g}, still {where} the "
                    f"target {search.target:.4g}: the target cannot be reached by this "
                    "hyperparameter (with a very weak prior the likelihood alone sets "
                    "epsilon; with a very strong one the Monte-Carlo noise floor does)."
                )
        search(x_new, "bracket")
    pts = sorted(search.trials, key=lambda t: t.x)
    raise RuntimeError(
        f"could not bracket the target epsilon {search.target:.4g} in {max_evaluations} "
        f"evaluations: over values {math.exp(pts[0].x):.4g} .. {math.exp(pts[-1].x):.4g} "
        f"epsilon ranged {min(t.epsilon for t in pts):.4g} .. "
        f"{max(t.epsilon for t in pts):.4g}. Pass bracket=(low, high) or a larger "
        "max_evaluations."
    )


def _root(search: _Search, a: _Trial, b: _Trial, xtol: float, max_evaluations: int):
    """Brent's method on ``log eps - log target`` in log value, stopped on tolerance/noise."""
    from scipy.optimize import brentq

    def f(x: float) -> float:
        if len(search.trials) >= max_evaluations:
            search.stopped = "maxiter"
            raise _Stop
        t = search(x, "root")
        if search.met(t):
            search.stopped = "tolerance"
            raise _Stop
        br = search.bracket()
        if br is not None and not search.resolved(*br):
            search.stopped = "noise"
            raise _Stop
        return search.g(t)

    if search.met(a) or search.met(b):
        search.stopped = "tolerance"
        return
    if not search.resolved(a, b):
        search.stopped = "noise"
        return
    try:
        brentq(f, a.x, b.x, xtol=xtol, rtol=4 * np.finfo(float).eps, maxiter=max_evaluations)
        search.stopped = "xtol"
    except _Stop:
        pass


def _answer(search: _Search) -> tuple[float, _Trial | None]:
    """The answer: an evaluation within tolerance, else a fit through the nearby trials.

    An evaluation counts as meeting the target only if it is within ``rtol`` and its
    Monte-Carlo error is too. Otherwise ``log epsilon`` is regressed on ``log value`` (weights
    ``(epsilon / mcse)^2``) over the trials within a factor 2 of the target, which averages
    the noise of the trials instead of trusting the last one, and the line is solved for the
    target; the log-linear interpolation across the final bracket is the fallback.
    """
    met = [t for t in search.trials if search.met(t) and t.mcse <= search.rtol * search.target]
    if met:
        best = min(met, key=lambda t: abs(search.g(t)))
        return best.x, best
    br = search.bracket()
    if br is None:  # the untuned value already met the target (within noise)
        best = min(search.trials, key=lambda t: abs(search.g(t)))
        return best.x, best
    a, b = br
    ga, gb = search.g(a), search.g(b)
    x = a.x if ga == gb else a.x + (b.x - a.x) * ga / (ga - gb)
    near = [t for t in search.trials if abs(search.g(t)) < math.log(2.0) and t.epsilon > 0]
    if len({t.x for t in near}) >= 2:
        xs = np.array([t.x for t in near])
        gs = np.array([search.g(t) for t in near])
        w = np.array([(t.epsilon / max(t.mcse, 1e-12 * t.epsilon)) ** 2 for t in near])
        slope, icept = np.polyfit(xs, gs, 1, w=np.sqrt(w))
        trend = np.sign(gb - ga) * np.sign(b.x - a.x)
        if slope != 0 and np.sign(slope) == trend:
            x_fit = -icept / slope
            if min(a.x, b.x) <= x_fit <= max(a.x, b.x):
                x = float(x_fit)
    return x, None


def _monotone(trials: list[_Trial], sign: int) -> tuple[bool, str]:
    pts = sorted(trials, key=lambda t: t.x)
    bad = []
    for a, b in itertools.pairwise(pts):
        if sign * (b.epsilon - a.epsilon) < -2 * max(a.mcse, b.mcse):
            bad.append((math.exp(a.x), a.epsilon, math.exp(b.x), b.epsilon))
    if not bad:
        return True, ""
    v0, e0, v1, e1 = bad[0]
    lo, hi = math.exp(pts[0].x), math.exp(pts[-1].x)
    return False, (
        f"epsilon is not monotone in the hyperparameter over [{lo:.4g}, {hi:.4g}] beyond its "
        f"Monte-Carlo error (e.g. {e0:.4g} at {v0:.4g} but {e1:.4g} at {v1:.4g}); the target "
        "may be met at several values and the root found need not be the one wanted. Plot "
        "res.trials or narrow bracket=."
    )


def _utility(untuned, tuned, names: Sequence[str]) -> xr.Dataset:
    d0, labels, _ = posterior_matrix(get_group(untuned, "posterior"), names)
    d1, labels1, _ = posterior_matrix(get_group(tuned, "posterior"), names)
    if list(labels) != list(labels1):
        raise ValueError("the tuned and untuned posteriors have different parameters")
    m0, s0 = d0.mean(axis=1), d0.std(axis=1, ddof=1)
    m1, s1 = d1.mean(axis=1), d1.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        shift_sd = (m1 - m0) / s0
        ratio = s1 / s0
    dim = PARAMETER_DIM
    return xr.Dataset(
        {
            "mean_untuned": (dim, m0),
            "sd_untuned": (dim, s0),
            "mean_tuned": (dim, m1),
            "sd_tuned": (dim, s1),
            "mean_shift": (dim, m1 - m0),
            "mean_shift_sd": (dim, shift_sd),
            "sd_ratio": (dim, ratio),
        },
        coords={dim: np.asarray(labels, dtype=str)},
    )


def _check_hyperparameter(model, name: str) -> float:
    from pytensor.compile.sharedvalue import SharedVariable

    if name not in model.named_vars:
        raise KeyError(f"the model has no variable {name!r}")
    var = model[name]
    if not isinstance(var, SharedVariable) or var not in model.data_vars:
        raise TypeError(
            f"{name!r} must be a pm.Data variable so that the model compiles once; declare "
            f"the prior strength as pm.Data({name!r}, value) or pass build_model="
        )
    value = np.asarray(var.get_value())
    if value.size != 1:
        raise ValueError(f"the hyperparameter {name!r} must be a scalar, got shape {value.shape}")
    if value.dtype.kind != "f":
        raise TypeError(
            f"the hyperparameter {name!r} has dtype {value.dtype}; declare it as a float "
            f"(pm.Data({name!r}, float(value))) so that non-integer values can be tried"
        )
    return float(value.reshape(()))


# -------------------------------------------------------------------------- front door
def tune_prior(
    model=None,
    *,
    hyperparameter: str | None = None,
    target_epsilon: float,
    bins: int = 20,
    var_names: str | Sequence[str] | None = None,
    neighbour: str = "remove",
    bracket: tuple[float, float] | None = None,
    method: str = "auto",
    build_model: Callable[[float], object] | None = None,
    initial: float | None = None,
    direction: str = "auto",
    groups=None,
    replacements=None,
    observed: str | Sequence[str] | None = None,
    smoothing: float = 0.01,
    rtol: float = 0.01,
    xtol: float = 1e-3,
    step: float = 4.0,
    max_evaluations: int = 25,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    engine: str | None = None,
    n_bootstrap: int = 100,
    random_seed: int | None = None,
    progressbar: bool = True,
    audit_kwargs: Mapping | None = None,
) -> PriorTuningResult:
    """Find the prior strength whose posterior has a target B-EDP epsilon.

    The prior strength is one positive scalar: a ``pm.Data`` hyperparameter of ``model``
    (a prior scale, a concentration), so the model compiles once and only that value
    changes between trials, or the argument of ``build_model(value) -> pm.Model``.

    The search works on the log of the value. Each trial samples the posterior with the
    same seed (common random numbers, so that the estimated relation is smooth) and audits
    it by importance reweighting (``method="psis"``, fast). Starting from ``initial``, the
    value is multiplied or divided by ``step`` until epsilon crosses the target; Brent's
    method on ``log epsilon - log target`` then narrows the bracket until an evaluation is
    within ``rtol`` of the target, or the epsilons at the two ends of the bracket are within
    twice their Monte-Carlo error of each other (the noise cannot resolve a narrower
    bracket). Unless an evaluation met ``rtol`` with a Monte-Carlo error below ``rtol``, the
    answer is the root of a weighted line of log epsilon on log value through the trials
    within a factor 2 of the target, which averages their noise. The evaluated points are
    checked for
    monotonicity. At the answer a fresh sample (another seed) is audited with ``method``
    (refitting neighbours with a bad k-hat under ``"auto"``), and its epsilon, Monte-Carlo
    standard error and the utility cost against the untuned prior are reported.

    Parameters
    ----------
    model : pymc.Model, optional
        Model with a scalar float ``pm.Data`` hyperparameter. Its value is restored on
        return (set it to ``res.value`` with ``pm.set_data`` to keep the tuned prior).
    hyperparameter : str, optional
        Name of that ``pm.Data`` variable; required with ``model``.
    target_epsilon : float
        Target B-EDP epsilon (> 0).
    bins : int, default 20
        Number of equal-probability bins ``B``.
    var_names : str or list of str, optional
        Posterior variables audited (and whose utility cost is reported), as in ArviZ;
        default all.
    neighbour : {"remove", "replace"}, default "remove"
        Neighbour relation, as in :func:`pymc_edp.audit`.
    bracket : (float, float), optional
        ``(low, high)`` values known to straddle the target; default: found by stepping
        from ``initial``.
    method : {"auto", "psis", "refit"}, default "auto"
        Method of the confirmation audit at the answer (the search always reweights).
    build_model : callable, optional
        ``build_model(value) -> pm.Model`` in place of ``model`` and ``hyperparameter``;
        each trial builds and compiles a new model (slower).
    initial : float, optional
        The untuned value: the start of the search and the reference of the utility cost.
        Default: the hyperparameter's current value; required with ``build_model``.
    direction : {"auto", "increasing", "decreasing"}, default "auto"
        How epsilon changes as the hyperparameter grows: ``"increasing"`` for a scale,
        ``"decreasing"`` for a concentration or precision; ``"auto"`` infers it.
    groups, replacements, observed, smoothing
        As in :func:`pymc_edp.audit`.
    rtol : float, default 0.01
        Stop when an evaluated epsilon is within ``rtol * target_epsilon`` of the target.
    xtol : float, default 1e-3
        Absolute tolerance on the log of the value (0.1 per cent).
    step : float, default 4.0
        Multiplicative step while bracketing.
    max_evaluations : int, default 25
        Trials (samples) allowed in the search, the untuned one included.
    draws, tune, chains : int, default 1000, 1000, 2
        Per trial, and for the confirmation sample.
    engine : {"nutpie", "pymc", None}, default None
        Sampler; None picks nutpie when installed.
    n_bootstrap : int, default 100
        Replicates of the block bootstrap behind every Monte-Carlo standard error.
    random_seed : int, optional
        Seeds the search (one seed for every trial), the confirmation sample, its refits and
        the bootstrap.
    progressbar : bool, default True
        Progress of the confirmation refits.
    audit_kwargs : mapping, optional
        Further keyword arguments of the confirmation :func:`pymc_edp.audit` (``executor``,
        ``checkpoint``, ``max_refits``, ``engine``, ``draws`` ...).

    Returns
    -------
    PriorTuningResult
        ``.value``, ``.epsilon``, ``.mcse``, ``.idata``, ``.utility``, ``.trials``,
        ``.audit`` and ``.warnings``.

    Raises
    ------
    RuntimeError
        When the target cannot be bracketed (epsilon levels off before reaching it, or the
        evaluation budget runs out).

    Warns
    -----
    EDPWarning
        Always, with :data:`LEAKAGE_CAVEAT`: the tuned prior depends on the data, so it
        leaks information the audit does not count, and EDP is not DP. Also when epsilon is
        not monotone over the evaluated values, when reweighting was unreliable during the
        search, or when the confirmed epsilon misses the target by more than ``rtol`` plus
        three times the combined Monte-Carlo error of the confirmation and the search.

    Notes
    -----
    The leakage is not a technicality. Charest & Han (sec. 2) point out that a prior
    tuned until the posterior looks private is chosen with the data, and the choice of
    the hyperparameter is then a release of its own. A tuned value is best treated as a
    design choice to be fixed on other data (a previous wave, a public sample) or paid for
    from a privacy budget.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (sec. 2 on tuning the
       prior and its leakage; eq. 2).
    .. [2] Abowd, J. M., Schneider, M. J. and Vilhuber, L. "Differential privacy
       applications to Bayesian and linear mixed model estimation." Journal of Privacy and
       Confidentiality 5(1), 2013.
    .. [3] Brent, R. P. *Algorithms for Minimization without Derivatives*, ch. 4.
       Prentice-Hall, 1973.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_edp as edp
    >>> y = np.random.default_rng(0).normal(10, 5**0.5, 100)
    >>> with pm.Model() as model:
    ...     sigma0 = pm.Data("sigma0", 3**0.5)
    ...     mu = pm.Normal("mu", 10, sigma0)
    ...     _ = pm.Normal("y", mu, 5**0.5, observed=y)
    >>> res = edp.tune_prior(model, hyperparameter="sigma0", target_epsilon=0.3,
    ...                      method="psis", random_seed=1)  # doctest: +SKIP
    >>> res.value, res.epsilon, res.mcse  # doctest: +SKIP
    """
    # -------------------------------------------------------------- validation
    if (model is None) == (build_model is None):
        raise ValueError("pass either model= (with hyperparameter=) or build_model=")
    if model is not None and hyperparameter is None:
        raise ValueError("model= needs hyperparameter=, the name of its pm.Data prior strength")
    if build_model is not None and hyperparameter is not None:
        raise ValueError("hyperparameter= is only used with model=, not build_model=")
    if not (np.isfinite(target_epsilon) and target_epsilon > 0):
        raise ValueError(f"target_epsilon must be a finite number > 0, got {target_epsilon!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if neighbour not in NEIGHBOUR_RELATIONS:
        raise ValueError(f"neighbour must be one of {NEIGHBOUR_RELATIONS}, got {neighbour!r}")
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if not step > 1:
        raise ValueError(f"step must be > 1, got {step!r}")
    if not rtol > 0 or not xtol > 0:
        raise ValueError("rtol and xtol must be > 0")
    if max_evaluations < 2:
        raise ValueError(f"max_evaluations must be at least 2, got {max_evaluations}")
    if bracket is not None:
        lo, hi = (float(v) for v in bracket)
        if not (0 < lo < hi and np.isfinite(hi)):
            raise ValueError(f"bracket must be (low, high) with 0 < low < high, got {bracket}")
    from pymc_edp.refit import resolve_engine

    # the builder form defaults to nutpie too (refits through build_model default to PyMC)
    engine = resolve_engine(engine, model=model)
    if model is not None:
        original = _check_hyperparameter(model, hyperparameter)
        initial = original if initial is None else float(initial)
        sampler = _Sampler(
            engine, model=model, name=hyperparameter, draws=draws, tune=tune, chains=chains
        )
    else:
        if not callable(build_model):
            raise TypeError("build_model must be callable: build_model(value) -> pm.Model")
        if initial is None:
            raise ValueError("build_model= needs initial=, the untuned value of the strength")
        original = None
        sampler = _Sampler(engine, build_model=build_model, draws=draws, tune=tune, chains=chains)
    if not (np.isfinite(initial) and initial > 0):
        raise ValueError(f"the initial value must be finite and > 0, got {initial!r}")

    seeds = np.random.default_rng(random_seed).integers(0, 2**31 - 1, size=4)
    search_seed, confirm_seed, refit_seed, boot_seed = (int(s) for s in seeds)
    boot_rng = np.random.default_rng(boot_seed)
    audit_opts = dict(
        var_names=var_names,
        bins=bins,
        neighbour=neighbour,
        groups=groups,
        replacements=replacements,
        observed=observed,
        smoothing=smoothing,
    )
    diagnostics: dict[str, None] = {}
    search_notes: dict[str, list[float]] = {}
    sign = {"auto": 0, "increasing": 1, "decreasing": -1}[direction]

    def evaluate(x: float, stage: str) -> _Trial:
        value = math.exp(x)
        idata, mod = sampler(value, search_seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = audit(idata, mod, method="psis", progressbar=False, **audit_opts)
        for w in caught:
            if issubclass(w.category, EDPWarning):
                search_notes.setdefault(str(w.message), []).append(value)
        mcse = bootstrap_epsilon_mcse(res, n_bootstrap=n_bootstrap, random_seed=boot_rng)
        khat = float(np.nanmax(res.pointwise["pareto_k"].values))
        _log.info("tune_prior: value %.6g -> epsilon %.4f +- %.4f", value, res.epsilon, mcse)
        # only the untuned posterior is kept (the utility reference); the rest are dropped
        keep = stage == "initial"
        return _Trial(x, res.epsilon, mcse, khat, stage, idata if keep else None)

    search = _Search(evaluate, float(target_epsilon), rtol)
    try:
        # ------------------------------------------------------------ search
        x0 = math.log(initial)
        if bracket is not None:
            t0 = search(x0, "initial")
            ta, tb = search(math.log(lo), "bracket"), search(math.log(hi), "bracket")
            if search.met(t0) and lo <= initial <= hi:
                found = t0
            elif (ta.epsilon - target_epsilon) * (tb.epsilon - target_epsilon) > 0:
                raise RuntimeError(
                    f"bracket {bracket} does not straddle the target {target_epsilon:.4g}: "
                    f"epsilon is {ta.epsilon:.4g} at {lo:.4g} and {tb.epsilon:.4g} at {hi:.4g}"
                )
            else:
                found = search.bracket()
        else:
            found = _find_bracket(search, x0, sign, step, max_evaluations)
        if isinstance(found, _Trial):
            search.stopped = "tolerance"
        else:
            _root(search, *found, xtol=xtol, max_evaluations=max_evaluations)
        x_best, t_best = _answer(search)
        if t_best is None:
            t_best = search(x_best, "final")
        value = math.exp(x_best)
        t_init = search.trials[0]

        for note, values in search_notes.items():
            where = ", ".join(f"{v:.4g}" for v in values[:5]) + ("..." if len(values) > 5 else "")
            diagnostics[
                f"during the search (reweighting only) at {len(values)} of "
                f"{len(search.trials)} trial values ({where}): {note} The search's epsilons "
                "there may be off; the confirmation audit uses method="
                f"{method!r}."
            ] = None

        # ------------------------------------------------------ monotonicity
        if sign == 0:
            sign = _trend(search.trials) or 1
        monotone, msg = _monotone(search.trials, sign)
        if not monotone:
            diagnostics[msg] = None

        # ------------------------------------------------------ confirmation
        idata, mod = sampler(value, confirm_seed)
        opts = dict(draws=draws, tune=tune, chains=chains, random_seed=refit_seed)
        opts.update(audit_kwargs or {})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = audit(idata, mod, method=method, progressbar=progressbar, **audit_opts, **opts)
        for w in caught:
            if issubclass(w.category, EDPWarning):
                diagnostics[f"confirmation: {w.message}"] = None
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        mcse = bootstrap_epsilon_mcse(
            res,
            idata=idata,
            model=mod,
            groups=groups,
            observed=observed,
            n_bootstrap=n_bootstrap,
            random_seed=boot_rng,
        )
    finally:
        if original is not None:
            sampler.model_at(original)

    miss = abs(res.epsilon - target_epsilon)
    # a 3-sigma check: the confirmation and the search's estimate are independent
    if miss > rtol * target_epsilon + 3 * math.hypot(mcse, t_best.mcse):
        diagnostics[
            f"the confirmed epsilon {res.epsilon:.4g} +- {mcse:.2g} misses the target "
            f"{target_epsilon:.4g} by more than rtol and three times the Monte-Carlo error "
            f"of the confirmation and the search (which estimated {t_best.epsilon:.4g} +- "
            f"{t_best.mcse:.2g} there); draw more samples (draws=) or check the refitted "
            "neighbours in res.audit"
        ] = None

    utility = _utility(t_init.idata, idata, list(res.epsilon_by_var))
    trials = xr.Dataset(
        {
            "value": (TRIAL_DIM, np.exp([t.x for t in search.trials])),
            "epsilon": (TRIAL_DIM, [t.epsilon for t in search.trials]),
            "mcse": (TRIAL_DIM, [t.mcse for t in search.trials]),
            "max_pareto_k": (TRIAL_DIM, [t.max_khat for t in search.trials]),
            "stage": (TRIAL_DIM, np.asarray([t.stage for t in search.trials], dtype=str)),
        },
        coords={TRIAL_DIM: np.arange(len(search.trials))},
    )
    messages = (LEAKAGE_CAVEAT, *diagnostics)
    for msg in messages:
        warnings.warn(msg, EDPWarning, stacklevel=2)
        _log.info(msg)
    return PriorTuningResult(
        value=float(value),
        epsilon=float(res.epsilon),
        mcse=float(mcse),
        target_epsilon=float(target_epsilon),
        hyperparameter=hyperparameter,
        initial_value=float(initial),
        initial_epsilon=float(t_init.epsilon),
        search_epsilon=float(t_best.epsilon),
        bins=int(bins),
        neighbour=res.neighbour,
        method=res.method,
        direction="increasing" if sign > 0 else "decreasing",
        monotone=monotone,
        stopped=search.stopped,
        trials=trials,
        utility=utility,
        warnings=messages,
        audit=res,
        idata=idata,
        idata_untuned=t_init.idata,
    )

"""Tune the strength of a prior so that the posterior meets a target B-EDP epsilon.

A stronger prior makes the posterior less sensitive to any one record. :func:`tune_prior`
searches a scalar hyperparameter with reweighted audits, then confirms the answer.
"""

from __future__ import annotations

import inspect
import logging
import math
import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import xarray as xr

from pymc_edp import diagnostics
from pymc_edp.auditing import audit as run_audit
from pymc_edp.auditing import check_options
from pymc_edp.auditing.methods import Method
from pymc_edp.base.common import EDPWarning, resolve_seed
from pymc_edp.base.validate import check_choice, check_real
from pymc_edp.core.loglik import by_variable, elements_of, posterior_matrix
from pymc_edp.core.neighbours import Relation
from pymc_edp.core.reweight import ChunkOptions
from pymc_edp.model.compat import get_group
from pymc_edp.model.fit import LOG_LIKELIHOOD_SOURCES
from pymc_edp.model.pymc import resolve_model
from pymc_edp.refit.engines import make_engine, resolve_engine
from pymc_edp.refit.options import RefitOptions
from pymc_edp.release.options import ReleaseOptions
from pymc_edp.results.tuning import LEAKAGE_CAVEAT, TRIAL_DIM, PriorTuningResult
from pymc_edp.tuning.release import ReleaseAuditor
from pymc_edp.tuning.search import Search, SearchOptions, Trial, monotone, run, trend

__all__ = ["tune_prior"]

_log = logging.getLogger("pymc_edp")


class _Sampler:
    """Samples the model at one strength value with a refit engine.

    A model compiles once and each trial swaps its ``pm.Data`` hyperparameter; a builder
    builds (and compiles) a new model per trial.
    """

    def __init__(self, engine, opts: RefitOptions, *, model=None, name=None, model_at=None):
        self.model, self.name = model, name
        common = dict(draws=opts.draws, tune=opts.tune, chains=opts.chains, var_names=())
        if model is not None:
            self.dtype = model[name].get_value().dtype
            self.engine = make_engine(engine, model=model, **common)
        else:
            self.engine = make_engine(
                engine, build_model=lambda value: model_at(float(value)), **common
            )

    def model_at(self, value: float) -> dict | float:
        """Set the hyperparameter of the user's model; what the engine samples at ``value``."""
        import pymc as pm

        if self.model is None:
            return value
        data = {self.name: np.asarray(value, dtype=self.dtype)}
        pm.set_data(data, model=self.model)
        return data

    def __call__(self, value: float, seed: int):
        import pymc as pm

        idata, model = self.engine.sample_idata(self.model_at(value), int(seed))
        pm.compute_log_likelihood(idata, model=model, extend_inferencedata=True, progressbar=False)
        return idata, model


def _utility(untuned, tuned, names: Sequence[str]) -> xr.DataTree:
    """Per variable, over its own dims: posterior mean and sd untuned and tuned, and shift."""
    post = get_group(untuned, "posterior")
    d0, labels, _ = posterior_matrix(post, names)
    d1, labels1, _ = posterior_matrix(get_group(tuned, "posterior"), names)
    if list(labels) != list(labels1):
        raise ValueError("the tuned and untuned posteriors have different parameters")
    m0, s0 = d0.mean(axis=1), d0.std(axis=1, ddof=1)
    m1, s1 = d1.mean(axis=1), d1.std(axis=1, ddof=1)
    columns = {"mean_untuned": m0, "sd_untuned": s0, "mean_tuned": m1, "sd_tuned": s1}
    columns["mean_shift"] = m1 - m0
    with np.errstate(divide="ignore", invalid="ignore"):
        columns["mean_shift_sd"] = (m1 - m0) / s0
        columns["sd_ratio"] = s1 / s0
    elements = elements_of(post, names)
    return by_variable({k: ((), v) for k, v in columns.items()}, elements)


def _check_hyperparameter(model, name: str) -> float:
    from pytensor.compile.sharedvalue import SharedVariable

    if name not in model.named_vars:
        raise KeyError(f"the model has no variable {name!r}")
    var = model[name]
    if not isinstance(var, SharedVariable) or var not in model.data_vars:
        raise TypeError(
            f"{name!r} must be a pm.Data variable so that the model compiles once; declare "
            f"the prior strength as pm.Data({name!r}, value) or pass model_at="
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


def _refuse_unused(given: dict, whose: str) -> None:
    """Raise if a keyword in ``given``, which would be ignored, is not at its default."""
    params = inspect.signature(tune_prior).parameters
    unused = [
        name
        for name, value in given.items()
        if not (value is params[name].default or value == params[name].default)
    ]
    if unused:
        raise ValueError(f"{', '.join(unused)}: {whose} settings, not used here")


def _sampler(model, hyperparameter, model_at, initial, opts: RefitOptions):
    """The trial sampler, the untuned value and the original value to restore (or None)."""
    if (model is None) == (model_at is None):
        raise ValueError("pass either model= (with hyperparameter=) or model_at=")
    if model is not None and hyperparameter is None:
        raise ValueError("model= needs hyperparameter=, the name of its pm.Data prior strength")
    if model_at is not None and hyperparameter is not None:
        raise ValueError("hyperparameter= is only used with model=, not model_at=")
    # the builder form defaults to nutpie too (refits through a builder default to PyMC)
    engine = resolve_engine(opts.engine, model=model)
    if model is not None:
        original = _check_hyperparameter(model, hyperparameter)
        initial = original if initial is None else initial
    else:
        if not callable(model_at):
            raise TypeError("model_at must be callable: model_at(value) -> pm.Model")
        if initial is None:
            raise ValueError("model_at= needs initial=, the untuned value of the strength")
        original = None
    what = "initial (the untuned value of the hyperparameter)"
    initial = check_real(initial, what, positive=True)
    sampler = _Sampler(engine, opts, model=model, name=hyperparameter, model_at=model_at)
    return sampler, initial, original


def tune_prior(
    model=None,
    *,
    hyperparameter: str | None = None,
    model_at: Callable[[float], object] | None = None,
    target_epsilon: float,
    initial: float | None = None,
    bracket: tuple[float, float] | None = None,
    var_names: str | Sequence[str] | None = None,
    filter_vars: str | None = None,
    bins: int = 20,
    method: str | Method = "auto",
    neighbour: str | Relation | Mapping = "remove",
    smoothing: float | None = None,
    refit: RefitOptions | Mapping | None = None,
    chunks: ChunkOptions | Mapping | None = None,
    log_likelihood: str = "auto",
    release: str | None = None,
    k: int = 1,
    delta: float = 1e-5,
    observed: str | None = None,
    n_synthetic: int | None = None,
    statistic: Callable | None = None,
    options: ReleaseOptions | Mapping | None = None,
    search: SearchOptions | Mapping | None = None,
    random_seed=None,
    progressbar: bool = True,
) -> PriorTuningResult:
    """Find the prior strength whose posterior has a target B-EDP epsilon [1]_ [2]_.

    Each trial samples at one value of the strength (same seed every time) and audits by
    reweighting; the search brackets the target in log value and narrows it with Brent's
    method [3]_ (:class:`pymc_edp.SearchOptions`). A fresh sample at the answer is audited
    with ``method`` and its utility cost against the untuned prior reported.

    Parameters
    ----------
    model : pymc.Model, optional
        Model with a scalar float ``pm.Data`` strength (compiled once), restored on return
        (set it to ``res.value`` to keep the tuned prior). Default: the enclosing model.
    hyperparameter : str, optional
        Name of that ``pm.Data`` variable; required with ``model``.
    model_at : callable, optional
        ``model_at(value) -> pm.Model``, the model at a prior strength, in place of ``model``
        (a new model per trial). Not ``RefitOptions(build_model=)``, which builds a
        neighbour's model from its data.
    target_epsilon : float
        Target epsilon (> 0): B-EDP, or with ``release`` the release's at ``delta``.
    initial : float, optional
        The untuned value: start of the search and reference of the utility cost.
        Default: the hyperparameter's value; required with ``model_at``.
    bracket : (float, float), optional
        ``(low, high)`` values known to straddle the target; default: found by stepping.
    var_names, filter_vars, bins, neighbour, method, smoothing, refit, chunks, log_likelihood
        As in :func:`pymc_edp.audit`, for every audit; ``method`` is the confirmation's
        (the search reweights), ``refit`` also samples every trial, ``var_names`` are also
        the variables whose utility cost is reported. With ``release``, ``var_names``,
        ``filter_vars``, ``bins``, ``neighbour`` and ``log_likelihood`` are
        :func:`pymc_edp.audit_release`'s and ``method``, ``smoothing``, ``chunks`` unused.
    release, k, delta, observed, n_synthetic, statistic, options
        A release target, as in :func:`pymc_edp.audit_release`: its headline is tuned, its
        Monte-Carlo error the bootstrap interval's half width over the normal quantile (at
        most 50 replicates per trial); utility is reported for every posterior variable.
    search : SearchOptions or dict, optional
    random_seed : int or numpy.random.Generator, optional
        Seeds the search (one seed for every trial), the confirmation and its refits.
    progressbar : bool, default True
        Progress of the confirmation refits.

    Returns
    -------
    PriorTuningResult
        With ``release``, ``.audit`` is the confirmation's :class:`pymc_edp.ReleaseResult`.

    Raises
    ------
    RuntimeError
        When the target cannot be bracketed (epsilon levels off, or the budget runs out).

    Warns
    -----
    EDPWarning
        Always, with :data:`LEAKAGE_CAVEAT` [1]_. Also when epsilon is not monotone over
        the trials, reweighting was unreliable during the search, the confirmed epsilon
        misses the target by more than ``rtol`` plus three Monte-Carlo errors, or a
        confirmed release epsilon is a lower bound.

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
    >>> y = np.random.default_rng(0).normal(10, 5**0.5, 100)
    >>> with pm.Model() as model:
    ...     sigma0 = pm.Data("sigma0", 3**0.5)
    ...     mu = pm.Normal("mu", 10, sigma0)
    ...     _ = pm.Normal("y", mu, 5**0.5, observed=y)
    >>> res = edp.tune_prior(model, hyperparameter="sigma0", target_epsilon=0.3,
    ...                      method="psis", random_seed=1)  # doctest: +SKIP
    >>> res.value, res.epsilon, res.mcse  # doctest: +SKIP

    Five posterior draws at epsilon 2 with delta 1e-3:

    >>> res = edp.tune_prior(model, hyperparameter="sigma0", target_epsilon=2.0,
    ...                      release="draws", k=5, delta=1e-3, random_seed=1)  # doctest: +SKIP
    >>> res.epsilon, res.audit.interval  # doctest: +SKIP
    """
    model = resolve_model(model) if model_at is None else model
    target_epsilon = check_real(target_epsilon, "target_epsilon", positive=True)
    opts = RefitOptions.coerce(refit).for_fit()  # no fit yet: PyMC's sizes unless given
    # checked here, before any sampling, for the audits and the release audits alike
    check_choice(log_likelihood, "log_likelihood", LOG_LIKELIHOOD_SOURCES)
    shared = dict(
        var_names=var_names,
        filter_vars=filter_vars,
        bins=bins,
        neighbour=neighbour,
        log_likelihood=log_likelihood,
    )
    own = dict(method=method, smoothing=smoothing, chunks=chunks)
    target = dict(
        release=release,
        k=k,
        delta=delta,
        observed=observed,
        n_synthetic=n_synthetic,
        statistic=statistic,
        options=options,
    )
    if release is None:
        _refuse_unused(target, "a release target's (release=)")
        auditor = _Audits({**shared, **own}, opts)
    else:
        _refuse_unused(own, "audit()'s, not audit_release()'s")
        auditor = ReleaseAuditor({**shared, **target}, model)
    sopts = SearchOptions.coerce(search)
    bracket = _bracket(bracket)
    sampler, initial, original = _sampler(model, hyperparameter, model_at, initial, opts)
    seed = resolve_seed(random_seed)
    search_seed, confirm_seed, refit_seed = _split_seed(seed)
    sign = {"auto": 0, "increasing": 1, "decreasing": -1}[sopts.direction]
    trial_audits = _TrialAudits(sampler, search_seed, auditor)
    searcher = Search(trial_audits, target_epsilon, sopts.rtol)
    try:
        x_best, t_best = run(searcher, math.log(initial), bracket, sopts, sign)
        value = math.exp(x_best)
        t_init = searcher.trials[0]
        diagnostics_ = trial_audits.notes(len(searcher.trials))
        if sign == 0:
            sign = trend(searcher.trials) or 1
        is_monotone, msg = monotone(searcher.trials, sign)
        if not is_monotone:
            diagnostics_[msg] = None
        # the confirmation: an independent sample, audited with the method asked for
        idata, mod = sampler(value, confirm_seed)
        res = _confirm(auditor, idata, mod, refit_seed, progressbar, diagnostics_)
        epsilon, mcse = auditor.estimate(res)
        names = auditor.utility_names(res, idata)
    finally:
        if original is not None:
            sampler.model_at(original)
    _check_miss(epsilon, mcse, t_best, target_epsilon, sopts.rtol, diagnostics_)
    messages = (LEAKAGE_CAVEAT, *diagnostics_)
    for msg in messages:
        warnings.warn(msg, EDPWarning, stacklevel=2)
        _log.info(msg)
    return PriorTuningResult(
        value=float(value),
        epsilon=float(epsilon),
        mcse=float(mcse),
        target_epsilon=float(target_epsilon),
        hyperparameter=hyperparameter,
        initial_value=float(initial),
        initial_epsilon=float(t_init.epsilon),
        search_epsilon=float(t_best.epsilon),
        bins=auditor.bins,
        neighbour=res.neighbour,
        method=auditor.label or res.method,
        direction="increasing" if sign > 0 else "decreasing",
        monotone=is_monotone,
        stopped=searcher.stopped,
        trials=_trials(searcher),
        utility=_utility(t_init.idata, idata, names),
        warnings=messages,
        audit=res,
        idata=idata,
        idata_untuned=t_init.idata,
        random_seed=seed,
    )


class _Audits:
    """How :func:`tune_prior` audits for a B-EDP target: reweighting, then ``method``.

    ``kwargs``: :func:`pymc_edp.audit`'s but ``refit``, checked before any sampling.
    """

    label = None  # the confirmation audit's own ``res.method``
    search_label = "reweighting only"  # what the search's warnings say it did

    def __init__(self, kwargs: dict, refit: RefitOptions):
        self.search_kwargs = {**kwargs, "method": "psis", "refit": None}
        self.confirm_kwargs = {**kwargs, "refit": refit}
        # selecting variables is not an audit setting; tune_prior checked the source
        read = ("var_names", "filter_vars", "log_likelihood")
        checked = {k: v for k, v in self.confirm_kwargs.items() if k not in read}
        checked = check_options(**checked)
        self.bins = checked["bins"]
        self.search_advice = (
            " The search's epsilons there may be off; the confirmation audit uses "
            f"method={checked['method'].name!r}."
        )

    def trial(self, idata, model, seed: int):
        """A search trial's audit (reweighting only; the seed is the sample's)."""
        del seed
        return run_audit(idata, model, progressbar=False, **self.search_kwargs)

    def confirm(self, idata, model, seed: int, progressbar: bool):
        """The confirmation audit with the method asked for."""
        kw = self.confirm_kwargs
        return run_audit(idata, model, random_seed=seed, progressbar=progressbar, **kw)

    @staticmethod
    def estimate(res) -> tuple[float, float]:
        """The audit's epsilon and its own Monte-Carlo error (one method everywhere)."""
        return float(res.epsilon), float(diagnostics.epsilon_mcse(res)["epsilon"])

    @staticmethod
    def confirmation_notes(res) -> list[str]:
        """None: the audit warns itself."""
        del res
        return []

    @staticmethod
    def utility_names(res, idata) -> list[str]:
        """The audited variables."""
        del idata
        return list(res.epsilon_by_var)


def _confirm(auditor, idata, mod, seed: int, progressbar: bool, into: dict):
    """The confirmation's result; its warnings and the auditor's notes go into ``into``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = auditor.confirm(idata, mod, seed, progressbar)
    for w in caught:
        if issubclass(w.category, EDPWarning):
            into[f"confirmation: {w.message}"] = None
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    for note in auditor.confirmation_notes(res):
        into[note] = None
    return res


def _check_miss(epsilon, mcse, t_best: Trial, target: float, rtol: float, into: dict) -> None:
    """Note a confirmed epsilon 3 sigma off the target (the search's trial is independent)."""
    if abs(epsilon - target) > rtol * target + 3 * math.hypot(mcse, t_best.mcse):
        into[
            f"the confirmed epsilon {epsilon:.4g} +- {mcse:.2g} misses the target "
            f"{target:.4g} by more than rtol and three times the Monte-Carlo error "
            f"of the confirmation and the search (which estimated {t_best.epsilon:.4g} +- "
            f"{t_best.mcse:.2g} there); draw more samples (refit=RefitOptions(draws=...)) or "
            "check the refitted neighbours in res.audit"
        ] = None


def _split_seed(seed: int) -> tuple[int, int, int]:
    """Seeds of the search, of the confirmation sample and of its refits."""
    return tuple(int(s) for s in np.random.default_rng(seed).integers(0, 2**31 - 1, size=3))


def _bracket(bracket) -> tuple[float, float] | None:
    """``(low, high)`` as floats, checked."""
    if bracket is None:
        return None
    message = f"bracket must be (low, high) with 0 < low < high, both finite, got {bracket!r}"
    if isinstance(bracket, str | bytes) or np.ndim(bracket) != 1 or len(bracket) != 2:
        raise ValueError(message)
    try:
        lo, hi = (check_real(v, "bracket", positive=True) for v in bracket)
    except (TypeError, ValueError):
        raise ValueError(message) from None
    if not lo < hi:
        raise ValueError(message)
    return lo, hi


class _TrialAudits:
    """The search's evaluations: sample at a value (common seed), audit it (``auditor``)."""

    def __init__(self, sampler: _Sampler, seed: int, auditor):
        self.sampler, self.seed, self.auditor = sampler, seed, auditor
        self.search_notes: dict[str, list[float]] = {}

    def __call__(self, x: float, stage: str) -> Trial:
        value = math.exp(x)
        idata, mod = self.sampler(value, self.seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = self.auditor.trial(idata, mod, self.seed)
        for w in caught:
            if issubclass(w.category, EDPWarning):
                self.search_notes.setdefault(str(w.message), []).append(value)
        epsilon, mcse = self.auditor.estimate(res)
        khat = np.asarray(res.pointwise["pareto_k"].values, dtype=float)
        max_khat = float(np.nanmax(khat)) if np.isfinite(khat).any() else math.nan
        _log.info("tune_prior: value %.6g -> epsilon %.4f +- %.4f", value, epsilon, mcse)
        # only the untuned posterior is kept (the utility reference); the rest are dropped
        keep = stage == "initial"
        return Trial(x, epsilon, mcse, max_khat, stage, idata if keep else None)

    def notes(self, n_trials: int) -> dict[str, None]:
        """The search's warnings, each once, with the trial values it came at."""
        out: dict[str, None] = {}
        for note, values in self.search_notes.items():
            where = ", ".join(f"{v:.4g}" for v in values[:5]) + ("..." if len(values) > 5 else "")
            message = (
                f"during the search ({self.auditor.search_label}) at {len(values)} of "
                f"{n_trials} trial values ({where}): {note}{self.auditor.search_advice}"
            )
            out[message] = None
        return out


def _trials(search: Search) -> xr.Dataset:
    return xr.Dataset(
        {
            "value": (TRIAL_DIM, np.exp([t.x for t in search.trials])),
            "epsilon": (TRIAL_DIM, [t.epsilon for t in search.trials]),
            "mcse": (TRIAL_DIM, [t.mcse for t in search.trials]),
            "max_pareto_k": (TRIAL_DIM, [t.max_khat for t in search.trials]),
            "stage": (TRIAL_DIM, np.asarray([t.stage for t in search.trials], dtype=str)),
        },
        coords={TRIAL_DIM: np.arange(len(search.trials))},
    )

"""The front door: :func:`audit` a posterior's empirical differential privacy.

The audit runs in stages, each a function below: check the arguments, read the posterior and
its pointwise log-likelihood (:func:`_read_inputs`), reweight every neighbour
(:func:`_reweight`), refit those whose weights cannot be trusted (:func:`_refit`) and put the
result together (:func:`_assemble`). The numerical work is in :mod:`pymc_edp.base`, the PyMC
glue in :mod:`pymc_edp.model`, the refits in :mod:`pymc_edp.refit`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from pymc_edp import diagnostics
from pymc_edp.base import binning, limits
from pymc_edp.base.common import (
    COUNT_SMOOTHING,
    MIN_DRAWS_PER_BIN,
    NEIGHBOUR_DIM,
    PARAMETER_DIM,
    SAMPLE_DIM,
    WEIGHT_INDEX,
    EDPWarning,
    resolve_seed,
)
from pymc_edp.base.mcse import interval_of_max, leading_pairs, max_interval
from pymc_edp.base.parallel import map_tasks, progress_bar
from pymc_edp.base.psis import khat_threshold
from pymc_edp.base.validate import check_choice, check_int, check_real
from pymc_edp.model.compat import check_container, get_group, has_group, load_in_memory
from pymc_edp.model.loglik import (
    LogLikelihood,
    NonFactorisedError,
    posterior_matrix,
    relative_efficiency,
)
from pymc_edp.model.moment_match import MomentMatchOptions, moment_match_neighbours
from pymc_edp.model.neighbours import Neighbours
from pymc_edp.model.pymc import (
    check_log_likelihood_layout,
    check_log_likelihood_matches_model,
    check_model,
    check_model_matches_data,
    check_not_scalar,
    ensure_log_likelihood,
    integer_data,
    observed_arrays,
    observed_values,
    potentials_with_data,
    replacement_log_likelihood,
    resolve_model,
)
from pymc_edp.model.replace import PerRecord, candidates, check_support
from pymc_edp.model.reweight import (
    ChunkOptions,
    Reweighter,
    bound_chunk,
    estimate_chunk,
    prune_margin,
    top_rows,
)
from pymc_edp.model.select import drop_data_copies, select_var_names
from pymc_edp.model.stream import model_log_likelihood, stream_supported
from pymc_edp.model.transform import neighbour_changes
from pymc_edp.refit.options import (
    VERIFICATION_MEANINGS,
    VERIFY_AGREE,
    VERIFY_DISAGREE,
    VERIFY_FAILED,
    RefitOptions,
    VerifyOptions,
)
from pymc_edp.refit.outcome import Refits
from pymc_edp.refit.run import RefitProblem, RefitSetupError, refit_neighbours
from pymc_edp.results.edp import EDPResult

__all__ = [
    "TOP_WEIGHTS",
    "ChunkOptions",
    "MomentMatchOptions",
    "PerRecord",
    "RefitOptions",
    "VerifyOptions",
    "audit",
]

_log = logging.getLogger("pymc_edp")

METHODS = ("auto", "psis", "moment_match", "refit")
LOG_LIKELIHOOD_SOURCES = ("auto", "group", "model")
NEIGHBOUR_RELATIONS = ("remove", "replace")
#: Neighbours whose weights a large audit keeps, and whose Monte-Carlo interval every audit
#: computes and stores: those with the largest epsilons, which set the headline and its
#: interval (``res.interval()`` on a result with every weight computes every neighbour's;
#: at 10,000 records that costs several times the audit itself).
TOP_WEIGHTS = 32
#: The standard normal quantile of the stored (90%) intervals.
_Z90 = 1.6448536269514722
LIMIT_DOC = "resolution limit of the estimate (non-zero: a lower bound)"


@dataclass(frozen=True)
class _Smoothing:
    """Additive smoothing of weighted and of count estimates (see ``audit(smoothing=)``)."""

    weighted: float
    count: float

    @classmethod
    def of(cls, smoothing) -> _Smoothing:
        if smoothing is None:
            return cls(0.0, COUNT_SMOOTHING)
        value = check_real(smoothing, "smoothing", minimum=0)
        return cls(value, value)


def audit(
    idata,
    model=None,
    *,
    var_names: str | Sequence[str] | None = None,
    filter_vars: str | None = None,
    bins: int = 20,
    method: str = "auto",
    neighbour: str = "remove",
    groups=None,
    replacements=None,
    observed: str | Sequence[str] | None = None,
    smoothing: float | None = None,
    refit: RefitOptions | Mapping | None = None,
    verify: VerifyOptions | Mapping | bool | None = None,
    random_seed=None,
    progressbar: bool = True,
    store_weights: bool | None = None,
    log_likelihood: str = "auto",
    prune: bool | None = None,
    chunks: ChunkOptions | Mapping | None = None,
    moment_match: MomentMatchOptions | Mapping | bool | None = None,
) -> EDPResult:
    """Audit the empirical differential privacy (B-EDP) of a posterior.

    Every scalar element of the selected posterior variables is cut into ``bins``
    equal-probability bins of its full-data posterior; for each neighbour dataset ``D'``
    (a record removed or replaced, or an individual's rows removed) the posterior probability
    of each bin is re-estimated, and ``epsilon = max |log P(b | D') - log P(b | D)|``.
    Neighbour posteriors are importance reweightings of the full-data draws (PSIS, with
    k-hat per neighbour); where k-hat says the weights cannot be trusted the neighbour is
    moment-matched and, if that is not enough, refitted exactly (``method="auto"``), or
    every neighbour is refitted (``method="refit"``). With a model, ``method="auto"`` then
    confirms the headline: it refits the neighbours with the largest estimated epsilons and
    compares (``verify=``), since a good k-hat is evidence, not proof.

    Every estimate carries its Monte-Carlo interval; one at a resolution limit (smoothing,
    too few draws in its bin, an empty bin) is flagged as a lower bound, with an interval
    open above (``pointwise["lower_bound"]``, ``pointwise["limit"]``).

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        What ``pm.sample`` returned (a DataTree on PyMC 6, an InferenceData on PyMC 5), with
        a ``posterior`` group and a ``log_likelihood`` group (computed from ``model`` when
        missing; ``pm.compute_log_likelihood(idata)`` adds it).
    model : pymc.Model, optional
        Needed for ``neighbour="replace"`` (``p(y' | theta)``), for refits, and to compute a
        missing ``log_likelihood`` group. Default: the model of the enclosing ``with`` block,
        if any (as PyMC's ``model=None``), else none.
    var_names : str or list of str, optional
        Posterior variables to audit, as in ArviZ (``"~name"`` excludes); default all.
    filter_vars : {None, "like", "regex"}, optional
        As in ArviZ.
    bins : int, default 20
        Number of equal-probability bins ``B``. Always report it: epsilon grows with ``B``.
    method : {"auto", "psis", "moment_match", "refit"}, default "auto"
        ``"psis"`` reweights only. ``"refit"`` refits every neighbour. ``"moment_match"``
        reweights, then moment-matches (Paananen et al. 2021) the neighbours whose Pareto
        k-hat exceeds ``min(1 - 1/log10(S), 0.7)``: their draws are moved by affine maps in
        the unconstrained space, using the model's joint density, until k-hat falls below
        it. ``"auto"`` does both, then refits the neighbours still above the threshold;
        without a model (or ``refit=RefitOptions(build_model=...)``) it reweights and warns.
        ``pointwise["method"]`` says which path each estimate took, ``pointwise["pareto_k"]``
        is the plain PSIS k-hat and ``pointwise["pareto_k_moment_match"]`` the k-hat after
        moment matching (NaN where not tried).
    neighbour : {"remove", "replace"}, default "remove"
        ``"remove"`` deletes one record (unbounded DP); ``"replace"`` changes one record to
        each of ``replacements`` and reports the worst case (bounded DP). Refits use each
        neighbour's worst replacement.
    groups : str, array_like or dict, optional
        Leave-one-group-out: a coordinate name, one label per record, or
        ``{observed_name: labels}``. Neighbours are then the individuals, and all their rows
        (in every observed variable) are removed or replaced together.
    replacements : array_like, PerRecord or dict, optional
        For ``"replace"``: a list (or 1-d array) of candidate values, each tried for every
        record, whatever its length; :class:`PerRecord` for values given record by record
        (shaped like the observed data, or ``(n_candidates, *observed_shape)``); a dict per
        observed variable. Values must lie in the likelihood's support (integers for integer
        data). Default for 0/1 data: the flipped value.
    observed : str or list of str, optional
        Observed variables whose records define neighbours; default all.
    smoothing : float, optional
        Additive smoothing of bin probabilities in units of draws (Charest & Han's
        ``alpha``). Default None: weighted estimates (reweighting, moment matching, pooled
        refits) are not smoothed, as a weighted bin always holds draws of positive weight
        and smoothing would cap every log ratio near ``log(S / (B alpha))``; count
        estimates (``RefitOptions(estimator="raw")``) take ``alpha = 0.01``. A number
        smooths every estimate with it; an estimate it lowers is flagged as a lower bound.
    verify : VerifyOptions, dict or bool, optional
        How ``method="auto"`` confirms its headline by refits: the ``top`` neighbours with
        the largest estimates (and any whose bin has too few draws) are refitted and compared,
        and on disagreement more are refitted, worst first, within a budget; see
        :class:`pymc_edp.VerifyOptions`. ``False`` turns it off. Needs the model (or
        ``build_model``); the result says whether its headline was confirmed
        (``res.verification``) and which neighbours were (``pointwise["verification"]``).
    random_seed : int or numpy.random.Generator, optional
        Seeds the refits: refit ``k`` uses a seed derived from ``(random_seed, k)``, so
        results do not depend on the order refits run in or on resumption. None draws fresh
        entropy, as ``pm.sample`` does; the seed used is ``res.random_seed``, so any run can
        be repeated.
    progressbar : bool, default True
        Show progress (records reweighted, refits run).
    store_weights : bool, optional
        Keep every neighbour's smoothed log-weights on the result (``n_neighbours x S``
        floats) for later diagnostics (``res.curve()``, most plots). Default: yes, unless the
        audit prunes or reads the log-likelihood chunk by chunk (a large audit, where they
        would not fit in memory); it then keeps those of the :data:`TOP_WEIGHTS` neighbours
        with the largest epsilons, which is what ``res.interval()``, ``res.mcse()`` and the
        printed interval need.
    log_likelihood : {"auto", "group", "model"}, default "auto"
        Where the pointwise log-likelihood comes from. ``"group"``: the ``log_likelihood``
        group (read chunk by chunk when it is lazy, e.g. opened from zarr with dask
        chunks). ``"model"``: computed from ``model`` for each chunk of records over all
        draws and dropped, so the ``n x S`` array is never held. ``"auto"``: the group when
        there is one, else the model (streamed when its likelihood allows, else computed
        whole as ``pm.compute_log_likelihood`` does).
    prune : bool, optional
        ``True`` reweights records in decreasing order of the bound
        ``max log r - min log r`` on their epsilon and stops when the next bound is below
        the largest epsilon found: the epsilon is exactly that of the full audit, and
        pruned records keep their bound (``pointwise["epsilon_bound"]``, method
        ``"pruned"``). ``False`` computes every record. ``None`` prunes when records x draws
        exceeds ``chunks.prune_above`` (default 1e8).
    moment_match : MomentMatchOptions, dict or False, optional
        ``max_iters``, ``split``, ``cov`` and the k-hat threshold of moment matching; a
        :class:`pymc_edp.MomentMatchOptions`. ``False`` leaves it out of ``method="auto"``
        (reweight, then refit, as before version 0.3).
    chunks : ChunkOptions or dict, optional
        Memory budget per chunk of records, the executor chunks run on (e.g. a dask
        ``Client``), the pruning threshold: a :class:`pymc_edp.ChunkOptions`.
    refit : RefitOptions or dict, optional
        How neighbours are refitted (draws, engine, executor, checkpoint, max_refits,
        build_model, estimator, ...): a :class:`pymc_edp.RefitOptions`, or a dict of its
        fields; default ``RefitOptions()``.

    Returns
    -------
    EDPResult

    References
    ----------
    .. [1] Abowd, J. M., Schneider, M. J. and Vilhuber, L. "Differential privacy applications
       to Bayesian and linear mixed model estimation." Journal of Privacy and
       Confidentiality 5(1), 2013.
    .. [2] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017.
    .. [3] Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. "Pareto smoothed
       importance sampling." Journal of Machine Learning Research 25(72), 2024.
    .. [4] Paananen, T., Piironen, J., Bürkner, P.-C. and Vehtari, A. "Implicitly adaptive
       importance sampling." Statistics and Computing 31(2), 2021.

    Examples
    --------
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", method="psis", progressbar=False)
    >>> round(res.epsilon, 2) > 0
    True
    """
    model = resolve_model(model)
    opts = RefitOptions.coerce(refit)
    check_choice(method, "method", METHODS)
    check_choice(neighbour, "neighbour", NEIGHBOUR_RELATIONS)
    bins = check_int(bins, "bins", 2)
    smooth = _Smoothing.of(smoothing)
    verify_opts, verify_reason = _verify_options(verify, method)
    check_container(idata)
    check_model(model)
    if replacements is not None and neighbour != "replace":
        raise ValueError("replacements= is only used with neighbour='replace'")
    if method == "refit" and model is None and opts.build_model is None:
        raise ValueError(
            "method='refit' needs the model (model=) or a builder "
            "(refit=RefitOptions(build_model=...)) to refit the neighbour datasets"
        )
    if isinstance(observed, str):
        observed = [observed]
    if observed is not None and len(observed) == 0:
        raise ValueError("observed= is empty: name at least one observed variable, or pass None")
    check_choice(log_likelihood, "log_likelihood", LOG_LIKELIHOOD_SOURCES)
    if prune is not None and not isinstance(prune, bool):
        raise TypeError(f"prune must be True, False or None, got {prune!r}")
    if store_weights is not None and not isinstance(store_weights, bool):
        raise TypeError(f"store_weights must be True, False or None, got {store_weights!r}")
    chunk_opts = ChunkOptions.coerce(chunks)
    if moment_match is False and method == "moment_match":
        raise ValueError("method='moment_match' with moment_match=False: choose one")
    mm_opts = None if moment_match is False else MomentMatchOptions.coerce(moment_match)
    if method == "moment_match" and model is None:
        raise ValueError(
            "method='moment_match' moves the draws with the model's joint density: pass model="
        )
    seed = resolve_seed(random_seed)
    idata = load_in_memory(idata)  # a fit opened lazily as a whole: all but the log-likelihood

    inp = _read_inputs(
        idata, model, var_names, filter_vars, bins, observed, method, opts, log_likelihood
    )
    nbs = Neighbours.records(inp.ll) if groups is None else Neighbours.from_groups(inp.ll, groups)
    needs_y = neighbour == "replace" or (method != "psis" and inp.can_refit)
    observed_y = (
        _observed_y(idata, model, inp.ll, required=neighbour == "replace") if needs_y else {}
    )
    cands, replacement_sets = {}, [[]]
    if neighbour == "replace":
        cands, replacement_sets = _replacements(idata, model, inp, replacements, observed_y)
    bins_obj = binning.quantile_bins(inp.draws, bins)
    n_samples = inp.draws.shape[1]
    pruning = _pruning(prune, method, inp, len(nbs) * n_samples, chunk_opts)
    if store_weights is None:
        big = len(nbs) * n_samples * 8 > chunk_opts.memory_bytes
        store_weights = not (pruning or (inp.ll.lazy and big))
    elif store_weights and pruning:
        raise ValueError(
            "store_weights=True keeps every neighbour's weights, but pruning skips "
            "neighbours: pass prune=False to reweight (and keep) them all"
        )
    rw = Reweighter(
        ll=inp.ll,
        neighbours=nbs,
        bins=bins_obj,
        smoothing=smooth.weighted,
        reff=inp.reff,
        replacement_sets=tuple(tuple(r) for r in replacement_sets),
        keep_weights=bool(store_weights) and inp.factorised,
        keep_top=TOP_WEIGHTS if inp.factorised else 0,
    )
    # refits (method="auto") may replace the estimates of bad k-hat neighbours: only the
    # others give a lower bound on the final epsilon that pruning can stop at
    refit_later = (method == "auto" and inp.can_refit) or (
        method == "moment_match" and model is not None
    )
    est = _reweight(rw, inp.factorised, pruning, refit_later, chunk_opts, progressbar)

    messages = list(inp.messages)
    if pruning:
        _log.info(_pruning_message(est, nbs))
    nb_method = np.full(len(nbs), "psis", dtype=object)
    nb_method[est.pruned] = "pruned"
    problem = RefitProblem(
        model=model,
        ll=inp.ll,
        neighbours=nbs,
        names=tuple(inp.names),
        bins=bins_obj,
        smoothing=smooth.weighted,
        observed_y=observed_y,
        candidates=cands or None,
        worst_candidate=est.worst_cand,
        replacement_sets=replacement_sets if inp.factorised else None,
        draws=inp.draws,
        n_chains=int(inp.posterior.sizes.get("chain", 1)),
        count_smoothing=smooth.count,
    )
    moment_matching = method in ("auto", "moment_match") and mm_opts is not None
    if moment_matching and model is not None and inp.factorised:
        _moment_match(est, nb_method, idata, problem, inp, mm_opts, messages)
    khat_now = np.where(np.isnan(est.khat_mm), est.khat, est.khat_mm)
    to_refit = _choose_refits(khat_now, method, inp, opts, nbs, messages)
    status = np.full(len(nbs), "", dtype=object)
    # what the refits depend on (not bins or estimator: one set of refits serves every B and
    # both estimators); a seed drawn afresh does not stop a rerun from resuming
    config = dict(
        opts.config(),
        neighbour=neighbour,
        groups=None if groups is None else "given",
        random_seed=None if random_seed is None else seed,
        labels=[str(x) for x in nbs.labels],
        var_names=list(inp.names),
    )
    refitter = _Refitter(problem, opts, seed, config, progressbar, est, nb_method, status)
    if to_refit.size:
        refitter.run(to_refit)
        if not (nb_method == "refit").any():
            messages.append(
                f"none of the {to_refit.size} refit(s) succeeded (see res.pointwise['status']): "
                "every epsilon here is a reweighting estimate, and the method is reported as "
                "'psis'"
            )
    order = np.argsort(inp.draws, axis=1, kind="stable")
    errors = _pair_errors(est, nb_method, bins_obj, order, smooth.weighted, problem.n_chains)
    check = _Verification.off(len(nbs), verify_reason)
    if verify_opts is not None:
        if not inp.can_refit:
            check = _Verification.off(
                len(nbs),
                "unverified: no model to refit the worst neighbours with (pass model=, or "
                "refit=RefitOptions(build_model=...))",
            )
        elif not inp.factorised:
            done = int((nb_method == "refit").sum())
            check = _Verification.off(len(nbs), "every neighbour refitted (method='auto')")
            if done < len(nbs):
                check.status = "incomplete"
                check.note = (
                    f"incomplete: {done} of {len(nbs)} neighbours refitted; the others have no "
                    "estimate (no factorised likelihood), so epsilon is a lower bound"
                )
        else:
            check = _verify(verify_opts, est, nb_method, errors, refitter, nbs)
            if pruning and _unprune(rw, est, nb_method, chunk_opts):
                errors = _pair_errors(
                    est, nb_method, bins_obj, order, smooth.weighted, problem.n_chains
                )
    messages.extend(refitter.messages)
    messages.extend(check.messages)
    if not inp.factorised:  # no weights: a neighbour without a successful refit has nothing
        unevaluated = nb_method != "refit"
        nb_method[unevaluated] = "not evaluated"
        est.limit[unevaluated] = limits.NOT_EVALUATED
    # neighbours with neither weights nor a successful refit have no estimate
    est.eps[np.isneginf(est.eps)] = np.nan
    messages.extend(_limit_messages(est, nbs.labels, inp.par_labels, smooth.weighted))
    lower, upper, se = _intervals(est, nb_method, errors)

    result = _assemble(
        est,
        inp,
        nbs,
        bins_obj,
        nb_method=nb_method,
        status=status,
        messages=messages,
        settings=dict(
            bins=bins,
            # what happened, not what was asked: every neighbour refitted, none, or some
            method=_method_used(nb_method),
            requested_method=method,
            neighbour=neighbour if groups is None else f"{neighbour} (groups)",
            replace=neighbour == "replace",
            smoothing=smooth.weighted,
            count_smoothing=smooth.count,
            random_seed=seed,
        ),
        refits=refitter.collection(),
        intervals=(lower, upper, se),
        verification=check,
    )
    return _with_noise_floor(result)


# ------------------------------------------------------------------------- the stages
@dataclass
class _Inputs:
    """The posterior and log-likelihood as the audit reads them."""

    posterior: xr.Dataset
    names: list[str]
    draws: np.ndarray
    par_labels: list[str]
    var_of: list[str]
    ll: LogLikelihood
    factorised: bool
    can_refit: bool
    reff: float
    messages: list[str]


def _read_inputs(
    idata, model, var_names, filter_vars, bins, observed, method, opts, source="auto"
) -> _Inputs:
    """Posterior draws to bin and the pointwise log-likelihood, with every check on them."""
    posterior = get_group(idata, "posterior")
    observed_data = (
        get_group(idata, "observed_data") if has_group(idata, "observed_data") else None
    )
    if model is not None:
        constant_data = (
            get_group(idata, "constant_data") if has_group(idata, "constant_data") else None
        )
        check_model_matches_data(model, observed_data, constant_data)
    names = select_var_names(posterior, var_names, filter_vars)
    draws, par_labels, var_of = posterior_matrix(posterior, names)
    keep, messages = drop_data_copies(
        draws, var_of, explicit=var_names is not None, observed=observed_arrays(idata, model)
    )
    hidden = potentials_with_data(model) if model is not None else []
    if hidden:
        messages.append(
            f"the model's Potential(s) {hidden} depend on data: records that enter the "
            "posterior only through a Potential have no pointwise log-likelihood and are no "
            "neighbour of this audit, so epsilon covers only the records of the observed "
            f"variables. To audit them, write them as observed variables (pm.CustomDist with "
            "observed=, one term per record)."
        )
    if not keep.all():
        draws = draws[keep]
        par_labels = [lab for lab, k in zip(par_labels, keep, strict=True) if k]
        var_of = [v for v, k in zip(var_of, keep, strict=True) if k]
        names = [n for n in names if n in var_of]
    n_samples = draws.shape[1]
    if n_samples < MIN_DRAWS_PER_BIN * bins:
        max_bins = n_samples // MIN_DRAWS_PER_BIN
        advice = f"Use bins <= {max_bins} or draw" if max_bins >= 2 else "Draw"
        raise ValueError(
            f"too few draws for the bins asked: {n_samples} posterior draws for bins={bins} "
            f"leaves under {MIN_DRAWS_PER_BIN} draws per bin, where the bin probabilities "
            f"are mostly noise. {advice} at least {MIN_DRAWS_PER_BIN * bins} samples."
        )
    # the stored group is read unless the log-likelihood is asked from the model
    from_group = has_group(idata, "log_likelihood") and source != "model"
    ll, factorised = _log_likelihood(idata, model, observed, method, opts, observed_data, source)
    if ll.n_samples != n_samples:
        raise ValueError(
            f"the log_likelihood group has {ll.n_samples} draws but the posterior has "
            f"{n_samples}; they must come from the same sampling run"
        )
    if factorised:
        check_log_likelihood_layout(ll.datasets, ll.names, posterior, observed_data)
        if model is not None and from_group:
            observed_y = _observed_y(idata, model, ll, required=False)
            check_log_likelihood_matches_model(
                ll.datasets[list(ll.names)], posterior, model, observed_y
            )
    return _Inputs(
        posterior=posterior,
        names=names,
        draws=draws,
        par_labels=par_labels,
        var_of=var_of,
        ll=ll,
        factorised=factorised,
        can_refit=model is not None or opts.build_model is not None,
        reff=relative_efficiency(posterior),
        messages=messages,
    )


def _log_likelihood(idata, model, observed, method, opts, observed_data, source="auto"):
    """The pointwise log-likelihood, or (with a builder) only the records' layout."""
    streamed = _streamed_log_likelihood(idata, model, observed, source)
    if streamed is not None:
        return streamed, True
    try:
        ll_ds = ensure_log_likelihood(idata, model, progressbar=False)
        return LogLikelihood.from_dataset(ll_ds, observed), True
    except (NonFactorisedError, ValueError) as err:
        if isinstance(err, NonFactorisedError):
            check_not_scalar(observed_data, err)
        no_loglik = "no 'log_likelihood' group" in str(err)
        if opts.build_model is None or not (isinstance(err, NonFactorisedError) or no_loglik):
            raise
        # refit-only: records are the entries of each observed variable's first dimension
        if method in ("psis", "moment_match"):
            raise ValueError(
                f"method={method!r} needs a factorised pointwise log-likelihood; with build_model "
                "use method='refit' (or 'auto', which then refits every neighbour)"
            ) from err
        if observed_data is None:
            raise ValueError(
                "refitting through build_model needs the observed_data group to know the "
                "records; sample with pm.sample so that it is stored"
            ) from err
    posterior = get_group(idata, "posterior")
    layout = LogLikelihood.from_observed(
        observed_data, observed, posterior.sizes["chain"], posterior.sizes["draw"]
    )
    return layout, False


def _streamed_log_likelihood(idata, model, observed, source) -> LogLikelihood | None:
    """The log-likelihood computed from the model chunk by chunk, when asked or best."""
    if source == "group":
        if not has_group(idata, "log_likelihood"):
            raise ValueError(
                "log_likelihood='group' but the posterior has no 'log_likelihood' group: run "
                "pm.compute_log_likelihood(idata, model=model), or pass model= with "
                "log_likelihood='model' (or 'auto') to compute it chunk by chunk"
            )
        return None
    if source == "auto" and (has_group(idata, "log_likelihood") or model is None):
        return None
    if model is None:
        raise ValueError(
            "log_likelihood='model' computes the log-likelihood from the model: pass model="
        )
    names = observed or [rv.name for rv in model.observed_RVs]
    reasons = {k: v for k, v in stream_supported(model, names).items() if v is not None}
    if reasons:
        if source == "model":
            detail = "; ".join(f"{k}: {v}" for k, v in reasons.items())
            raise ValueError(
                "log_likelihood='model' cannot compute these observed variables' "
                f"log-likelihood record by record ({detail}). Use log_likelihood='auto' (or "
                "compute the group with pm.compute_log_likelihood)."
            )
        _log.info("computing the whole log_likelihood group: %s", reasons)
        return None
    return model_log_likelihood(model, idata, names)


def _observed_y(idata, model, ll: LogLikelihood, *, required: bool) -> dict:
    """Observed values of every observed variable that can be found."""
    out = {}
    for name in ll.names:
        try:
            out[name] = observed_values(idata, model, name)
        except ValueError:
            if required:
                raise
    return out


def _replacements(idata, model, inp: _Inputs, replacements, observed_y):
    """Candidate values per variable, and per candidate the log-likelihood arrays at them."""
    cands = {}
    for name in inp.ll.names:
        y = observed_y[name]
        cands[name] = candidates(replacements, name, y, integer=integer_data(model, name, y))
    if not inp.factorised:
        if any(c.shape[0] != 1 for c in cands.values()):
            raise ValueError(
                "without a factorised likelihood the worst of several replacements "
                "cannot be chosen by reweighting: give one replacement per record"
            )
        return cands, []
    per_var = []
    for v, name in enumerate(inp.ll.names):
        alt = replacement_log_likelihood(idata, model, name, cands[name])
        check_support(alt, cands[name], name)
        n_v = inp.ll.arrays[v].shape[1]
        if alt.shape[-1] != n_v:
            raise ValueError(
                f"the model's log-likelihood of {name!r} has {alt.shape[-1]} terms per "
                f"draw but the log_likelihood group has {n_v}"
            )
        per_var.append(alt)
    n_cand = max(a.shape[0] for a in per_var)
    return cands, [[a[min(c, a.shape[0] - 1)] for a in per_var] for c in range(n_cand)]


@dataclass
class _Estimates:
    """Per-neighbour results of reweighting (moment matching and refits overwrite rows)."""

    eps: np.ndarray  # (neighbour, parameter)
    argbin: np.ndarray
    khat: np.ndarray
    eps_unsmoothed: np.ndarray  # (neighbour, parameter): to say when smoothing binds
    bin_draws: np.ndarray  # (neighbour, parameter): effective draws in the decisive bin
    limit: np.ndarray  # (neighbour, parameter) int8: pymc_edp.base.limits codes
    worst_cand: np.ndarray
    log_weights: np.ndarray | None  # every neighbour's, when kept
    kept: dict  # otherwise {neighbour: log-weights} of those that can set epsilon
    refit_mcse: np.ndarray  # standard error of a refit's / moment match's estimate (or NaN)
    khat_mm: np.ndarray  # k-hat after moment matching (NaN: not attempted)
    bound: np.ndarray  # max - min of the log ratios: eps <= bound (NaN: not computed)
    pruned: np.ndarray  # neighbours skipped because their bound is below epsilon

    def set_row(self, k: int, value, se: float) -> None:
        """Neighbour ``k``'s estimate from its own draws (a moment match or a refit)."""
        self.eps[k], self.argbin[k], self.refit_mcse[k] = value.eps, value.argbin, se
        self.eps_unsmoothed[k], self.bin_draws[k] = value.eps_unsmoothed, value.bin_draws
        self.limit[k] = value.limit

    def weights(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The kept log-weights ``(rows, S)`` and their neighbour indices, or None."""
        if self.log_weights is not None:
            return self.log_weights, np.arange(self.log_weights.shape[0])
        if not self.kept:
            return None
        rows = np.array(sorted(self.kept), dtype=np.int64)
        return np.stack([self.kept[int(i)] for i in rows]), rows


def _reweight(rw: Reweighter, factorised, pruning, refit_later, chunk_opts, progressbar):
    """Epsilon, k-hat, bound and weights of every neighbour (or, pruning, of those that matter).

    Chunks of neighbours run on ``chunk_opts.executor`` (here by default). Pruning first
    bounds every neighbour's epsilon (one cheap pass), then reweights in decreasing order
    of the bound, a wave of chunks at a time, until the next bound is below the largest
    epsilon that refits cannot replace (see :mod:`pymc_edp.model.reweight`).
    """
    n_nb, n_par = len(rw.neighbours), rw.bins.index.shape[0]
    est = _Estimates(
        eps=np.full((n_nb, n_par), -np.inf),
        argbin=np.zeros((n_nb, n_par), dtype=np.int64),
        khat=np.full(n_nb, np.nan),
        eps_unsmoothed=np.full((n_nb, n_par), -np.inf),
        bin_draws=np.full((n_nb, n_par), np.nan),
        limit=np.zeros((n_nb, n_par), dtype=np.int8),
        worst_cand=np.zeros(n_nb, dtype=np.int64),
        log_weights=np.empty((n_nb, rw.bins.n_samples)) if rw.keep_weights else None,
        kept={},
        refit_mcse=np.full(n_nb, np.nan),
        khat_mm=np.full(n_nb, np.nan),
        bound=np.full(n_nb, np.nan),
        pruned=np.array([], dtype=np.int64),
    )
    if not factorised:
        return est
    size = _aligned(chunk_opts.rows(rw.bins.n_samples), rw.ll)
    slices = [slice(a, min(a + size, n_nb)) for a in range(0, n_nb, size)]
    run = dict(executor=chunk_opts.executor, progressbar=False, shared=rw)
    if not pruning:
        desc = "EDP: reweighting records"
        with progress_bar(n_nb, description=desc, enabled=progressbar) as bar:
            map_tasks(estimate_chunk, slices, on_result=lambda _, r: _fill(est, r, bar), **run)
        if est.kept:
            _trim_kept(est)
        return est
    with progress_bar(n_nb, description="EDP: bounding records", enabled=progressbar) as bar:

        def got_bound(i, b):
            est.bound[slices[i]] = b
            bar.advance(b.size)

        map_tasks(bound_chunk, slices, on_result=got_bound, **run)
    order = np.argsort(-est.bound, kind="stable")
    threshold = khat_threshold(rw.bins.n_samples)
    lower, done = -np.inf, 0
    # small chunks first, where the stopping point is decided, then doubling to full size;
    # from a stored (dask) group full chunks, as each read decompresses whole stored chunks
    stored = any(getattr(a, "chunks", None) for a in rw.ll.arrays)
    step = size if stored else min(size, max(16, size // 64))
    with progress_bar(n_nb, description="EDP: reweighting records", enabled=progressbar) as bar:
        while done < n_nb and prune_margin(est.bound[order[done]]) >= lower:
            todo = order[done : done + step * chunk_opts.n_workers()]
            tasks = [np.sort(todo[a : a + step]) for a in range(0, todo.size, step)]
            step = min(2 * step, size)
            for res in map_tasks(estimate_chunk, tasks, **run):
                _fill(est, res, bar)
                final = res.eps.max(axis=1)
                if refit_later:  # bad k-hat estimates may yet be replaced by refits
                    final = final[~(res.khat > threshold)]
                lower = max(lower, float(final.max(initial=-np.inf)))
            done += todo.size
    est.pruned = np.sort(order[done:])
    if est.kept:
        _trim_kept(est)
    return est


def _aligned(size: int, ll: LogLikelihood) -> int:
    """Chunk rows as a multiple of a lazy (dask) group's stored chunks, so none is read twice.

    A stored chunk up to four times the budget's chunk is taken whole rather than read
    several times over.
    """
    stored = [a.chunks[1][0] for a in ll.arrays if getattr(a, "chunks", None)]
    if not stored:
        return size
    c = min(stored)
    if size >= c:
        return (size // c) * c
    return c if c <= 4 * size else size


def _fill(est: _Estimates, res, bar) -> None:
    """Copy one chunk's results into the per-neighbour arrays (and keep the weights that count)."""
    i = res.index
    est.eps[i], est.argbin[i], est.khat[i] = res.eps, res.argbin, res.khat
    est.eps_unsmoothed[i], est.bin_draws[i], est.limit[i] = (
        res.eps_unsmoothed,
        res.bin_draws,
        res.limit,
    )
    est.worst_cand[i], est.bound[i] = res.worst_cand, res.bound
    if res.log_weights is not None:
        if est.log_weights is not None:
            est.log_weights[res.weights_index] = res.log_weights
        else:
            for k, row in zip(res.weights_index, res.log_weights, strict=True):
                est.kept[int(k)] = row
            if len(est.kept) > 4 * TOP_WEIGHTS:
                _trim_kept(est)
    bar.advance(i.size)


def _trim_kept(est: _Estimates) -> None:
    """Keep the weights of the :data:`TOP_WEIGHTS` largest estimates (and some at a limit)."""
    keys = np.array(sorted(est.kept), dtype=np.int64)
    eps = np.nan_to_num(est.eps[keys].max(axis=1), nan=-np.inf)
    rows = top_rows(eps, est.limit[keys].any(axis=1), TOP_WEIGHTS)
    est.kept = {int(k): est.kept[int(k)] for k in keys[rows]}


def _pruning(prune, method, inp, record_draws: int, chunk_opts) -> bool:
    """Whether to prune: as asked, or (None) when the audit is large enough to matter."""
    possible = inp.factorised and method != "refit"
    if prune and not possible:
        raise ValueError(
            "prune=True needs every neighbour reweighted first: it cannot be used with "
            "method='refit' or without a factorised pointwise log-likelihood"
        )
    if prune is None:
        return possible and record_draws > chunk_opts.prune_above
    return prune


def _pruning_message(est: _Estimates, nbs) -> str:
    n_pruned = est.pruned.size
    top = float(np.max(est.bound[est.pruned])) if n_pruned else float("nan")
    return (
        (
            f"pruned {n_pruned} of {len(nbs)} neighbours whose bound max(log r) - min(log r) "
            f"(at most {top:.3g}) is below the epsilon found: epsilon is exact, their rows hold "
            "the bound in pointwise['epsilon_bound'] and method 'pruned'; per-parameter "
            "epsilons below that bound are lower bounds (parameters['exact'])"
        )
        if n_pruned
        else "pruning found no neighbour to skip: every neighbour was reweighted"
    )


def _method_used(nb_method: np.ndarray) -> str:
    """What happened, not what was asked: every neighbour refitted, none, or some."""
    refitted = nb_method == "refit"
    if refitted.all():
        return "refit"
    if refitted.any():
        return "auto"
    if (nb_method == "moment_match").any():
        return "moment_match"
    return "psis"


def _moment_match(est, nb_method, idata, problem, inp, mm_opts, messages) -> None:
    """Moment-match the neighbours above the k-hat threshold (Paananen et al. 2021).

    A neighbour takes the moment-matched estimate when its k-hat fell (its final k-hat in
    ``est.khat_mm``); the rest keep their reweighting estimate, and ``method="auto"``
    refits those still above the threshold.
    """
    threshold = mm_opts.threshold(inp.draws.shape[1])
    bad = np.flatnonzero(est.khat > threshold)
    if not bad.size:
        return
    ll, nbs = problem.ll, problem.neighbours
    try:
        outcomes = moment_match_neighbours(
            problem.model,
            idata,
            bad,
            lambda k: neighbour_changes(ll, nbs, k, problem.candidate(k)),
            names=inp.names,
            bins=problem.bins,
            smoothing=problem.smoothing,
            reff=inp.reff,
            options=mm_opts,
        )
    except (ValueError, TypeError, NotImplementedError) as err:
        messages.append(
            f"moment matching was not possible for this model ({err}); the {bad.size} "
            "neighbour(s) above the k-hat threshold keep their reweighting estimate"
        )
        return
    for k, out in outcomes.items():
        est.khat_mm[k] = out.khat_after
        if out.khat_after < out.khat_before:
            est.set_row(k, out, out.mcse)
            nb_method[k] = "moment_match"


def _choose_refits(khat, method, inp: _Inputs, opts: RefitOptions, nbs, messages) -> np.ndarray:
    """Neighbours to refit, worst k-hat first, at most ``opts.max_refits`` of them."""
    if method == "refit" or not inp.factorised:
        to_refit = np.arange(len(nbs))
    elif method == "auto" and inp.can_refit:
        to_refit = np.flatnonzero(khat > khat_threshold(inp.draws.shape[1]))
    else:
        return np.array([], dtype=np.int64)
    to_refit = to_refit[np.argsort(-np.nan_to_num(khat[to_refit], nan=np.inf), kind="stable")]
    if opts.max_refits is not None and to_refit.size > opts.max_refits:
        left = to_refit[opts.max_refits :]
        names = f"{', '.join(str(nbs.labels[i]) for i in left[:10])}"
        names += "..." if left.size > 10 else ""
        if inp.factorised:
            messages.append(
                f"max_refits={opts.max_refits}: {left.size} neighbour(s) left to reweighting "
                f"({names})"
            )
        else:  # nothing else can estimate them
            messages.append(
                f"max_refits={opts.max_refits}: {left.size} of {len(nbs)} neighbour(s) not "
                f"evaluated ({names}): without a factorised likelihood only a refit gives an "
                f"estimate, so epsilon, the maximum over the {opts.max_refits} refitted, is a "
                "lower bound. Raise max_refits, or rerun with the same checkpoint."
            )
        to_refit = to_refit[: opts.max_refits]
    return to_refit


class _Refitter:
    """Runs refits and writes their estimates into the audit's per-neighbour arrays."""

    def __init__(self, problem, opts, seed, config, progressbar, est, nb_method, status):
        self.problem, self.opts, self.seed, self.config = problem, opts, seed, config
        self.progressbar = progressbar
        self.est, self.nb_method, self.status = est, nb_method, status
        self.outcomes: dict = {}
        self.messages: list[str] = []

    def run(self, indices: np.ndarray) -> None:
        """Refit ``indices``; successful refits replace their neighbours' estimates."""
        run, refit_messages = refit_neighbours(
            np.asarray(indices, dtype=np.int64),
            self.problem,
            self.opts,
            random_seed=self.seed,
            config=self.config,
            progressbar=self.progressbar,
        )
        self.messages.extend(refit_messages)
        self.outcomes.update(run.outcomes)
        for k, estimate in run.estimates.items():
            out = run.outcomes[k]
            self.status[k] = out.status if not out.reason else f"{out.status}: {out.reason}"
            if estimate is not None:
                self.est.set_row(k, estimate, estimate.se)
                self.nb_method[k] = "refit"

    def collection(self) -> Refits | None:
        return Refits(self.outcomes) if self.outcomes else None


@dataclass
class _Errors:
    """Monte-Carlo errors of the reweighted estimates that can set epsilon (90% level)."""

    se: np.ndarray  # (neighbour,) of the leading pair; NaN where not computed
    lower: np.ndarray
    upper: np.ndarray


def _pair_errors(est, nb_method, bins_obj, order, smoothing, n_chains) -> _Errors:
    """Errors of the reweighted neighbours whose weights are kept and that can set epsilon.

    The :data:`TOP_WEIGHTS` largest reweighting estimates (and those at a limit): the
    delta-method error of each one's leading (parameter, bin) pairs, and the 90% interval of
    their maximum (:func:`pymc_edp.base.mcse.max_interval`).
    """
    n = est.eps.shape[0]
    out = _Errors(np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan))
    kept = est.weights()
    if kept is None:
        return out
    lw, rows = kept
    reweighted = nb_method[rows] == "psis"
    eps = np.nan_to_num(est.eps[rows].max(axis=1), nan=-np.inf)
    eps = np.where(reweighted, eps, -np.inf)
    pick = top_rows(eps, reweighted & est.limit[rows].any(axis=1), TOP_WEIGHTS)
    pick = pick[reweighted[pick] & np.isfinite(eps[pick])]
    if not pick.size:
        return out
    pairs = leading_pairs(lw[pick], bins_obj, order=order, smoothing=smoothing, n_chains=n_chains)
    lo, hi = max_interval(pairs["log_ratio"], pairs["se"], 0.9, signed=True)
    idx = rows[pick]
    out.se[idx], out.lower[idx], out.upper[idx] = pairs["se"][:, 0], lo, hi
    return out


def _intervals(est, nb_method, errors: _Errors):
    """Per-neighbour 90% interval and standard error of the final estimates.

    Reweighted neighbours keep their pair intervals; moment-matched and refitted ones take
    ``estimate +- z se`` of their own error; an estimate at a limit is open above.
    """
    eps = np.nan_to_num(est.eps, nan=-np.inf).max(axis=1)
    lower, upper, se = errors.lower.copy(), errors.upper.copy(), errors.se.copy()
    own = np.isin(nb_method, ["refit", "moment_match"])
    se[own] = est.refit_mcse[own]
    with np.errstate(invalid="ignore"):
        lower[own] = np.maximum(eps[own] - _Z90 * se[own], 0.0)
        upper[own] = eps[own] + _Z90 * se[own]
    no_se = own & np.isnan(se)
    lower[no_se], upper[no_se] = np.nan, np.nan
    limited = est.limit.any(axis=1)
    upper[limited] = np.inf
    return lower, upper, se


# -------------------------------------------------------------------- verification
@dataclass
class _Verification:
    """What the headline's verification did: per neighbour, and in one status."""

    status: str  # "confirmed", "corrected", "incomplete", "unverified", "refit"
    note: str
    code: np.ndarray  # (neighbour,) int8: VERIFICATION codes
    checked: np.ndarray  # the estimate that was checked
    refit: np.ndarray  # the refit's estimate
    z: np.ndarray  # (refit - checked) / combined standard error
    messages: list

    @classmethod
    def off(cls, n: int, note: str | None) -> _Verification:
        status = "refit" if note and note.startswith("every neighbour refitted") else "unverified"
        nan = np.full(n, np.nan)
        return cls(status, note or "", np.zeros(n, np.int8), nan, nan.copy(), nan.copy(), [])


def _verify_options(verify, method: str) -> tuple[VerifyOptions | None, str | None]:
    """The verification options and, when it will not run, why."""
    if verify is False:
        return None, "unverified: verification turned off (verify=False)"
    if method != "auto":
        if verify is not None:
            raise ValueError(
                f"verify= confirms method='auto' by refitting its worst neighbours; with "
                f"method={method!r} leave it out (method='refit' refits every neighbour)"
            )
        why = {
            "psis": "unverified: method='psis' reweights only",
            "moment_match": "unverified: method='moment_match' does not refit",
            "refit": "every neighbour refitted (method='refit')",
        }
        return None, why[method]
    return VerifyOptions.coerce(None if verify is True else verify), None


def _verify(vopts: VerifyOptions, est, nb_method, errors: _Errors, refitter, nbs):
    """Refit the worst neighbours, compare, and on disagreement refit more (worst first).

    The estimates checked are reweighted or moment-matched; each refit replaces its
    neighbour's estimate (the pooled refit uses the reweighted draws and its own, so it is
    the better estimate). A refit disagrees with the estimate it checks when their
    difference exceeds ``z`` combined standard errors. After a disagreement,
    reweighting is unreliable for this model: every unchecked neighbour whose upper
    interval end, scaled by the largest underestimate seen, reaches the headline is refitted,
    worst first, in batches of ``top``, within ``max_refits`` and ``time_budget``.
    """
    start = time.perf_counter()
    n = est.eps.shape[0]
    check = _Verification.off(n, None)
    eps = np.nan_to_num(est.eps, nan=-np.inf).max(axis=1)
    eligible = np.isin(nb_method, ["psis", "moment_match"]) & np.isfinite(eps)
    if not eligible.any():
        check.status = "confirmed"
        check.note = "confirmed: every neighbour that can set epsilon was refitted"
        return check
    # a refit resolves a bin with too few (or no) draws, not a smoothing constant
    resolvable = np.isin(est.limit, [limits.FEW_DRAWS, limits.EMPTY_BIN]).any(axis=1)
    se_before = np.where(np.isin(nb_method, ["moment_match"]), est.refit_mcse, errors.se)
    upper = np.where(np.isnan(errors.upper), eps, errors.upper)
    cand = np.flatnonzero(eligible)
    cand = cand[np.argsort(-eps[cand], kind="stable")]
    rest = cand[vopts.top :]
    batch = np.concatenate([cand[: vopts.top], rest[resolvable[rest]]])
    batch = batch[: vopts.max_refits]
    done, factor = 0, 1.0
    left = np.array([], dtype=np.int64)
    while batch.size:
        before = eps[batch].copy()
        try:
            refitter.run(batch)
        except RefitSetupError as err:  # before any sampling: nothing to confirm with
            check.status = "unverified"
            check.note = f"unverified: this model cannot be refitted ({err})"
            check.messages.append(
                f"the headline could not be confirmed by refits: this model cannot be "
                f"refitted ({err}); epsilon rests on reweighting alone"
            )
            return check
        done += batch.size
        for k, e0 in zip(batch, before, strict=True):
            check.checked[k] = e0
            if nb_method[k] != "refit":
                check.code[k] = VERIFY_FAILED
                continue
            e1 = float(np.nanmax(est.eps[k]))
            s = np.hypot(np.nan_to_num(se_before[k]), np.nan_to_num(est.refit_mcse[k]))
            z = (e1 - e0) / s if s > 0 else (0.0 if e1 == e0 else np.sign(e1 - e0) * np.inf)
            check.refit[k], check.z[k] = e1, z
            # even above an estimate flagged as a lower bound: a refit far from the estimate
            # says reweighting is unreliable for this model, which may hold elsewhere too
            if abs(z) > vopts.z:
                check.code[k] = VERIFY_DISAGREE
                if e0 > 0:
                    factor = max(factor, e1 / e0)
            else:
                check.code[k] = VERIFY_AGREE
        if not (check.code == VERIFY_DISAGREE).any():
            break
        headline = float(np.nanmax(np.nan_to_num(est.eps, nan=-np.inf)))
        todo = eligible & (check.code == 0) & (upper * factor >= headline)
        left = np.flatnonzero(todo)
        left = left[np.argsort(-eps[left], kind="stable")]
        budget = vopts.max_refits - done
        late = vopts.time_budget is not None and time.perf_counter() - start > vopts.time_budget
        if not left.size or budget <= 0 or late:
            break
        batch = left[: min(vopts.top, budget)]
    # left: unchecked neighbours that could still set epsilon when the budget stopped it;
    # pending: estimates at a limit a refit would resolve, that the budget left unrefitted
    pending = np.flatnonzero(eligible & (check.code == 0) & resolvable)
    _verification_outcome(check, vopts, est, nbs, done, left, pending, start)
    return check


def _verification_outcome(check, vopts, est, nbs, done, left, pending, start) -> None:
    """Status, note and warnings of a verification run; leftovers flagged as lower bounds."""
    ok = check.code == VERIFY_AGREE
    bad = check.code == VERIFY_DISAGREE
    failed = check.code == VERIFY_FAILED
    seconds = time.perf_counter() - start
    checked = int(ok.sum() + bad.sum())
    if not checked:
        check.status = "unverified"
        check.note = (
            f"unverified: the {int(failed.sum())} verification refit(s) failed "
            "(see pointwise['status'])"
        )
        check.messages.append(
            "the headline could not be confirmed: every verification refit failed (see "
            "res.pointwise['status']); epsilon rests on reweighting alone"
        )
        return
    zmax = float(np.nanmax(np.abs(check.z[ok | bad])))
    if not bad.any():
        agree = (
            f"refitting the {checked} worst neighbours: their refits agree with the estimates "
            f"within Monte-Carlo error (largest |z| = {zmax:.1f}, threshold {vopts.z:g}; "
            f"{seconds:.1f} s)"
        )
        if pending.size:  # lower bounds the budget left: nothing confirms them
            check.status = "incomplete"
            check.note = (
                f"incomplete: checked by {agree}, but {pending.size} neighbour(s) whose "
                "estimates are lower bounds (too few draws in a bin) were not refitted "
                "(budget), so epsilon is a lower bound"
            )
            check.messages.append(
                f"The verification budget (VerifyOptions(max_refits={vopts.max_refits}, "
                f"time_budget={vopts.time_budget})) left {pending.size} neighbour(s) whose "
                "estimates are lower bounds unrefitted "
                f"({', '.join(str(nbs.labels[k]) for k in pending[:5])}"
                f"{'...' if pending.size > 5 else ''}): epsilon is a lower bound. Raise the "
                "budget or use method='refit'."
            )
        else:
            check.status = "confirmed"
            check.note = f"confirmed by {agree}"
        if failed.any():
            check.note += f"; {int(failed.sum())} refit(s) failed"
        return
    worst = np.flatnonzero(bad)[np.argmax(np.abs(check.z[bad]))]
    detail = (
        f"{int(bad.sum())} of {checked} refitted neighbours disagree with their estimates "
        f"(worst: {nbs.labels[worst]}, {check.checked[worst]:.3f} estimated vs "
        f"{check.refit[worst]:.3f} refitted, z = {check.z[worst]:.1f})"
    )
    if left.size:
        for k in left:  # could still set epsilon: their estimates are lower bounds
            p = int(np.nanargmax(np.nan_to_num(est.eps[k], nan=-np.inf)))
            if est.limit[k, p] == limits.NONE:
                est.limit[k, p] = limits.UNVERIFIED
        check.status = "incomplete"
        check.note = (
            f"reweighting is unreliable for this model: {detail}; verification refitted "
            f"{done} neighbours, worst first, but not {left.size} more that could still set "
            "epsilon (budget), so epsilon is a lower bound"
        )
        check.messages.append(
            f"Reweighting is unreliable for this model: {detail}. Verification refitted {done} "
            f"neighbours, worst first, and their refitted values are used, but its "
            f"budget (VerifyOptions(max_refits={vopts.max_refits}, time_budget="
            f"{vopts.time_budget})) stopped before {left.size} more that could still set "
            "epsilon: their estimates are lower bounds. Raise the budget or use "
            "method='refit'."
        )
        return
    check.status = "corrected"
    check.note = (
        f"corrected by refits: {detail}; verification refitted {done} neighbours, worst "
        "first, until none left could reach epsilon, and their refitted values are used"
    )
    check.messages.append(
        f"Reweighting is unreliable for this model: {detail}. Verification refitted {done} "
        "neighbours, worst first, until no other could reach epsilon; their refitted values "
        "are used."
    )


def _unprune(rw: Reweighter, est: _Estimates, nb_method, chunk_opts) -> bool:
    """Reweight pruned neighbours whose bound reaches an epsilon that refits lowered.

    Pruning stopped at the largest reweighted epsilon; when verification replaced it by a
    smaller refitted value, pruned neighbours with a bound above the new maximum could set
    it, so they are reweighted now and pruning stays exact. Returns whether any was.
    """
    if not est.pruned.size:
        return False
    top = float(np.nanmax(np.nan_to_num(est.eps, nan=-np.inf)))
    again = est.pruned[prune_margin(est.bound[est.pruned]) >= top]
    if not again.size:
        return False
    run = dict(executor=chunk_opts.executor, progressbar=False, shared=rw)
    size = max(1, chunk_opts.rows(rw.bins.n_samples))
    tasks = [again[a : a + size] for a in range(0, again.size, size)]
    with progress_bar(again.size, description="EDP: reweighting records", enabled=False) as bar:
        for res in map_tasks(estimate_chunk, tasks, **run):
            _fill(est, res, bar)
    nb_method[again] = "psis"
    est.pruned = np.setdiff1d(est.pruned, again)
    if est.kept:
        _trim_kept(est)
    return True


def _limit_messages(est, labels, par_labels, smoothing: float) -> list[str]:
    """One warning per kind of resolution limit met: which neighbours, why, and the remedy."""
    out = []
    eps = np.nan_to_num(est.eps, nan=-np.inf)
    for code in (limits.EMPTY_BIN, limits.SMOOTHING, limits.FEW_DRAWS):
        hit = est.limit == code
        if not hit.any():
            continue
        rows = np.flatnonzero(hit.any(axis=1))
        score = np.where(hit[rows], eps[rows], -np.inf)
        worst = rows[np.argmax(score.max(axis=1))]
        p = int(np.argmax(np.where(hit[worst], eps[worst], -np.inf)))
        example = f"{labels[worst]}: {eps[worst, p]:.3f} for {par_labels[p]}"
        if code == limits.SMOOTHING:
            example += f", {est.eps_unsmoothed[worst, p]:.3f} without smoothing={smoothing:g}"
        out.append(
            f"epsilon is a lower bound: {rows.size} neighbour(s) are at a resolution limit, "
            f"{limits.REASONS[code]} (worst: {example}); their intervals are open above. "
            f"Remedy: {limits.REMEDIES[code]}."
        )
    return out


def _with_noise_floor(result: EDPResult) -> EDPResult:
    """Attach Abowd's EMI, the noise floor of refit-and-count (for reference, not a verdict)."""
    floor = None
    if result.draws is not None:
        try:
            floor = float(diagnostics.emi(result)["emi"])
        except ValueError:  # too few draws per chain for two halves
            floor = None
    return dataclasses.replace(result, noise_floor=floor)


# --------------------------------------------------------------------------- assembly
def _netcdf_safe(labels: np.ndarray) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.dtype.kind in "biufUM":
        return labels
    return labels.astype(str)


def _pointwise(est: _Estimates, nbs, par_labels, labels, nb_method, status, replace: bool):
    """The per-neighbour table ``res.pointwise``."""
    eps = est.eps
    filled = np.where(np.isnan(eps), -np.inf, eps)  # NaN: a neighbour with no estimate
    worst_par = np.argmax(filled, axis=1)
    rows = np.arange(eps.shape[0])
    limit = limits.worst_code(est.limit, eps)
    pointwise = xr.Dataset(
        {
            "epsilon": (NEIGHBOUR_DIM, eps[rows, worst_par]),
            "epsilon_parameter": ((NEIGHBOUR_DIM, PARAMETER_DIM), eps),
            "lower_bound": (NEIGHBOUR_DIM, est.limit.any(axis=1)),
            "limit": (NEIGHBOUR_DIM, limit, limits.flag_attrs(LIMIT_DOC)),
            "limit_parameter": (
                (NEIGHBOUR_DIM, PARAMETER_DIM),
                est.limit,
                limits.flag_attrs(LIMIT_DOC),
            ),
            "bin_draws": (NEIGHBOUR_DIM, est.bin_draws[rows, worst_par]),
            "pareto_k": (NEIGHBOUR_DIM, est.khat),
            "pareto_k_moment_match": (NEIGHBOUR_DIM, est.khat_mm),
            "worst_parameter": (NEIGHBOUR_DIM, par_labels[worst_par]),
            "worst_bin": (NEIGHBOUR_DIM, est.argbin[rows, worst_par]),
            "n_rows": (NEIGHBOUR_DIM, nbs.n_rows),
            "observed": (NEIGHBOUR_DIM, np.asarray(nbs.observed, dtype=str)),
            "method": (NEIGHBOUR_DIM, np.asarray(nb_method, dtype=str)),
            "status": (NEIGHBOUR_DIM, np.asarray(status, dtype=str)),
            "refit_mcse": (NEIGHBOUR_DIM, est.refit_mcse),
            "epsilon_bound": (NEIGHBOUR_DIM, est.bound),
        },
        coords={NEIGHBOUR_DIM: labels, PARAMETER_DIM: par_labels},
    )
    if replace:
        pointwise["worst_replacement"] = (NEIGHBOUR_DIM, est.worst_cand)
    return pointwise


def _parameters(est: _Estimates, par_labels, labels, bins_obj, var_of) -> xr.Dataset:
    """The per-parameter table ``res.parameters``."""
    filled = np.where(np.isnan(est.eps), -np.inf, est.eps)
    worst_nb = np.argmax(filled, axis=0)
    cols = np.arange(est.eps.shape[1])
    eps = est.eps[worst_nb, cols]
    # pruning keeps the overall maximum exact; a parameter's own maximum is exact only where
    # it is at least every pruned neighbour's bound
    pruned_bound = float(np.max(est.bound[est.pruned], initial=-np.inf))
    return xr.Dataset(
        {
            "epsilon": (PARAMETER_DIM, eps),
            "exact": (PARAMETER_DIM, ~(prune_margin(np.full_like(eps, pruned_bound)) > eps)),
            "lower_bound": (PARAMETER_DIM, est.limit.any(axis=0)),
            "limit": (
                PARAMETER_DIM,
                limits.worst_code(est.limit.T, est.eps.T),
                limits.flag_attrs(LIMIT_DOC),
            ),
            "worst_neighbour": (PARAMETER_DIM, labels[worst_nb]),
            "worst_bin": (PARAMETER_DIM, est.argbin[worst_nb, cols]),
            "n_bins": (PARAMETER_DIM, bins_obj.n_bins),
            "var_name": (PARAMETER_DIM, np.asarray(var_of, dtype=str)),
        },
        coords={PARAMETER_DIM: par_labels},
    )


def _verification_vars(check: _Verification) -> dict:
    """The per-neighbour record of the verification, for ``res.pointwise``."""
    return {
        "verification": (
            NEIGHBOUR_DIM,
            check.code,
            {
                "flag_values": np.arange(len(VERIFICATION_MEANINGS), dtype=np.int8),
                "flag_meanings": " ".join(VERIFICATION_MEANINGS),
                "long_name": "whether a refit confirmed this neighbour's estimate",
            },
        ),
        "verify_checked": (NEIGHBOUR_DIM, check.checked),
        "verify_refit": (NEIGHBOUR_DIM, check.refit),
        "verify_z": (NEIGHBOUR_DIM, check.z),
    }


def _reliability_messages(
    est, nb_method, labels, threshold, settings, can_refit, bins_obj, par_labels
):
    """Warnings about neighbours kept to bad weights (first) and about merged bins (last)."""
    first, last = [], []
    # the k-hat of the weights each estimate rests on: after moment matching where tried
    khat = np.where(np.isnan(est.khat_mm), est.khat, est.khat_mm)
    bad = (khat > threshold) & np.isin(nb_method, ["psis", "moment_match"])
    if bad.any():
        order = np.flatnonzero(bad)[np.argsort(-khat[bad])][:5]
        worst = ", ".join(f"{labels[i]} ({khat[i]:.2f})" for i in order)
        if settings["requested_method"] == "auto" and not can_refit:
            advice = (
                "pass model= (or refit=RefitOptions(build_model=...)) so that "
                "method='auto' refits them"
            )
        else:
            advice = "refit them (method='auto' or 'refit') or draw more samples"
        first.append(
            f"Pareto k-hat above {threshold:.2f} for {int(bad.sum())} of {khat.size} "
            f"neighbours kept to reweighting (worst: {worst}): their epsilon is unreliable "
            f"and may be the one that sets the maximum; {advice}."
        )
    if np.any(bins_obj.n_bins < settings["bins"]):
        merged = [par_labels[p] for p in np.flatnonzero(bins_obj.n_bins < settings["bins"])]
        last.append(
            f"tied posterior draws merged bins of {len(merged)} parameter(s) "
            f"({', '.join(merged[:5])}{'...' if len(merged) > 5 else ''}); their effective "
            "number of bins is in parameters['n_bins']"
        )
    return first, last


def _assemble(
    est,
    inp,
    nbs,
    bins_obj,
    *,
    nb_method,
    status,
    messages,
    settings,
    refits,
    intervals,
    verification,
):
    """The :class:`EDPResult`, its warnings issued and kept on it."""
    n_samples = inp.draws.shape[1]
    threshold = khat_threshold(n_samples)
    labels = _netcdf_safe(nbs.labels)
    par_labels = np.asarray(inp.par_labels, dtype=str)
    pointwise = _pointwise(est, nbs, par_labels, labels, nb_method, status, settings["replace"])
    lower, upper, se = intervals
    pointwise["epsilon_mcse"] = (NEIGHBOUR_DIM, se)
    pointwise["epsilon_lower"] = (NEIGHBOUR_DIM, lower)
    pointwise["epsilon_upper"] = (NEIGHBOUR_DIM, upper)
    pointwise = pointwise.assign(_verification_vars(verification))
    parameters = _parameters(est, par_labels, labels, bins_obj, inp.var_of)
    by_var = {}
    for name in dict.fromkeys(inp.var_of):
        sel = np.asarray(inp.var_of) == name
        by_var[name] = float(np.nanmax(parameters["epsilon"].values[sel], initial=-np.inf))
    first, last = _reliability_messages(
        est, nb_method, labels, threshold, settings, inp.can_refit, bins_obj, par_labels
    )
    messages = [*first, *messages, *last]
    for msg in messages:
        warnings.warn(msg, EDPWarning, stacklevel=3)
        _log.info(msg)
    log_weights = None
    kept = est.weights()
    if kept is not None:
        lw, rows = kept
        coords = {NEIGHBOUR_DIM: labels[rows]}
        if rows.size != len(nbs):  # only the neighbours that can set epsilon
            coords[WEIGHT_INDEX] = (NEIGHBOUR_DIM, rows)
        log_weights = xr.DataArray(
            lw, dims=(NEIGHBOUR_DIM, SAMPLE_DIM), coords=coords, name="log_weights"
        )
    draws_da = xr.DataArray(
        inp.draws,
        dims=(PARAMETER_DIM, SAMPLE_DIM),
        coords={PARAMETER_DIM: par_labels},
        name="draws",
    )
    filled = np.where(np.isnan(est.eps), -np.inf, est.eps)
    interval = None
    if (~np.isnan(upper)).any() and np.isfinite(filled).any():
        interval = interval_of_max(filled.max(axis=1), se, lower, upper, 0.9)
    return EDPResult(
        epsilon=float(filled.max()) if np.isfinite(filled).any() else float("nan"),
        epsilon_by_var=by_var,
        pointwise=pointwise,
        parameters=parameters,
        bins=settings["bins"],
        neighbour=settings["neighbour"],
        method=settings["method"],
        smoothing=float(settings["smoothing"]),
        n_samples=int(n_samples),
        reff=float(inp.reff),
        khat_threshold=float(threshold),
        warnings=tuple(messages),
        n_chains=int(inp.posterior.sizes.get("chain", 1)),
        log_weights=log_weights,
        draws=draws_da,
        refits=refits,
        mc_interval90=interval,
        random_seed=settings["random_seed"],
        count_smoothing=float(settings["count_smoothing"]),
        verification=verification.status,
        verification_note=verification.note,
    )

"""The front door: :func:`audit` a posterior's empirical differential privacy.

:func:`audit` checks its arguments into one :class:`~pymc_edp.pipeline.settings.Settings`
(every check runs before any expensive work), then runs the stages of
:mod:`pymc_edp.pipeline`: read the fit once (:func:`~pymc_edp.pipeline.inputs.read_inputs`),
reweight every neighbour (:func:`~pymc_edp.pipeline.reweighting.reweight`), moment-match
those with a bad k-hat (:func:`~pymc_edp.pipeline.matching.match_moments`), refit what is
left and confirm the headline (:func:`~pymc_edp.pipeline.verification.refit_and_verify`),
and put the result together (:func:`~pymc_edp.pipeline.assembly.assemble`). Each stage
returns its estimates and messages. :class:`AuditOptions` holds the audit's keyword
parameters for whoever runs audits on others' behalf (:func:`pymc_edp.tune_prior`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pymc_edp.base.common import resolve_seed
from pymc_edp.base.validate import as_options, check_choice, check_int
from pymc_edp.model.compat import check_container, load_in_memory
from pymc_edp.model.moment_match import MomentMatchOptions
from pymc_edp.model.neighbours import NeighbourOptions
from pymc_edp.model.pymc import check_model, resolve_model
from pymc_edp.model.replace import PerRecord
from pymc_edp.model.reweight import ChunkOptions
from pymc_edp.pipeline.assembly import assemble
from pymc_edp.pipeline.estimates import TOP_WEIGHTS
from pymc_edp.pipeline.inputs import read_inputs
from pymc_edp.pipeline.matching import match_moments
from pymc_edp.pipeline.reweighting import PRUNE_NEEDS_REWEIGHTING, reweight
from pymc_edp.pipeline.settings import Settings, Smoothing
from pymc_edp.pipeline.verification import refit_and_verify, refit_problem
from pymc_edp.refit.options import RefitOptions, VerifyOptions
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

METHODS = ("auto", "psis", "moment_match", "refit")


def audit(
    idata,
    model=None,
    *,
    var_names: str | Sequence[str] | None = None,
    filter_vars: str | None = None,
    bins: int = 20,
    method: str = "auto",
    neighbour: str | NeighbourOptions | Mapping = "remove",
    smoothing: float | None = None,
    refit: RefitOptions | Mapping | None = None,
    chunks: ChunkOptions | Mapping | None = None,
    random_seed=None,
    progressbar: bool = True,
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
    compares (``RefitOptions(verify=)``), since a good k-hat is evidence, not proof.

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
        Needed for replacement neighbours (``p(y' | theta)``), for refits, and to compute a
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
    neighbour : {"remove", "replace"}, NeighbourOptions or dict, default "remove"
        What a neighbour dataset is. ``"remove"`` deletes one record (unbounded DP);
        ``"replace"`` changes one record to each of its replacements and reports the worst
        case (bounded DP; refits use each neighbour's worst replacement). A
        :class:`pymc_edp.NeighbourOptions` (or a dict of its fields) also says which
        records form a neighbour: ``groups`` (leave one individual out: a coordinate name,
        one label per record, or ``{observed_name: labels}``; all the individual's rows, in
        every observed variable, are removed or replaced together), ``replacements`` (for
        ``relation="replace"``: candidate values, :class:`pymc_edp.PerRecord` values, or a
        dict per observed variable; default for 0/1 data: the flipped value) and
        ``observed`` (the observed variables whose records define neighbours; default all).
    smoothing : float, optional
        Additive smoothing of bin probabilities in units of draws (Charest & Han's
        ``alpha``). Default None: weighted estimates (reweighting, moment matching, pooled
        refits) are not smoothed, as a weighted bin always holds draws of positive weight
        and smoothing would cap every log ratio near ``log(S / (B alpha))``; count
        estimates (``RefitOptions(estimator="raw")``) take ``alpha = 0.01``. A number
        smooths every estimate with it; an estimate it lowers is flagged as a lower bound.
    refit : RefitOptions or dict, optional
        How neighbours are refitted (draws, engine, executor, checkpoint, max_refits,
        build_model, estimator, ...), how ``method="auto"`` confirms its headline by refits
        (``verify``: the ``top`` neighbours with the largest estimates, and any whose bin has
        too few draws, are refitted and compared, and on disagreement more, worst first,
        within a budget; ``False`` turns it off; see :class:`pymc_edp.VerifyOptions`), and
        how neighbours are moment-matched (``moment_match``: a
        :class:`pymc_edp.MomentMatchOptions`; ``False`` leaves it out of ``method="auto"``):
        a :class:`pymc_edp.RefitOptions`, or a dict of its fields; default
        ``RefitOptions()``. Verification needs the model (or ``build_model``); the result
        says whether its headline was confirmed (``res.verification``) and which neighbours
        were (``pointwise["verification"]``).
    chunks : ChunkOptions or dict, optional
        How the audit works through large data: memory budget per chunk of records, the
        executor chunks run on (e.g. a dask ``Client``), pruning (``prune``: reweight
        records in decreasing order of the bound on their epsilon and stop when it is below
        the largest epsilon found, which stays exact; default when records x draws exceeds
        ``prune_above``), which weights to keep on the result (``store_weights``; default
        all, unless the audit prunes or reads the log-likelihood chunk by chunk: then those
        of the :data:`TOP_WEIGHTS` neighbours with the largest epsilons) and where the
        pointwise log-likelihood comes from (``log_likelihood``: the ``log_likelihood``
        group, computed from the model chunk by chunk, or ``"auto"``): a
        :class:`pymc_edp.ChunkOptions`, or a dict of its fields.
    random_seed : int or numpy.random.Generator, optional
        Seeds the refits: refit ``k`` uses a seed derived from ``(random_seed, k)``, so
        results do not depend on the order refits run in or on resumption. None draws fresh
        entropy, as ``pm.sample`` does; the seed used is ``res.random_seed``, so any run can
        be repeated.
    progressbar : bool, default True
        Show progress (records reweighted, refits run).

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
    >>> res = edp.audit(idata, var_names="mu", method="psis", progressbar=False)
    >>> round(res.epsilon, 2) > 0
    True
    """
    model = resolve_model(model)
    settings = check_settings(
        model,
        bins=bins,
        method=method,
        neighbour=neighbour,
        smoothing=smoothing,
        refit=refit,
        chunks=chunks,
        random_seed=random_seed,
        progressbar=progressbar,
    )
    check_container(idata)
    idata = load_in_memory(idata)  # a fit opened lazily as a whole: all but the log-likelihood
    inp = read_inputs(idata, model, settings, var_names=var_names, filter_vars=filter_vars)
    reweighted = reweight(inp, settings)
    problem = refit_problem(inp, settings, reweighted.estimates)
    matched = match_moments(inp, settings, problem, reweighted.estimates)
    verified = refit_and_verify(inp, settings, problem, matched.estimates, reweighted)
    messages = [*inp.messages, *matched.messages, *verified.messages]
    return assemble(inp, settings, verified, messages)


@dataclass(frozen=True)
class AuditOptions:
    """The keyword parameters of :func:`pymc_edp.audit`, checked, to run audits with later.

    Every field is the :func:`pymc_edp.audit` parameter of the same name, with the same
    default; ``random_seed`` and ``progressbar`` are left to whoever runs the audit.
    :func:`pymc_edp.tune_prior` takes one (``audit=``) for every audit it runs.

    Parameters
    ----------
    var_names : str or list of str, optional
    filter_vars : {None, "like", "regex"}, optional
    bins : int, default 20
    method : {"auto", "psis", "moment_match", "refit"}, default "auto"
    neighbour : {"remove", "replace"}, NeighbourOptions or dict, default "remove"
    smoothing : float, optional
    refit : RefitOptions or dict, optional
    chunks : ChunkOptions or dict, optional

    Examples
    --------
    >>> opts = edp.AuditOptions(var_names="mu", bins=10, method="psis")
    >>> sorted(opts.kwargs())[:3]
    ['bins', 'chunks', 'filter_vars']
    >>> res = edp.audit(load_eight_schools(), progressbar=False, **opts.kwargs())
    >>> res.bins
    10
    >>> edp.AuditOptions.coerce({"neighbour": "replace"}).neighbour
    'replace'
    """

    var_names: str | Sequence[str] | None = None
    filter_vars: str | None = None
    bins: int = 20
    method: str = "auto"
    neighbour: str | NeighbourOptions | Mapping = "remove"
    smoothing: float | None = None
    refit: RefitOptions | Mapping | None = None
    chunks: ChunkOptions | Mapping | None = None

    def __post_init__(self):
        check_choice(self.method, "method", METHODS)
        check_int(self.bins, "bins", 2)
        Smoothing.of(self.smoothing)
        NeighbourOptions.coerce(self.neighbour)
        refit = RefitOptions.coerce(self.refit)
        _verify_options(refit.verify, self.method)
        _check_moment_match(ChunkOptions.coerce(self.chunks), self.method)

    @classmethod
    def coerce(cls, value: AuditOptions | Mapping | None) -> AuditOptions:
        """``value`` as options: None gives the defaults, a dict its fields."""
        return as_options(cls, value, "audit")

    def kwargs(self) -> dict:
        """The fields as keyword arguments of :func:`pymc_edp.audit`."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def check_settings(
    model, *, bins, method, neighbour, smoothing, refit, chunks, random_seed, progressbar
) -> Settings:
    """Every argument of :func:`audit` checked and resolved, before any expensive work."""
    opts = RefitOptions.coerce(refit)
    check_choice(method, "method", METHODS)
    neighbour = NeighbourOptions.coerce(neighbour)
    bins = check_int(bins, "bins", 2)
    smooth = Smoothing.of(smoothing)
    verify, verify_reason = _verify_options(opts.verify, method)
    check_model(model)
    if method == "refit" and model is None and opts.build_model is None:
        raise ValueError(
            "method='refit' needs the model (model=) or a builder "
            "(refit=RefitOptions(build_model=...)) to refit the neighbour datasets"
        )
    chunk_opts = ChunkOptions.coerce(chunks)
    _check_moment_match(chunk_opts, method)
    if method == "moment_match" and model is None:
        raise ValueError(
            "method='moment_match' moves the draws with the model's joint density: pass model="
        )
    if chunk_opts.prune and method == "refit":
        raise ValueError(PRUNE_NEEDS_REWEIGHTING)
    return Settings(
        bins=bins,
        method=method,
        neighbour=neighbour,
        smoothing=smooth,
        refit=opts,
        verify=verify,
        verify_reason=verify_reason,
        moment_match=chunk_opts.moment_match_options(),
        chunks=chunk_opts,
        seed=resolve_seed(random_seed),
        seed_given=random_seed is not None,
        progressbar=progressbar,
    )


def _check_moment_match(opts: ChunkOptions, method: str) -> None:
    if opts.moment_match is False and method == "moment_match":
        raise ValueError("method='moment_match' with ChunkOptions(moment_match=False): choose one")


def _verify_options(verify, method: str) -> tuple[VerifyOptions | None, str | None]:
    """The verification options and, when it will not run, why."""
    if verify is False:
        return None, "unverified: verification turned off (RefitOptions(verify=False))"
    if method != "auto":
        if verify is not None:
            raise ValueError(
                f"RefitOptions(verify=...) confirms method='auto' by refitting its worst "
                f"neighbours; with method={method!r} leave it out (method='refit' refits every "
                "neighbour)"
            )
        why = {
            "psis": "unverified: method='psis' reweights only",
            "moment_match": "unverified: method='moment_match' does not refit",
            "refit": "every neighbour refitted (method='refit')",
        }
        return None, why[method]
    return VerifyOptions.coerce(None if verify is True else verify), None

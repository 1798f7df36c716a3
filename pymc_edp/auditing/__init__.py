"""The audit layer: :func:`audit` a posterior's empirical differential privacy.

:func:`audit` checks every argument into one :class:`~pymc_edp.auditing.settings.Settings`,
then runs the stages of this folder in order: :mod:`~pymc_edp.auditing.inputs` (read the fit
once), :mod:`~pymc_edp.auditing.reweighting`, :mod:`~pymc_edp.auditing.matching`,
:mod:`~pymc_edp.auditing.verification`; :mod:`~pymc_edp.auditing.assembly` builds the
:class:`~pymc_edp.EDPResult`. Each stage returns new
:class:`~pymc_edp.auditing.estimates.Estimates` and leaves those it was given unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pymc_edp.auditing.assembly import assemble
from pymc_edp.auditing.estimates import TOP_WEIGHTS
from pymc_edp.auditing.inputs import read_fit, read_inputs
from pymc_edp.auditing.matching import match_moments
from pymc_edp.auditing.methods import Auto, Method, MomentMatch, Psis, Refit
from pymc_edp.auditing.reweighting import reweight
from pymc_edp.auditing.settings import Settings, Smoothing
from pymc_edp.auditing.verification import refit_and_verify, refit_problem
from pymc_edp.base.common import resolve_seed
from pymc_edp.base.validate import check_int
from pymc_edp.core.neighbours import Relation, Remove, Replace
from pymc_edp.core.replace import PerRecord
from pymc_edp.core.reweight import ChunkOptions
from pymc_edp.model.moment_match import MomentMatchOptions
from pymc_edp.model.pymc import check_model, resolve_model
from pymc_edp.refit.options import RefitOptions, VerifyOptions
from pymc_edp.results.edp import EDPResult

__all__ = [
    "TOP_WEIGHTS",
    "Auto",
    "ChunkOptions",
    "Method",
    "MomentMatch",
    "MomentMatchOptions",
    "PerRecord",
    "Psis",
    "Refit",
    "RefitOptions",
    "Remove",
    "Replace",
    "VerifyOptions",
    "audit",
]


def audit(
    idata,
    model=None,
    *,
    var_names: str | Sequence[str] | None = None,
    filter_vars: str | None = None,
    bins: int = 20,
    method: str | Method = "auto",
    neighbour: str | Relation | Mapping = "remove",
    smoothing: float | None = None,
    refit: RefitOptions | Mapping | None = None,
    chunks: ChunkOptions | Mapping | None = None,
    log_likelihood: str = "auto",
    random_seed=None,
    progressbar: bool = True,
) -> EDPResult:
    """Audit the empirical differential privacy (B-EDP) of a posterior.

    Every scalar element of the selected variables is cut into ``bins`` equal-probability
    bins of its posterior; for each neighbour dataset ``D'`` (a record removed or replaced,
    or an individual's rows removed) ``epsilon = max |log P(b | D') - log P(b | D)|``.
    Neighbour posteriors reweight the draws (PSIS); where k-hat distrusts the weights the
    neighbour is moment-matched, then refitted. An estimate at a resolution limit (smoothing,
    too few draws in its bin) is flagged as a lower bound (``pointwise["lower_bound"]``).

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        What ``pm.sample`` returned; a missing ``log_likelihood`` group is computed.
    model : pymc.Model, optional
        Needed for replacement neighbours, refits and a missing ``log_likelihood``.
        Default: the model of the enclosing ``with`` block, if any.
    var_names : str or list of str, optional
        Posterior variables to audit, as in ArviZ (``"~name"`` excludes); default all.
    filter_vars : {None, "like", "regex"}, optional
        As in ArviZ.
    bins : int, default 20
        Number of equal-probability bins ``B``. Always report it: epsilon grows with ``B``.
    method : Auto, Psis, MomentMatch, Refit or their name, default "auto"
        :class:`pymc_edp.Psis` reweights only; :class:`pymc_edp.MomentMatch` also
        moment-matches [4]_ the neighbours whose k-hat exceeds ``min(1 - 1/log10(S), 0.7)``;
        :class:`pymc_edp.Refit` refits every neighbour; :class:`pymc_edp.Auto` does all
        three and verifies the headline. ``pointwise["method"]`` says which path each took.
    neighbour : Remove, Replace, {"remove", "replace"} or dict, default "remove"
        The neighbour relation: :class:`pymc_edp.Remove` deletes one record (unbounded DP),
        :class:`pymc_edp.Replace` changes it to each of its replacements and reports the
        worst (bounded DP); both take ``groups``, ``observed`` and ``records``.
    smoothing : float, optional
        Additive smoothing of bin probabilities in draws (Charest & Han's ``alpha``).
        Default: none for weighted estimates (it would cap every log ratio near
        ``log(S / (B alpha))``), 0.01 for counts (``RefitOptions(estimator="raw")``).
    refit : RefitOptions or dict, optional
        How neighbours are refitted (:class:`pymc_edp.RefitOptions`); ``res.verification``
        says what was confirmed.
    chunks : ChunkOptions or dict, optional
        How large data is worked through: memory, executor, pruning, kept weights
        (:data:`TOP_WEIGHTS`).
    log_likelihood : {"auto", "group", "model"}, default "auto"
        Where the pointwise log-likelihood comes from: the fit's ``log_likelihood`` group
        (lazily when it is), the model a chunk of records at a time (never held whole), or
        ``"auto"``: the group if any, else the model.
    random_seed : int or numpy.random.Generator, optional
        Seeds the refits (refit ``k`` from ``(random_seed, k)``, whatever their order);
        the seed used is ``res.random_seed``.
    progressbar : bool, default True

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
    fit = read_fit(idata, model, log_likelihood)
    if fit.has("posterior"):  # refits sized like the fit unless told otherwise
        settings = settings.sized_for(fit.posterior)
    inp = read_inputs(fit, model, settings, var_names=var_names, filter_vars=filter_vars)
    reweighted = reweight(inp, settings)
    problem = refit_problem(inp, settings, reweighted.estimates)
    matched = match_moments(inp, settings, problem, reweighted.estimates)
    verified = refit_and_verify(inp, settings, problem, matched.estimates, reweighted)
    messages = [*inp.messages, *matched.messages, *verified.messages]
    return assemble(inp, settings, verified, messages)


def check_options(*, bins, method, neighbour, smoothing, refit, chunks) -> dict:
    """The model-free settings of :func:`audit`, checked: fields of ``Settings``."""
    return dict(
        bins=check_int(bins, "bins", 2),
        method=Method.coerce(method),
        neighbour=Relation.coerce(neighbour),
        smoothing=Smoothing.of(smoothing),
        refit=RefitOptions.coerce(refit),
        chunks=ChunkOptions.coerce(chunks),
    )


def check_settings(model, *, random_seed, progressbar, **options) -> Settings:
    """Every argument of :func:`audit` checked (``options``: those of :func:`check_options`)."""
    checked = check_options(**options)
    check_model(model)
    checked["method"].check(model, checked["refit"].build_model, checked["chunks"].prune)
    return Settings(
        **checked,
        seed=resolve_seed(random_seed),
        seed_given=random_seed is not None,
        progressbar=progressbar,
    )

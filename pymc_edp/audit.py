"""The front door: :func:`audit` a posterior's empirical differential privacy."""

from __future__ import annotations

import dataclasses
import logging
import numbers
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from pymc_edp.base import binning
from pymc_edp.model.compat import check_container, get_group, has_group
from pymc_edp.base.parallel import progress_bar
from pymc_edp.base.psis import khat_threshold
from pymc_edp.result import NEIGHBOUR_DIM, PARAMETER_DIM, SAMPLE_DIM, EDPResult, EDPWarning
from pymc_edp.model.loglik import (
    LogLikelihood,
    Neighbours,
    NonFactorisedError,
    iter_log_weights,
    posterior_matrix,
    relative_efficiency,
)

__all__ = ["PerRecord", "audit"]

_log = logging.getLogger("pymc_edp")

METHODS = ("auto", "psis", "refit")
NEIGHBOUR_RELATIONS = ("remove", "replace")
MIN_DRAWS_PER_BIN = 10


def _select_var_names(posterior: xr.Dataset, var_names, filter_vars) -> list[str]:
    """Posterior variables named by ``var_names``, with ArviZ's conventions.

    ``None`` selects every variable; names starting with ``~`` are excluded (when every name
    is negated, all others are kept); ``filter_vars="like"`` matches substrings and
    ``"regex"`` regular expressions.
    """
    available = list(posterior.data_vars)
    if var_names is None:
        return available
    if filter_vars not in (None, "like", "regex"):
        raise ValueError(f"filter_vars must be None, 'like' or 'regex', got {filter_vars!r}")
    if isinstance(var_names, str):
        var_names = [var_names]
    var_names = list(var_names)
    if not all(isinstance(v, str) for v in var_names):
        raise TypeError(f"var_names must be a string or a list of strings, got {var_names!r}")
    negated = [v[1:] for v in var_names if v.startswith("~") and v not in available]
    kept = [v for v in var_names if not (v.startswith("~") and v not in available)]

    def matches(pattern: str, name: str) -> bool:
        if filter_vars == "like":
            return pattern in name
        if filter_vars == "regex":
            return re.search(pattern, name) is not None
        return pattern == name

    missing = [v for v in kept + negated if not any(matches(v, a) for a in available)]
    if missing:
        raise KeyError(f"var_names {missing} not found. The posterior has variables {available}.")
    if not var_names:
        raise ValueError("var_names is empty: name at least one variable, or pass None for all")
    selected = [a for a in available if any(matches(v, a) for v in kept)] if kept else available
    selected = [a for a in selected if not any(matches(v, a) for v in negated)]
    if not selected:
        raise ValueError(
            f"var_names={var_names!r} leaves no variable to audit; the posterior has {available}"
        )
    return selected


@dataclass(frozen=True)
class PerRecord:
    """Replacement values given record by record, for ``neighbour="replace"``.

    A plain list or 1-d array passed as ``replacements=`` always means candidate values,
    each tried for every record; per-record values must be wrapped in ``PerRecord`` so that
    the length of a list never decides what it means.

    Parameters
    ----------
    values : array_like
        Shaped like the observed data (one replacement per record), or
        ``(n_candidates, *observed_shape)`` (several per record; the worst is reported).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_edp as edp
    >>> edp.PerRecord(np.array([1.0, 0.0, 2.0])).values
    array([1., 0., 2.])
    """

    values: object


def _is_integer_valued(values: np.ndarray) -> bool:
    values = np.asarray(values)
    if values.dtype.kind in "biu":
        return True
    if values.dtype.kind != "f":
        return False
    finite = values[np.isfinite(values)]
    return bool(np.all(finite == np.round(finite)))


def _candidates(replacements, name: str, observed: np.ndarray) -> np.ndarray:
    """Replacement data sets for observed variable ``name``, shape (C, *observed.shape)."""
    if isinstance(replacements, Mapping):
        if name not in replacements:
            raise KeyError(f"replacements has no entry for observed variable {name!r}")
        replacements = replacements[name]
    if replacements is None:
        values = np.unique(
            observed[~np.isnan(observed)] if observed.dtype.kind == "f" else observed
        )
        if np.all(np.isin(values, (0, 1))):
            return (1 - observed)[None]
        raise ValueError(
            f"neighbour='replace' needs replacement values for {name!r}: its data are not 0/1 "
            "(for 0/1 data the default replaces each record by its flipped value). Pass "
            "replacements= as a list of candidate values (each tried for every record), or "
            "edp.PerRecord(values) with one value per record (shaped like the data) or "
            "(n_candidates, *data_shape); a dict maps observed variable names to these."
        )
    if isinstance(replacements, PerRecord):
        arr = _numeric(replacements.values, name)
        if arr.shape == observed.shape:
            arr = arr[None]
        elif not (arr.ndim == observed.ndim + 1 and arr.shape[1:] == observed.shape):
            raise ValueError(
                f"PerRecord replacements for {name!r} have shape {arr.shape}; expected the "
                f"data's shape {observed.shape} (one per record) or (n_candidates, "
                f"{', '.join(map(str, observed.shape))})"
            )
    else:
        arr = _numeric(replacements, name)
        if arr.ndim > 1:
            raise ValueError(
                f"replacements for {name!r} have shape {arr.shape}: a plain list or 1-d array "
                "lists candidate values tried for every record; wrap values given record by "
                "record in edp.PerRecord(...)"
            )
        arr = np.broadcast_to(
            arr.reshape((-1,) + (1,) * observed.ndim), (arr.size, *observed.shape)
        ).copy()
    if arr.shape[0] == 0:
        raise ValueError(f"replacements for {name!r} are empty: give at least one value")
    if _is_integer_valued(observed) and not _is_integer_valued(arr):
        bad = arr[np.isfinite(arr) & (arr != np.round(arr))]  # float: ints are integer-valued
        raise ValueError(
            f"the data of {name!r} are integers but replacements contain non-integer values "
            f"(e.g. {bad.ravel()[0]!r}); they would be truncated silently. Give integer "
            "replacement values inside the likelihood's support."
        )
    return arr


def _numeric(values, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values)
    except ValueError as err:  # ragged lists
        raise ValueError(f"replacements for {name!r} are not an array: {err}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"replacements for {name!r} must be numbers, got dtype {arr.dtype} ({values!r:.60})"
        )
    return arr


def _drop_data_copies(
    draws: np.ndarray, var_of: list[str], *, explicit: bool, observed: dict
) -> tuple[np.ndarray, list[str]]:
    """Rows of the ``(parameter, sample)`` matrix to keep: not copies of the data.

    A posterior variable named like an observed variable (PyMC adds one when the data have
    missing values: it holds the observed records verbatim), or with an element that is the
    same in every draw, would get epsilon ~ 0 (one merged bin) although publishing it can
    disclose records exactly. By default they are left out with a warning; asked for by name
    they are refused.

    Returns
    -------
    keep : ndarray of bool, shape (n_parameters,)
    messages : list of str
    """
    numeric = [
        np.asarray(v, dtype=float).ravel()
        for v in observed.values()
        if np.asarray(v).dtype.kind in "biuf"
    ]
    data_values = np.concatenate(numeric) if numeric else np.empty(0)
    var_of = np.asarray(var_of)
    const = np.all(draws == draws[:, :1], axis=1) if draws.shape[1] > 1 else np.zeros(0, bool)
    flagged: dict[str, str] = {}
    for name in dict.fromkeys(var_of.tolist()):
        if name in observed:
            flagged[name] = (
                "it is an observed variable (PyMC adds it to the posterior when the data have "
                "missing values): its draws hold the observed records verbatim"
            )
            continue
        rows = var_of == name
        fixed = const[rows] if const.size else np.zeros(0, bool)
        if not fixed.any():
            continue
        n_fixed, n = int(fixed.sum()), int(rows.sum())
        if data_values.size and np.isin(draws[rows][fixed, 0], data_values).any():
            flagged[name] = (
                f"{n_fixed} of its {n} element(s) equal observed data values in every draw"
            )
        else:
            flagged[name] = (
                f"{n_fixed} of its {n} element(s) are the same in every draw (a constant or a "
                "copy of data), so their epsilon would read 0 whatever they reveal"
            )
    keep = ~np.isin(var_of, list(flagged))
    if not flagged:
        return keep, []
    why = "; ".join(f"{k}: {v}" for k, v in flagged.items())
    if explicit:
        raise ValueError(
            f"var_names asks for posterior variable(s) {sorted(flagged)} that cannot be "
            f"audited by binning their draws ({why}). Publishing them can disclose records "
            "exactly; their epsilon is not 0. Leave them out of var_names."
        )
    if not keep.any():
        raise ValueError(f"no posterior variable is left to audit: {why}")
    message = (
        f"left out of the audit: posterior variable(s) {sorted(flagged)} ({why}). Such a "
        "variable is not private at epsilon 0: publishing it can disclose records exactly."
    )
    return keep, [message]


def _check_not_scalar(observed_data, err: Exception) -> None:
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


def _check_support(alt: np.ndarray, candidates: np.ndarray, name: str) -> None:
    """Refuse replacement values where the likelihood is zero (or undefined) at every draw."""
    bad = ~np.isfinite(alt).any(axis=1)  # (candidate, term): never finite
    if not bad.any():
        return
    c, term = (int(i) for i in np.argwhere(bad)[0])
    flat = candidates[c].reshape(-1)
    value = flat[term] if term < flat.size else candidates[c]
    raise ValueError(
        f"replacement value {value!r} for record {term} of {name!r} is outside the support of "
        "its likelihood (log p(y' | theta) is -inf or NaN at every posterior draw): give "
        "replacement values the data could take"
    )


def _check_log_likelihood_layout(ll_ds, names, posterior, observed_data) -> None:
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
            # a multivariate observation has one term per row: the leading dims must agree
            if len(rec) > len(obs) or rec != obs[: len(rec)]:
                raise ValueError(
                    f"the log_likelihood of {name!r} has records of shape {rec} but "
                    f"observed_data[{name!r}] has shape {obs}: every record needs exactly one "
                    "log-likelihood term (recompute it with pm.compute_log_likelihood)"
                )


def _netcdf_safe(labels: np.ndarray) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.dtype.kind in "biufUM":
        return labels
    return labels.astype(str)


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
    smoothing: float = 0.01,
    random_seed=None,
    progressbar: bool = True,
    store_weights: bool = True,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    engine: str | None = None,
    executor=None,
    checkpoint=None,
    max_refits: int | None = None,
    build_model=None,
    estimator: str = "pooled",
    sampler_kwargs: dict | None = None,
    retry_failed: bool = True,
) -> EDPResult:
    """Audit the empirical differential privacy (B-EDP) of a posterior.

    Every scalar element of the selected posterior variables is cut into ``bins``
    equal-probability bins of its full-data posterior; for each neighbour dataset ``D'``
    (a record removed or replaced, or an individual's rows removed) the posterior probability
    of each bin is re-estimated, and ``epsilon = max |log P(b | D') - log P(b | D)|``.
    Neighbour posteriors are importance reweightings of the full-data draws (PSIS, with
    k-hat per neighbour); where k-hat says the weights cannot be trusted the neighbour is
    refitted exactly (``method="auto"``), or every neighbour is (``method="refit"``).

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        What ``pm.sample`` returned (a DataTree on PyMC 6, an InferenceData on PyMC 5), with
        a ``posterior`` group and a ``log_likelihood`` group (computed from ``model`` when
        missing; ``pm.compute_log_likelihood(idata)`` adds it).
    model : pymc.Model, optional
        Needed for ``neighbour="replace"`` (``p(y' | theta)``), for refits, and to compute a
        missing ``log_likelihood`` group.
    var_names : str or list of str, optional
        Posterior variables to audit, as in ArviZ (``"~name"`` excludes); default all.
    filter_vars : {None, "like", "regex"}, optional
        As in ArviZ.
    bins : int, default 20
        Number of equal-probability bins ``B``. Always report it: epsilon grows with ``B``.
    method : {"auto", "psis", "refit"}, default "auto"
        ``"psis"`` reweights only. ``"refit"`` refits every neighbour. ``"auto"`` reweights
        and refits the neighbours whose Pareto k-hat exceeds ``min(1 - 1/log10(S), 0.7)``;
        without a model it reweights and warns.
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
    smoothing : float, default 0.01
        Additive smoothing of bin probabilities in units of draws (Charest & Han's
        ``alpha``); 0 gives the raw estimator, infinite when a bin receives no weight.
    random_seed : int, optional
        Seeds the refits: refit ``k`` uses a seed derived from ``(random_seed, k)``, so
        results do not depend on the order refits run in or on resumption.
    progressbar : bool, default True
    store_weights : bool, default True
        Keep the smoothed log-weights on the result (``n_neighbours x S`` floats) for later
        diagnostics.
    draws, tune, chains : int, default 1000, 1000, 2
        Per refit.
    engine : {"nutpie", "pymc", None}, default None
        Refit sampler; None picks nutpie when installed. Either compiles the neighbour model
        once and only swaps its data between refits.
    executor : None, int, concurrent.futures.Executor or dask.distributed.Client, optional
        Where refits run: serially (None; nutpie already runs chains in parallel), a local
        process pool of that many workers (-1: all cores), or any executor / dask client.
    checkpoint : str or path-like, optional
        Folder where each refit is written as it completes; rerunning the same audit with
        the same folder refits only what is missing.
    max_refits : int, optional
        Refit at most this many neighbours, worst k-hat first; the rest keep their
        reweighted estimates and are named in a warning.
    build_model : callable, optional
        ``build_model(data) -> pm.Model`` for models whose likelihood does not factorise;
        ``data`` is a :class:`pymc_edp.refit.NeighbourData` mapping observed names to each
        neighbour's values.
    estimator : {"pooled", "raw"}, default "pooled"
        How a refit's bin probabilities are estimated: ``"pooled"`` combines the refit draws
        with the reweighted full-data draws by multiple importance sampling (balance
        heuristic); ``"raw"`` counts the refit draws alone (Charest & Han's procedure, biased
        upward at small draw counts).
    sampler_kwargs : dict, optional
        Passed to every refit's sampler (``nutpie.sample`` or ``pm.sample``), e.g.
        ``{"target_accept": 0.95}``.
    retry_failed : bool, default True
        With ``checkpoint=``: refit again the neighbours whose refit failed in an earlier
        run (a flaky builder, a lost worker); ``False`` keeps the recorded failures.

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

    Examples
    --------
    >>> from pymc_edp.datasets import load_eight_schools
    >>> import pymc_edp as edp
    >>> idata = load_eight_schools()
    >>> res = edp.audit(idata, var_names="mu", method="psis", progressbar=False)
    >>> round(res.epsilon, 2) > 0
    True
    """
    from pymc_edp.model.pymc import (
        check_model,
        check_model_matches_data,
        ensure_log_likelihood,
        observed_arrays,
        observed_values,
        replacement_log_likelihood,
    )

    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not isinstance(neighbour, str) or neighbour not in NEIGHBOUR_RELATIONS:
        raise ValueError(f"neighbour must be one of {NEIGHBOUR_RELATIONS}, got {neighbour!r}")
    if not isinstance(estimator, str) or estimator not in ("pooled", "raw"):
        raise ValueError(f"estimator must be 'pooled' or 'raw', got {estimator!r}")
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins < 2:
        raise ValueError(f"bins must be an integer >= 2, got {bins!r}")
    bins = int(bins)
    if isinstance(smoothing, bool) or not isinstance(smoothing, numbers.Real):
        raise TypeError(
            f"smoothing must be a number, got {type(smoothing).__name__} {smoothing!r}"
        )
    if not np.isfinite(smoothing) or smoothing < 0:
        raise ValueError(f"smoothing must be a finite number >= 0, got {smoothing!r}")
    check_container(idata)
    check_model(model)
    if replacements is not None and neighbour != "replace":
        raise ValueError("replacements= is only used with neighbour='replace'")
    if method == "refit" and model is None and build_model is None:
        raise ValueError(
            "method='refit' needs the model (model=) or a builder (build_model=) to refit "
            "the neighbour datasets"
        )
    if max_refits is not None and (not isinstance(max_refits, int | np.integer) or max_refits < 0):
        raise ValueError(f"max_refits must be a non-negative integer, got {max_refits!r}")

    posterior = get_group(idata, "posterior")
    observed_data = (
        get_group(idata, "observed_data") if has_group(idata, "observed_data") else None
    )
    if model is not None and observed_data is not None:
        check_model_matches_data(model, observed_data)
    names = _select_var_names(posterior, var_names, filter_vars)
    par_draws, par_labels, var_of = posterior_matrix(posterior, names)
    keep, copy_messages = _drop_data_copies(
        par_draws, var_of, explicit=var_names is not None, observed=observed_arrays(idata, model)
    )
    if not keep.all():
        par_draws = par_draws[keep]
        par_labels = [lab for lab, k in zip(par_labels, keep, strict=True) if k]
        var_of = [v for v, k in zip(var_of, keep, strict=True) if k]
        names = [n for n in names if n in var_of]
    n_samples = par_draws.shape[1]
    if n_samples < MIN_DRAWS_PER_BIN * bins:
        max_bins = n_samples // MIN_DRAWS_PER_BIN
        advice = f"Use bins <= {max_bins} or draw" if max_bins >= 2 else "Draw"
        raise ValueError(
            f"too few draws for the bins asked: {n_samples} posterior draws for bins={bins} "
            f"leaves under {MIN_DRAWS_PER_BIN} draws per bin, where the bin probabilities "
            f"are mostly noise. {advice} at least {MIN_DRAWS_PER_BIN * bins} samples."
        )

    if isinstance(observed, str):
        observed = [observed]
    if observed is not None and len(observed) == 0:
        raise ValueError("observed= is empty: name at least one observed variable, or pass None")
    factorised = True
    try:
        ll_ds = ensure_log_likelihood(idata, model, progressbar=False)
        ll = LogLikelihood.from_dataset(ll_ds, observed)
    except (NonFactorisedError, ValueError) as err:
        if isinstance(err, NonFactorisedError):
            _check_not_scalar(observed_data, err)
        no_loglik = "no 'log_likelihood' group" in str(err)
        if build_model is None or not (isinstance(err, NonFactorisedError) or no_loglik):
            raise
        # refit-only: records are the entries of each observed variable's first dimension
        if method == "psis":
            raise ValueError(
                "method='psis' needs a factorised pointwise log-likelihood; with build_model= "
                "use method='refit' (or 'auto', which then refits every neighbour)"
            ) from err
        if not has_group(idata, "observed_data"):
            raise ValueError(
                "refitting through build_model needs the observed_data group to know the "
                "records; sample with pm.sample so that it is stored"
            ) from err
        factorised = False
        ll = LogLikelihood.from_observed(
            get_group(idata, "observed_data"),
            observed,
            posterior.sizes["chain"],
            posterior.sizes["draw"],
        )
    if ll.n_samples != n_samples:
        raise ValueError(
            f"the log_likelihood group has {ll.n_samples} draws but the posterior has "
            f"{n_samples}; they must come from the same sampling run"
        )
    if factorised:
        _check_log_likelihood_layout(ll_ds, ll.names, posterior, observed_data)
    nbs = Neighbours.records(ll) if groups is None else Neighbours.from_groups(ll, groups)

    observed_y: dict = {}
    candidates: dict = {}
    replacement_sets: list[list[np.ndarray]] = [[]]
    if neighbour == "replace" or (method != "psis" and (model is not None or build_model)):
        for name in ll.names:
            try:
                observed_y[name] = observed_values(idata, model, name)
            except ValueError:
                if neighbour == "replace":
                    raise
    if neighbour == "replace" and not factorised:
        for name in ll.names:
            candidates[name] = _candidates(replacements, name, observed_y[name])
            if candidates[name].shape[0] != 1:
                raise ValueError(
                    "without a factorised likelihood the worst of several replacements "
                    "cannot be chosen by reweighting: give one replacement per record"
                )
    elif neighbour == "replace":
        per_var = []
        for name in ll.names:
            candidates[name] = _candidates(replacements, name, observed_y[name])
            alt = replacement_log_likelihood(idata, model, name, candidates[name])
            _check_support(alt, candidates[name], name)
            n_v = ll.arrays[ll.names.index(name)].shape[1]
            if alt.shape[-1] != n_v:
                raise ValueError(
                    f"the model's log-likelihood of {name!r} has {alt.shape[-1]} terms per "
                    f"draw but the log_likelihood group has {n_v}"
                )
            per_var.append(alt)
        n_cand = max(a.shape[0] for a in per_var)
        replacement_sets = [[a[min(c, a.shape[0] - 1)] for a in per_var] for c in range(n_cand)]

    bins_obj = binning.quantile_bins(par_draws, bins)
    reff = relative_efficiency(posterior)
    n_nb = len(nbs)
    n_par = par_draws.shape[0]
    eps = np.full((n_nb, n_par), -np.inf)
    argbin = np.zeros((n_nb, n_par), dtype=np.int64)
    khat = np.full(n_nb, np.nan)
    eps_unsmoothed = np.full(n_nb, -np.inf)  # to say when smoothing moves epsilon
    worst_cand = np.zeros(n_nb, dtype=np.int64)
    store = np.empty((n_nb, n_samples)) if store_weights else None

    chunk = max(1, (32 * 2**20) // (8 * n_samples))
    if not factorised:
        replacement_sets, store = [], None
    total = len(replacement_sets) * int(np.ceil(n_nb / chunk))
    with progress_bar(
        total if total > 1 else 0, description="EDP: reweighting neighbours", enabled=progressbar
    ) as bar:
        for c, repl in enumerate(replacement_sets):
            for sl, lw, kh in iter_log_weights(
                ll, nbs, reff=reff, replacement=repl or None, chunk_size=chunk
            ):
                e, b, e0 = binning.epsilon_from_log_weights(
                    lw, bins_obj, smoothing, with_unsmoothed=True
                )
                eps_unsmoothed[sl] = np.fmax(eps_unsmoothed[sl], e0.max(axis=1))
                cur = eps[sl]
                # the neighbour's worst candidate (kept for its weights and label) ...
                better = e.max(axis=1) > cur.max(axis=1)
                # ... and, per parameter, the max over candidates
                upd = e > cur
                eps[sl] = np.where(upd, e, cur)
                argbin[sl] = np.where(upd, b, argbin[sl])
                # conservative reliability flag: the worst k-hat over candidates
                khat[sl] = np.fmax(khat[sl], kh)
                idx = np.arange(sl.start, sl.stop)[better]
                worst_cand[idx] = c
                if store is not None:
                    store[idx] = lw[better]
                bar.advance()

    threshold = khat_threshold(n_samples)
    nb_method = np.full(n_nb, "psis", dtype=object)
    status = np.full(n_nb, "", dtype=object)
    messages: list[str] = list(copy_messages)
    refits = None
    can_refit = model is not None or build_model is not None
    if method == "refit" or not factorised:
        to_refit = np.arange(n_nb)
    elif method == "auto" and can_refit:
        to_refit = np.flatnonzero(khat > threshold)
    else:
        to_refit = np.array([], dtype=np.int64)
    to_refit = to_refit[np.argsort(-np.nan_to_num(khat[to_refit], nan=np.inf), kind="stable")]
    if max_refits is not None and to_refit.size > max_refits:
        left = to_refit[max_refits:]
        to_refit = to_refit[:max_refits]
        messages.append(
            f"max_refits={max_refits}: {left.size} neighbour(s) left to reweighting "
            f"({', '.join(str(nbs.labels[i]) for i in left[:10])}"
            f"{'...' if left.size > 10 else ''})"
        )
    if to_refit.size:
        from pymc_edp import refit as _refit

        refits, refit_messages = _refit.refit_neighbours(
            to_refit,
            idata=idata,
            model=model,
            build_model=build_model,
            ll=ll,
            nbs=nbs,
            names=names,
            par_labels=par_labels,
            bins_obj=bins_obj,
            observed_y=observed_y,
            candidates=candidates if neighbour == "replace" else None,
            worst_cand=worst_cand,
            full_log_ratio=lambda k: _full_log_ratio(
                ll, nbs, k, replacement_sets[worst_cand[k]] if replacement_sets else []
            ),
            smoothing=smoothing,
            estimator=estimator,
            # what the refits depend on (not bins or estimator: one set of refits serves
            # every B and both estimators)
            config=dict(
                neighbour=neighbour,
                groups=None if groups is None else "given",
                draws=draws,
                tune=tune,
                chains=chains,
                random_seed=random_seed,
                engine=engine or "default",
                builder=build_model is not None,
                sampler_kwargs={k: repr(v) for k, v in (sampler_kwargs or {}).items()},
                labels=[str(x) for x in nbs.labels],
                var_names=list(names),
            ),
            engine=engine,
            draws=draws,
            tune=tune,
            chains=chains,
            executor=executor,
            checkpoint=checkpoint,
            random_seed=random_seed,
            progressbar=progressbar,
            sampler_kwargs=sampler_kwargs,
            retry_failed=retry_failed,
        )
        messages.extend(refit_messages)
        for k, est in refits.estimates.items():
            out = refits.outcomes[k]
            status[k] = out.status if not out.reason else f"{out.status}: {out.reason}"
            if est is not None:
                eps[k], argbin[k] = est
                nb_method[k] = "refit"
    psis_rows = nb_method == "psis"
    if to_refit.size and not (~psis_rows).any():
        messages.append(
            f"none of the {to_refit.size} refit(s) succeeded (see res.pointwise['status']): "
            "every epsilon here is a reweighting estimate, and the method is reported as 'psis'"
        )
    if smoothing > 0 and factorised and psis_rows.any():
        smoothed_max = float(np.max(eps[psis_rows]))
        raw_max = float(np.max(eps_unsmoothed[psis_rows]))
        if np.isinf(raw_max):
            messages.append(
                f"some bins receive no weight at all under a neighbour: without smoothing "
                f"epsilon would be infinite; smoothing={smoothing:g} gives {smoothed_max:.3f}, "
                "a value set by the smoothing constant (Charest & Han sec. 4)"
            )
        elif abs(raw_max - smoothed_max) > 0.05 * raw_max:
            messages.append(
                f"smoothing={smoothing:g} changes the reweighted epsilon from {raw_max:.3f} "
                f"(no smoothing) to {smoothed_max:.3f}: the decisive bins hold less than a few "
                "draws' worth of weight. Reweighted bins are never empty, so smoothing=0 is "
                "the less biased choice here; report both."
            )
    # neighbours with neither weights nor a successful refit have no estimate
    eps[np.isneginf(eps)] = np.nan

    result = _assemble(
        eps=eps,
        argbin=argbin,
        khat=khat,
        worst_cand=worst_cand if neighbour == "replace" else None,
        nbs=nbs,
        par_labels=par_labels,
        var_of=var_of,
        bins_obj=bins_obj,
        draws=par_draws,
        store=store,
        bins=bins,
        neighbour=neighbour,
        # what happened, not what was asked: every neighbour refitted, none, or some
        method="refit" if not psis_rows.any() else "psis" if psis_rows.all() else "auto",
        requested_method=method,
        can_refit=can_refit,
        smoothing=smoothing,
        reff=reff,
        groups=groups,
        nb_method=nb_method,
        status=status,
        messages=messages,
        refits=refits.collection if refits is not None else None,
        n_chains=int(posterior.sizes.get("chain", 1)),
    )
    return _with_noise_summary(result)


#: Neighbours whose Monte-Carlo interval is computed for the printed summary: those with the
#: largest epsilons (``res.interval()`` computes every neighbour's; at 10,000 records that
#: costs several times the audit itself).
SUMMARY_TOP = 32


def _with_noise_summary(result: EDPResult) -> EDPResult:
    """Attach the 90% Monte-Carlo interval of epsilon and the EMI noise floor (for printing).

    The interval of a maximum is [max of lower bounds, max of upper bounds]; here over the
    :data:`SUMMARY_TOP` neighbours with the largest epsilon, which set it unless a lower
    neighbour has a far larger standard error (``res.interval()`` takes all of them).
    """
    from pymc_edp import diagnostics

    interval = floor = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if result.log_weights is not None and np.isfinite(result.epsilon):
            eps = np.nan_to_num(result.pointwise["epsilon"].values, nan=-np.inf)
            top = np.sort(np.argsort(-eps, kind="stable")[:SUMMARY_TOP])
            sub = dataclasses.replace(
                result,
                pointwise=result.pointwise.isel({NEIGHBOUR_DIM: top}),
                log_weights=result.log_weights.isel({NEIGHBOUR_DIM: top}),
            )
            iv = diagnostics.epsilon_interval(sub, 0.9)["epsilon"].values
            interval = (float(iv[0]), float(iv[1]))
        if result.draws is not None:
            try:
                floor = float(diagnostics.emi(result, warn=False)["emi"])
            except ValueError:  # too few draws per chain for two halves
                floor = None
    return dataclasses.replace(result, mc_interval90=interval, noise_floor=floor)


def _full_log_ratio(ll, nbs, k, replacement) -> np.ndarray:
    """Unsmoothed ``log r`` of neighbour ``k`` at the full-data draws."""
    rows = nbs.rows[nbs.indptr[k] : nbs.indptr[k + 1]]
    base = ll.gather(rows)
    if replacement:
        return (ll.gather(rows, replacement) - base).sum(axis=0)
    return -base.sum(axis=0)


def _assemble(
    *,
    eps,
    argbin,
    khat,
    worst_cand,
    nbs,
    par_labels,
    var_of,
    bins_obj,
    draws,
    store,
    bins,
    neighbour,
    method,
    requested_method,
    can_refit,
    smoothing,
    reff,
    groups,
    nb_method,
    status,
    messages,
    refits,
    n_chains,
) -> EDPResult:
    n_samples = draws.shape[1]
    threshold = khat_threshold(n_samples)
    labels = _netcdf_safe(nbs.labels)
    messages = list(messages)
    par_labels = np.asarray(par_labels, dtype=str)
    # NaN marks a neighbour with no estimate (no weights and a failed refit)
    filled = np.where(np.isnan(eps), -np.inf, eps)
    worst_par = np.argmax(filled, axis=1)
    rows = np.arange(eps.shape[0])
    pointwise = xr.Dataset(
        {
            "epsilon": (NEIGHBOUR_DIM, eps[rows, worst_par]),
            "epsilon_parameter": ((NEIGHBOUR_DIM, PARAMETER_DIM), eps),
            "pareto_k": (NEIGHBOUR_DIM, khat),
            "worst_parameter": (NEIGHBOUR_DIM, par_labels[worst_par]),
            "worst_bin": (NEIGHBOUR_DIM, argbin[rows, worst_par]),
            "n_rows": (NEIGHBOUR_DIM, nbs.n_rows),
            "observed": (NEIGHBOUR_DIM, np.asarray(nbs.observed, dtype=str)),
        },
        coords={NEIGHBOUR_DIM: labels, PARAMETER_DIM: par_labels},
    )
    pointwise["method"] = (NEIGHBOUR_DIM, np.asarray(nb_method, dtype=str))
    pointwise["status"] = (NEIGHBOUR_DIM, np.asarray(status, dtype=str))
    if worst_cand is not None:
        pointwise["worst_replacement"] = (NEIGHBOUR_DIM, worst_cand)
    worst_nb = np.argmax(filled, axis=0)
    cols = np.arange(eps.shape[1])
    parameters = xr.Dataset(
        {
            "epsilon": (PARAMETER_DIM, eps[worst_nb, cols]),
            "worst_neighbour": (PARAMETER_DIM, labels[worst_nb]),
            "worst_bin": (PARAMETER_DIM, argbin[worst_nb, cols]),
            "n_bins": (PARAMETER_DIM, bins_obj.n_bins),
            "var_name": (PARAMETER_DIM, np.asarray(var_of, dtype=str)),
        },
        coords={PARAMETER_DIM: par_labels},
    )
    by_var = {}
    for name in dict.fromkeys(var_of):
        sel = np.asarray(var_of) == name
        by_var[name] = float(np.nanmax(parameters["epsilon"].values[sel], initial=-np.inf))

    bad = (khat > threshold) & (nb_method == "psis")
    if bad.any():
        order = np.flatnonzero(bad)[np.argsort(-khat[bad])][:5]
        worst = ", ".join(f"{labels[i]} ({khat[i]:.2f})" for i in order)
        if requested_method == "auto" and not can_refit:
            advice = "pass model= (or build_model=) so that method='auto' refits them"
        else:
            advice = "refit them (method='auto' or 'refit') or draw more samples"
        messages.insert(
            0,
            f"Pareto k-hat above {threshold:.2f} for {int(bad.sum())} of {khat.size} "
            f"neighbours kept to reweighting (worst: {worst}): their epsilon is unreliable "
            f"and may be the one that sets the maximum; {advice}.",
        )
    if np.any(bins_obj.n_bins < bins):
        merged = [par_labels[p] for p in np.flatnonzero(bins_obj.n_bins < bins)]
        messages.append(
            f"tied posterior draws merged bins of {len(merged)} parameter(s) "
            f"({', '.join(merged[:5])}{'...' if len(merged) > 5 else ''}); their effective "
            "number of bins is in parameters['n_bins']"
        )
    for msg in messages:
        warnings.warn(msg, EDPWarning, stacklevel=3)
        _log.info(msg)

    log_weights = None
    if store is not None:
        log_weights = xr.DataArray(
            store,
            dims=(NEIGHBOUR_DIM, SAMPLE_DIM),
            coords={NEIGHBOUR_DIM: labels},
            name="log_weights",
        )
    draws_da = xr.DataArray(
        draws, dims=(PARAMETER_DIM, SAMPLE_DIM), coords={PARAMETER_DIM: par_labels}, name="draws"
    )
    return EDPResult(
        epsilon=float(filled.max()) if np.isfinite(filled).any() else float("nan"),
        epsilon_by_var=by_var,
        pointwise=pointwise,
        parameters=parameters,
        bins=bins,
        neighbour=neighbour if groups is None else f"{neighbour} (groups)",
        method=method,
        smoothing=float(smoothing),
        n_samples=int(n_samples),
        reff=float(reff),
        khat_threshold=float(threshold),
        warnings=tuple(messages),
        n_chains=n_chains,
        log_weights=log_weights,
        draws=draws_da,
        refits=refits,
    )

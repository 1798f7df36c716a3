"""The front door: :func:`audit` a posterior's empirical differential privacy."""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr

from pymc_edp import _kernels
from pymc_edp._compat import check_container, get_group, has_group
from pymc_edp._parallel import progress_bar
from pymc_edp._psis import khat_threshold
from pymc_edp.result import NEIGHBOUR_DIM, PARAMETER_DIM, SAMPLE_DIM, EDPResult, EDPWarning
from pymc_edp.weights import (
    LogLikelihood,
    Neighbours,
    NonFactorisedError,
    iter_log_weights,
    posterior_matrix,
    relative_efficiency,
)

__all__ = ["audit"]

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
    selected = [a for a in available if any(matches(v, a) for v in kept)] if kept else available
    return [a for a in selected if not any(matches(v, a) for v in negated)]


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
            "replacements= as a list of candidate values (each tried for every record), an "
            "array shaped like the observed data (one value per record), or an array of shape "
            "(n_candidates, *observed_shape); a dict maps observed variable names to these."
        )
    arr = np.asarray(replacements)
    if arr.shape == observed.shape:
        return arr[None]
    if arr.ndim == observed.ndim + 1 and arr.shape[1:] == observed.shape:
        return arr
    if arr.ndim == 1 and observed.ndim >= 1:
        return np.broadcast_to(
            arr.reshape((-1,) + (1,) * observed.ndim), (arr.size, *observed.shape)
        ).copy()
    if arr.ndim == 0:
        return np.broadcast_to(arr, observed.shape)[None].copy()
    raise ValueError(
        f"replacements for {name!r} have shape {arr.shape}; expected {observed.shape} (one "
        f"per record), (n_candidates, {', '.join(map(str, observed.shape))}), or a 1-D list "
        "of candidate values"
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
    replacements : array_like or dict, optional
        For ``"replace"``: a list of candidate values tried for every record, an array
        shaped like the observed data, or ``(n_candidates, *observed_shape)``; a dict per
        observed variable. Default for 0/1 data: the flipped value.
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
    from pymc_edp._pymc import ensure_log_likelihood, observed_values, replacement_log_likelihood

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if neighbour not in NEIGHBOUR_RELATIONS:
        raise ValueError(f"neighbour must be one of {NEIGHBOUR_RELATIONS}, got {neighbour!r}")
    if estimator not in ("pooled", "raw"):
        raise ValueError(f"estimator must be 'pooled' or 'raw', got {estimator!r}")
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins < 2:
        raise ValueError(f"bins must be an integer >= 2, got {bins!r}")
    bins = int(bins)
    if not np.isfinite(smoothing) or smoothing < 0:
        raise ValueError(f"smoothing must be a finite number >= 0, got {smoothing!r}")
    check_container(idata)
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
    names = _select_var_names(posterior, var_names, filter_vars)
    par_draws, par_labels, var_of = posterior_matrix(posterior, names)
    n_samples = par_draws.shape[1]
    if n_samples < MIN_DRAWS_PER_BIN * bins:
        raise ValueError(
            f"too few draws for the bins asked: {n_samples} posterior draws for bins={bins} "
            f"leaves under {MIN_DRAWS_PER_BIN} draws per bin, where the bin probabilities "
            f"are mostly noise. Use bins <= {n_samples // MIN_DRAWS_PER_BIN} or draw at least "
            f"{MIN_DRAWS_PER_BIN * bins} samples."
        )

    if isinstance(observed, str):
        observed = [observed]
    factorised = True
    try:
        ll_ds = ensure_log_likelihood(idata, model, progressbar=False)
        ll = LogLikelihood.from_dataset(ll_ds, observed)
    except (NonFactorisedError, ValueError) as err:
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
            n_v = ll.arrays[ll.names.index(name)].shape[1]
            if alt.shape[-1] != n_v:
                raise ValueError(
                    f"the model's log-likelihood of {name!r} has {alt.shape[-1]} terms per "
                    f"draw but the log_likelihood group has {n_v}"
                )
            per_var.append(alt)
        n_cand = max(a.shape[0] for a in per_var)
        replacement_sets = [[a[min(c, a.shape[0] - 1)] for a in per_var] for c in range(n_cand)]

    bins_obj = _kernels.quantile_bins(par_draws, bins)
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
                e, b, e0 = _kernels.epsilon_from_log_weights(
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
    messages: list[str] = []
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
        )
        messages.extend(refit_messages)
        for k, est in refits.estimates.items():
            out = refits.outcomes[k]
            status[k] = out.status if not out.reason else f"{out.status}: {out.reason}"
            if est is not None:
                eps[k], argbin[k] = est
                nb_method[k] = "refit"
    psis_rows = nb_method == "psis"
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

    return _assemble(
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
        method=method if method != "auto" or can_refit else "psis",
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

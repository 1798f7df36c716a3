"""The front door of release audits: :func:`audit_release`."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from pymc_edp.auditing import check_settings
from pymc_edp.auditing.inputs import Inputs, read_fit, read_inputs
from pymc_edp.base import accounting as acc
from pymc_edp.base.common import NEIGHBOUR_DIM, EDPWarning
from pymc_edp.base.validate import check_delta, check_int
from pymc_edp.core.loglik import log_ratios, smoothed_log_weights
from pymc_edp.core.neighbours import Relation
from pymc_edp.model.pymc import observed_values, resolve_model
from pymc_edp.release import notes as release_notes
from pymc_edp.release.kinds import Pair, ReleaseKind, release_kind
from pymc_edp.release.options import ReleaseOptions
from pymc_edp.release.synthetic import observed_name
from pymc_edp.results.release import ReleaseResult
from pymc_edp.runtime.parallel import progress_bar

__all__ = ["audit_release", "check_release"]

#: Grid points over one release's loss range on the fine grid (at most ``accuracy / k``).
FINE_POINTS = 4096
#: Refined pairs bootstrapped (the worst ones).
BOOTSTRAP_PAIRS = 3


@dataclass(frozen=True)
class _Spec:
    release: type[ReleaseKind]
    k: int
    delta: float
    observed: str | None
    size: int | None
    statistic: Callable | None
    bins: int = 20
    var_names: str | Sequence[str] | None = None


def audit_release(
    idata,
    model=None,
    *,
    release: str = "draws",
    k: int = 1,
    delta: float = 1e-5,
    var_names: str | Sequence[str] | None = None,
    filter_vars: str | None = None,
    observed: str | None = None,
    n_synthetic: int | None = None,
    statistic: Callable | None = None,
    bins: int = 20,
    neighbour: str | Relation | Mapping = "remove",
    options: ReleaseOptions | Mapping | None = None,
    log_likelihood: str = "auto",
    random_seed=None,
    progressbar: bool = True,
) -> ReleaseResult:
    """Audit what is published: ``k`` posterior draws or synthetic datasets, as (epsilon, delta).

    For each neighbour ``D'`` (as in :func:`pymc_edp.audit`), the privacy loss of one release
    ``o`` is ``L(o) = log p(o | D) - log p(o | D')``, in both orderings; its distribution (the
    PLD) gives ``delta(eps) = E[(1 - e^(eps - L))_+]`` and composes ``k`` times by FFT, losses
    rounded up. The headline is the worst neighbour's composed epsilon at ``delta``: pairs are
    screened on a coarse grid and those that can be the worst composed on a fine one. The
    interval is a bootstrap over blocks of draws (and sampled outputs); an estimate resting on
    fewer than 10 effective draws or outputs is flagged a lower bound. How each kind builds
    its losses, and ``res.comparison``: docs/release.md.

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        With a ``log_likelihood`` group, or a model to compute it from.
    model : pymc.Model, optional
        Needed for synthetic releases and replacement neighbours (default: the ``with``
        block's).
    release : {"draws", "synthetic"} or ReleaseKind subclass, default "draws"
        What one release publishes (:mod:`pymc_edp.release.kinds`).
    k : int, default 1
        Independent releases: ``k`` posterior draws, or ``m = k`` synthetic copies.
    delta : float, default 1e-5
        The delta of the headline epsilon (``res.epsilon(delta)`` gives any other).
    var_names, filter_vars
        As in :func:`pymc_edp.audit`: the posterior variables a ``"draws"`` release publishes
        (default all). The loss is that of the whole draw, an upper bound when the likelihood
        needs unpublished variables (post-processing).
    observed : str, optional
        The observed variable synthetic data are drawn from (default the only one).
    n_synthetic : int, optional
        Records per synthetic dataset (default the data's ``n``); record ``j`` takes the
        covariates of record ``j mod n``.
    statistic : callable, optional
        ``statistic(y) -> float`` of a synthetic dataset ``y``, published instead of it.
    bins : int, default 20
        Equal-probability bins of a published statistic (fewer when it takes fewer values).
    neighbour : Remove, Replace, {"remove", "replace"} or dict, default "remove"
        As in :func:`pymc_edp.audit`; each replacement candidate is its own pair.
    options : ReleaseOptions or dict, optional
    log_likelihood : {"auto", "group", "model"}, default "auto"
        Where the pointwise log-likelihood comes from, as in :func:`pymc_edp.audit`.
    random_seed : int or numpy.random.Generator, optional
        Seeds the sampled outputs and the bootstrap (``res.random_seed``).
    progressbar : bool, default True

    Returns
    -------
    ReleaseResult

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (Table 1).
    .. [2] Dimitrakakis, C., Nelson, B., Zhang, Z., Mitrokotsa, A. and Rubinstein, B. I. P.
       "Differential privacy for Bayesian inference through posterior sampling." JMLR
       18(11), 2017.
    .. [3] Koskela, A., Jälkö, J. and Honkela, A. "Computing tight differential privacy
       guarantees using FFT." AISTATS 2020.
    .. [4] Doroshenko, V., Ghazi, B., Kamath, P., Kumar, R. and Manurangsi, P. "Connect the
       dots: tighter discrete approximations of privacy loss distributions." PETS 2022.

    Examples
    --------
    >>> res = edp.audit_release(idata, release="draws", k=5, delta=1e-3, progressbar=False,
    ...                         options={"n_bootstrap": 20}, random_seed=0)
    >>> res.epsilon() == res.headline
    True
    >>> res.delta(res.headline) <= 1e-3 + 1e-9
    True
    """
    model = resolve_model(model)
    opts = ReleaseOptions.coerce(options)
    spec = check_release(release, k, delta, observed, n_synthetic, statistic)
    spec = dataclasses.replace(spec, bins=bins, var_names=var_names)
    if spec.release.synthetic:
        spec = dataclasses.replace(spec, observed=_synthetic_source(spec, model))
    settings = check_settings(
        model,
        bins=bins,
        method="psis",
        neighbour=neighbour,
        smoothing=None,
        refit=None,
        chunks={"prune": False, "store_weights": False},
        random_seed=random_seed,
        progressbar=progressbar,
    )
    fit = read_fit(idata, model, log_likelihood)
    inp = read_inputs(fit, model, settings, var_names=var_names, filter_vars=filter_vars)
    if not inp.factorised:
        raise ValueError(
            "audit_release needs a factorised pointwise log-likelihood (one term per record): "
            "the neighbours' weights come from it"
        )
    kind = spec.release.build(inp, spec, opts, settings.seed)
    screen = _screen(kind, inp, spec, settings.progressbar)
    refined = _refine(kind, inp, spec, opts, screen, settings.seed)
    interval = _bootstrap(kind, inp, spec, opts, refined, settings.seed)
    comparison = _compare(inp, spec, opts, refined, settings.seed)
    details = release_notes.details(kind, inp, spec, opts, refined)
    notes = release_notes.collect(kind, inp, spec, opts, screen, refined, details)
    for note in notes:
        warnings.warn(note, EDPWarning, stacklevel=2)
    parts = (screen, refined, interval, comparison)
    return _assemble(inp, spec, opts, parts, notes, details, settings)


def check_release(release, k, delta, observed=None, n_synthetic=None, statistic=None) -> _Spec:
    """The release arguments, checked without a model (also by :func:`pymc_edp.tune_prior`)."""
    kind = release_kind(release, statistic)
    k = check_int(k, "k", 1)
    delta = check_delta(delta)
    if not kind.synthetic:
        named = {"observed": observed, "n_synthetic": n_synthetic, "statistic": statistic}
        given = [name for name, value in named.items() if value is not None]
        if given:
            raise ValueError(
                f"{', '.join(given)} describe synthetic data: pass release='synthetic' (a "
                "draws release publishes posterior draws; choose them with var_names=)"
            )
        return _Spec(kind, k, delta, None, None, None)
    if observed is not None and not isinstance(observed, str):
        raise TypeError(f"observed must be a variable name, got {observed!r}")
    size = check_int(n_synthetic, "n_synthetic", 1, allow_none=True)
    if statistic is not None and not callable(statistic):
        raise TypeError(f"statistic must be a function of a synthetic dataset, got {statistic!r}")
    return _Spec(kind, k, delta, observed, size, statistic)


def _synthetic_source(spec: _Spec, model) -> str:
    """The observed variable a synthetic release draws from, checked against the model."""
    if spec.var_names is not None:
        raise ValueError(
            "var_names chooses the posterior variables of release='draws'; a synthetic "
            "release publishes data drawn from the whole posterior"
        )
    if model is None:
        raise ValueError(
            "release='synthetic' draws datasets from the model's posterior predictive and "
            "evaluates its observation density: pass model="
        )
    name = observed_name(model, spec.observed)
    if np.size(observed_values(None, model, name)) == 0:
        raise ValueError(
            f"the observed variable {name!r} has zero records: a synthetic dataset drawn "
            "from it would have none either. Check that the data reached the model, or pick "
            "another variable with observed="
        )
    return name


@dataclass
class _Screen:
    """Pass 1: every pair on the coarse grid (per neighbour, and per pair of it)."""

    upper: np.ndarray  # (n, C) coarse upper bound of the k-fold epsilon at delta
    lower: np.ndarray  # (n, C) coarse lower bound
    eps1: np.ndarray  # (n, C) one release, exactly
    khat: np.ndarray  # (n, C)
    curve1: np.ndarray  # (n, G) of each neighbour's worst candidate
    curvek: np.ndarray  # (n, G)


def _pair_ratios(inp: Inputs, start: int, stop: int, candidate: int):
    """Raw log ratios ``(m, S)`` of neighbours ``start:stop`` at a candidate, weights, k-hats."""
    repl = inp.relation.replacement(candidate)
    lr = log_ratios(inp.ll, inp.neighbours, start, stop, repl)
    lw, kh = smoothed_log_weights(np.array(lr, dtype=float, order="C"), inp.reff)
    return lr, np.exp(lw), kh


def _screen(kind, inp: Inputs, spec: _Spec, progressbar: bool) -> _Screen:
    n, n_cand, grid = len(inp.neighbours), inp.relation.n_candidates, acc.DELTA_GRID
    out = _Screen(
        *(np.full((n, n_cand), -np.inf) for _ in range(4)),
        np.zeros((n, grid.size)),
        np.zeros((n, grid.size)),
    )
    step = max(1, min(256, 2**26 // (8 * max(inp.n_samples, 1))))
    with progress_bar(n * n_cand, description="Release PLDs", enabled=progressbar) as bar:
        for start in range(0, n, step):
            stop = min(n, start + step)
            for c in range(n_cand):
                lr, w, kh = _pair_ratios(inp, start, stop, c)
                atoms = kind.atoms(lr, w)
                for j in range(stop - start):
                    i = start + j
                    out.khat[i, c] = kh[j]
                    _screen_pair(out, i, c, atoms.loss[j], atoms.prob[j], spec)
                bar.advance(stop - start)
    return out


def _screen_pair(out: _Screen, i: int, c: int, loss, prob, spec: _Spec) -> None:
    *c1, e1 = acc.epsilon_curve(loss, prob, np.append(acc.DELTA_GRID, spec.delta))
    c1, e1 = np.asarray(c1), float(e1)
    if spec.k == 1:
        up = lo = e1
        ck = c1
    else:
        h = acc.grid_interval(loss, prob, spec.k, points=acc.COARSE_POINTS)
        comp = acc.compose_pair(loss, prob, spec.k, h)
        up, lo = float(comp.epsilon(spec.delta)), float(comp.epsilon(spec.delta, "lower"))
        ck = comp.epsilon(acc.DELTA_GRID)
    out.upper[i, c], out.lower[i, c], out.eps1[i, c] = up, lo, e1
    if c == 0 or up > out.upper[i, :c].max():
        out.curve1[i], out.curvek[i] = c1, ck


@dataclass
class _Refined:
    """Pass 2: the pairs that can be the worst, on the fine grid."""

    neighbour: np.ndarray  # (P,) neighbour index
    candidate: np.ndarray  # (P,)
    upper: np.ndarray  # (P,) fine upper bound at delta (exact for k = 1)
    lower: np.ndarray  # (P,)
    contributing: np.ndarray  # (P,) effective atoms the estimate rests on
    interval: np.ndarray  # (P,) fine grid interval
    curvek: np.ndarray  # (P, G)
    loss: np.ndarray  # (P, 2, A)
    prob: np.ndarray  # (P, 2, A)
    pairs: list  # Pair objects (for the bootstrap and the comparison)
    capped: int  # pairs that qualified but were not refined


def _refine(kind, inp, spec: _Spec, opts: ReleaseOptions, screen: _Screen, seed: int):
    floor = np.nanmax(screen.lower)
    ok = screen.upper >= floor - 1e-12
    cand = np.argwhere(ok)
    order = np.argsort(-screen.upper[ok], kind="stable")
    chosen = cand[order[: opts.top]]
    pairs = []
    for i, c in chosen:
        lr, w, _ = _pair_ratios(inp, i, i + 1, c)
        pairs.append(Pair(lr[0], w[0]))
    upper, lower, contributing, interval, loss, prob, curvek = zip(
        *_fine_pairs(kind, pairs, spec, opts, seed), strict=True
    )
    atoms = max(a.shape[-1] for a in loss)
    return _Refined(
        neighbour=chosen[:, 0],
        candidate=chosen[:, 1],
        upper=np.array(upper),
        lower=np.array(lower),
        contributing=np.array(contributing),
        interval=np.array(interval),
        curvek=np.stack(curvek),
        loss=np.stack([_pad(a, atoms) for a in loss]),
        prob=np.stack([_pad(a, atoms) for a in prob]),
        pairs=pairs,
        capped=int(ok.sum() - len(chosen)),
    )


def _pad(a: np.ndarray, length: int) -> np.ndarray:
    """``a`` with zeros appended on its last axis up to ``length``."""
    return np.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, length - a.shape[-1])])


def _fine_pairs(kind, pairs: list[Pair], spec: _Spec, opts: ReleaseOptions, seed: int):
    """:func:`_fine` of each pair as ``kind`` releases it (pair ``p`` seeded apart)."""
    out = []
    for p, pair in enumerate(pairs):
        atoms = kind.refined(pair, seed + 7919 * (p + 1))
        out.append(_fine(atoms.loss[0], atoms.prob[0], spec, opts, kind.listed))
    return out


def _fine(loss, prob, spec: _Spec, opts: ReleaseOptions, listed: bool):
    """Fine-grid epsilon bounds, effective atoms, grid and curve of one pair."""
    h = acc.grid_interval(loss, prob, spec.k, points=FINE_POINTS, accuracy=opts.accuracy)
    if spec.k == 1:
        per = [
            float(acc.epsilon_curve(loss[[o, o]], prob[[o, o]], np.array([spec.delta]))[0])
            for o in range(2)
        ]
        up = lo = max(per)
        curve = acc.epsilon_curve(loss, prob, acc.DELTA_GRID)
    else:
        comp = acc.compose_pair(loss, prob, spec.k, h)
        per = [float(comp.upper[o].epsilon(spec.delta)) for o in range(2)]
        up, lo = max(per), float(comp.epsilon(spec.delta, "lower"))
        curve = comp.epsilon(acc.DELTA_GRID)
    o = int(np.argmax(per))
    n_eff = np.inf if listed else acc.contributing_atoms(loss[o], prob[o], spec.k, up, h)
    return up, lo, n_eff, h, loss, prob, curve


def _pair_epsilon(loss, prob, spec: _Spec, h: float) -> float:
    if spec.k == 1:
        return float(acc.epsilon_curve(loss, prob, np.array([spec.delta]))[0])
    return float(acc.compose_pair(loss, prob, spec.k, h, lower=False).epsilon(spec.delta))


def block_counts(n_chains: int, n_draws: int, block: int, rng) -> np.ndarray:
    """Multiplicities of the draws in one circular block bootstrap within each chain."""
    n_blocks = -(-n_draws // block)
    counts = np.zeros(n_chains * n_draws)
    for c in range(n_chains):
        starts = rng.integers(0, n_draws, n_blocks)
        idx = ((starts[:, None] + np.arange(block)) % n_draws).ravel()[:n_draws]
        np.add.at(counts, c * n_draws + idx, 1.0)
    return counts


def _bootstrap(kind, inp, spec: _Spec, opts: ReleaseOptions, refined: _Refined, seed: int):
    """Percentile interval of the worst epsilon over blocks of draws (and outputs)."""
    head = float(refined.upper.max())
    if opts.n_bootstrap == 0:
        return (np.nan, np.nan)
    top = np.argsort(-refined.upper)[:BOOTSTRAP_PAIRS]
    grids = [acc.grid_interval(refined.loss[p], refined.prob[p], spec.k, points=512) for p in top]
    base = max(
        _pair_epsilon(refined.loss[p], refined.prob[p], spec, h)
        for p, h in zip(top, grids, strict=True)
    )
    rng = np.random.default_rng([seed, 2])
    n_chains = inp.n_chains
    n_draws = inp.n_samples // n_chains
    block = int(min(max(1, np.ceil(2 / max(min(inp.reff, 1.0), 1e-3))), max(1, n_draws // 4)))
    reps = np.empty(opts.n_bootstrap)
    for b in range(opts.n_bootstrap):
        counts = block_counts(n_chains, n_draws, block, rng)
        vals = []
        for p, h in zip(top, grids, strict=True):
            at = kind.replicate(refined.pairs[p], counts, rng)
            vals.append(_pair_epsilon(at.loss[0], at.prob[0], spec, h))
        reps[b] = max(vals)
    finite = reps[np.isfinite(reps)]
    if finite.size < reps.size or not np.isfinite(base):
        return (head, np.inf)
    q = np.quantile(finite - base, [(1 - opts.prob) / 2, (1 + opts.prob) / 2])
    return (max(0.0, head + float(q[0])), head + float(q[1]))


def _compare(inp, spec: _Spec, opts: ReleaseOptions, refined: _Refined, seed: int):
    """Epsilon and lower-bound flag of each refined pair per kind post-processed, and itself."""
    levels = [*spec.release.earlier, spec.release]
    eps, n_eff = [], []
    for earlier in spec.release.earlier:
        kind = earlier.build(inp, spec, opts, seed)
        fine = _fine_pairs(kind, refined.pairs, spec, opts, seed)
        eps.append([f[0] for f in fine])
        n_eff.append([f[2] for f in fine])
    eps = np.array([*eps, refined.upper])
    bound = np.array(
        [acc.resolution_limited(np.asarray(n)) for n in (*n_eff, refined.contributing)]
    )
    worst = np.argmax(eps, axis=1)
    rows = np.arange(len(levels))
    return xr.Dataset(
        {
            "epsilon": (("level", "pair"), eps),
            "worst": ("level", eps[rows, worst]),
            "lower_bound": (("level", "pair"), bound),
            "worst_lower_bound": ("level", bound[rows, worst]),
        },
        coords={
            "level": np.array([lv.name for lv in levels], dtype=str),
            "publishes": ("level", np.array([lv.publishes for lv in levels], dtype=str)),
            "pair": np.arange(eps.shape[1]),
        },
    )


def _assemble(inp, spec, opts, parts, notes, details, settings) -> ReleaseResult:
    """The result: per neighbour, curves, refined pairs and the comparison, with the notes."""
    screen, refined, interval, comparison = parts
    labels = np.asarray(inp.neighbours.labels)
    labels = labels if labels.dtype.kind in "biufUM" else labels.astype(str)
    worst_c = np.argmax(screen.upper, axis=1)
    rows = np.arange(len(labels))
    eps = screen.upper[rows, worst_c].copy()
    own = refined.candidate == worst_c[refined.neighbour]  # the neighbour's worst candidate
    eps[refined.neighbour[own]] = refined.upper[own]
    best = int(np.argmax(refined.upper))
    nb = {NEIGHBOUR_DIM: labels}
    pointwise = xr.Dataset(
        {
            "epsilon": (NEIGHBOUR_DIM, eps),
            "epsilon_1": (NEIGHBOUR_DIM, screen.eps1[rows, worst_c]),
            "pareto_k": (NEIGHBOUR_DIM, np.max(screen.khat, axis=1)),
            "refined": (NEIGHBOUR_DIM, np.isin(rows, refined.neighbour)),
            "candidate": (NEIGHBOUR_DIM, worst_c),
        },
        coords=nb,
    )
    grid = {"delta": acc.DELTA_GRID}
    curves = xr.Dataset(
        {
            "epsilon_1": ((NEIGHBOUR_DIM, "delta"), screen.curve1),
            "epsilon_k": ((NEIGHBOUR_DIM, "delta"), screen.curvek),
        },
        coords={**nb, **grid},
    )
    ref = xr.Dataset(
        {
            "neighbour_label": ("pair", labels[refined.neighbour]),
            "candidate": ("pair", refined.candidate),
            "epsilon": ("pair", refined.upper),
            "epsilon_lower": ("pair", refined.lower),
            "contributing": ("pair", refined.contributing),
            "interval": ("pair", refined.interval),
            "epsilon_k": (("pair", "delta"), refined.curvek),
            "loss": (("pair", "ordering", "atom"), refined.loss),
            "prob": (("pair", "ordering", "atom"), refined.prob),
        },
        coords={"pair": np.arange(refined.upper.size), "ordering": ["D,D'", "D',D"], **grid},
    )
    return ReleaseResult(
        release=spec.release.name,
        publishes=spec.release.publishes,
        k=spec.k,
        target_delta=spec.delta,
        headline=float(refined.upper[best]),
        interval=(float(interval[0]), float(interval[1])),
        prob=opts.prob,
        lower_bound=bool(acc.resolution_limited(refined.contributing[best])),
        worst_neighbour=str(labels[refined.neighbour[best]]),
        neighbour=settings.neighbour.label,
        pointwise=pointwise,
        curves=curves,
        refined=ref,
        comparison=comparison,
        notes=tuple(notes),
        details=details,
        random_seed=settings.seed,
    )

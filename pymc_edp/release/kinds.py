"""Release kinds: what a release publishes, and how its privacy loss atoms are built.

Everything about a kind is in its :class:`ReleaseKind` subclass, so adding one touches this
module only (docs/release.md, "Adding a release kind").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pymc_edp.base.mcse import kish_ess
from pymc_edp.base.validate import check_choice
from pymc_edp.release.atoms import (
    LossAtoms,
    Mixture,
    binned_atoms,
    draws_atoms,
    enumerated_atoms,
    log_mean_bias,
    sampled_output_atoms,
)
from pymc_edp.release.synthetic import SyntheticData, discrete_support

__all__ = [
    "KINDS",
    "DatasetRelease",
    "DrawsRelease",
    "Pair",
    "ReleaseKind",
    "StatisticRelease",
    "likelihood_parents",
    "release_kind",
]


@dataclass(frozen=True, eq=False)
class Pair:
    """One pair of neighbouring datasets: its raw log ratios and normalised weights."""

    log_ratio: np.ndarray
    weights: np.ndarray


class ReleaseKind:
    """What a release publishes, and the privacy loss atoms of its neighbour pairs.

    A subclass sets the class attributes and :meth:`atoms`; :meth:`build` makes the estimator
    of one audit. ``name`` and ``publishes`` (in words) are stored on the result; ``earlier``
    are the kinds this one post-processes, audited on the same pairs (``res.comparison``);
    ``synthetic`` kinds need the model and an observed variable; ``listed`` atoms are every
    output, exactly (no resolution limit).
    """

    name: ClassVar[str]
    publishes: ClassVar[str]
    earlier: ClassVar[tuple[type[ReleaseKind], ...]] = ()
    synthetic: ClassVar[bool] = False
    listed: bool = False

    @classmethod
    def build(cls, inp, spec, opts, seed: int) -> ReleaseKind:
        """The estimator of one audit, from its inputs, checked arguments and options."""
        return cls()

    def atoms(self, log_ratio: np.ndarray, weights: np.ndarray, counts=None) -> LossAtoms:
        """Atoms of ``m`` pairs from log ratios, weights ``(m, S)`` and draw ``counts``."""
        raise NotImplementedError

    def refined(self, pair: Pair, seed: int) -> LossAtoms:
        """Atoms of one pair the audit composes on the fine grid."""
        return self.atoms(pair.log_ratio[None], pair.weights[None])

    def replicate(self, pair: Pair, counts: np.ndarray, rng) -> LossAtoms:
        """Atoms of one pair in a bootstrap replicate (draw multiplicities ``counts``)."""
        return self.atoms(pair.log_ratio[None], pair.weights[None], counts)

    def bias(self, pair: Pair, reff: float) -> float:
        """First-order bias of the pair's loss from logs of Monte-Carlo means (none here)."""
        return 0.0

    def details(self, spec) -> dict:
        """The kind's entries of ``res.details``."""
        return {}

    def notes(self, inp, spec, opts) -> list[str]:
        """The kind's notes (each also a warning)."""
        return []


class DrawsRelease(ReleaseKind):
    """One posterior draw per release: atoms from the raw log ratios, bin-free."""

    name = "draws"
    publishes = "posterior draws"

    def atoms(self, log_ratio, weights, counts=None) -> LossAtoms:
        """:func:`~pymc_edp.release.atoms.draws_atoms`: the weights are not needed."""
        return draws_atoms(log_ratio, counts)

    def bias(self, pair: Pair, reff: float) -> float:
        """The bias of the log of the mean ratio, the loss's normaliser."""
        r = np.exp(pair.log_ratio - pair.log_ratio.max())
        return float(abs(log_mean_bias(r, reff=reff)))

    def notes(self, inp, spec, opts) -> list[str]:
        """Whether the loss is an upper bound: the likelihood needs unpublished variables."""
        parents = likelihood_parents(inp.model)
        if parents is None or spec.var_names is None or not parents - set(inp.names):
            return []
        return [
            f"the likelihood depends on {sorted(parents - set(inp.names))}, which are not "
            "published: the loss of the whole draw is used, an upper bound for the published "
            "variables (post-processing)"
        ]


def likelihood_parents(model) -> set[str] | None:
    """Free variables the observed variables' distributions depend on (None without a model)."""
    if model is None:
        return None
    free = set(model.free_RVs)
    out, seen = set(), set()
    stack = [i for rv in model.observed_RVs if rv.owner for i in rv.owner.inputs]
    while stack:  # up the graph, stopping at free variables
        var = stack.pop()
        if id(var) in seen:
            continue
        seen.add(id(var))
        if var in free:
            out.add(var.name)
        elif var.owner is not None:
            stack.extend(var.owner.inputs)
    return out


class _SyntheticRelease(ReleaseKind):
    """A release drawn from the posterior predictive of ``spec.observed``."""

    synthetic = True
    data: SyntheticData

    def details(self, spec) -> dict:
        return {"observed": spec.observed, "size": int(self.data.size)}


class DatasetRelease(_SyntheticRelease):
    """A synthetic dataset per release: listed (at most ``limit``), or sampled per mechanism."""

    name = "synthetic"
    publishes = "synthetic datasets"
    earlier = (DrawsRelease,)

    def __init__(self, data: SyntheticData, support, outputs: int, limit: int, seed: int):
        self.data, self.n_outputs, self.seed = data, int(outputs), int(seed)
        listed = None if support is None else data.enumerate_outputs(support, limit)
        self.listed = listed is not None
        if self.listed:
            self.log_dens = data.enumerated_log_density(np.asarray(support), listed)
            self.mixture = Mixture(self.log_dens)
        else:
            rng = np.random.default_rng(seed)
            source = rng.integers(0, data.n_samples, self.n_outputs)
            self.log_dens = self._densities(source, seed)
            self.mixture = Mixture(self.log_dens, source)
        self._own: dict[int, Mixture] = {}

    @classmethod
    def build(cls, inp, spec, opts, seed: int) -> DatasetRelease:
        """Listed when the model's records take few values (or ``opts.support`` is given)."""
        data = SyntheticData(inp.model, spec.observed, inp.posterior, spec.size)
        support = opts.support
        if support is None:
            support = discrete_support(inp.model, spec.observed)
        return cls(data, support, opts.n_outputs, opts.max_listed, seed)

    def _densities(self, source: np.ndarray, seed: int) -> np.ndarray:
        blocks = self.data.sample(source, seed)
        return np.stack([self.data.log_density(b) for b in blocks])

    def atoms(self, log_ratio, weights, counts=None) -> LossAtoms:
        """Atoms of the listed outputs, or of those sampled from the full-data mechanism."""
        full, nb = self.mixture(weights, counts)
        return enumerated_atoms(full, nb) if self.listed else sampled_output_atoms(full, nb)

    def _neighbour_outputs(self, pair: Pair, seed: int) -> Mixture:
        """Outputs drawn from the neighbour's own mechanism (draws chosen by its weights)."""
        key = id(pair)
        if key not in self._own:
            rng = np.random.default_rng(seed)
            w = pair.weights / pair.weights.sum()
            source = rng.choice(w.size, size=self.n_outputs, p=w)
            self._own[key] = Mixture(self._densities(source, seed), source)
        return self._own[key]

    def refined(self, pair: Pair, seed: int, counts=None, output_counts=None) -> LossAtoms:
        """Atoms of one pair, ordering 1 from the neighbour's own outputs.

        ``output_counts`` resample each mechanism's outputs (a bootstrap replicate).
        """
        if self.listed:
            return self.atoms(None, pair.weights[None], counts)
        w = pair.weights[None]
        u0, u1 = (None, None) if output_counts is None else output_counts
        a0 = sampled_output_atoms(*self.mixture(w, counts), u0)
        a1 = sampled_output_atoms(*self._neighbour_outputs(pair, seed)(w, counts), u1)
        # ordering 1 from the neighbour's own outputs: loss log p(y | D') - log p(y | D)
        return LossAtoms(
            np.stack([a0.loss[:, 0], a1.loss[:, 1]], axis=1),
            np.stack([a0.prob[:, 0], a1.prob[:, 0]], axis=1),
        )

    def replicate(self, pair: Pair, counts: np.ndarray, rng) -> LossAtoms:
        """A bootstrap replicate over blocks of draws and, when sampled, over outputs."""
        if self.listed:
            return self.refined(pair, self.seed, counts)
        t = self.n_outputs
        u = tuple(np.bincount(rng.integers(0, t, t), minlength=t).astype(float) for _ in "01")
        return self.refined(pair, self.seed, counts, u)

    def _scaled_densities(self) -> np.ndarray:
        return np.exp(self.log_dens - self.log_dens.max(axis=1, keepdims=True))

    def bias(self, pair: Pair, reff: float) -> float:
        """Median over outputs of the bias of the log mixture densities' difference."""
        dens = self._scaled_densities()
        full = log_mean_bias(dens, reff=reff)
        nb = log_mean_bias(dens, np.broadcast_to(pair.weights, dens.shape), reff=reff)
        return float(np.nanmedian(np.abs(full - nb)))

    def details(self, spec) -> dict:
        """Also ``mixture_draws``: the median effective draws an output's density rests on."""
        w = self._scaled_densities()
        w /= w.sum(axis=1, keepdims=True)
        return {
            **super().details(spec),
            "listed": bool(self.listed),
            "outputs": int(self.log_dens.shape[0]),
            "mixture_draws": float(np.median(kish_ess(w, axis=1, normalised=True))),
        }


class StatisticRelease(_SyntheticRelease):
    """A statistic of one synthetic dataset per release, cut into bins.

    One dataset per full-data draw; a neighbour reweights its bins as B-EDP a parameter's.
    """

    name = "statistic"
    publishes = "a statistic of synthetic datasets"
    earlier = (DrawsRelease, DatasetRelease)

    def __init__(self, data: SyntheticData, statistic: Callable, bins: int, seed: int):
        self.data, self.statistic = data, statistic
        blocks = data.sample(np.arange(data.n_samples), seed)
        self.values = np.array([_statistic(statistic, b, data) for b in blocks])
        self.bin_of, self.n_bins = _cut(self.values, bins)

    @classmethod
    def build(cls, inp, spec, opts, seed: int) -> StatisticRelease:
        """The statistic of one dataset per draw, cut into ``spec.bins`` bins."""
        data = SyntheticData(inp.model, spec.observed, inp.posterior, spec.size)
        return cls(data, spec.statistic, spec.bins, seed)

    def atoms(self, log_ratio, weights, counts=None) -> LossAtoms:
        """The bins' masses under the full data and under each neighbour's weights."""
        return binned_atoms(self.bin_of, self.n_bins, weights, counts)

    def details(self, spec) -> dict:
        """Also the bins and the statistic's name."""
        name = getattr(self.statistic, "__name__", "statistic")
        return {**super().details(spec), "bins": int(self.n_bins), "statistic": name}


#: The kinds :func:`pymc_edp.audit_release` accepts by name.
KINDS: dict[str, type[ReleaseKind]] = {"draws": DrawsRelease, "synthetic": DatasetRelease}


def release_kind(release, statistic: Callable | None = None) -> type[ReleaseKind]:
    """The kind ``release`` names (or is); a ``statistic`` of a synthetic dataset is its own."""
    if isinstance(release, type) and issubclass(release, ReleaseKind):
        kind = release
    else:
        kind = KINDS[check_choice(release, "release", tuple(KINDS))]
    return StatisticRelease if kind is DatasetRelease and statistic is not None else kind


def _statistic(statistic: Callable, blocks: np.ndarray, data: SyntheticData) -> float:
    y = np.concatenate(list(blocks), axis=0)[: data.size]
    value = np.asarray(statistic(y), dtype=float)
    if value.size != 1:
        raise ValueError(
            f"statistic(y) must return one number per synthetic dataset, got shape "
            f"{value.shape}; publish several statistics as separate releases (k) or "
            "combine them into one number"
        )
    if not np.isfinite(value):
        raise ValueError(f"statistic(y) returned {value.item()!r} for a synthetic dataset")
    return float(value)


def _cut(values: np.ndarray, bins: int) -> tuple[np.ndarray, int]:
    """Bins of a statistic: its distinct values when few, else equal-probability bins."""
    distinct = np.unique(values)
    if distinct.size <= bins:
        return np.searchsorted(distinct, values), int(distinct.size)
    edges = np.unique(np.quantile(values, np.arange(1, bins) / bins))
    return np.searchsorted(edges, values, side="right"), int(edges.size + 1)

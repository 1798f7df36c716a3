"""The three things a release can publish, each turning neighbour weights into loss atoms.

* :class:`DrawsRelease`: posterior draws (bin-free, from the raw log ratios);
* :class:`DatasetRelease`: synthetic datasets, listed when finite and few, else sampled
  from both mechanisms;
* :class:`StatisticRelease`: a statistic of a synthetic dataset, binned.

Each gives the atoms of every pair in a chunk (``atoms``), the atoms of a pair the audit
looks at closely (``refined``; a sampled release then draws outputs from the neighbour's own
mechanism too) and the atoms of a bootstrap replicate of such a pair (``replicate``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pymc_edp.release.atoms import (
    LossAtoms,
    Mixture,
    binned_atoms,
    draws_atoms,
    enumerated_atoms,
    sampled_output_atoms,
)
from pymc_edp.release.synthetic import SyntheticData

__all__ = ["DatasetRelease", "DrawsRelease", "Pair", "StatisticRelease", "block_counts"]


class Pair:
    """One pair of neighbouring datasets: its raw log ratios and normalised weights."""

    def __init__(self, log_ratio: np.ndarray, weights: np.ndarray):
        self.log_ratio, self.weights = log_ratio, weights


def block_counts(n_chains: int, n_draws: int, block: int, rng) -> np.ndarray:
    """Multiplicities of the draws in one circular block bootstrap within each chain."""
    n_blocks = -(-n_draws // block)
    counts = np.zeros(n_chains * n_draws)
    for c in range(n_chains):
        starts = rng.integers(0, n_draws, n_blocks)
        idx = ((starts[:, None] + np.arange(block)) % n_draws).ravel()[:n_draws]
        np.add.at(counts, c * n_draws + idx, 1.0)
    return counts


class DrawsRelease:
    """One posterior draw of the free variables per release."""

    name = "draws"
    listed = False

    def atoms(self, log_ratio: np.ndarray, weights: np.ndarray) -> LossAtoms:
        """Atoms of every pair of a chunk, from raw log ratios ``(m, S)`` and weights."""
        del weights
        return draws_atoms(log_ratio)

    def refined(self, pair: Pair, seed: int) -> LossAtoms:
        """Atoms of one pair the audit looks at closely."""
        del seed
        return draws_atoms(pair.log_ratio[None])

    def replicate(self, pair: Pair, counts: np.ndarray, rng) -> LossAtoms:
        """Atoms of one pair in a bootstrap replicate (draw multiplicities ``counts``)."""
        del rng
        return draws_atoms(pair.log_ratio[None], counts)


class DatasetRelease:
    """A synthetic dataset per release, from the posterior predictive.

    Parameters
    ----------
    data : SyntheticData
    support : ndarray or None
        Values of one record, to list every dataset; None samples them.
    outputs : int
        Datasets sampled per mechanism when not listed.
    limit : int
        List at most this many datasets.
    seed : int
    """

    name = "synthetic"

    def __init__(self, data: SyntheticData, support, outputs: int, limit: int, seed: int):
        self.data, self.n_outputs, self.seed = data, int(outputs), int(seed)
        n_samples = data.posterior.sizes["chain"] * data.posterior.sizes["draw"]
        listed = None if support is None else data.enumerate_outputs(support, limit)
        self.listed = listed is not None
        if self.listed:
            self.log_dens = data.enumerated_log_density(np.asarray(support), listed)
            self.source = None
            self.mixture = Mixture(self.log_dens)
        else:
            rng = np.random.default_rng(seed)
            self.source = rng.integers(0, n_samples, self.n_outputs)
            self.log_dens = self._densities(self.source, seed)
            self.mixture = Mixture(self.log_dens, self.source)
        self._own: dict[int, Mixture] = {}

    def _densities(self, source: np.ndarray, seed: int) -> np.ndarray:
        blocks = self.data.sample(source, seed)
        return np.stack([self.data.log_density(b) for b in blocks])

    def atoms(self, log_ratio: np.ndarray, weights: np.ndarray) -> LossAtoms:
        """Atoms of every pair of a chunk, from raw log ratios ``(m, S)`` and weights."""
        del log_ratio
        full, nb = self.mixture(weights)
        return enumerated_atoms(full, nb) if self.listed else sampled_output_atoms(full, nb)

    def _neighbour_outputs(self, pair: Pair, seed: int):
        """Outputs drawn from the neighbour's own mechanism (draws chosen by its weights)."""
        key = id(pair)
        if key not in self._own:
            rng = np.random.default_rng(seed)
            w = pair.weights / pair.weights.sum()
            source = rng.choice(w.size, size=self.n_outputs, p=w)
            self._own[key] = Mixture(self._densities(source, seed), source)
        return self._own[key]

    def refined(self, pair: Pair, seed: int, counts=None, output_counts=None) -> LossAtoms:
        """Atoms of one pair, ordering 1 from outputs of the neighbour's own mechanism."""
        w = pair.weights[None]
        full, nb = self.mixture(w, counts)
        if self.listed:
            return enumerated_atoms(full, nb)
        full1, nb1 = self._neighbour_outputs(pair, seed)(w, counts)
        u0, u1 = (None, None) if output_counts is None else output_counts
        a0 = sampled_output_atoms(full, nb, u0)
        a1 = sampled_output_atoms(full1, nb1, u1)
        # ordering 1 from the neighbour's own outputs: loss log p(y | D') - log p(y | D)
        return LossAtoms(
            np.stack([a0.loss[:, 0], a1.loss[:, 1]], axis=1),
            np.stack([a0.prob[:, 0], a1.prob[:, 0]], axis=1),
        )

    def replicate(self, pair: Pair, counts: np.ndarray, rng) -> LossAtoms:
        """Atoms of one pair in a bootstrap replicate (draw multiplicities ``counts``)."""
        if self.listed:
            return self.refined(pair, self.seed, counts)
        t = self.n_outputs
        u = tuple(np.bincount(rng.integers(0, t, t), minlength=t).astype(float) for _ in "01")
        return self.refined(pair, self.seed, counts, u)


class StatisticRelease:
    """A statistic of one synthetic dataset per release, cut into bins.

    One dataset is drawn at every full-data draw; the statistic's bin probabilities under
    a neighbour are the weighted ones, as B-EDP reweights parameter bins.
    """

    name = "statistic"
    listed = False

    def __init__(self, data: SyntheticData, statistic: Callable, bins: int, seed: int):
        self.data = data
        n_samples = data.posterior.sizes["chain"] * data.posterior.sizes["draw"]
        blocks = data.sample(np.arange(n_samples), seed)
        values = np.array([_statistic(statistic, b, data) for b in blocks])
        self.values = values
        self.bin_of, self.n_bins = _cut(values, bins)

    def atoms(self, log_ratio: np.ndarray, weights: np.ndarray) -> LossAtoms:
        """Atoms of every pair of a chunk, from raw log ratios ``(m, S)`` and weights."""
        del log_ratio
        return binned_atoms(self.bin_of, self.n_bins, weights)

    def refined(self, pair: Pair, seed: int) -> LossAtoms:
        """Atoms of one pair the audit looks at closely."""
        del seed
        return binned_atoms(self.bin_of, self.n_bins, pair.weights[None])

    def replicate(self, pair: Pair, counts: np.ndarray, rng) -> LossAtoms:
        """Atoms of one pair in a bootstrap replicate (draw multiplicities ``counts``)."""
        del rng
        return binned_atoms(self.bin_of, self.n_bins, pair.weights[None], counts)


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

"""Privacy-loss atoms of one release per pair of neighbouring datasets: NumPy only.

Every function gives the :class:`LossAtoms` of both orderings from the full-data draws and
each neighbour's weights; ``counts`` (multiplicities of the draws, or of the outputs) give a
bootstrap replicate. The papers: :func:`pymc_edp.audit_release`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from pymc_edp.base.mcse import kish_ess

__all__ = [
    "LossAtoms",
    "Mixture",
    "binned_atoms",
    "draws_atoms",
    "enumerated_atoms",
    "log_mean_bias",
    "sampled_output_atoms",
]


@dataclass(frozen=True)
class LossAtoms:
    """The PLD of both orderings of ``m`` pairs: ``loss`` and ``prob``, shape (m, 2, A).

    Ordering 0 is ``(D, D')``, 1 is ``(D', D)``; each ordering's ``prob`` sums to one, and a
    loss is ``+inf`` where the second distribution gives the output no mass.
    """

    loss: np.ndarray
    prob: np.ndarray


def _normalise(p: np.ndarray) -> np.ndarray:
    total = p.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, p / total, 0.0)


def draws_atoms(log_ratio: np.ndarray, counts: np.ndarray | None = None) -> LossAtoms:
    """The PLD of publishing one posterior draw, from raw log ratios ``(m, S)``.

    ``log_ratio`` is ``log p(theta_s | D') - log p(theta_s | D)`` up to a constant per row
    (the unsmoothed importance log ratios). Ordering 0 puts ``-log r_s`` on draw ``s`` with
    probability ``c_s / sum(c)``, ordering 1 ``log r_s`` with ``c_s r_s / sum(c r)``, where
    ``r`` is the ratio normalised to mean one and ``c`` the ``counts`` (default ones).

    Examples
    --------
    >>> at = draws_atoms(np.log([[1.0, 3.0]]))
    >>> at.loss.round(3).tolist(), at.prob.round(3).tolist()
    ([[[0.693, -0.405], [-0.693, 0.405]]], [[[0.5, 0.5], [0.25, 0.75]]])
    """
    lr = np.asarray(log_ratio, dtype=float)
    c = np.ones(lr.shape[-1]) if counts is None else np.asarray(counts, dtype=float)
    with np.errstate(divide="ignore"):
        log_c = np.log(c)
    # the normaliser log E_D[r] as the (weighted) mean of the draws: bias in log_mean_bias
    lw = lr - (logsumexp(lr + log_c, axis=-1, keepdims=True) - np.log(c.sum()))
    p0 = np.broadcast_to(c / c.sum(), lr.shape)
    p1 = _normalise(np.exp(lw + log_c))
    return LossAtoms(np.stack([-lw, lw], axis=1), np.stack([p0, p1], axis=1))


class Mixture:
    """Outputs' densities ``log p(y_t | theta_s)`` (T, S), scaled once for any weights.

    ``source`` (T,), the draw each output was generated from, is left out of that output's
    mixtures, which would otherwise overstate ``p(y | D)``.
    """

    def __init__(self, log_dens: np.ndarray, source: np.ndarray | None = None):
        ld = np.asarray(log_dens, dtype=float)
        top = ld.max(axis=1)
        self.top = np.where(np.isfinite(top), top, 0.0)
        self.e = np.exp(ld - self.top[:, None])  # (T, S)
        self.source = None if source is None else np.asarray(source)
        if self.source is not None:
            self.e[np.arange(ld.shape[0]), self.source] = 0.0

    def __call__(self, weights: np.ndarray, counts: np.ndarray | None = None):
        """``log p(y_t | D)`` (T,) and ``log p(y_t | D')`` (m, T) under ``weights`` (m, S)."""
        w = np.asarray(weights, dtype=float)
        c = np.ones(self.e.shape[1]) if counts is None else np.asarray(counts, dtype=float)
        cw = w * c  # (m, S)
        if self.source is not None:
            den_full = c.sum() - c[self.source]
            den_nb = cw.sum(axis=1, keepdims=True) - cw[:, self.source]
        else:
            den_full = np.full(self.e.shape[0], c.sum())
            den_nb = cw.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_full = np.log((self.e @ c) / den_full) + self.top
            log_nb = np.log((cw @ self.e.T) / den_nb) + self.top
        return log_full, log_nb


def sampled_output_atoms(
    log_full: np.ndarray, log_nb: np.ndarray, output_counts: np.ndarray | None = None
) -> LossAtoms:
    """Atoms of outputs sampled from the full-data mechanism.

    Ordering 0 puts ``L_t = log p(y_t | D) - log p(y_t | D')`` on each output; ordering 1
    reweights the same outputs: ``-L_t`` with probability proportional to ``e^(-L_t)``.
    """
    loss = log_full[None, :] - log_nb
    u = np.ones(loss.shape[1]) if output_counts is None else np.asarray(output_counts, float)
    p0 = np.broadcast_to(u / u.sum(), loss.shape)
    with np.errstate(over="ignore"):
        shift = np.where(np.isfinite(loss), -loss, -np.inf)
        top = shift.max(axis=1, keepdims=True)
        p1 = _normalise(np.exp(shift - top) * u)
    return LossAtoms(np.stack([loss, -loss], axis=1), np.stack([p0, p1], axis=1))


def enumerated_atoms(log_full: np.ndarray, log_nb: np.ndarray) -> LossAtoms:
    """Atoms of all outputs of a finite release: log probabilities (O,) and (m, O)."""
    loss = log_full[None, :] - log_nb
    p0 = _normalise(np.broadcast_to(np.exp(log_full), loss.shape))
    p1 = _normalise(np.exp(log_nb))
    return LossAtoms(np.stack([loss, -loss], axis=1), np.stack([p0, p1], axis=1))


def binned_atoms(
    bin_of: np.ndarray, n_bins: int, weights: np.ndarray, counts: np.ndarray | None = None
) -> LossAtoms:
    """The PLD of publishing the bin of a statistic: ``bin_of`` (S,) is the bin at each draw."""
    c = np.ones(bin_of.size) if counts is None else np.asarray(counts, dtype=float)
    w = np.asarray(weights, dtype=float) * c
    full = np.bincount(bin_of, weights=c, minlength=n_bins) / c.sum()
    nb = np.stack([np.bincount(bin_of, weights=row, minlength=n_bins) for row in w])
    nb = _normalise(nb)
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(full)[None, :] - np.log(nb)
    loss = np.where((full == 0)[None, :], -np.inf, loss)
    p0 = np.broadcast_to(full, loss.shape)
    return LossAtoms(np.stack([loss, -loss], axis=1), np.stack([p0, nb], axis=1))


def log_mean_bias(terms: np.ndarray, weights: np.ndarray | None = None, reff: float = 1.0):
    """First-order bias ``-Var / (2 S_eff mean^2)`` of the log of a weighted mean of ``terms``."""
    t = np.asarray(terms, dtype=float)
    w = np.full(t.shape[-1], 1.0 / t.shape[-1]) if weights is None else np.asarray(weights)
    mean = (w * t).sum(axis=-1)
    var = (w * (t - mean[..., None]) ** 2).sum(axis=-1)
    ess = kish_ess(w, normalised=True) * reff
    with np.errstate(divide="ignore", invalid="ignore"):
        return -var / (2 * ess * mean**2)

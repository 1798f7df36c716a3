"""Privacy-loss atoms of one release, per pair of neighbouring datasets: NumPy only.

A release mechanism ``M`` publishes an output ``o`` drawn from ``p_M(o | D)``. For a pair
``(D, D')`` the privacy loss is ``L(o) = log p_M(o | D) - log p_M(o | D')`` with ``o ~ M(D)``;
its distribution (the PLD) is what composes. Every function here returns the PLD of both
orderings, ``(D, D')`` and ``(D', D)``, as atoms (losses and their probabilities) on the
last axis, estimated from the full-data posterior draws and each neighbour's weights:

* :func:`draws_atoms`: one posterior draw. ``L(theta) = -log r(theta)`` with ``r`` the
  neighbour's normalised density ratio, which the raw importance ratios give up to their
  mean (bin-free).
* :func:`mixture_atoms`: a synthetic dataset ``y`` from the posterior predictive, known by
  ``log p(y_t | theta_s)`` at outputs ``t`` and draws ``s``; ``p(y | D)`` is the mean over
  the draws and ``p(y | D')`` the weighted mean.
* :func:`binned_atoms`: a published statistic cut into bins (as B-EDP cuts parameters).

``counts`` (multiplicities of the draws, and of the outputs) give a bootstrap replicate
without copying any array.

References
----------
.. [1] Dimitrakakis, C., Nelson, B., Zhang, Z., Mitrokotsa, A. and Rubinstein, B. I. P.
   "Differential privacy for Bayesian inference through posterior sampling." JMLR 18(11),
   2017.
.. [2] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." Journal of Privacy and Confidentiality 7(3), 2017.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "LossAtoms",
    "Mixture",
    "binned_atoms",
    "draws_atoms",
    "enumerated_atoms",
    "log_mean_bias",
    "mixture_atoms",
    "sampled_output_atoms",
]


@dataclass(frozen=True)
class LossAtoms:
    """The PLD of both orderings of ``m`` neighbour pairs, as atoms.

    Attributes
    ----------
    loss : ndarray, shape (m, 2, A)
        Loss of each atom; ordering 0 is ``(D, D')`` (outputs from the full data), 1 is
        ``(D', D)``. ``+inf`` where the second distribution gives the output no mass.
    prob : ndarray, shape (m, 2, A)
        Probability of each atom; each ordering's row sums to one.
    """

    loss: np.ndarray
    prob: np.ndarray

    def __len__(self) -> int:
        return int(self.loss.shape[0])

    def take(self, index) -> LossAtoms:
        """The pairs ``index``."""
        return LossAtoms(self.loss[index], self.prob[index])


def _normalise(p: np.ndarray) -> np.ndarray:
    total = p.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, p / total, 0.0)


def draws_atoms(log_ratio: np.ndarray, counts: np.ndarray | None = None) -> LossAtoms:
    """The PLD of publishing one posterior draw, from raw log density ratios.

    Parameters
    ----------
    log_ratio : ndarray, shape (m, S)
        ``log p(theta_s | D') - log p(theta_s | D)`` up to a constant per row (the raw,
        unsmoothed importance log ratios at the full-data draws).
    counts : ndarray, shape (S,), optional
        Multiplicity of each draw (a bootstrap replicate); default one each.

    Returns
    -------
    LossAtoms
        ``A = S`` atoms: ordering 0 puts ``-log r_s`` on draw ``s`` with probability
        ``c_s / sum(c)``; ordering 1 puts ``log r_s`` with probability ``c_s r_s / sum(c r)``,
        where ``r`` is the ratio normalised to mean one.

    Examples
    --------
    >>> from pymc_edp.release.atoms import draws_atoms
    >>> at = draws_atoms(np.log([[1.0, 3.0]]))
    >>> at.loss.round(3).tolist()
    [[[0.693, -0.405], [-0.693, 0.405]]]
    >>> at.prob.round(3).tolist()
    [[[0.5, 0.5], [0.25, 0.75]]]
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


def mixture_atoms(
    log_dens: np.ndarray,
    weights: np.ndarray,
    *,
    source: np.ndarray | None = None,
    counts: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``log p(y_t | D)`` and ``log p(y_t | D')`` of outputs as (weighted) mixtures over draws.

    Parameters
    ----------
    log_dens : ndarray, shape (T, S)
        ``log p(y_t | theta_s)`` of each output at each full-data draw.
    weights : ndarray, shape (m, S)
        Each neighbour's normalised importance weights (summing to one).
    source : ndarray of int, shape (T,), optional
        The draw each output was generated from: left out of that output's mixtures
        (leave-one-out), so that the densities are not estimated with the draw that made
        the output.
    counts : ndarray, shape (S,), optional
        Multiplicity of each draw (a bootstrap replicate).

    Returns
    -------
    log_full : ndarray, shape (T,)
    log_neighbour : ndarray, shape (m, T)

    Examples
    --------
    >>> from pymc_edp.release.atoms import mixture_atoms
    >>> ld = np.log([[0.2, 0.6], [0.8, 0.4]])
    >>> full, nb = mixture_atoms(ld, np.array([[0.25, 0.75]]))
    >>> np.exp(full).round(3).tolist(), np.exp(nb).round(3).tolist()
    ([0.4, 0.6], [[0.5, 0.5]])
    """
    return Mixture(log_dens, source)(weights, counts)


class Mixture:
    """Outputs' densities at every draw, scaled once, to be averaged with any weights.

    ``log_dens`` (T, S) becomes ``exp(log_dens - max over draws)`` once (with each output's
    generating draw left out when ``source`` is given), so that every neighbour, bootstrap
    replicate and chunk only pays for the weighted sums. See :func:`mixture_atoms`.
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
    """Atoms of outputs sampled from the full-data mechanism, both orderings.

    Ordering 0 puts ``L_t = log p(y_t | D) - log p(y_t | D')`` on each output with its
    (bootstrap) multiplicity; ordering 1 reuses the same outputs by importance sampling,
    ``-L_t`` with probability proportional to ``e^(-L_t)``.
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
    """Atoms of every output of a finite release, each with its probability under D and D'.

    ``log_full`` (O,) and ``log_nb`` (m, O) are the log probabilities of all ``O`` outputs.
    """
    loss = log_full[None, :] - log_nb
    p0 = _normalise(np.broadcast_to(np.exp(log_full), loss.shape))
    p1 = _normalise(np.exp(log_nb))
    return LossAtoms(np.stack([loss, -loss], axis=1), np.stack([p0, p1], axis=1))


def binned_atoms(
    bin_of: np.ndarray, n_bins: int, weights: np.ndarray, counts: np.ndarray | None = None
) -> LossAtoms:
    """The PLD of publishing which bin a statistic of the release falls in.

    Parameters
    ----------
    bin_of : ndarray of int, shape (S,)
        Bin of the statistic of the output generated at each full-data draw.
    n_bins : int
    weights : ndarray, shape (m, S)
        Each neighbour's normalised importance weights.
    counts : ndarray, shape (S,), optional

    Examples
    --------
    >>> from pymc_edp.release.atoms import binned_atoms
    >>> at = binned_atoms(np.array([0, 0, 1, 1]), 2, np.array([[0.1, 0.1, 0.4, 0.4]]))
    >>> at.loss[0, 0].round(3).tolist()
    [0.916, -0.47]
    """
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
    """First-order bias of the log of a Monte-Carlo mean, ``-Var / (2 S_eff mean^2)``.

    ``terms`` (..., S) are the averaged quantities (ratios, or densities at each draw),
    ``weights`` their normalised weights (default equal); ``reff`` the relative MCMC
    efficiency. The log of an average underestimates the log of its expectation by this
    much to first order (the delta method); it is reported, not subtracted.
    """
    t = np.asarray(terms, dtype=float)
    w = np.full(t.shape[-1], 1.0 / t.shape[-1]) if weights is None else np.asarray(weights)
    mean = (w * t).sum(axis=-1)
    var = (w * (t - mean[..., None]) ** 2).sum(axis=-1)
    ess = 1.0 / (w**2).sum(axis=-1) * reff
    with np.errstate(divide="ignore", invalid="ignore"):
        return -var / (2 * ess * mean**2)

"""Exact B-EDP of coupled models on a grid of their parameters (the tests' references).

A model with one or two parameters has its posterior, and every leave-one-out posterior,
on a grid: prior times the likelihood of the data without record ``i``, which each model
below computes exactly (a Kalman filter skips the update of a missing observation; a
random walk integrates the missing value out numerically, on a fine grid of its own).
Bins are the full-data marginal's equal-probability bins, so for each parameter and
record ``eps = max_b |log(B P_-i(b))|``. Grids are fine enough that their error is far
below the tests' tolerances (checked by halving them when they were written).
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats


def grid_weights(axis: np.ndarray) -> np.ndarray:
    """Trapezoid weights of an increasing, possibly non-uniform, grid."""
    w = np.zeros_like(axis)
    d = np.diff(axis)
    w[:-1] += d / 2
    w[1:] += d / 2
    return w


def bedp(log_prior: np.ndarray, log_lik: np.ndarray, log_lik_loo: np.ndarray, axes, bins: int):
    """Per record, per parameter: the exact B-EDP on a grid.

    Parameters
    ----------
    log_prior, log_lik : ndarray, shape grid
        Log prior density and full-data log-likelihood on the grid (``meshgrid``, ij).
    log_lik_loo : ndarray, shape (n, *grid)
        Log-likelihood without each record.
    axes : list of ndarray
        The grid's axes, one per parameter.

    Returns
    -------
    ndarray, shape (n, n_parameters)
    """
    cell = np.ones(log_prior.shape)
    for k, axis in enumerate(axes):
        shape = [1] * len(axes)
        shape[k] = axis.size
        cell = cell * grid_weights(axis).reshape(shape)

    def marginals(log_post):
        p = np.exp(log_post - log_post.max()) * cell
        p /= p.sum()
        return [p.sum(axis=tuple(j for j in range(len(axes)) if j != k)) for k in range(len(axes))]

    full = marginals(log_prior + log_lik)
    out = np.empty((log_lik_loo.shape[0], len(axes)))
    for i in range(log_lik_loo.shape[0]):
        loo = marginals(log_prior + log_lik_loo[i])
        for k in range(len(axes)):
            cdf = np.concatenate([[0.0], np.cumsum(full[k])])
            cdf_loo = np.concatenate([[0.0], np.cumsum(loo[k])])
            # bin edges: the full marginal's quantiles, read on the cumulative masses
            edges = np.interp(np.linspace(0, 1, bins + 1)[1:-1], cdf, np.arange(cdf.size))
            at = np.interp(edges, np.arange(cdf.size), cdf_loo)
            mass = np.diff(np.concatenate([[0.0], at, [1.0]]))
            out[i, k] = np.abs(np.log(bins * mass)).max()
    return out


def kalman_local_level(y, s2l, s2o, p0, a0=0.0, missing=None):
    """Log-likelihood of a local-level model on grids of variances, an observation missing."""
    a = np.full(np.broadcast(s2l, s2o).shape, a0, dtype=float)
    p = np.full(a.shape, p0, dtype=float)
    ll = np.zeros(a.shape)
    for t, yt in enumerate(y):
        if t != missing:
            f = p + s2o
            v = yt - a
            ll += -0.5 * (np.log(2 * np.pi * f) + v**2 / f)
            k = p / f
            a = a + k * v
            p = p * (1 - k)
        p = p + s2l
    return ll


def walk_log_lik(y, log_step, missing=None, nodes=None):
    """Log-likelihood of a random walk ``y_t - y_t-1 ~ step``, ``y_0 ~ N(0, 10)``.

    ``log_step(d)`` is the innovations' log-density on the parameter grid (broadcasting a
    trailing axis of differences). Without record ``i``, its value is integrated out on
    ``nodes`` (a fine grid of values of ``y_i``, trapezoid rule).
    """
    d = np.diff(y)
    if missing is None:
        return log_step(d).sum(axis=-1) + stats.norm.logpdf(y[0], 0, 10)
    i = missing
    keep = [j for j in range(1, y.size) if j not in (i, i + 1)]
    base = log_step(np.array([y[j] - y[j - 1] for j in keep])).sum(axis=-1) if keep else 0.0
    t = nodes
    terms = 0.0
    if i > 0:
        terms = terms + log_step(t - y[i - 1])
    else:
        terms = terms + stats.norm.logpdf(t, 0, 10)
    if i + 1 < y.size:
        terms = terms + log_step(y[i + 1] - t)
    top = terms.max(axis=-1, keepdims=True)
    integral = np.log((np.exp(terms - top) * grid_weights(t)).sum(axis=-1)) + top[..., 0]
    first = 0.0 if i == 0 else stats.norm.logpdf(y[0], 0, 10)
    return base + integral + first


def joint_log_lik(y, joint, nodes):
    """``(full, loo)`` of any joint log-likelihood ``joint`` on a parameter grid.

    ``joint(z)`` takes values ``z`` of shape ``(1, m, n)`` and returns ``(P, m)`` (the
    parameter grid first). ``full`` is ``joint`` at ``y``; row ``i`` of ``loo`` integrates
    ``y_i`` out on ``nodes`` (trapezoid rule), the other values fixed.
    """
    full = joint(y[None, None, :])[:, 0]
    loo = []
    for i in range(y.size):
        z = np.broadcast_to(y, (nodes.size, y.size)).copy()
        z[:, i] = nodes
        terms = joint(z[None])
        top = terms.max(axis=1, keepdims=True)
        loo.append(np.log((np.exp(terms - top) * grid_weights(nodes)).sum(axis=1)) + top[:, 0])
    return full, np.stack(loo)


def skew_normal_logpdf(d, sigma, alpha):
    """``log SN(d; 0, sigma, alpha)``, stable far in the tails (``log_ndtr``)."""
    z = d / sigma
    return np.log(2) - np.log(sigma) + stats.norm.logpdf(z) + special.log_ndtr(alpha * z)

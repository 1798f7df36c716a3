"""Closed-form leave-one-out conditionals of Gaussian and Student-t likelihoods.

For a log-likelihood quadratic in ``y`` (any Gaussian), its gradient ``g`` and Hessian
``H = -Q`` in ``y`` give ``y_i | y_-i ~ N(y_i + g_i / Q_ii, 1 / Q_ii)`` (eq. 6-8 of [1]_):
:func:`conditional_logp` builds that graph, :func:`block_log_conditionals` the conditional
of a block. ``pm.MvStudentT`` has a closed form (:func:`student_t_conditional`, eq. 10-12).
Which route a model takes is :mod:`pymc_edp.model.coupled`'s. Cost: one gradient and
Hessian per draw (order ``n^3`` for a parameter-dependent covariance).

References
----------
.. [1] Bürkner, P.-C., Gabry, J. and Vehtari, A. "Efficient leave-one-out cross-validation
   for Bayesian non-factorized normal and Student-t models." Computational Statistics 36,
   2021.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "block_log_conditionals",
    "conditional_logp",
    "gaussian_derivatives_of",
    "is_student_t",
    "student_t_conditional",
]


def gaussian_derivatives_of(logp, values):
    """Graphs of the gradient and Hessian of ``logp`` in ``values``: ``(n,)`` and ``(n, n)``."""
    import pytensor.tensor as pt
    from pytensor.gradient import grad, jacobian

    g = grad(pt.sum(logp), values).ravel()
    n = g.shape[0]
    h = jacobian(g, values, vectorize=True).reshape((n, n))
    return [g, h]


def conditional_logp(logp, value, at):
    """``(n_records,)`` graph of ``log p(at_i | value_-i)`` for a Gaussian scalar ``logp``.

    Records are ``value``'s elements in C order; ``at`` is ``value`` itself (leave-one-out) or
    replacement values.

    Examples
    --------
    For independent records the conditional is each record's own density:

    >>> import pytensor, pytensor.tensor as pt
    >>> from pymc_edp.model.conditional import conditional_logp
    >>> y, at = pt.vector("y"), pt.vector("at")
    >>> logp = -0.5 * pt.sum((y - 1.0) ** 2 / 4.0) - y.shape[0] * pt.log(2 * np.sqrt(2 * np.pi))
    >>> f = pytensor.function([y, at], conditional_logp(logp, y, at))
    >>> np.round(f(np.zeros(2), np.array([1.0, 3.0])), 4)
    array([-1.6121, -2.1121])
    """
    import pytensor.tensor as pt

    g, h = gaussian_derivatives_of(logp, value)
    q = -pt.diagonal(h)
    mean = value.ravel() + g / q
    return 0.5 * pt.log(q / (2 * np.pi)) - 0.5 * q * (at.ravel() - mean) ** 2


def block_log_conditionals(g: np.ndarray, h: np.ndarray, blocks) -> np.ndarray:
    """``(len(blocks),)`` ``log p(y_b | y_-b)`` of blocks of records of a Gaussian likelihood.

    With ``Q = -h`` and ``g = -Q (y - mu)``, ``y_b | y_-b ~ N(y_b + Q_bb^-1 g_b, Q_bb^-1)``:
    ``-k/2 log(2 pi) + 1/2 log det Q_bb - 1/2 g_b' Q_bb^-1 g_b``.

    Examples
    --------
    >>> from pymc_edp.model.conditional import block_log_conditionals
    >>> y = np.array([0.5, -1.0, 2.0])  # independent N(0, 1) records
    >>> out = block_log_conditionals(-y, -np.eye(3), [np.array([0, 2])])
    >>> bool(np.isclose(out[0], -np.log(2 * np.pi) - 0.5 * (0.25 + 4.0)))
    True
    """
    from scipy.linalg import solve_triangular

    out = np.empty(len(blocks))
    for j, block in enumerate(blocks):
        chol = np.linalg.cholesky(-h[np.ix_(block, block)])
        z = solve_triangular(chol, g[block], lower=True)
        out[j] = -0.5 * len(block) * np.log(2 * np.pi) + np.log(np.diag(chol)).sum() - 0.5 * z @ z
    return out


def is_student_t(rv) -> bool:
    """A ``pm.MvStudentT`` over the records of a vector."""
    op = getattr(rv.owner, "op", None)
    return type(op).__name__ == "MvStudentTRV" and rv.type.ndim == 1


def student_t_conditional(nu, mu, scale, value, at):
    """``log p(at_i | value_-i)`` of every record of ``MvStudentT(nu, mu, scale)`` (eq. 10-12).

    A Student-t with ``nu + n - 1`` degrees of freedom, location ``y_i - g_i / Q_ii`` and
    squared scale ``(nu + b_-i) / (nu + n - 1) / Q_ii``, with ``Q = scale^-1``,
    ``g = Q (y - mu)``, ``b_-i = (y - mu)' Q (y - mu) - g_i^2 / Q_ii``.

    Examples
    --------
    >>> import pytensor, pytensor.tensor as pt
    >>> from pymc_edp.model.conditional import student_t_conditional
    >>> y = pt.vector("y")
    >>> out = student_t_conditional(3.0, pt.zeros(3), pt.eye(3), y, y)
    >>> np.round(pytensor.function([y], out)(np.array([0.0, 1.0, -2.0])), 4)
    array([-1.2036, -1.5374, -2.9365])
    """
    import pytensor.tensor as pt
    from pytensor.tensor.special import gammaln

    resid = value - mu
    prec = pt.linalg.inv(scale)
    g = prec @ resid
    q = pt.diagonal(prec)
    n = value.shape[0]
    df = nu + n - 1
    rest = resid @ g - g**2 / q
    sd = pt.sqrt((nu + rest) / (df * q))
    z = (at - (value - g / q)) / sd
    return (
        gammaln((df + 1) / 2)
        - gammaln(df / 2)
        - 0.5 * pt.log(df * np.pi)
        - pt.log(sd)
        - (df + 1) / 2 * pt.log1p(z**2 / df)
    )

"""McClure & Reiter (2012): intruder risk for the Beta-Bernoulli synthesizer.

The intruder knows every record but one (record j), the synthesizer
(:class:`~pymc_edp.conjugate.BernoulliSynthesizer`) and its parameters, and sees the
synthetic data.

References
----------
.. [1] McClure, D. and Reiter, J. P. (2012). "Differential Privacy and Statistical
   Disclosure Risk Measures: An Investigation with Binary Synthetic Data." *Transactions
   on Data Privacy* 5, 535-552.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import special, stats

from pymc_edp.base.validate import check_int
from pymc_edp.conjugate import BernoulliSynthesizer, bernoulli_synthesizer_prior
from pymc_edp.risk._common import as_float_or_array

__all__ = [
    "AcceptableRegion",
    "DisclosureAssessment",
    "mcclure_reiter_assessment",
    "mcclure_reiter_expected_risk",
    "mcclure_reiter_relative_risk",
    "mcclure_reiter_risk",
]

_CHUNK_ELEMENTS = 1 << 21


def _mr_synthesizer(
    epsilon: float | BernoulliSynthesizer, n: int, n_synthetic: int | None
) -> tuple[float, float, int, int]:
    """``(alpha, beta, n, n_s)`` of the synthesizer; ``epsilon`` may be a synthesizer."""
    if isinstance(epsilon, BernoulliSynthesizer):
        if n_synthetic is not None and n_synthetic != epsilon.n_synthetic:
            raise ValueError("`n_synthetic` disagrees with the synthesizer passed.")
        n = check_int(n, "n", 1)
        return float(epsilon.alpha), float(epsilon.beta), n, int(epsilon.n_synthetic)
    n, n_s = _mr_sizes(n, n_synthetic)
    syn = bernoulli_synthesizer_prior(float(epsilon), n_s)
    return syn.alpha, syn.beta, n, n_s


def _mr_sizes(n: int, n_synthetic: int | None) -> tuple[int, int]:
    """``(n, n_s)`` checked, ``n_s`` defaulting to ``n``."""
    n = check_int(n, "n", 1)
    return n, n if n_synthetic is None else check_int(n_synthetic, "n_synthetic", 1)


def _mr_log_likelihood_ratio(x_minus_j, x_synthetic, n, alpha, beta, n_s) -> np.ndarray:
    """``log Bin(X*; n_s, p1) - log Bin(X*; n_s, p0)`` of eq. (5), exact for huge alpha."""
    xm = np.asarray(x_minus_j, dtype=float)
    xs = np.asarray(x_synthetic, dtype=float)
    return xs * np.log1p(1.0 / (xm + alpha)) + (n_s - xs) * np.log1p(-1.0 / (n - xm + beta))


def _logit(p) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    return np.log(p) - np.log1p(-p)


def _check_prior(prior) -> np.ndarray:
    w = np.asarray(prior, dtype=float)
    if np.any(~((w > 0) & (w < 1))):
        raise ValueError(f"`prior` P(Y_j = 1) must lie in (0, 1), got {prior!r}.")
    return w


def mcclure_reiter_risk(
    x: int | np.ndarray,
    x_synthetic: int | np.ndarray,
    n: int,
    epsilon: float | BernoulliSynthesizer,
    *,
    n_synthetic: int | None = None,
    prior: float | np.ndarray = 0.5,
    y: int = 1,
) -> float | np.ndarray:
    """Intruder's posterior probability of the true value of record j, R_j (eq. 5).

    With prior ``w = P(Y_j = 1)`` and ``x_synthetic`` ones among the released records,

        R_j = Bin(X*; n_s, p1) w / (Bin(X*; n_s, p1) w + Bin(X*; n_s, p0) (1 - w)),

    ``p1 = (X_{-j} + 1 + a) / (n + a + b)``, ``p0 = (X_{-j} + a) / (n + a + b)``, for
    ``Y_j = 1``; for ``y=0``, the posterior probability of ``Y_j = 0``.

    Parameters
    ----------
    x, x_synthetic : int or array_like
        Number of ones ``X`` in the ``n`` confidential records (record j included), and
        ``X*`` in the ``n_synthetic`` (default ``n``) synthetic ones.
    n : int
    epsilon : float or BernoulliSynthesizer
        DP epsilon of the synthesizer
        (:func:`~pymc_edp.conjugate.bernoulli_synthesizer_prior`), or the synthesizer.
    n_synthetic : int, optional
    prior : float or array_like, default 0.5
        Intruder's prior ``w = P(Y_j = 1 | D_{-j}, S)`` in (0, 1).
    y : {1, 0}
        True value of the attacked record j (0: the paper's choice when D holds no ones).

    Returns
    -------
    float or numpy.ndarray
        Broadcast over ``x``, ``x_synthetic`` and ``prior``.

    References
    ----------
    .. [1] McClure, D. and Reiter, J. P. (2012). *Transactions on Data Privacy* 5, eq. (5).

    Examples
    --------
    McClure & Reiter's setting, n = n_s = 1000 records, a record whose value is the only one
    in the data (x = 1), intruder prior 0.5:

    >>> round(mcclure_reiter_risk(1, 1, 1000, epsilon=0.01), 4)
    0.4975
    >>> mcclure_reiter_risk(1, [0, 1, 2, 5], 1000, epsilon=1000).round(4).tolist()
    [0.269, 0.5003, 0.7315, 0.9821]
    """
    a, b, n, n_s = _mr_synthesizer(epsilon, n, n_synthetic)
    if y not in (0, 1):
        raise ValueError(f"`y` must be 0 or 1, got {y!r}.")
    x = np.asarray(x)
    xs = np.asarray(x_synthetic)
    w = _check_prior(prior)
    if np.any(x < y) or np.any(x > n - 1 + y):
        raise ValueError(f"`x` must lie in [{y}, {n - 1 + y}] for a record with Y_j = {y}.")
    if np.any(xs < 0) or np.any(xs > n_s):
        raise ValueError(f"`x_synthetic` must lie in [0, {n_s}].")
    llr = _mr_log_likelihood_ratio(x - y, xs, n, a, b, n_s)
    logit = _logit(w) + llr if y == 1 else -_logit(w) - llr
    return as_float_or_array(special.expit(logit))


def mcclure_reiter_relative_risk(
    x: int | np.ndarray,
    x_synthetic: int | np.ndarray,
    n: int,
    epsilon: float | BernoulliSynthesizer,
    *,
    n_synthetic: int | None = None,
    prior: float | np.ndarray = 0.5,
    y: int = 1,
) -> float | np.ndarray:
    """Relative risk ``RR_j = p(Y_j | D*, A, S) / p(Y_j | A, S)`` (McClure & Reiter eq. 8).

    Same arguments as :func:`mcclure_reiter_risk`; the prior probability of the true value
    is ``prior`` for ``y=1`` and ``1 - prior`` for ``y=0``.

    References
    ----------
    .. [1] McClure, D. and Reiter, J. P. (2012). *Transactions on Data Privacy* 5, eq. (8).

    Examples
    --------
    >>> rr = mcclure_reiter_relative_risk(1, [0, 1, 5, 10], 10, epsilon=1.0, prior=0.1)
    >>> rr.round(4).tolist()
    [0.616, 0.7104, 1.2343, 2.3197]
    """
    r = mcclure_reiter_risk(x, x_synthetic, n, epsilon, n_synthetic=n_synthetic, prior=prior, y=y)
    w = _check_prior(prior)
    return as_float_or_array(np.asarray(r) / (w if y == 1 else 1.0 - w))


def mcclure_reiter_expected_risk(
    p0: float | Sequence[float] | np.ndarray,
    epsilon: float | Sequence[float] | np.ndarray,
    n: int,
    n_synthetic: int | None = None,
    prior: float = 0.5,
) -> float | xr.DataArray:
    """Expected increase in intruder risk, ER_j (McClure & Reiter eq. 6).

    The mean of ``max(R_j, pi) - pi`` (``pi`` the prior probability of the true value)
    over ``X ~ Binomial(n, p0)`` and ``X* | X ~ Binomial(n_s, (X + a) / (n + a + b))``
    (eq. 7), attacking a record with ``Y_j = 1`` (``Y_j = 0`` when ``X = 0``).

    Parameters
    ----------
    p0 : float or 1-D array_like
        Population proportion(s) of ones.
    epsilon, n, n_synthetic, prior
        As in :func:`mcclure_reiter_risk` (``epsilon`` scalar or 1-D, ``prior`` scalar).

    Returns
    -------
    float or xarray.DataArray
        ``expected_risk`` over ``p0`` and/or ``epsilon``, those given as arrays.

    References
    ----------
    .. [1] McClure, D. and Reiter, J. P. (2012). *Transactions on Data Privacy* 5,
       eqs. (6)-(7), Table 1.

    Examples
    --------
    Two entries of McClure & Reiter's Table 1 (n = n_s = 1000, ``p0 = 0.001``; the paper
    prints 3.13e-05 for the second):

    >>> round(mcclure_reiter_expected_risk(0.001, 1000, 1000), 4)
    0.1252
    >>> f"{mcclure_reiter_expected_risk(0.001, 0.01, 1000):.3g}"
    '3.14e-05'
    """
    p0_arr = np.asarray(p0, dtype=float)
    eps_arr = np.asarray(epsilon, dtype=float)
    if p0_arr.ndim > 1 or eps_arr.ndim > 1:
        raise ValueError("`p0` and `epsilon` must be scalars or 1-D.")
    if np.any(~((p0_arr >= 0) & (p0_arr <= 1))):
        raise ValueError("`p0` must lie in [0, 1].")
    w = float(_check_prior(prior))
    n, n_s = _mr_sizes(n, n_synthetic)

    big_x = np.arange(n + 1)
    p_x = stats.binom.pmf(big_x[None, :], n, np.atleast_1d(p0_arr)[:, None])  # (P, n+1)
    xs = np.arange(n_s + 1, dtype=float)[None, :]
    log_binom_coef = (
        special.gammaln(n_s + 1) - special.gammaln(xs + 1) - special.gammaln(n_s - xs + 1)
    )
    out = np.empty((p_x.shape[0], np.atleast_1d(eps_arr).size))
    chunk = max(1, _CHUNK_ELEMENTS // (n_s + 1))
    for e_idx, eps in enumerate(np.atleast_1d(eps_arr)):
        syn = bernoulli_synthesizer_prior(float(eps), n_s)
        a, b = syn.alpha, syn.beta
        g = np.empty(n + 1)  # expected excess risk given X
        for start in range(0, n + 1, chunk):
            xx = big_x[start : start + chunk, None].astype(float)
            is_one = xx >= 1  # attack a record with Y_j = 1 unless X = 0
            llr = _mr_log_likelihood_ratio(np.where(is_one, xx - 1, 0.0), xs, n, a, b, n_s)
            pi = np.where(is_one, w, 1.0 - w)
            risk = special.expit(np.where(is_one, _logit(w) + llr, -_logit(w) - llr))
            p_gen = (xx + a) / (n + a + b)
            log_p_xs = (
                log_binom_coef + special.xlogy(xs, p_gen) + special.xlog1py(n_s - xs, -p_gen)
            )
            g[start : start + chunk] = np.sum((np.maximum(risk, pi) - pi) * np.exp(log_p_xs), 1)
        out[:, e_idx] = p_x @ g

    if p0_arr.ndim == 0 and eps_arr.ndim == 0:
        return float(out[0, 0])
    coords = {dim: a for dim, a in (("p0", p0_arr), ("epsilon", eps_arr)) if a.ndim == 1}
    return xr.DataArray(
        out.reshape([a.size for a in coords.values()]),
        dims=tuple(coords),
        coords=coords,
        name="expected_risk",
        attrs={"n": n, "n_synthetic": n_s, "prior": w},
    )


@dataclass(frozen=True)
class AcceptableRegion:
    """Acceptable part of the (RR, R) plane: ``RR <= rr_max[k]`` for the first ``R <= r_upper[k]``.

    McClure & Reiter's example (``RR <= 10`` while ``R <= 0.10``, ``RR <= 1.05`` above) is
    the one below.

    Parameters
    ----------
    r_upper : tuple of float
        Increasing upper ends of the absolute-risk segments; the last must be >= 1.
    rr_max : tuple of float
        Largest acceptable relative risk in each segment.

    References
    ----------
    .. [1] McClure, D. and Reiter, J. P. (2012). *Transactions on Data Privacy* 5, Sec. 4.

    Examples
    --------
    >>> region = AcceptableRegion(r_upper=(0.1, 1.0), rr_max=(10.0, 1.05))
    >>> region.rr_max
    (10.0, 1.05)
    >>> region(relative_risk=[5.0, 5.0, 1.02], risk=[0.05, 0.5, 0.9]).tolist()
    [True, False, True]
    """

    r_upper: tuple[float, ...]
    rr_max: tuple[float, ...]

    def __post_init__(self):
        r = tuple(float(v) for v in self.r_upper)
        rr = tuple(float(v) for v in self.rr_max)
        if len(r) == 0 or len(r) != len(rr):
            raise ValueError("`r_upper` and `rr_max` must be non-empty and of equal length.")
        if np.any(np.diff(r) <= 0) or r[-1] < 1.0:
            raise ValueError("`r_upper` must increase and end at a value >= 1.")
        object.__setattr__(self, "r_upper", r)
        object.__setattr__(self, "rr_max", rr)

    def __call__(self, relative_risk, risk) -> np.ndarray:
        """Return a boolean array: is each (RR, R) point acceptable."""
        seg = np.searchsorted(np.asarray(self.r_upper), np.asarray(risk, dtype=float))
        seg = np.minimum(seg, len(self.r_upper) - 1)
        return np.asarray(relative_risk, dtype=float) <= np.asarray(self.rr_max)[seg]


@dataclass(frozen=True)
class DisclosureAssessment:
    """Joint (RR, R) assessment of one released dataset over a grid of intruder priors.

    ``risks`` holds ``risk``, ``relative_risk`` and ``acceptable`` over the ``prior``.

    Examples
    --------
    >>> region = AcceptableRegion(r_upper=(0.1, 1.0), rr_max=(10.0, 1.05))
    >>> a = mcclure_reiter_assessment(
    ...     1, 1, 10, 5.0, acceptable=region, priors=[0.01, 0.05, 0.5, 0.9]
    ... )
    >>> a.risks["risk"].round(4).values.tolist()
    [0.0073, 0.037, 0.4217, 0.8678]
    >>> a.acceptable, a.unacceptable_priors.size
    (True, 0)
    """

    risks: xr.Dataset

    @property
    def acceptable(self) -> bool:
        """True when every intruder prior gives an acceptable (RR, R)."""
        return bool(self.risks["acceptable"].all())

    @property
    def unacceptable_priors(self) -> np.ndarray:
        """The intruder priors w whose (RR, R) falls outside the acceptable region."""
        return self.risks["prior"].values[~self.risks["acceptable"].values]


def mcclure_reiter_assessment(
    x: int,
    x_synthetic: int,
    n: int,
    epsilon: float | BernoulliSynthesizer,
    *,
    acceptable: AcceptableRegion | Callable[[np.ndarray, np.ndarray], np.ndarray],
    priors: Sequence[float] | np.ndarray | None = None,
    n_synthetic: int | None = None,
    y: int = 1,
) -> DisclosureAssessment:
    """McClure & Reiter's joint (RR, R) risk assessment over intruder priors (Sec. 4).

    Parameters
    ----------
    x, x_synthetic, n, epsilon, n_synthetic, y
        As in :func:`mcclure_reiter_risk` (scalars).
    acceptable : AcceptableRegion or callable
        The data holder's acceptable region; a callable takes ``(relative_risk, risk)``
        arrays and returns a boolean array.
    priors : array_like, optional
        Intruder priors ``w = P(Y_j = 1)``; default 1000 equally spaced values in (0, 1)
        (``k / 1001``), as in the paper's Figures 3-4.

    References
    ----------
    .. [1] McClure, D. and Reiter, J. P. (2012). *Transactions on Data Privacy* 5, Sec. 4,
       Figures 3-4.

    Examples
    --------
    >>> region = AcceptableRegion(r_upper=(0.1, 1.0), rr_max=(10.0, 1.05))
    >>> mcclure_reiter_assessment(1, 1, 10, 1.0, acceptable=region).acceptable
    True
    >>> a = mcclure_reiter_assessment(1, 1, 10, 10.0, acceptable=region)
    >>> a.acceptable, a.unacceptable_priors.size, round(float(a.unacceptable_priors.min()), 4)
    (False, 439, 0.0909)
    """
    w = np.arange(1, 1001) / 1001 if priors is None else np.asarray(priors, dtype=float)
    if w.ndim != 1:
        raise ValueError("`priors` must be 1-D.")
    kwargs = {"n_synthetic": n_synthetic, "prior": w, "y": y}
    r = np.asarray(mcclure_reiter_risk(x, x_synthetic, n, epsilon, **kwargs))
    rr = np.asarray(mcclure_reiter_relative_risk(x, x_synthetic, n, epsilon, **kwargs))
    ok = np.asarray(acceptable(rr, r), dtype=bool)
    ds = xr.Dataset(
        {
            "risk": ("prior", r),
            "relative_risk": ("prior", rr),
            "acceptable": ("prior", np.broadcast_to(ok, r.shape).copy()),
        },
        coords={"prior": w},
        attrs={"x": int(x), "x_synthetic": int(x_synthetic), "n": int(n), "y": int(y)},
    )
    return DisclosureAssessment(risks=ds)
